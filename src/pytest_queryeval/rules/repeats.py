"""Repeats of one case for non-deterministic models (``repeat: N``, ``--queryeval-repeat N``).

A model behind an API may answer the same question differently from one request to the next:
one passing run says little. The engine asks for N predictions and scores each; this module
turns the N run outcomes into the case's: per-run means as the case's metrics (so aggregates,
gates and baselines work unchanged) except the usage metrics (``prompt_tokens``,
``completion_tokens``, ``cost_usd``), summed over the runs since the case cost them all, the
minimum of each, ``consistency`` (the share of runs
whose result, or query when nothing was executed, is the most frequent one), ``pass_at_k``
(some run passed) and ``pass_all_k`` (every run passed), and the case's outcome by
``repeat_rule``. Plain data in and out: the merge of sharded reports reads the same records.
``details.repeat``'s ``n`` and ``passed`` are what pass@k and pass^k for every k are computed
from at the end of the run (``metrics/pass_k.py``): ``pass_at_k`` and ``pass_all_k`` are their
k = N.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from ..metricnames import JUDGE_USAGE_METRICS, REPEAT_METRICS, USAGE_METRICS
from ..model import Case, Threshold
from .thresholds import evaluate as check_thresholds

if TYPE_CHECKING:
    from ..model import RecordLike

#: The rules ``repeat_rule`` names: the case passes when all, more than half, or any of its
#: runs pass.
RULES = ("all", "majority", "any")
#: Why a case with an inline or recorded prediction runs once whatever ``repeat`` says.
FIXED_NOTE = ("scored once: the prediction is written in the suite (inline or a predictions "
              "file), the same text every run; repeat asks a live source (http, command, "
              "python, openai) for N predictions")


class Run(Protocol):
    """What :func:`combine` reads of one run's outcome (the engine's ``CaseOutcome``), so
    this module needs nothing from the engine that calls it (no import cycle, not even one
    for annotations)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]
    status: str
    metrics: dict[str, float]
    failed: list[tuple[Threshold, float | None]]
    predicted: object
    reason: str | None
    error: str | None
    diff: list[str]
    details: dict[str, Any]
    signature: str | None


RunT = TypeVar("RunT", bound=Run)


def signature(value: object, scored_signature: str | None, reason: str | None) -> str:
    """What one run produced, for ``consistency``: the kind's digest of the predicted result
    when it executed one, else the failure reason, else the prediction text (whitespace
    collapsed) or canonical JSON."""
    if scored_signature:
        return scored_signature
    if reason:
        return "reason:" + reason
    if isinstance(value, str):
        return "text:" + " ".join(value.split())
    try:
        return "json:" + json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return "repr:" + repr(value)


def rule_holds(rule: str, passed: int, runs: int) -> bool:
    if rule == "any":
        return passed >= 1
    if rule == "majority":
        return 2 * passed > runs
    return passed == runs


def _run_line(index: int, run: Run) -> str:
    if run.status == "error":
        return f"run {index + 1}: error: {' '.join(str(run.error).split())[:160]}"
    if run.status == "passed":
        return f"run {index + 1}: passed"
    why = run.reason or ", ".join(
        f"{t.metric}={'n/a' if v is None else f'{v:.3f}'}" for t, v in run.failed) or "failed"
    return f"run {index + 1}: failed ({' '.join(why.split())[:160]})"


def combine(case: Case, runs: Sequence[RunT]) -> RunT:
    """The case's outcome from its runs (at least two)."""
    n = len(runs)
    passed = sum(r.status == "passed" for r in runs)
    scored = [r for r in runs if r.status != "error"]
    statuses = [r.status for r in runs]
    counts = Counter(r.signature for r in runs)
    info: dict[str, Any] = {
        "n": n, "rule": case.repeat_rule, "passed": passed,
        "statuses": statuses, "flaky": len(set(statuses)) > 1,
        "min": {}, "distinct": len(counts),
        "runs": [{"status": r.status, "metrics": dict(r.metrics), "predicted": r.predicted,
                  "reason": r.reason, "error": r.error} for r in runs],
    }
    if not scored:  # no run could be evaluated: the case errs with the first run's error
        first = runs[0]
        return replace(first, details={**first.details, "repeat": info},
                       diff=[_run_line(i, r) for i, r in enumerate(runs)])
    values: dict[str, list[float]] = {}
    for run in scored:
        for name, value in run.metrics.items():
            if isinstance(value, int | float) and not math.isnan(value):
                values.setdefault(name, []).append(float(value))
    metrics = {name: math.fsum(xs) / len(xs) for name, xs in values.items()}
    info["min"] = {name: min(xs) for name, xs in values.items()}
    for name in (*USAGE_METRICS, *JUDGE_USAGE_METRICS):  # what all its requests cost
        spent = [float(r.metrics[name]) for r in runs if isinstance(r.metrics.get(name), int | float)]
        if spent:
            metrics[name] = math.fsum(spent)
    metrics["consistency"] = counts.most_common(1)[0][1] / n
    metrics["pass_at_k"] = 1.0 if passed else 0.0
    metrics["pass_all_k"] = 1.0 if passed == n else 0.0
    own = {m: t for m, t in case.thresholds.items() if m in REPEAT_METRICS}
    failed_own = check_thresholds(own, metrics)
    ok = rule_holds(case.repeat_rule, passed, n) and not failed_own
    status = "passed" if ok else "failed"
    shown = next((r for r in scored if r.status == status), scored[0])
    head = (f"repeat: {passed} of {n} runs passed (repeat_rule: {case.repeat_rule}), "
            f"consistency {metrics['consistency']:.2f}")
    diff = [head, *(_run_line(i, r) for i, r in enumerate(runs))] if not ok else []
    failed: list[tuple[Threshold, float | None]] = []
    if not ok:
        seen: set[str] = set()
        for run in scored:  # every per-run threshold some run missed, with the minimum
            for bound, _ in run.failed:
                if bound.metric not in seen:
                    seen.add(bound.metric)
                    failed.append((bound, info["min"].get(bound.metric)))
        failed.extend(failed_own)
        diff.extend(shown.diff)
    return replace(shown, status=status, metrics=metrics, failed=failed,
                   reason=shown.reason if not ok else None, error=None, diff=diff,
                   details={**shown.details, "repeat": info})


def is_flaky(record: RecordLike) -> bool:
    """Whether a case's runs disagreed on the outcome (some passed, some did not)."""
    info = (record.get("details") or {}).get("repeat")
    return isinstance(info, Mapping) and bool(info.get("flaky"))


def flaky_cases(records: Iterable[RecordLike]) -> list[dict[str, Any]]:
    """The flaky cases of a report, for every report format: id, file, line, runs passed."""
    out = []
    for rec in records:
        if is_flaky(rec):
            info = rec["details"]["repeat"]
            out.append({"id": rec.get("id"), "file": rec.get("file"), "line": rec.get("line"),
                        "kind": rec.get("kind"), "passed": info.get("passed"),
                        "runs": info.get("n"), "rule": info.get("rule"),
                        "statuses": list(info.get("statuses") or []),
                        "consistency": (rec.get("metrics") or {}).get("consistency"),
                        "outcome": rec.get("outcome")})
    return out


def flaky_line(item: Mapping[str, Any]) -> str:
    """One flaky case on one line (terminal and Markdown)."""
    statuses = "".join({"passed": "P", "failed": "F", "error": "E"}.get(s, "?")
                       for s in item.get("statuses") or [])
    cons = item.get("consistency")
    shown = "n/a" if cons is None else f"{cons:.2f}"
    return (f"{item.get('id')} ({item.get('file')}:{item.get('line')}): {item.get('passed')} of "
            f"{item.get('runs')} runs passed [{statuses}], consistency {shown}, "
            f"rule {item.get('rule')} -> {item.get('outcome')}")
