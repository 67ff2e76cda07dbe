"""The fields of a JSON report that ``queryeval merge`` computes with, checked before it does.

A shard is a file from another machine: damaged in transfer, edited by hand, or crafted. The
merge turns case lines, gate limits, metrics and run fields into numbers and walks case details;
a value of the wrong type there ended the merge in a traceback and exit 1, the status of failing
tests. :func:`check_report` finds every such value first and names it by its field path
(``cases[17].line: expected an integer, got "abc"``), so the merge can refuse the shard as a
usage error. Only what the merge and the reports it writes read is checked; other fields travel
through unread.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, cast

#: The outcomes of a complete record (one a retry may carry: ``plugin.resume.COMPLETE``).
COMPLETE_OUTCOMES = frozenset({"passed", "failed", "xfailed", "xpassed"})
#: How many problems of one shard are listed (the rest are counted).
LISTED = 10

Check = Callable[[object], str | None]


def _show(value: object) -> str:
    """A short JSON rendering of a bad value for the message."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _finite(value: object) -> bool:
    """A JSON number the merge can use as a float (not a bool, not 10**400, not NaN)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _number(value: object) -> str | None:
    return None if _finite(value) else "expected a finite number"


def _integer(value: object) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool) and _finite(value):
        return None
    return "expected an integer"


def _string(value: object) -> str | None:
    return None if isinstance(value, str) else "expected a string"


def _boolean(value: object) -> str | None:
    return None if isinstance(value, bool) else "expected true or false"


def _object(value: object) -> str | None:
    return None if isinstance(value, dict) else "expected an object"


def _list(value: object) -> str | None:
    return None if isinstance(value, list) else "expected a list"


def _finite_floats(values: Collection[object]) -> bool:
    """Whether ``values`` are all floats and all finite (a fast pass: when it fails, each value
    is checked on its own)."""
    return set(map(type, values)) <= {float} and math.isfinite(
        sum(cast("Collection[float]", values)))


def _metric(value: object) -> str | None:
    """A case metric: a number, true/false (counted as 1/0) or null (not scored)."""
    if value is None or isinstance(value, bool) or _finite(value):
        return None
    return "expected a finite number, true, false or null"


def _nullable(check: Check) -> Check:
    checked = lambda value: None if value is None else check(value)  # noqa: E731
    _FINE[checked] = _FINE.get(check, frozenset()) | {type(None)}
    return checked


#: The types whose every value a check accepts, by check: a value of one of them is not
#: checked further (the merge checks every field of every case it reads).
_FINE: dict[Check, frozenset[type]] = {
    _string: frozenset({str}), _boolean: frozenset({bool}), _object: frozenset({dict}),
    _list: frozenset({list}),
}


#: ``run`` fields: the merge compares, sums or converts them.
RUN: dict[str, Check] = {
    "started": _nullable(_string), "finished": _nullable(_string),
    "duration_s": _nullable(_number), "exitstatus": _nullable(_integer),
    "interrupted": _nullable(_boolean), "workers": _nullable(_integer),
    "shard": _nullable(_string), "settings": _nullable(_object), "suite": _nullable(_object),
    "suite_ids": _nullable(_list), "queryeval_version": _nullable(_string),
    "model": _nullable(_string), "predictions": _nullable(_string),
    "gating": _nullable(_string), "significance": _nullable(_number),
}
#: Case fields: sorted on, grouped by, aggregated, or rendered in the reports.
CASE: dict[str, Check] = {
    "nodeid": _nullable(_string), "file": _nullable(_string), "line": _nullable(_integer),
    "kind": _nullable(_string), "difficulty": _nullable(_string),
    "severity": _nullable(_string), "outcome": _nullable(_string),
    "status": _nullable(_string), "tags": _nullable(_list), "metrics": _nullable(_object),
    "labels": _nullable(_object), "thresholds": _nullable(_object),
    "default_thresholds": _nullable(_list), "signature": _nullable(_string),
    "failed_metrics": _list, "diff": _nullable(_list), "details": _nullable(_object),
    "settings": _nullable(_object), "near_miss": _nullable(_list),
    "error": _nullable(_string), "reason": _nullable(_string),
    "question": _nullable(_string), "standing": _nullable(_string),
    "baseline_status": _nullable(_string), "identity": _nullable(_string),
    "carried": _nullable(_string), "digest": _nullable(_string),
    "model": _nullable(_string), "reviewed": _nullable(_boolean), "drifted": _nullable(_list),
}
#: Case fields the plugin writes that the merge carries through unread (a value of any type
#: is kept as it is). Every field a record writer (:mod:`.records`, :mod:`..plugin.nodes`, the
#: gating modes ...) produces is in :data:`CASE` or here: tests/reports/test_record_schema.py
#: runs every writer and checks its records against both, so a new field, or a field whose
#: type changes, cannot reach a report that the merge and ``--queryeval-resume`` then refuse.
CASE_UNCHECKED = frozenset({
    "id",  # checked apart: required, a string
    "path", "datasource", "dialect", "predicted", "gold", "duration_s",
})
#: Gate fields: the merge rebuilds each gate and evaluates it over the union.
GATE: dict[str, Check] = {
    "name": _string, "metric": _string, "stat": _string, "limit": _number,
    "scope": _nullable(_string), "kind": _nullable(_string), "tag": _nullable(_string),
    "allow_empty": _nullable(_boolean), "op": _nullable(_string), "model": _nullable(_string),
    "k": _nullable(_integer), "reviewed_only": _nullable(_boolean),
}
OPS = (">=", "<=")


class _Problems:
    def __init__(self) -> None:
        self.found: list[str] = []

    def add(self, path: str, message: str, value: object) -> None:
        self.found.append(f"{path}: {message}, got {_show(value)}")

    def fields(self, obj: Mapping[str, Any], spec: Mapping[str, Check], where: str,
               required: tuple[str, ...] = ()) -> None:
        fine = _FINE.get
        for key, check in spec.items():
            if key not in obj:
                if key in required:
                    self.found.append(f"{where}.{key}: missing")
                continue
            if type(obj[key]) in fine(check, ()):
                continue
            message = check(obj[key])
            if message:
                self.add(f"{where}.{key}", message, obj[key])

    def each(self, value: list[object] | dict[str, object], check: Check, where: str) -> None:
        """Every item of a list, or every value of an object."""
        values = value.values() if isinstance(value, dict) else value
        if set(map(type, values)) <= _FINE.get(check, frozenset()):
            return  # every item of a type the check accepts whole
        if check is _metric and _finite_floats(values):
            return
        items: Iterable[tuple[object, object]] = (
            value.items() if isinstance(value, dict) else enumerate(value))
        for key, item in items:
            message = check(item)
            if message:
                path = f"{where}.{key}" if isinstance(value, dict) else f"{where}[{key}]"
                self.add(path, message, item)


def check_report(report: Mapping[str, Any]) -> list[str]:
    """Every field of a parsed shard the merge cannot use, as ``path: problem, got value``
    (empty when the shard is usable)."""
    p = _Problems()
    run = report.get("run")
    if not isinstance(run, dict):
        p.add("run", "expected an object", run)
    else:
        p.fields(run, RUN, "run")
        suite = run.get("suite")
        if isinstance(suite, dict):
            p.fields(suite, {"cases": _integer, "digest": _string}, "run.suite", ("cases",))
        if isinstance(run.get("suite_ids"), list):
            p.each(run["suite_ids"], _string, "run.suite_ids")
        if isinstance(run.get("settings"), dict):
            p.each(run["settings"], _object, "run.settings")
    cases = report.get("cases")
    if not isinstance(cases, list):
        p.add("cases", "expected a list", cases)
    else:
        seen = SeenCases()
        for index, case in enumerate(cases):
            _check_case(p, case, f"cases[{index}]")
            p.found.extend(seen.problems(case, index))
    gates = report.get("gates")
    if gates is not None and not isinstance(gates, list):
        p.add("gates", "expected a list", gates)
    elif gates:
        for index, gate in enumerate(gates):
            where = f"gates[{index}]"
            if not isinstance(gate, dict):
                p.add(where, "expected an object", gate)
                continue
            p.fields(gate, GATE, where, ("name", "metric", "stat", "limit"))
            if isinstance(gate.get("op"), str) and gate["op"] not in OPS:
                p.add(f"{where}.op", "expected \">=\" or \"<=\"", gate["op"])
    audit = report.get("audit")
    if audit is not None and not isinstance(audit, dict):
        p.add("audit", "expected an object", audit)
    return p.found


def _check_case(p: _Problems, case: object, where: str) -> None:
    if not isinstance(case, dict):
        p.add(where, "expected an object", case)
        return
    p.fields(case, CASE, where)
    if not isinstance(case.get("id"), str):
        p.add(f"{where}.id", "expected a string", case.get("id"))
    for key in ("tags", "failed_metrics", "near_miss"):
        if isinstance(case.get(key), list):
            p.each(case[key], _string, f"{where}.{key}")
    if isinstance(case.get("metrics"), dict):
        p.each(case["metrics"], _metric, f"{where}.metrics")
    if isinstance(case.get("thresholds"), dict):
        p.each(case["thresholds"], _object, f"{where}.thresholds")
    details = case.get("details")
    if isinstance(details, dict):
        _check_details(p, details, f"{where}.details")


def _check_details(p: _Problems, details: Mapping[str, Any], where: str) -> None:
    """The per-case details the session aggregates read back (the Spider table, GERBIL's
    summed counts, TEXT2SPARQL's order flag)."""
    spider = details.get("spider")
    if spider is not None:
        from ..metrics.spider.aggregate import LEVELS
        from ..metrics.spider.match import COMPONENTS

        path = f"{where}.spider"
        if not isinstance(spider, dict):
            p.add(path, "expected an object", spider)
        else:
            if spider.get("hardness") not in LEVELS[:-1]:
                p.add(f"{path}.hardness", "expected one of " + ", ".join(LEVELS[:-1]),
                      spider.get("hardness"))
            if not _finite(spider.get("exact")):
                p.add(f"{path}.exact", "expected a finite number", spider.get("exact"))
            partial = spider.get("partial")
            if not isinstance(partial, dict):
                p.add(f"{path}.partial", "expected an object", partial)
            else:
                for comp in COMPONENTS:
                    item = partial.get(comp)
                    if not (isinstance(item, list) and len(item) >= 5
                            and all(_finite(v) for v in item[:5])):
                        p.add(f"{path}.partial.{comp}", "expected a list of 5 numbers", item)
    gerbil = details.get("gerbil")
    if isinstance(gerbil, dict):
        p.fields(gerbil, {k: _integer for k in ("tp", "fp", "fn")}, f"{where}.gerbil",
                 ("tp", "fp", "fn"))
    elif gerbil is not None:
        p.add(f"{where}.gerbil", "expected an object", gerbil)


class SeenCases:
    """The cases of one report seen so far, to refuse a second record of one case.

    Why: a report holds one record per case. A second record of a case (a genuine failure
    followed by a forged pass whose digest was computed again) was carried by
    ``--queryeval-resume`` as passed (a later record of an id wins) and counted twice by
    ``queryeval merge`` (``2 cases, 2 passed``) without a word. A case is its node id when
    the record has one (two cases of one id in two files are two node ids: the second is
    the located ``duplicate id`` error, ``id@line``), else its id; and two complete records
    of one id asked the same way (one ``identity``: what a retry carries by) are one case
    whatever node ids they give. Every reader of a report's records checks them through here
    (:func:`check_report`, :func:`..report.stream.scan`)."""

    def __init__(self) -> None:
        self._first: dict[object, int] = {}

    def problems(self, case: object, index: int) -> list[str]:
        """``[]``, or the problem of ``case`` (at ``cases[index]``) when its case was seen."""
        if not isinstance(case, dict):
            return []
        nodeid, case_id = case.get("nodeid"), case.get("id")
        key = nodeid if isinstance(nodeid, str) and nodeid else case_id
        if not isinstance(key, str):
            return []
        first = self._first.setdefault(key, index)
        identity = case.get("identity")
        if first == index and isinstance(identity, str) and isinstance(case_id, str) \
                and case.get("outcome") in COMPLETE_OUTCOMES:  # an id no text is no case's
            first = self._first.setdefault(("asked", case_id, identity), index)
        if first == index:
            return []
        shown = case_id if isinstance(case_id, str) else key
        return [f"cases[{index}].id: duplicate case id {shown!r} (also cases[{first}]): a "
                "report holds one record per case; run the shard again rather than edit its "
                "report"]


def summary(name: str, problems: list[str]) -> str:
    """The refusal message of one shard: its first problems, one per line, each named."""
    shown = [f"{name}: {problem}" for problem in problems[:LISTED]]
    if len(problems) > LISTED:
        shown.append(f"{name}: and {len(problems) - LISTED} more problem(s)")
    return "\n  ".join(shown)


def case_problems(case: object, where: str) -> list[str]:
    """:func:`check_report`'s problems of one case (``where``: its path, ``cases[17]``), for a
    reader that sees the cases one at a time (:mod:`.stream`)."""
    p = _Problems()
    _check_case(p, case, where)
    return p.found
