"""One JSON record per case: what travels from xdist workers and lands in every report."""

from __future__ import annotations

import math
import os
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

from .._util.boundedio import MAX_WALK_DEPTH, TOO_DEEP
from .._util.paths import display
from .._util.safetext import no_surrogates
from .._util.secrets import Scrubber
from ..engine.steps import CaseOutcome
from ..kindregistry import declares
from ..model import MISSING, NO_DIFFICULTY, Case, CaseRecord, JSONValue, RecordLike
from ..predict import spec_paths
from ..sources.keys import PATH_KEYS
from .caps import cap_record

#: The record's type lives in :mod:`..model` (low modules read records too); named here too,
#: where the records are made.
__all__ = ["CaseRecord", "JSONValue", "RecordLike"]

#: Case options that change scores: runs that differ in them are not comparable.
SCORING_OPTIONS = ("compare", "alpha", "beta", "model", "keys", "match_on",
                   "case_insensitive_names", "arity_from", "legacy_from_check", "efficiency",
                   "tie_aware")


@lru_cache(maxsize=256)
def _resolved(path: Path) -> Path:
    """``path.resolve()``, once per rootdir, not four times per case."""
    return path.resolve()


@lru_cache(maxsize=256)
def _found(path: Path) -> Path:
    """The absolute path of a case file as the suite has it: its folder resolved, its own
    name kept, so a case file linked from another folder stays the file of the folder it is
    found in, whose ``queryeval.yaml`` governs it (the model, the predictions source, the
    gates and the baseline every report names; docs/reference.md "Which files are case
    files"). Once per case file, not four times per case."""
    return path.parent.resolve() / path.name


#: :func:`.._util.paths.display`, once per case file
_display = lru_cache(maxsize=256)(display)


#: What a crash record (:func:`crash_record`) takes from the case, as the workers send it.
CASE_META = ("id", "file", "path", "line", "kind", "difficulty", "tags", "severity",
             "datasource")


def case_meta(case: Case, rootdir: Path) -> list[Any]:
    """The :data:`CASE_META` fields of ``case`` (an xdist worker sends them to the controller,
    which has no cases, in case the worker running one crashes)."""
    return [case.id, _display(case.file, rootdir), str(_found(case.file)), case.line,
            case.kind, case.difficulty, list(case.tags), case.severity, case.datasource]


def error_record(nodeid: str, message: str, **fields: object) -> CaseRecord:
    """The record of an ``error`` with no result to score: a case file that cannot be read
    (one record for the file), or a case whose xdist worker crashed while running it.
    ``fields`` replace what the node id says (``id``, ``file``, ``path``, ``line``, ``kind``
    ...)."""
    rec: dict[str, Any] = {"id": nodeid, "nodeid": nodeid, "file": nodeid.split("::", 1)[0],
                           "path": None, "line": 1, "kind": "invalid", "difficulty": NO_DIFFICULTY,
                           "tags": [], "question": None, **fields}
    rec.update({"status": "error", "metrics": {}, "labels": {}, "thresholds": {},
                "default_thresholds": [], "failed_metrics": [], "predicted": None, "gold": None,
                "signature": None, "error": message,
                "reason": None, "diff": [], "details": {}, "settings": {},
                "baseline_status": None, "standing": None})
    return cast(CaseRecord, rec)  # the keys above, and the CASE_META ones of ``fields``


def crash_record(nodeid: str, message: str, meta: list[Any] | None) -> CaseRecord:
    """The record of a case whose xdist worker crashed while running it (xdist reports the
    crash, the worker sent no record): an ``error``, so that it counts, fails the run and
    keeps the run from becoming the baseline. ``meta``: :func:`case_meta` when a worker sent
    it, else what the node id says."""
    if meta is not None and len(meta) == len(CASE_META):
        fields: dict[str, object] = dict(zip(CASE_META, meta, strict=True))
    else:
        fields = {"id": nodeid.rsplit("::", 1)[-1], "line": 0, "kind": "unknown",
                  "severity": None, "datasource": None}
    return error_record(nodeid, message, outcome="error", near_miss=None, **fields)


def result_digest(signature: str | None) -> str | None:
    """16 hex digits of the engine's signature of a prediction's result
    (:func:`~pytest_queryeval.rules.repeats.signature`): enough to tell answers apart, short enough
    for a baseline line."""
    if signature is None:
        return None
    import hashlib

    return hashlib.sha256(signature.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def case_record(case: Case, outcome: CaseOutcome | None, nodeid: str, rootdir: Path,
                scrubber: Scrubber) -> CaseRecord:
    """The JSON-safe, secret-free record of one case (outcome filled in by the caller)."""
    gold, predicted = _gold_and_predicted(case, outcome)
    rec: dict[str, Any] = {
        "id": case.id,
        "nodeid": nodeid,
        "file": _display(case.file, rootdir),
        "path": str(_found(case.file)),
        "line": case.line,
        "kind": case.kind,
        "difficulty": case.difficulty or NO_DIFFICULTY,
        "tags": list(case.tags),
        "severity": case.severity,
        **({"reviewed": False} if not case.reviewed else {}),
        "question": case.question,
        "datasource": case.datasource,
        **({"dialect": case.dialect} if case.dialect else {}),
        **({"model": case.model} if case.model else {}),
        "outcome": None,
        "status": outcome.status if outcome else None,
        "metrics": dict(outcome.metrics) if outcome else {},
        "labels": dict(outcome.labels) if outcome else {},
        "thresholds": {m: t.to_json() for m, t in case.thresholds.items()},
        # the metrics of "thresholds" that are the kind's default (no threshold judged it)
        "default_thresholds": list(case.default_thresholds),
        "failed_metrics": [t.metric for t, _ in outcome.failed] if outcome else [],
        "predicted": predicted,
        "gold": gold,
        # what the prediction produced (its result rows, else its text), digested: a baseline
        # refresh shows a changed answer even where the scores stay the same
        "signature": result_digest(outcome.signature) if outcome else None,
        "error": outcome.error if outcome else None,
        "reason": outcome.reason if outcome else None,
        "diff": list(outcome.diff) if outcome else [],
        # the relaxations that would make a failing case pass (None: not attributed)
        "near_miss": (outcome.details.get("near_miss") if outcome else None),
        "details": dict(outcome.details) if outcome else {},
        "settings": {k: case.options[k] for k in SCORING_OPTIONS if k in case.options},
        # --queryeval-gating baseline/gates: the case's state in the baseline and its standing
        "baseline_status": None,
        "standing": None,
    }
    if outcome is None and case.errors:
        rec["error"] = "\n".join(case.errors)
    rec = cap_record(_clean(rec, str(_resolved(rootdir)) + "/", scrubber,
                            _outside(case, rootdir)))
    # internal (gate scopes); dropped from reports
    rec["path"] = scrubber.text(str(_found(case.file)))
    return cast(CaseRecord, rec)  # the dict above, made JSON-safe key for key


def _gold_and_predicted(case: Case, outcome: CaseOutcome | None) -> tuple[object, object]:
    """The gold and the prediction the record shows: the dialect's gold that ran, and for a
    conversation in a format of its own (SDMX's) the turns' when the case has none."""
    gold: object = case.gold
    if isinstance(gold, dict) and declares(case.kind, "gold_by_dialect"):
        from ..sources.dialects import gold_that_ran

        chosen = (outcome.details if outcome else {}).get("gold_dialect")
        gold = gold_that_ran(gold, chosen, case.dialect)
    predicted = None
    if outcome is not None:
        predicted = outcome.predicted
    elif case.predicted is not MISSING:
        predicted = case.predicted
    if declares(case.kind, "conversation"):
        turns = [t for t in case.raw.get("conversation", []) if isinstance(t, dict)]
        if gold is None:
            gold = _one([t["target"] for t in turns if t.get("target") is not None])
        if predicted is None:
            predicted = _one([t["predicted"] for t in turns if "predicted" in t])
    return gold, predicted


def _outside(case: Case, rootdir: Path) -> tuple[tuple[str, str], ...]:
    """The case's configured paths (datasource files and folders, a predictions file) that lie
    outside the rootdir, each with its rootdir-relative form (``../codelists``): the rootdir
    prefix alone would leave them absolute in details and error messages."""
    spec = case.source_spec or {}
    found = [spec[k] for k in PATH_KEYS if isinstance(spec.get(k), str)]
    paths = spec.get("paths")
    found += [p for p in paths if isinstance(p, str)] if isinstance(paths, list) else []
    found += map(str, spec_paths(case.prediction_source, case.prediction_base or case.file.parent))
    return _relative_forms(tuple(found), rootdir) if found else ()


@lru_cache(maxsize=256)
def _relative_forms(paths: tuple[str, ...], rootdir: Path) -> tuple[tuple[str, str], ...]:
    root = _resolved(rootdir)
    out: dict[str, str] = {}
    for p in paths:
        if not os.path.isabs(p):
            continue
        resolved = Path(os.path.normpath(p))
        if resolved == root or root in resolved.parents:
            continue  # the rootdir prefix takes care of it
        out[str(resolved)] = os.path.relpath(resolved, root)
    return tuple(sorted(out.items(), key=lambda kv: -len(kv[0])))  # longest first


def _outside_replaced(text: str, outside: tuple[tuple[str, str], ...]) -> str:
    for absolute, relative in outside:
        if absolute in text:
            text = text.replace(absolute, relative)
    return text


#: One float object for the scores of 1 and 0 of every record: a record lives to the end of
#: the session, and most of its dozen metrics are one or the other (a float is 24 bytes).
_ONE, _ZERO = 1.0, 0.0


def _positive(zero: float) -> bool:
    """0.0, not -0.0 (equal, but written apart)."""
    return math.copysign(1.0, zero) > 0


def _numbers_only(items: list[Any] | tuple[Any, ...]) -> bool:
    """Whether :func:`_clean` returns every item of ``items`` as it is: ints, bools, None and
    finite floats (a Spider case's details hold a dozen such lists, each walked item by item
    before; a list's floats are not interned as a dict's are)."""
    for x in items:
        tx = type(x)
        if tx is float:
            if not math.isfinite(x):
                return False
        elif not (tx is int or tx is bool or x is None):
            return False
    return True


def _clean(value: Any, prefix: str, scrubber: Scrubber,
           outside: tuple[tuple[str, str], ...] = (), depth: int = 0) -> Any:
    """One walk doing ``scrubber.data(_relative_paths(_safe(value), prefix))``.

    JSON-safe copy (NaN/inf -> null, unknown objects -> their ``str``), machine paths made
    rootdir-relative in string values (not in keys): the rootdir ``prefix`` dropped, and each
    ``outside`` path (configured, outside the rootdir) replaced by its relative form; every
    string (keys too) scrubbed. Exact type checks come first: this walks every value of every
    record. A container nested deeper than ``MAX_WALK_DEPTH`` becomes ``TOO_DEEP``: a source's
    live answer was bounded by no decoder, and a RecursionError here failed the case's test.
    """
    t = type(value)
    if t is str:
        if not value.isascii():
            value = no_surrogates(value)
        if outside:
            value = _outside_replaced(value, outside)
        return scrubber.text(value.replace(prefix, "") if prefix in value else value)
    if t is float:
        return value if math.isfinite(value) else None
    if t is int or t is bool or value is None:
        return value
    if depth >= MAX_WALK_DEPTH and isinstance(value, dict | list | tuple | set | frozenset):
        return TOO_DEEP
    if t is dict:
        text = scrubber.text
        quiet = not scrubber.secrets  # then only URL passwords can need masking
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                k = str(k)
            key = k if quiet and "://" not in k else text(k)
            tv = type(v)
            if tv is float:  # metric dicts: nothing but floats
                out[key] = _ONE if v == 1.0 else _ZERO if v == 0.0 and _positive(v) else \
                    v if math.isfinite(v) else None
            elif v is None or tv is int or tv is bool:
                out[key] = v
            elif tv is str:
                if not v.isascii():
                    v = no_surrogates(v)
                if outside:
                    v = _outside_replaced(v, outside)
                out[key] = text(v.replace(prefix, "") if prefix in v else v)
            elif (tv is list or tv is tuple) and _numbers_only(v):
                out[key] = list(v)  # what the walk gives such a list, without a call per item
            else:
                out[key] = _clean(v, prefix, scrubber, outside, depth + 1)
        return out
    if isinstance(value, str):
        return _clean(str(value), prefix, scrubber, outside)
    if isinstance(value, float):
        return _clean(float(value), prefix, scrubber, outside)
    if isinstance(value, dict):
        return _clean(dict(value), prefix, scrubber, outside, depth)
    if isinstance(value, list | tuple | set | frozenset):
        return [_clean(v, prefix, scrubber, outside, depth + 1) for v in value]
    if isinstance(value, int):  # an int subclass other than bool
        return value
    return _clean(str(value), prefix, scrubber, outside)


def _one(items: list[Any]) -> Any:
    """A one-turn conversation shows its single target/prediction, not a list of one."""
    if not items:
        return None
    return items[0] if len(items) == 1 else items


def final_outcome(record: CaseRecord, when: str, passed: bool, skipped: bool,
                  wasxfail: bool) -> str:
    """Map pytest's report flags onto the report's outcome vocabulary."""
    if when == "setup":
        return "xfailed" if wasxfail else "skipped"
    if wasxfail:
        return "xfailed" if skipped else ("xpassed" if passed else "failed")
    if passed:
        return "passed"
    if skipped:
        return "skipped"
    return "error" if record.get("status") in (None, "error") else "failed"
