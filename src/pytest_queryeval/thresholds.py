"""Per-metric thresholds: parsing, resolution order and the verdict for one case.

Resolution: ``--queryeval-threshold`` > case > file > suite config > ini ``queryeval_thresholds``.
Levels merge metric by metric, so a case overriding one metric keeps the others.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .model import Threshold
from .numeric import is_finite, short_repr


def parse_threshold(metric: str, spec: Any) -> Threshold:
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
