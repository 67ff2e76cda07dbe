"""``--queryeval-shard I/N``: one CI runner's share of a suite, by a stable hash of the case id.

The hash (SHA-256, not Python's salted ``hash``) gives every runner the same partition without
talking to the others, whatever the order or the subset of files each collects; a case keeps its
shard when other cases are added or removed. The shards' JSON reports are put back together by
``queryeval merge`` (:mod:`pytest_queryeval.conclude.merge`).
"""

from __future__ import annotations

import hashlib
import heapq
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class SchedulerVariables:
    """The environment variables one scheduler sets on every runner of a parallel job."""

    name: str
    index: str
    count: str | None  #: None: the scheduler does not say (QUERYEVAL_SHARD_COUNT must)
    base: int


#: ``--queryeval-shard auto``: where each scheduler says which shard this runner is, in the
#: order they are tried; ``base`` is what the index variable counts from.
SCHEDULERS: tuple[SchedulerVariables, ...] = (
    SchedulerVariables("queryeval", "QUERYEVAL_SHARD_INDEX", "QUERYEVAL_SHARD_COUNT", 1),
    SchedulerVariables("GitLab CI", "CI_NODE_INDEX", "CI_NODE_TOTAL", 1),
    SchedulerVariables("CircleCI", "CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL", 0),
    SchedulerVariables("Buildkite", "BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT", 0),
    SchedulerVariables("SLURM array", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", 0),
    SchedulerVariables("Kubernetes Indexed Job", "JOB_COMPLETION_INDEX", None, 0),
)


#: Digits a shard index or count may have: a billion shards is more than any scheduler runs,
#: and Python refuses to read an integer of more than 4,300 digits with an error that names no
#: variable.
MAX_DIGITS = 9


def _whole(text: str) -> int | None:
    """``text`` as a whole number of at most :data:`MAX_DIGITS` ASCII digits, else None
    (``str.isdigit`` also accepts digits such as ``²`` that ``int`` refuses)."""
    text = text.strip()
    if not text or len(text) > MAX_DIGITS or not (text.isascii() and text.isdigit()):
        return None
    return int(text)


def _shown(text: str) -> str:
    """A value for an error message, cut when long (an environment variable can be huge)."""
    text = text.strip()
    return repr(text) if len(text) <= 40 else f"{text[:20]!r}... ({len(text):,} characters)"


def parse_shard(value: str, environ: Mapping[str, str] | None = None) -> tuple[int, int]:
    """``"2/4"`` as (2, 4); ``"auto"``: the scheduler's own variables
    (:func:`shard_from_environment`). A ValueError says what is wrong."""
    text = value.strip()
    if text == "auto":
        return shard_from_environment(environ)
    left, sep, right = text.partition("/")
    index_or_none, total_or_none = _whole(left), _whole(right)
    if not sep or index_or_none is None or total_or_none is None:
        shown = value if len(value) <= 40 else _shown(value)
        raise ValueError(f"--queryeval-shard={shown}: expected I/N, e.g. 1/4 (whole numbers of "
                         f"at most {MAX_DIGITS} digits)")
    index, total = index_or_none, total_or_none
    if total < 1 or not 1 <= index <= total:
        raise ValueError(f"--queryeval-shard={value}: I must be between 1 and N (N >= 1)")
    return index, total


def shard_from_environment(environ: Mapping[str, str] | None = None) -> tuple[int, int]:
    """``--queryeval-shard auto``: (I, N) from the first scheduler whose index variable is set.

    A SLURM array's task ids start at ``SLURM_ARRAY_TASK_MIN`` (``--array=1-8`` counts from 1),
    so its index is the task id minus that. A Kubernetes Indexed Job says its index but not its
    completions, so ``QUERYEVAL_SHARD_COUNT`` gives N there. A ValueError names the variables.
    """
    env = os.environ if environ is None else environ
    for sched in SCHEDULERS:
        raw_index = env.get(sched.index, "").strip()
        if not raw_index:
            continue
        count_var = sched.count if sched.count and env.get(sched.count, "").strip() \
            else "QUERYEVAL_SHARD_COUNT"
        raw_count = env.get(count_var, "").strip()
        values = {sched.index: raw_index, count_var: raw_count}
        if sched.index == "SLURM_ARRAY_TASK_ID":
            values["SLURM_ARRAY_TASK_MIN"] = env.get("SLURM_ARRAY_TASK_MIN", "0").strip() or "0"
        numbers = {name: _whole(raw) for name, raw in values.items()}
        if any(n is None for n in numbers.values()):
            named = [f"{name}={_shown(raw)}" for name, raw in values.items()
                     if name != "SLURM_ARRAY_TASK_MIN" or numbers[name] is None]
            raise ValueError(f"--queryeval-shard=auto: {sched.name}: {' and '.join(named)} "
                             f"must be whole numbers (of at most {MAX_DIGITS} digits)")
        base = numbers.get("SLURM_ARRAY_TASK_MIN", sched.base) or 0
        index, total = (numbers[sched.index] or 0) - base + 1, numbers[count_var] or 0
        if total < 1 or not 1 <= index <= total:
            raise ValueError(f"--queryeval-shard=auto: {sched.name}: {sched.index}={raw_index} "
                             f"is not one of {total} shards ({count_var}={raw_count}, counted "
                             f"from {base})")
        return index, total
    names = ", ".join(s.index for s in SCHEDULERS)
    raise ValueError(f"--queryeval-shard=auto: no scheduler variable is set (looked for {names}); "
                     "give --queryeval-shard I/N")


def durations_from_report(report: Mapping[str, object]) -> dict[str, float]:
    """Case id -> seconds the case took, from a JSON report (``duration_s`` of each record, else
    the sum of its gold, predicted and prediction seconds)."""
    out: dict[str, float] = {}
    cases = report.get("cases")
    for rec in cases if isinstance(cases, list) else []:
        if not isinstance(rec, dict) or not isinstance(rec.get("id"), str):
            continue
        seconds = rec.get("duration_s")
        if not isinstance(seconds, int | float) or isinstance(seconds, bool):
            metrics = rec.get("metrics") if isinstance(rec.get("metrics"), dict) else {}
            assert isinstance(metrics, dict)
            parts = [metrics.get(k) for k in ("gold_seconds", "predicted_seconds",
                                               "prediction_seconds")]
            seconds = sum(v for v in parts if isinstance(v, int | float)
                          and not isinstance(v, bool))
        if seconds == seconds and 0 <= seconds < float("inf"):
            out[rec["id"]] = float(seconds)
    return out


def load_durations(path: Path, name: str) -> dict[str, float]:
    """:func:`durations_from_report` of the JSON report at ``path``; ValueError names the
    file and the problem (``name``: the path as given)."""
    from .._util.boundedio import load_report_file

    data = load_report_file(path, "--queryeval-shard-durations", name)
    return durations_from_report(data)


def balanced_shards(case_ids: Sequence[str], durations: Mapping[str, float],
                    total: int) -> dict[str, int]:
    """Case id -> 1-based shard, so each shard's recorded seconds are about equal.

    Deterministic (every runner computes the same partition from the same ids and report):
    longest case first onto the least-loaded shard (ties: the lower shard), ids breaking ties
    between equal durations. A case the report does not know counts as the median known
    duration (a new case is most likely an ordinary one); with no durations at all every case
    counts 1, so the shards are balanced by count.
    """
    known = sorted(d for d in durations.values())
    default = known[len(known) // 2] if known else 1.0
    weights = {cid: durations.get(cid, default) for cid in dict.fromkeys(case_ids)}
    loads = [(0.0, shard) for shard in range(1, total + 1)]
    out: dict[str, int] = {}
    for cid in sorted(weights, key=lambda c: (-weights[c], c)):
        load, shard = heapq.heappop(loads)
        out[cid] = shard
        heapq.heappush(loads, (load + weights[cid], shard))
    return out


def shard_of(key: str, total: int) -> int:
    """The 1-based shard of a case id (or a node id for items that are not cases)."""
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % total + 1
