"""Baseline files: the committed state of a suite, written atomically and read with precise
errors.

A baseline is committed on every refresh, so it keeps only what a comparison and the gating
modes read (docs/reports.md, "The baseline file"): per case its id, kind, outcome, own status,
standing under the gating mode, severity, a digest of what the prediction produced, its model
(a run with several), its metrics, for a case asked more than once its history (``[runs,
passes]``, which ``--queryeval-gating=evidence`` reads) and, for a conversation, each scored
turn's outcome (``turns``), one line per case in the report's order (file, line, id), so a
refresh reads as a diff. Metric names are written once per kind (``metric_names``) and each
case line holds the values in that order. :func:`load_baseline` reads this compact form and
any full JSON report (the baselines written before it, or a report named with
``--queryeval-baseline``) into the same shape.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._util.boundedio import MAX_JSON_DEPTH, depth_exceeds
from .._util.safefile import write_atomic
from ..errors import ConfigError

if TYPE_CHECKING:
    from ..model import RecordLike

#: The compact form's name and version (its ``format`` key).
FORMAT = "queryeval-baseline/1"
#: What a case line holds beside ``metrics`` (a key whose value is null is left out;
#: ``nodeid`` is kept only when ids repeat across the suite's folders: cases are then paired
#: by node id).
FIELDS = ("id", "kind", "outcome", "status", "standing", "severity", "signature", "model")


def compact_baseline(report: Mapping[str, Any]) -> dict[str, Any]:
    """The baseline of a JSON report: its ``version`` and ``run``, and per case what
    :func:`~pytest_queryeval.baseline.compare.compare` and the gating modes read."""
    from ..figures.by_turn import turn_outcomes
    from ..figures.columns import ordered_metrics

    cases = [c for c in report.get("cases") or [] if isinstance(c, Mapping)]
    ids = [str(c.get("id")) for c in cases]
    fields = (*FIELDS, "nodeid") if len(set(ids)) != len(ids) else FIELDS
    names: dict[str, set[str]] = {}
    for case in cases:
        names.setdefault(str(case.get("kind")), set()).update(case.get("metrics") or {})
    columns = {kind: ordered_metrics(found) for kind, found in sorted(names.items())}
    rows = []
    for case in cases:
        row = {f: case[f] for f in fields if case.get(f) is not None}
        metrics = case.get("metrics") or {}
        values = [_number(metrics.get(m)) for m in columns[str(case.get("kind"))]]
        while values and values[-1] is None:
            values.pop()
        row["metrics"] = values
        history = _history(case)
        if history is not None:  # repeats: how many runs passed, the evidence gate's history
            row["history"] = history
        turns = turn_outcomes(case)
        if turns:  # a conversation: each scored turn's outcome, for its flips
            row["turns"] = {str(turn): outcome for turn, outcome in sorted(turns.items())}
        rows.append(row)
    return {"version": report.get("version"), "format": FORMAT,
            "run": dict(report.get("run") or {}), "metric_names": columns, "cases": rows}


def _history(case: RecordLike) -> list[int] | None:
    """``[runs, passes]`` of a case asked more than once (``details.repeat``): what
    ``--queryeval-gating=evidence`` weighs a failure by (a case with one run is read as a
    history of one run from its status)."""
    from .evidence import runs_of

    runs = runs_of(case)
    return [runs.runs, runs.passes] if runs is not None and runs.runs > 1 else None


def _number(value: object) -> object:
    """``1.0`` as ``1``: most scores are 0 or 1, and the reader turns them back into floats."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() \
            and abs(value) < 2 ** 53:
        return int(value)
    return value


def is_compact(data: Mapping[str, Any]) -> bool:
    return data.get("format") == FORMAT


def expand_baseline(data: Mapping[str, Any]) -> dict[str, Any]:
    """The compact form as the report-shaped dict the comparison reads (``metrics`` as a
    mapping of floats); raises ValueError naming the first malformed case."""
    columns = data.get("metric_names")
    if not isinstance(columns, Mapping):
        raise ValueError("'metric_names' must map each kind to its metric names")
    cases = []
    for index, row in enumerate(data.get("cases") or []):
        if not isinstance(row, Mapping) or "id" not in row:
            raise ValueError(f"cases[{index}]: expected a mapping with an id")
        names = columns.get(str(row.get("kind"))) or []
        values = row.get("metrics") or []
        if not isinstance(values, list) or len(values) > len(names):
            raise ValueError(f"cases[{index}].metrics: expected a list of at most {len(names)} "
                             f"values, in the order of metric_names.{row.get('kind')}")
        case = {f: row.get(f) for f in (*FIELDS, "nodeid")}
        case["metrics"] = {name: float(value) for name, value in zip(names, values, strict=False)
                           if value is not None}
        if "history" in row:
            case["history"] = _checked_history(row["history"], index)
        if "turns" in row:
            case["details"] = {"turns": _turns(row["turns"], index)}
        cases.append(case)
    return {"version": data.get("version"), "run": dict(data.get("run") or {}), "cases": cases}


def _checked_history(value: object, index: int) -> list[int]:
    if not (isinstance(value, list) and len(value) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
            and 0 <= value[1] <= value[0] and value[0] > 0):
        raise ValueError(f"cases[{index}].history: expected [runs, passes], two integers "
                         "with 0 <= passes <= runs and runs >= 1")
    return [int(value[0]), int(value[1])]


def _turns(value: object, index: int) -> list[dict[str, Any]]:
    """A compact row's ``turns`` (``{"2": "failed"}``) as a record's ``details.turns``."""
    if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and k.isdigit() and int(k) >= 1 and isinstance(v, str)
            for k, v in value.items()):
        raise ValueError(f"cases[{index}].turns: expected a mapping of turn numbers to "
                         "outcomes, as {\"1\": \"passed\", \"2\": \"failed\"}")
    return [{"turn": int(k), "outcome": v} for k, v in sorted(value.items(),
                                                             key=lambda kv: int(kv[0]))]


def baseline_text(data: Mapping[str, Any]) -> str:
    """The file's text of a compact form: indented JSON with each case on one line."""

    def dump(value: object) -> str:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))

    head = [f'  "{key}": {json.dumps(data[key], ensure_ascii=False, allow_nan=False)}'
            for key in ("version", "format", "run")]
    kinds = [f"    {json.dumps(kind)}: {dump(names)}"
             for kind, names in data["metric_names"].items()]
    head.append('  "metric_names": {' + ("\n" + ",\n".join(kinds) + "\n  }" if kinds else "}"))
    rows = [f"    {dump(row)}" for row in data["cases"]]
    head.append('  "cases": [' + ("\n" + ",\n".join(rows) + "\n  ]" if rows else "]"))
    return "{\n" + ",\n".join(head) + "\n}\n"


def write_baseline(report: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write a baseline atomically (readers never see a partial file): a compact form
    (:func:`compact_baseline`, what ``--queryeval-update-baseline`` writes) one case per line,
    anything else (a whole report, as before the compact form) as indented JSON."""
    target = Path(path)
    if is_compact(report):
        text = baseline_text(report)
    else:
        full = getattr(report.get("cases"), "iter_full", None)
        if full is not None:  # a merge's slim records (report.stream): kept whole
            report = {**report, "cases": list(full())}
        text = json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    write_atomic(target, text)
    return target


#: A file the decoder's recursion could not read.
_DEEP = object()


def load_baseline(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a baseline, compact or a full JSON report; a missing or malformed file is a
    ConfigError naming it."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError("baseline file not found (create it with "
                          "--queryeval-update-baseline)", file=str(p)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read baseline: {exc}", file=str(p)) from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"baseline is not valid JSON: {exc.msg}", file=str(p),
                          line=exc.lineno) from None
    except RecursionError:  # the decoder's own stack (an INTERNALERROR before)
        data = _DEEP
    if data is _DEEP or depth_exceeds(data, MAX_JSON_DEPTH):  # the report's walkers recurse
        raise ConfigError(f"baseline is not valid JSON: nested deeper than {MAX_JSON_DEPTH} "
                          "levels", file=str(p))
    if isinstance(data, dict) and is_compact(data):
        try:
            return expand_baseline(data)
        except (TypeError, ValueError) as exc:  # float("x") too
            raise ConfigError(f"baseline is not a valid {FORMAT} file: {exc}",
                              file=str(p)) from None
    if not isinstance(data, dict) or "cases" not in data:
        raise ConfigError("baseline is not a queryeval JSON report (no 'cases')", file=str(p))
    return data
