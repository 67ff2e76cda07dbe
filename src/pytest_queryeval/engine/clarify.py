"""Clarification: whether a prediction asks a question back, and the outcome of a case where
one side of (expected, predicted) is "a question back" (issue 42 item 4).

Recognised by the same means as an abstention (:mod:`.abstain`), so every prediction source
is read alike: a text matching one of the suite's ``clarify_patterns:``, a ``{"clarify":
"..."}`` object, or an ``ask_user`` tool call (OpenAI's shape: ``{"function": {"name":
"ask_user", "arguments": "{\\"question\\": ...}"}}``, alone or in ``tool_calls``). A case with
``expect: clarify`` passes when the prediction asks back and, with ``clarification:
{asks_about: [terms]}``, when its question names what is ambiguous: every term, case
insensitively, or the judge's verdict where the case has a ``judge:`` (the question is text the
system under test wrote, so the judge is shown it as data and an answer that quotes or was
asked for by it is refused, as :mod:`..judge.verdict` does for a query). A case that expects an
answer fails when the prediction asks back, with a reason that says so. Why a scripted
``reply:`` rather than a simulated user: CI must not depend on a second model's mood; the
reply turns the case into a two-turn conversation whose second turn is scored as any turn.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..metricnames import REPEAT_METRICS
from ..model import Case, Threshold
from ..rules.clarify import ASKS_ABOUT, CLARIFIED, CLARIFY, asks_about_terms
from .abstain import no_answer_metrics, tool_name
from .steps import CaseOutcome, record_usage

if TYPE_CHECKING:
    from ..model import Context, Scored
    from ..predict import Prediction

#: The tool names an agent calls to ask the user.
CLARIFY_TOOLS = frozenset({"ask_user"})
#: Characters of a clarification question kept in a record (a hostile model may send more).
QUESTION_CHARS = 2000
#: Characters of a tool call's ``arguments`` text decoded (a question is short).
_ARGUMENT_CHARS = 100_000


@dataclass(frozen=True)
class Asked:
    """A prediction that asks back: how it was recognised, and its question (``""`` when a
    tool call carried none)."""

    how: str
    question: str


def clarification(value: object, patterns: Sequence[str]) -> Asked | None:
    """How ``value`` asks a question back, or None when it does not."""
    if isinstance(value, str):
        for pattern in patterns:
            if re.search(pattern, value, re.IGNORECASE):
                return Asked(f"question matching clarify_patterns {pattern!r}", value)
        return None
    if not isinstance(value, Mapping):
        return None
    said = value.get("clarify")
    if isinstance(said, str) and said.strip():
        return Asked('{"clarify": ...}', said)
    if tool_name(value) in CLARIFY_TOOLS:
        return Asked("ask_user tool call", _tool_question(value))
    calls = value.get("tool_calls")
    if isinstance(calls, list):
        for call in calls:
            if isinstance(call, Mapping) and tool_name(call) in CLARIFY_TOOLS:
                return Asked("ask_user tool call", _tool_question(call))
    return None


def _tool_question(call: Mapping[object, object]) -> str:
    """The question an ``ask_user`` call carries: its arguments' ``question`` (OpenAI sends the
    arguments as a JSON text), else the first text among them; ``""`` when none."""
    function = call.get("function")
    args = (function if isinstance(function, Mapping) else call).get("arguments")
    if isinstance(args, str):
        try:
            args = json.loads(args[:_ARGUMENT_CHARS])
        except (ValueError, RecursionError):
            return args[:QUESTION_CHARS]
    if isinstance(args, str):
        return args
    if not isinstance(args, Mapping):
        return ""
    question = args.get("question")
    if isinstance(question, str):
        return question
    return next((v for v in args.values() if isinstance(v, str)), "")


def _folded(text: str) -> str:
    """Compared case-insensitively, compatibility forms unified, white space runs as one."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def missing_terms(question: str, terms: Sequence[str]) -> list[str]:
    """The terms the question does not mention (case-insensitive substrings)."""
    said = _folded(question)
    return [t for t in terms if _folded(t) not in said]


@dataclass
class Judged:
    """One prediction judged as a clarification turn."""

    passed: bool
    metrics: dict[str, float]
    reason: str | None
    details: dict[str, object]
    error: str | None = None


def judge_turn(case: Case, asked: Asked | None, abstained: str | None,
               ctx: Context | None) -> Judged:
    """A turn that expects a question back: ``clarified`` (and ``asks_about``) with the reason
    it failed. ``abstained`` is how the prediction abstained, if it did."""
    info: dict[str, object] = {"expected": True, "clarified": asked is not None,
                               "how": asked.how if asked else None}
    metrics = {CLARIFIED: 1.0 if asked else 0.0}
    terms = asks_about_terms(case)
    if asked is None:
        what = f"abstained ({abstained})" if abstained else "answered"
        return Judged(False, metrics if not terms else {**metrics, ASKS_ABOUT: 0.0},
                      f"{what} on a question that expects a question back (expect: clarify): "
                      "the prediction should ask (a text matching clarify_patterns, "
                      "{\"clarify\": \"...\"} or an ask_user tool call)", info)
    info["question"] = _cut(asked.question)
    reason = None
    error = None
    ok: bool | None = None
    judged: dict[str, object] = {}
    if terms:
        if case.judge is not None and ctx is not None:
            from ..judge.clarify import judge_asks_about

            ok, judged, error = judge_asks_about(case, asked.question, terms, metrics, ctx)
            info["asks_about"] = {"terms": list(terms), **judged}
            if ok is not None and not ok:
                reason = (f"the clarification question does not ask about {', '.join(terms)} "
                          f"(the judge: {judged.get('reason') or 'no reason'})")
        if ok is None and error is None:  # no judge, or its acceptance refused: the terms
            missed = missing_terms(asked.question, terms)
            ok = not missed
            info["asks_about"] = {"terms": list(terms), "missing": missed,
                                  **judged}
            if missed:
                reason = (f"the clarification question does not mention {', '.join(missed)} "
                          f"(clarification.asks_about): {_cut(asked.question, 200)!r}")
        if ok is not None:
            metrics[ASKS_ABOUT] = 1.0 if ok else 0.0
    failed = [t for m, t in case.thresholds.items()
              if m in (CLARIFIED, ASKS_ABOUT) and not t.ok(metrics.get(m))]
    return Judged(not failed and reason is None and error is None, metrics, reason, info, error)


def clarify_outcome(case: Case, predicted: object, asked: Asked | None, abstained: str | None,
                    ctx: Context | None, unanswered: Scored | None = None) -> CaseOutcome:
    """The outcome of a one-turn case that expects a question back, or whose prediction asked
    one. ``unanswered``: as for an abstention (:func:`.abstain.abstain_outcome`), the kind's
    scores of an empty answer to a case that expects an answer, so it stays in every
    reference aggregate."""
    if case.expect == CLARIFY:
        judged = judge_turn(case, asked, abstained, ctx)
        details: dict[str, object] = {"clarification": judged.details}
        if abstained:
            details["abstention"] = {"expected": False, "abstained": True, "how": abstained}
        if judged.error is not None:
            return CaseOutcome("error", judged.metrics, {}, [], predicted, None, judged.error,
                               [], details, "error:" + judged.error)
        failed: list[tuple[Threshold, float | None]] = [
            (t, judged.metrics.get(m)) for m, t in case.thresholds.items()
            if m in (CLARIFIED, ASKS_ABOUT) and not t.ok(judged.metrics.get(m))]
        return CaseOutcome("passed" if judged.passed else "failed", judged.metrics, {}, failed,
                           predicted, judged.reason, None, [], details,
                           f"clarify:{asked is not None}")
    assert asked is not None  # the engine calls this only when one side is a question back
    metrics, labels = no_answer_metrics(case, unanswered)
    metrics[CLARIFIED] = 1.0
    expects = "no answer" if case.expect == "abstain" else "an answer"
    reason = (f"asked a question back ({asked.how}) on a question that expects {expects}: "
              f"{_cut(asked.question, 200)!r}")
    failed = [(t, metrics.get(m)) for m, t in case.thresholds.items()
              if m not in REPEAT_METRICS and not t.ok(metrics.get(m))]
    details = {**(unanswered.details if unanswered is not None else {}),
               "clarification": {"expected": False, "clarified": True, "how": asked.how,
                                 "question": _cut(asked.question)}}
    if case.expect == "abstain":
        details["abstention"] = {"expected": True, "abstained": False, "how": None}
    return CaseOutcome("failed", metrics, labels, failed, predicted, reason, None, [], details,
                       "clarify:True")


def with_prediction(case: Case, prediction: Prediction, outcome: CaseOutcome) -> CaseOutcome:
    """What the source reported of a prediction that abstained or asked back (its seconds, its
    details, its tokens and cost), kept as for a scored one: a tool call costs tokens too."""
    if prediction.seconds is not None:
        outcome.metrics["prediction_seconds"] = prediction.seconds
    if prediction.details:
        outcome.details["prediction"] = prediction.details
    if prediction.usage:
        record_usage(case, prediction, outcome.metrics, outcome.details)
    return outcome


def asked_back(outcome: CaseOutcome) -> str:
    """What the assistant said in a turn that expects a question back, as the next turn's
    history: its clarification question (whatever the history mode: such a turn has no gold
    to show), else its answer as given."""
    info = outcome.details.get("clarification")
    if isinstance(info, dict) and info.get("clarified") and isinstance(info.get("question"), str):
        return str(info["question"])
    value = outcome.predicted
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _cut(text: str, limit: int = QUESTION_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + " ... [truncated]"
