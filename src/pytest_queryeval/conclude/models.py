"""The old path of :mod:`pytest_queryeval.report.model_pairs` (the models table's figures),
kept so an import of it written before the move still works; the code moved below the report
writers because ``queryeval view`` compares its models' columns with it."""

from __future__ import annotations

from ..report.model_pairs import (
    Disagreement,
    ModelComparison,
    ModelPair,
    compare_models,
    model_of,
    models_aggregates,
    written_id,
)

__all__ = ["Disagreement", "ModelComparison", "ModelPair", "compare_models", "model_of",
           "models_aggregates", "written_id"]
