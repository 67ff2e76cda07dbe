"""A candidate model against another model's baseline: ``--queryeval-baseline-model``.

A baseline of a run with several models keeps each model's records (``<id>[<model>]``, its
``model``), and each model is compared with its own. A team that wants to know whether a
candidate may replace production compares the candidate's cases with production's baseline
records instead: ``--queryeval-baseline-model candidate=production`` (or ``production`` alone:
every model of the run, or the run's only one, against it). The baseline's records of that
model are given the current model's ids before the comparison, the gating standings and the
evidence gate read them, so each of those stays the pairing by id it always was.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..model import RecordLike

#: The key of ``B`` alone (every current model against ``B``).
EVERY = ""


def parse_baseline_models(values: Sequence[str]) -> dict[str, str]:
    """``["cand=prod"]`` as ``{"cand": "prod"}``, ``["prod"]`` as ``{"": "prod"}``; a
    ValueError names the option and the value."""
    out: dict[str, str] = {}
    for raw in values:
        current, sep, base = str(raw).partition("=")
        if not sep:
            current, base = EVERY, current
        current, base = current.strip(), base.strip()
        if not base or (sep and not current):
            raise ValueError(f"--queryeval-baseline-model={raw!r}: expected BASELINE_MODEL or "
                             "CURRENT_MODEL=BASELINE_MODEL")
        if current in out:
            raise ValueError(f"--queryeval-baseline-model={raw!r}: "
                             f"{'the default' if not current else repr(current)} is given "
                             "more than once")
        out[current] = base
    return out


def _base_id(value: str, model: str) -> str:
    suffix = f"[{model}]"
    return value[: -len(suffix)] if value.endswith(suffix) else value


def _renamed(record: RecordLike, source: str, target: str | None) -> dict[str, Any]:
    out = dict(record)
    tail = f"[{target}]" if target is not None else ""
    out["id"] = _base_id(str(record.get("id")), source) + tail
    if record.get("nodeid") is not None:
        out["nodeid"] = _base_id(str(record["nodeid"]), source) + tail
    if target is None:
        out.pop("model", None)
    else:
        out["model"] = target
    return out


def retarget(baseline: Mapping[str, Any], mapping: Mapping[str, str],
             current_models: Iterable[str | None]) -> dict[str, Any]:
    """The baseline with each current model's records taken from the model ``mapping`` gives
    it (``None``: the run has no models, its cases are compared with the mapped model's).
    Raises ValueError naming a baseline model that has no record."""
    if not mapping:
        return dict(baseline)
    cases = [c for c in baseline.get("cases") or [] if isinstance(c, Mapping)]
    have = sorted({str(c["model"]) for c in cases if c.get("model") is not None})
    for wanted in mapping.values():
        if wanted not in have:
            raise ValueError(f"--queryeval-baseline-model: the baseline has no record of model "
                             f"{wanted!r} (its models: {', '.join(have) or 'none'})")
    moved: dict[str | None, str] = {}
    for model in sorted(set(current_models), key=lambda m: m or ""):
        source = mapping.get(model or EVERY, mapping.get(EVERY))
        if source is not None and source != model:
            moved[model] = source
    if not moved:
        return dict(baseline)
    kept = [c for c in cases if c.get("model") not in moved
            and (None not in moved or c.get("model") is not None)]
    for target, source in moved.items():
        kept.extend(_renamed(c, source, target) for c in cases if c.get("model") == source)
    return {**baseline, "cases": kept}
