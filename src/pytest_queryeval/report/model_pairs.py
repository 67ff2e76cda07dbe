"""The models table of a run that fans its cases out per model (``predictions:`` naming
several, :mod:`..suite.models`): each model's aggregates, the cases on which the models'
outcomes differ, and the exact McNemar test of each pair's pass/fail difference (the test the
baseline comparison uses, :func:`..baseline.significance.mcnemar`).

Computed from the case records alone, so a serial run, ``-n 2``, ``--queryeval-resume`` and
``queryeval merge`` of shards give the same table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import combinations
from typing import TYPE_CHECKING, Any, TypedDict

from ..metricnames import FAILED_OUTCOMES, PASSED_OUTCOMES

if TYPE_CHECKING:
    from ..model import RecordLike

#: At most this many disagreeing cases are listed (their total is always given).
MAX_DISAGREEMENTS = 200


class ModelPair(TypedDict):
    """Two models over the cases both judged (passed, failed or in error)."""

    a: str
    b: str
    #: cases both models judged
    cases: int
    #: the cases only ``a`` passed, and only ``b`` passed (the discordant pairs)
    a_only: int
    b_only: int
    #: two-sided exact McNemar p-value of ``a_only`` against ``b_only``
    p_value: float
    #: the model that passed more of the discordant cases (None: as many each way)
    better: str | None


class Disagreement(TypedDict):
    """One case (as written, before the fan-out) whose outcome differs between models."""

    case: str
    file: str
    outcomes: dict[str, str | None]


class ModelComparison(TypedDict):
    models: list[str]
    pairs: list[ModelPair]
    #: the cases every model ran whose outcomes differ (at most :data:`MAX_DISAGREEMENTS`,
    #: by file and id)
    disagreements: list[Disagreement]
    disagreement_count: int


def model_of(record: RecordLike) -> str | None:
    model = record.get("model")
    return model if isinstance(model, str) and model else None


def written_id(record: RecordLike) -> str:
    """The case's id as written: its id without the ``[<model>]`` the fan-out appended."""
    cid, model = str(record.get("id")), model_of(record)
    suffix = f"[{model}]"
    return cid[:-len(suffix)] if model and cid.endswith(suffix) else cid


def models_aggregates(records: Sequence[RecordLike],
                      group_stats: Callable[[Sequence[RecordLike]], dict[str, Any]],
                      ) -> dict[str, Any]:
    """``{"models": {name: group_stats(its records)}, "model_comparison": ...}`` for a run
    with per-model cases; ``{}`` otherwise (the reports of a single-model run are unchanged).
    ``group_stats`` is :func:`.casestats.group_stats`, passed in."""
    by_model: dict[str, list[RecordLike]] = {}
    for rec in records:
        model = model_of(rec)
        if model is not None:
            by_model.setdefault(model, []).append(rec)
    if not by_model:
        return {}
    return {"models": {m: group_stats(recs) for m, recs in sorted(by_model.items())},
            "model_comparison": compare_models(by_model)}


def compare_models(by_model: Mapping[str, Sequence[RecordLike]]) -> ModelComparison:
    """Each pair's McNemar test and the cases on which the models disagree."""
    from ..baseline.significance import mcnemar
    from ..baseline.verdicts import judged_outcome

    names = sorted(by_model)
    outcomes: dict[tuple[str, str], dict[str, str | None]] = {}
    for model in names:
        for rec in by_model[model]:
            key = (str(rec.get("file") or ""), written_id(rec))
            outcome = judged_outcome(rec)
            outcomes.setdefault(key, {})[model] = outcome if isinstance(outcome, str) else None
    pairs: list[ModelPair] = []
    judged = PASSED_OUTCOMES | FAILED_OUTCOMES
    for a, b in combinations(names, 2):
        both = [(per[a], per[b]) for per in outcomes.values()
                if per.get(a) in judged and per.get(b) in judged]
        a_only = sum(x in PASSED_OUTCOMES and y in FAILED_OUTCOMES for x, y in both)
        b_only = sum(y in PASSED_OUTCOMES and x in FAILED_OUTCOMES for x, y in both)
        pairs.append({"a": a, "b": b, "cases": len(both), "a_only": a_only, "b_only": b_only,
                      "p_value": mcnemar(a_only, b_only),
                      "better": a if a_only > b_only else b if b_only > a_only else None})
    disagree: list[Disagreement] = [
        {"case": cid, "file": file, "outcomes": {m: per.get(m) for m in names}}
        for (file, cid), per in sorted(outcomes.items())
        if len(per) == len(names) and len(set(per.values())) > 1]
    return {"models": names, "pairs": pairs, "disagreements": disagree[:MAX_DISAGREEMENTS],
            "disagreement_count": len(disagree)}
