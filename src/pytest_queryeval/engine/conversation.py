"""A sql/sparql/json conversation (issue 42, docs/conversations.md): each scored turn asked
and scored as one case of its kind, the case's verdict from its turns.

Each scored turn becomes a case of its own (:func:`turn_case`: the turn's question, gold and
thresholds, its number and the history before it) and goes through the same steps as any case
(:func:`..engine.score_prediction`: the kind's metrics, gold alternatives, recorded results,
the judge, thresholds, near misses). The conversation's record holds every turn
(``details.turns``) and the two case metrics, ``turn_accuracy`` (passed scored turns over all
of them: a turn with no prediction counts, as failed) and ``interaction_accuracy`` (1 when
every scored turn passed). Predictions are asked turn by turn, never ahead: with ``history:
predicted`` a turn's request holds the answers to the turns before it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..errors import QueryEvalError
from ..metricnames import (
    ABSTENTION_METRICS,
    AGENT_COUNT_METRICS,
    INTERACTION_ACCURACY,
    REPEAT_METRICS,
    TURN_ACCURACY,
    is_timing,
    is_usage,
)
from ..model import MISSING, Case, Kind, Turn
from ..predict import Prediction, Predictor
from ..rules.conversation import turn_case
from ..rules.thresholds import evaluate as check_thresholds
from .steps import CaseOutcome, ask, failures_count_as_model

if TYPE_CHECKING:
    from . import Evaluator

#: A turn's outcomes in ``details.turns``.
PASSED, FAILED, MISSING_TURN, ERROR = "passed", "failed", "missing", "error"


def gold_text(gold: object) -> str | None:
    """The assistant's answer a gold history shows: the gold query (the first of several
    alternatives, the first dialect's of a per-dialect gold), a JSON gold as JSON text."""
    if isinstance(gold, list) and gold and all(isinstance(g, str) for g in gold):
        gold = gold[0]
    elif isinstance(gold, dict) and gold and all(isinstance(g, str) for g in gold.values()):
        gold = next(iter(gold.values()))
    if gold is None:
        return None
    return gold if isinstance(gold, str) else json.dumps(gold, ensure_ascii=False)


def answer_text(value: object) -> str:
    """A prediction as the assistant's message of a predicted history."""
    if value is None or value is MISSING:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def run_conversation(case: Case, evaluator: Evaluator, kind: Kind) -> CaseOutcome:
    """Ask and score every scored turn in order; never raises for a problem of the case."""
    from . import score_prediction

    history: list[dict[str, str]] = []
    entries: list[dict[str, Any]] = []
    outcomes: list[CaseOutcome | None] = []
    inline = _inline(case)
    used: list[Predictor] = []
    for turn in case.turns or ():
        answer: str | None = None
        if turn.scored:
            one = turn_case(case, turn, [dict(m) for m in history])
            outcome: CaseOutcome | None
            try:
                prediction = _predict(one, case, evaluator, inline, used)
            except QueryEvalError as exc:
                outcome = _failed_prediction(one, exc)
            except Exception as exc:
                from . import _internal

                outcome = CaseOutcome(ERROR, error=_internal("predictor", exc))
            else:
                outcome = None if prediction is None else \
                    score_prediction(one, evaluator, kind, prediction)
            outcomes.append(outcome)
            entries.append(_entry(one, turn, outcome))
            answer = gold_text(turn.gold) if case.history_mode == "gold" else (
                None if outcome is None else answer_text(outcome.predicted))
            if turn.expect == "clarify" and outcome is not None:  # no gold: what it asked
                from .clarify import asked_back

                answer = asked_back(outcome)
        history.append({"role": "user", "content": turn.question})
        if answer is not None:
            history.append({"role": "assistant", "content": answer})
        history.extend({"role": "assistant", "content": reply} for reply in turn.replies)
    return _unasked(case, used, _conclude(case, entries, outcomes))


def _unasked(case: Case, used: list[Predictor], outcome: CaseOutcome) -> CaseOutcome:
    """An agent conversation gated on a count whose predictions file holds a row for a turn
    no one asks (a history-only turn, a turn past its user turns): what the agent did there
    is in no turn's counts, so they are not established (the case's error, naming the row),
    never a pass with 0 (issue 58, the twelfth re-probe's H4)."""
    from ..metricnames import AGENT_COUNT_METRICS

    rows = getattr(used[0], "unasked_turns", None) if used else None
    gated = any(m in AGENT_COUNT_METRICS and m != "leaks"
                for t in case.turns or () if t.scored for m in t.thresholds)
    if case.agent is None or not gated or not callable(rows):
        return outcome
    asked = {t.number for t in case.turns or () if t.scored}
    where = rows([k for k in (case.id, case.fanned_from) if k is not None], asked)
    if not where:
        return outcome
    why = (f"the agent's counts could not be established: {where[0]}, a turn the conversation "
           f"does not score (its scored turns: {', '.join(map(str, sorted(asked)))}): what the "
           "agent did there is in no turn's counts; give that user turn a gold, or remove "
           "the row")
    return CaseOutcome(ERROR, outcome.metrics, predicted=outcome.predicted, error=why,
                       details=outcome.details, signature="error:" + why)


def _inline(case: Case) -> bool:
    """Whether the case writes its predictions (per turn, or the case's list)."""
    return case.predicted is not MISSING or any(t.predicted is not MISSING
                                                for t in case.turns or ())


def _predict(one: Case, case: Case, evaluator: Evaluator, inline: bool,
             used: list[Predictor]) -> Prediction | None:
    """The turn's prediction, by the precedence of :meth:`..Evaluator.predict`; None when the
    suite holds none for this turn (an inline conversation without it, a predictions file
    without its row): the turn is ``missing``."""
    from ..predict.file import MissingTurn

    if evaluator.override is not None and (not inline or evaluator.override_inline):
        predictor: Predictor = evaluator.override
    elif inline:
        return None if one.predicted is MISSING else Prediction(one.predicted)
    else:
        got = evaluator.hook_or_source(case, one, "its turns 'predicted:'")
        if isinstance(got, Prediction):
            return got
        predictor = got
    if not used:
        used.append(predictor)
    try:
        return ask(predictor, one)
    except MissingTurn:  # a file's (fixed: re-raised as is by ask)
        return None


def _failed_prediction(one: Case, exc: QueryEvalError) -> CaseOutcome:
    """A turn whose source failed: the model's failure under ``failures: model``, else an
    error (the case's, as for a one-question case)."""
    if failures_count_as_model(one, exc):
        from .steps import model_failure

        return model_failure(one, exc)
    return CaseOutcome(ERROR, error=exc.reason())


def _zeros(one: Case) -> dict[str, float]:
    """What a missing turn scores: 0 on every metric its thresholds require a minimum of (the
    zeros of a prediction that failed), so that every mean counts it."""
    return {m: 0.0 for m, t in one.thresholds.items()
            if t.min is not None and m not in REPEAT_METRICS}


def _entry(one: Case, turn: Turn, outcome: CaseOutcome | None) -> dict[str, Any]:
    """The turn's ``details.turns`` entry (docs/conversations.md)."""
    entry: dict[str, Any] = {"turn": turn.number, "question": turn.question, "gold": turn.gold}
    if outcome is None:
        entry.update(predicted=None, outcome=MISSING_TURN, metrics=_zeros(one),
                     reason="no prediction for this turn")
        return entry
    entry.update(predicted=outcome.predicted, outcome=outcome.status,
                 metrics=dict(outcome.metrics),
                 reason=outcome.error if outcome.status == ERROR else (
                     outcome.reason or _failed_text(outcome)))
    if turn.expect != "answer":
        entry["expect"] = turn.expect
    prediction = outcome.details.get("prediction")
    if isinstance(prediction, dict) and isinstance(prediction.get("cache"), str):
        # how the turn's answer was had (a turn is one request): the run's cache counter
        entry["prediction_cache"] = prediction["cache"]
    asked = outcome.details.get("clarification")  # engine/clarify.py: asked back or expected
    if isinstance(asked, dict):
        entry["clarified"] = bool(asked.get("clarified"))
    if outcome.diff:
        entry["diff"] = list(outcome.diff)
    agent = outcome.details.get("agent")
    if isinstance(agent, dict) and agent.get("leaks"):  # the turn's protected values seen
        entry["leaks"] = agent["leaks"]
    return entry


def _failed_text(outcome: CaseOutcome) -> str | None:
    if not outcome.failed:
        return None
    return ", ".join(f"{t.metric} = {'-' if v is None else f'{v:g}'} (needs {t.describe()})"
                     for t, v in outcome.failed)


def _conclude(case: Case, entries: list[dict[str, Any]],
              outcomes: list[CaseOutcome | None]) -> CaseOutcome:
    """The conversation's verdict: an error when a turn could not be scored, else its
    thresholds on ``turn_accuracy`` / ``interaction_accuracy`` (by default every turn passes)."""
    details: dict[str, Any] = {"turns": entries, "history": case.history_mode}
    all_entries = entries
    if case.conversation_scoring == "tsse":  # the reference's zip: missing turns not counted
        entries = [e for e in entries if e["outcome"] != MISSING_TURN]
        details["dropped_turns"] = len(all_entries) - len(entries)
    n = len(entries)
    passed = sum(1 for e in entries if e["outcome"] == PASSED)
    metrics = _means(entries)
    metrics[TURN_ACCURACY] = passed / n if n else 0.0
    # tsse: a conversation of dropped turns only passes too, as the reference's all([])
    tsse = "dropped_turns" in details
    metrics[INTERACTION_ACCURACY] = 1.0 if passed == n and (n or tsse) else 0.0
    predicted = [e["predicted"] for e in all_entries]
    signature = "conversation:" + json.dumps(
        [None if o is None else o.signature for o in outcomes], default=str)
    errors = [f"turn {e['turn']}: {e['reason']}" for e in entries if e["outcome"] == ERROR]
    if errors:
        return CaseOutcome(ERROR, metrics, predicted=predicted, error="; ".join(errors),
                       details=details, signature=signature)
    failed = check_thresholds(case.thresholds, metrics)
    diff: list[str] = []
    reasons: list[str] = []
    for entry in entries:
        if entry["outcome"] == PASSED:
            continue
        text = f"turn {entry['turn']}: {entry['outcome']}" + (
            f": {entry['reason']}" if entry["reason"] else "")
        reasons.append(text)
        diff.append(text)
        diff.extend(f"  {line}" for line in entry.get("diff", ()))
    status = FAILED if failed else PASSED
    return CaseOutcome(status, metrics, {}, failed, predicted,
                       "; ".join(reasons) if failed and reasons else None, None, diff, details,
                       signature)


#: An agent's counts over a conversation's turns: what it did in all of them (EvalBench's
#: AgentSteps and TurnCount count the whole conversation history), not a turn's mean; the
#: distinct forbidden tables and the budget flag as the largest of the turns (a sum would
#: count a table read in two turns twice; so would the distinct canaries a turn leaked).
_AGENT_LARGEST = frozenset({"forbidden_tables", "budget_exceeded", "leaks"})
_AGENT_SUMMED = frozenset(AGENT_COUNT_METRICS) - _AGENT_LARGEST


def _means(entries: list[dict[str, Any]]) -> dict[str, float]:
    """The kind's metrics over the scored turns: a score's mean (a turn without it counts 0),
    a timing's or a usage's total (what the whole conversation took and cost), an agent's
    counts over all its turns."""
    names: list[str] = []
    for entry in entries:
        names.extend(m for m in entry["metrics"] if m not in names)
    out: dict[str, float] = {}
    for name in names:
        # a turn that expects no answer or a question back has no answer metric to count 0
        # (and an answer turn no clarified): a score averages over the turns it applies to
        over = [e for e in entries if name in e["metrics"] or (
            e.get("expect", "answer") == "answer" and name not in ABSTENTION_METRICS)]
        values = [e["metrics"].get(name) for e in over]
        numbers = [float(v) for v in values if isinstance(v, int | float)]
        if is_timing(name) or is_usage(name) or name in _AGENT_SUMMED:
            out[name] = sum(numbers)
        elif name in _AGENT_LARGEST:
            out[name] = max(numbers, default=0.0)
        elif over:
            out[name] = sum(numbers) / len(over)
    return out
