"""The engine's steps around a kind's score: what a case's outcome holds, the usage a source
reported turned into metrics and cost, the near-miss explanation of a failure, and a
prediction failure counted as the model's.

Why apart from :mod:`.engine`: the evaluator there owns what a session shares (sources,
predictors, caches, the pool); these steps only read a case and its prediction, and are
tested on their own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import AnswerFailed, PredictionError, QueryEvalError, SourceDown
from ..metricnames import REPEAT_METRICS
from ..model import Case, Threshold
from ..predict import Prediction, Predictor


@dataclass
class CaseOutcome:
    """The verdict on one case plus everything the reports show about it."""

    status: str  # "passed" | "failed" | "error"
    metrics: dict[str, float] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    failed: list[tuple[Threshold, float | None]] = field(default_factory=list)
    predicted: Any = None
    reason: str | None = None
    error: str | None = None
    diff: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    #: What the prediction produced (see :func:`repeats.signature`), for ``consistency``.
    signature: str | None = None



def failures_count_as_model(case: Case, exc: QueryEvalError) -> bool:
    """Whether the prediction error ``exc`` is the model's failure: its source was asked and
    gave no answer (:class:`AnswerFailed`) and the suite says ``predictions: {failures:
    model}``. Otherwise it is an infrastructure error: never forgiven by a gating mode, and
    it blocks a baseline update."""
    spec = case.prediction_source or {}
    return isinstance(exc, AnswerFailed) and spec.get("failures") == "model"


def model_failure(case: Case, exc: QueryEvalError) -> CaseOutcome:
    """A ``failed`` case for a prediction that failed (see :func:`failures_count_as_model`):
    the gating modes and the baseline treat it as any failure with a reason (a regression
    when it passed in the baseline, known when it failed there too). The metrics its
    thresholds require a minimum of score 0, as for a query that failed, so that their means
    count the case."""

    metrics = {m: 0.0 for m, t in case.thresholds.items()
               if t.min is not None and m not in REPEAT_METRICS}
    reason = f"{exc.reason()} (the model's failure: predictions.failures: model)"
    return CaseOutcome("failed", metrics, reason=reason,
                       details={"prediction_failure": str(exc)}, signature="error:" + reason)


def near_miss(case: Case, metrics: dict[str, float], relaxed: Callable[..., Any],
               details: dict[str, Any], diff: list[str]) -> None:
    """Which relaxations would make the failing case pass (``details.near_miss``, a diff line);
    never a metric or a verdict. A relaxation that breaks is left out, never the case. Only
    the metrics the case's thresholds judge are computed under the relaxations."""
    from ..rules.nearmiss import describe, flips, table_metrics_of

    thresholds = {m: t for m, t in case.thresholds.items() if m not in REPEAT_METRICS}
    try:
        values = relaxed(table_metrics_of(thresholds))
    except Exception as exc:  # an explanation must never fail the case
        details["near_miss_error"] = f"{type(exc).__name__}: {exc}"
        return
    names = flips(thresholds, metrics, values)
    details["near_miss"] = names
    if names:
        diff.append(describe(names))


def record_usage(case: Case, prediction: Prediction, metrics: dict[str, float],
                 details: dict[str, Any]) -> None:
    """The usage the source reported as metrics, and ``cost_usd`` from ``pricing:`` when the
    source reported none and the table has the model's price."""
    from ..predict.pricing import price_for

    for key, value in prediction.usage.items():
        metrics[key] = float(value)
    if not case.pricing or "cost_usd" in prediction.usage:
        return
    found = price_for(case.pricing, prediction.model, case.model_label)
    if found is None:
        named = prediction.model or case.model_label
        details["pricing"] = (f"no price for model {named!r} in pricing: (priced: "
                              f"{', '.join(sorted(case.pricing))})" if named else
                              "no model named: set model: in queryeval.yaml to price this run")
        return
    model, price = found
    cost = price.cost(prediction.usage)
    if cost is None:
        details["pricing"] = "the source reported no prompt_tokens and completion_tokens to price"
        return
    metrics["cost_usd"] = cost
    details["priced_as"] = model


def ask(predictor: Predictor, case: Case) -> Prediction:
    """``predictor.predict(case)``; a live source's PredictionError is re-raised as
    :class:`AnswerFailed` (asked, no answer), which ``failures: model`` may count as the
    model's failure. A fixed source's (a file's) missing prediction stays what it is. Used for
    a case and for each turn of a conversation."""
    try:
        return predictor.predict(case)
    except (AnswerFailed, SourceDown):
        raise
    except PredictionError as exc:
        if predictor.fixed:
            raise
        raise AnswerFailed(str(exc)) from None
