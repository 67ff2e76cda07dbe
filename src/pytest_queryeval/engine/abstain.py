"""Abstention: whether a prediction declines to answer, and the outcome of a case where one side
of (expected, predicted) is "no answer".

The one place that recognises an abstention, for every kind and every prediction source, so
that a predictions file, a python callable and an HTTP service are read alike: ``null``,
``{"abstain": true}``, an ``abstain`` tool call, a text matching one of the suite's
``abstain_patterns:``, and under ``abstention: ehrsql`` the EHRSQL reference's ``'null'`` text.
An empty text is an answer (every reference scores it as a wrong one): an abstention is only
what the suite declares as one. A case with ``expect: abstain`` passes when the prediction
abstains and is never executed; a case that expects an answer fails when the prediction
abstains, with a reason that says so (the EHRSQL reliability score counts it 0, not -1:
:mod:`..metrics.reliability`, aggregated in :func:`..conclude.aggregate.abstention_aggregate`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..metricnames import REPEAT_METRICS
from ..model import Case, Context, Kind, Scored, Threshold
from ..rules.abstain import ABSTAINED
from .steps import CaseOutcome

#: The tool names an agent calls to decline.
ABSTAIN_TOOLS = frozenset({"abstain"})
EHRSQL_SKIP = "the EHRSQL skip text 'null'"


def abstention(value: object, patterns: Sequence[str], rule: str = "default",
               kind: str | None = None) -> str | None:
    """How ``value`` abstains (``null``, ``{"abstain": true}``, ``tool call abstain``,
    ``pattern <p>``; under ``rule`` ``ehrsql`` also the reference's ``'null'`` text), or None
    when it is an answer (``kind``: the case's, for the patterns). An empty or blank text is an
    answer: every reference evaluator scores it as a wrong one, and only what the suite
    declares abstains."""
    if value is None:
        return "null"
    if isinstance(value, str):
        if rule == "ehrsql":
            from ..metrics.reliability import skips

            if skips(value):
                return EHRSQL_SKIP
        return pattern_abstention(value, patterns, kind)
    if isinstance(value, Mapping):
        if value.get("abstain") is True:
            return '{"abstain": true}'
        if tool_name(value) in ABSTAIN_TOOLS:
            return "abstain tool call"
        calls = value.get("tool_calls")
        if isinstance(calls, list) and any(isinstance(c, Mapping) and tool_name(c) in ABSTAIN_TOOLS
                                           for c in calls):
            return "abstain tool call"
    return None


#: A fenced block (```` ```sql ... ``` ````, ``~~~``): its body, when a query, is code.
_FENCED_BLOCK = re.compile(r"(?P<fence>`{3,}|~{3,})[^\n]*\n(?P<body>.*?)(?:\n[ \t]*(?P=fence)[`~]*|\Z)",
                           re.DOTALL)
#: What may stand before a query's first word: blanks, comments, opening parentheses.
_LEADING = re.compile(r"(?:\s+|--[^\n]*|#[^\n]*|/\*.*?(?:\*/|\Z)|\()*", re.DOTALL)
_WORD = re.compile(r"[A-Za-z]+\b")


def is_query_text(text: str, kind: str) -> bool:
    """Whether ``text`` is a query of ``kind``: it starts (past blanks, comments and opening
    parentheses) with a word the kind declares a query starts with (``query_keywords``:
    ``SELECT``, ``WITH``, ... for SQL; ``PREFIX``, ``SELECT``, ``ASK``, ... for SPARQL), or,
    for a kind whose answers are JSON, it is a JSON object or array."""
    from .. import kindregistry as _registry

    rest = text[_LEADING.match(text).end():]  # type: ignore[union-attr]  # matches ''
    word = _WORD.match(rest)
    if word and word[0].upper() in _registry.declared_names(kind, "query_keywords"):
        return True
    if rest[:1] in ("{", "[") and _registry.declares(kind, "json_answers"):
        from .._util.boundedio import BoundedReadError, loads_json

        try:
            return isinstance(loads_json(rest), dict | list)
        except BoundedReadError:
            return False
    return False


def pattern_abstention(text: str, patterns: Sequence[str], kind: str | None) -> str | None:
    """The ``abstain_patterns`` refusal ``text`` is, or None (issue 50 item 4).

    Why not a search of the whole text: with the docs' own ``"not in the (data|database)"``,
    ``SELECT FirstName, 'not in the data' AS salary FROM Employee`` was credited as an
    abstention and a right answer ``SELECT 'not in the database' AS note`` failed as
    ``abstained``. So a text that is a query of the case's kind (:func:`is_query_text`, also
    inside the one fence that encloses it) is never a refusal, and in a text that is not, the
    fenced blocks that hold such a query are left out of the search: the patterns read the
    prose around the code, never the code."""
    if not patterns:
        return None
    searched = text
    if kind is not None:
        from ..kinds._fences import strip_fence

        if is_query_text(strip_fence(text)[0], kind):
            return None
        searched = _FENCED_BLOCK.sub(
            lambda m: " " if is_query_text(m["body"], kind) else m[0], text)
    for pattern in patterns:
        if re.search(pattern, searched, re.IGNORECASE):
            return f"refusal matching abstain_patterns {pattern!r}"
    return None


def tool_name(call: Mapping[object, object]) -> object:
    """A tool call's name (shared with :mod:`.clarify`'s ``ask_user``): ``{"name": ...}``,
    ``{"tool": ...}`` or ``{"function": {"name": ...}}``."""
    function = call.get("function")
    if isinstance(function, Mapping):
        return function.get("name")
    if "tool_calls" in call:
        return None
    return call.get("tool", call.get("name"))


#: What a question left unanswered is scored as: the empty text, which every kind reads as an
#: answer that answers nothing, as its references read a missing answer (an SQL or SPARQL text
#: that is no query, a JSON text that is no value).
NO_ANSWER = ""


def unanswered(case: Case, kind: Kind, ctx: Context) -> Scored | None:
    """The kind's scores of an empty answer to ``case`` (0 where its references give 0), or
    None when it has none: its gold fails, or a custom kind raises on the empty text (the
    case then records only the metrics its thresholds bound from below, at 0)."""
    try:
        return kind.evaluate(case, NO_ANSWER, ctx)
    except Exception:
        return None


def no_answer_metrics(case: Case, unanswered: Scored | None
                      ) -> tuple[dict[str, float], dict[str, str]]:
    """The metrics and labels of a case answered with no answer (an abstention, a question
    back): 0 for every bounded metric, then the kind's own scoring of an empty answer, so the
    case stays in every aggregate's denominator as its reference counts it."""
    metrics = {m: 0.0 for m, t in case.thresholds.items()
               if t.min is not None and m not in REPEAT_METRICS}
    labels: dict[str, str] = {}
    if unanswered is not None:
        metrics.update(unanswered.metrics)
        labels = dict(unanswered.labels)
    return metrics, labels


def abstain_outcome(case: Case, predicted: object, how: str | None,
                    unanswered: Scored | None = None) -> CaseOutcome:
    """The outcome of a case that expects abstention, or whose prediction abstained.

    ``unanswered`` is the kind's scoring of an empty answer to a case that expects one
    (:func:`unanswered`): its metrics are what every reference gives a question left
    unanswered, so the case keeps its place in every reference aggregate."""
    details: dict[str, object] = {"abstention": {"expected": case.expect == "abstain",
                                                 "abstained": how is not None, "how": how}}
    if case.expect == "abstain":
        metrics = {ABSTAINED: 1.0 if how is not None else 0.0}
        threshold = case.thresholds.get(ABSTAINED, Threshold(ABSTAINED, min=1.0))
        failed: list[tuple[Threshold, float | None]] = (
            [] if threshold.ok(metrics[ABSTAINED]) else [(threshold, metrics[ABSTAINED])])
        reason = None if how is not None else (
            "answered a question that expects no answer (expect: abstain): the prediction "
            "should abstain (null, {\"abstain\": true}, an abstain tool call or a text matching "
            "abstain_patterns)")
        return CaseOutcome("failed" if failed or reason else "passed", metrics, {}, failed,
                           predicted, reason, None, [], details, f"abstain:{how is not None}")
    # every reference metric, as its reference scores a question with no answer (the kind's
    # scoring of an empty answer): the case stays in every aggregate's denominator
    metrics, labels = no_answer_metrics(case, unanswered)
    if unanswered is not None:
        details = {**unanswered.details, **details}
    metrics[ABSTAINED] = 1.0
    reason = f"abstained ({how}) on a question that expects an answer"
    failed = [(t, metrics.get(m)) for m, t in case.thresholds.items()
              if m not in REPEAT_METRICS and not t.ok(metrics.get(m))]
    return CaseOutcome("failed", metrics, labels, failed, predicted, reason, None, [], details,
                       "abstain:True")
