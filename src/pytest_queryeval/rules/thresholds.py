"""Per-metric thresholds: parsing, resolution order and the verdict for one case.

Resolution: ``--queryeval-threshold`` > case > file > suite config > ini ``queryeval_thresholds``.
Levels merge metric by metric, so a case overriding one metric keeps the others.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .._util.numeric import is_finite, short_repr
from ..model import Threshold

if TYPE_CHECKING:
    from ..model import RecordLike


def parse_threshold(metric: str, spec: object) -> Threshold:
    """``0.8`` / ``{min: 0.8}`` / ``{max: 2.0}`` / ``{min: a, max: b}``; raises ValueError."""
    if isinstance(spec, bool):
        raise ValueError(f"threshold for {metric} must be a number or {{min: x, max: y}}")
    if isinstance(spec, int | float):
        return Threshold(metric, min=_finite(metric, "min", spec))
    if isinstance(spec, Mapping):
        unknown = set(spec) - {"min", "max"}
        if unknown:
            raise ValueError(f"unknown threshold key(s) {sorted(unknown)}; use min and/or max")
        bounds: dict[str, float] = {}
        for key in ("min", "max"):
            if key in spec:
                value = spec[key]
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise ValueError(f"threshold {key} for {metric} must be a number")
                bounds[key] = _finite(metric, key, value)
        if not bounds:
            raise ValueError(f"threshold for {metric} needs min or max")
        return Threshold(metric, **bounds)
    raise ValueError(f"threshold for {metric} must be a number or {{min: x, max: y}}")


def _finite(metric: str, key: str, value: float) -> float:
    """NaN compares false with everything: a NaN bound would let any value pass."""
    if not is_finite(value):
        raise ValueError(f"threshold {key} for {metric} must be a finite number, not {short_repr(value)}")
    return float(value)


def parse_cli(items: Iterable[str]) -> dict[str, Threshold]:
    """Parse ``metric=value``, ``metric=min:value`` or ``metric=max:value`` strings."""
    out: dict[str, Threshold] = {}
    for item in items:
        for part in item.split(","):
            part = part.strip()
            if not part:
                continue
            metric, sep, value = part.partition("=")
            metric = metric.strip()
            if not sep or not metric:
                raise ValueError(f"expected metric=value, got {part!r}")
            bound, colon, number = value.partition(":")
            key = bound.strip() if colon else "min"
            try:
                if key not in ("min", "max"):
                    raise ValueError
                num = float(number if colon else value)
            except ValueError:
                raise ValueError(
                    f"bad threshold {part!r}: use metric=0.8, metric=min:0.8 or metric=max:2"
                ) from None
            try:
                out[metric] = parse_threshold(metric, {key: num})
            except ValueError as exc:
                raise ValueError(f"bad threshold {part!r}: {exc}") from None
    return out


def evaluate(thresholds: Mapping[str, Threshold], metrics: Mapping[str, float],
             ) -> list[tuple[Threshold, float | None]]:
    """The thresholds that fail, with the observed value (None when not computed)."""
    failed: list[tuple[Threshold, float | None]] = []
    for name, bound in thresholds.items():
        value = metrics.get(name)
        if not bound.ok(value):
            failed.append((bound, value))
    return failed


#: The kinds' default thresholds sit on their classes (``default_thresholds``); this is the
#: attribute a kind registered by a plugin sets to have one (``{metric: bound}`` as in YAML).
DEFAULT_ATTRIBUTE = "default_thresholds"


def judges_answer(metric: str) -> bool:
    """Whether a threshold on ``metric`` checks the answer: a timing or usage ceiling (latency,
    tokens, cost) does not, so a case bounded only by one is still ungated."""
    from ..metricnames import RECORDED_METRICS

    return metric not in RECORDED_METRICS


def kind_defaults(kind: object, case: object) -> dict[str, Threshold]:
    """The thresholds ``kind`` declares for ``case`` when no threshold gates it (empty: none):
    a mapping, or a method of the case (the SQL kind's depends on its source); raises
    ValueError for a declaration that is not ``{metric: bound}``."""
    declared = getattr(kind, DEFAULT_ATTRIBUTE, None)
    if callable(declared):
        declared = declared(case)
    if declared is None:
        return {}
    if not isinstance(declared, Mapping):
        raise ValueError(f"{DEFAULT_ATTRIBUTE} must be a mapping of metric: bound")
    return {str(metric): parse_threshold(str(metric), spec) for metric, spec in declared.items()}


def apply_default(thresholds: dict[str, Threshold], kind: object, case: object, *,
                  record_only: bool) -> tuple[list[str], str | None]:
    """Add ``kind``'s default thresholds to a case's ``thresholds`` when none of them judges
    the answer, so that no case passes unchecked (a regression gate with a silent hole is
    worse than none). Returns the metrics added and the problem when the kind has no default
    (the case is then an error, before any case runs). ``record_only`` (the suite's
    ``record_only: true``) adds nothing: such a suite records scores and lists the ungated."""
    if record_only or any(judges_answer(metric) for metric in thresholds):
        return [], None
    kind_name = getattr(case, "kind", "?")
    try:
        defaults = kind_defaults(kind, case)
    except ValueError as exc:
        return [], f"kind {kind_name!r} declares a bad default threshold: {exc}"
    if not defaults:
        return [], (f"no threshold applies to this case and kind {kind_name!r} declares no "
                    "default: set one (thresholds: {metric: bound} on the case, its file or "
                    "queryeval.yaml), or record_only: true in queryeval.yaml to record its "
                    "scores ungated")
    thresholds.update(defaults)
    return list(defaults), None


def coverage(records: Iterable[RecordLike]) -> dict[str, Any]:
    """How many cases each threshold gated (``by_default``: through their kind's default) and
    the ids of the cases no threshold on a score gated, for the summary and the JSON report.
    Skipped cases ran no check, and a case in error failed anyway: neither counts as ungated;
    with the kinds' defaults, only a ``record_only: true`` suite has ungated cases."""
    gated: dict[tuple[str, str], dict[str, Any]] = {}
    ungated: list[str] = []
    for rec in records:
        if rec.get("outcome") == "skipped":
            continue
        bounds = rec.get("thresholds") or {}
        defaults = set(rec.get("default_thresholds") or ())
        for metric, bound in bounds.items():
            bound = bound or {}
            key = (str(metric), repr(sorted(bound.items())))
            entry = gated.setdefault(key, {"metric": str(metric), **bound, "cases": 0,
                                           "by_default": 0})
            entry["cases"] += 1
            entry["by_default"] += metric in defaults
        if not any(judges_answer(str(m)) for m in bounds) and rec.get("outcome") != "error":
            ungated.append(str(rec.get("id")))
    # most cases first; ties by name, then bound: the same order however the records came
    order = [gated[key] for key in sorted(gated, key=lambda k: (-gated[k]["cases"], k))]
    return {"gated": order, "ungated": ungated}


def describe_bound(entry: Mapping[str, Any]) -> str:
    """``>= 1`` / ``<= 30`` / ``>= 0.5 and <= 2`` of a coverage entry."""
    return Threshold(str(entry["metric"]), min=entry.get("min"), max=entry.get("max")).describe()
