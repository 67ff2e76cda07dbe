"""The clarification rules a suite states: the ``expect: clarify`` value, the thresholds such a
case is judged by (``clarified``, ``asks_about``), and the checks of its ``clarification:`` and
``reply:`` keys.

Why here and not beside the recognition of a question back (:mod:`..engine.clarify`): suite
reading checks these keys and sets these thresholds when it reads a case, and suite reading is
on a floor below the engine (docs/architecture.md, floors).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..metricnames import UNANSWERED_BOUNDS
from ..model import Case, Threshold
from .thresholds import judges_answer

#: ``expect:`` value: a question back is the right output.
CLARIFY = "clarify"
#: The threshold an ``expect: clarify`` case is judged by, and the one ``asks_about`` adds.
CLARIFIED = "clarified"
ASKS_ABOUT = "asks_about"
#: The keys ``clarification:`` takes.
CLARIFICATION_KEYS = ("asks_about",)


def check_case(entry: Mapping[str, object], expect: object
               ) -> list[tuple[object, object, str, str]]:
    """The problems of a case's ``clarification:`` and ``reply:`` keys, as ``(container, key,
    key path, message)`` for the case reader to locate; ``expect`` is the case's value."""
    problems: list[tuple[object, object, str, str]] = []
    for key in ("clarification", "reply"):
        if key in entry and expect != CLARIFY:
            problems.append((entry, key, key, f"only a case with expect: clarify has "
                             f"{key}: (expect is {expect or 'answer'!r})"))
    if problems:
        return problems
    problems.extend(_spec_problems(entry))
    if "reply" in entry:
        reply = entry["reply"]
        if not isinstance(reply, str) or not reply.strip():
            problems.append((entry, "reply", "reply", "must be the user's reply (non-blank text)"))
        elif "gold" not in entry and "gold_result" not in entry:
            problems.append((entry, "reply", "reply", "a reply continues the conversation to a "
                             "gold turn: give the gold the reply leads to (gold or gold_result)"))
    else:
        for key in ("gold", "gold_result"):
            if key in entry:
                problems.append((entry, key, key, f"a case with expect: clarify has no {key} "
                                 "unless a reply: leads to it (the right output of the "
                                 "question is a question back)"))
    if "conversation" in entry:
        problems.append((entry, "conversation", "conversation", "expect: clarify on a "
                         "conversation belongs on the user turn that should be clarified"))
    return problems


def check_turn(raw: Mapping[str, object], expect: object
               ) -> list[tuple[object, object, str, str]]:
    """The same for a user turn of a written ``conversation:`` (paths below the turn's): a
    turn that expects a question back has no gold, and its user's answer is the next user
    turn, written as such."""
    problems: list[tuple[object, object, str, str]] = []
    if "clarification" in raw and expect != CLARIFY:
        problems.append((raw, "clarification", "clarification", "only a turn with expect: "
                         f"clarify has clarification: (expect is {expect or 'answer'!r})"))
    if "reply" in raw:
        problems.append((raw, "reply", "reply", "in a conversation the user's reply is the "
                         "next user turn: write it as one (role: user, content: ..., gold: ...)"))
    if expect == CLARIFY:
        problems.extend((raw, k, k, f"a turn with expect: clarify has no {k}: the right output "
                         "is a question back") for k in ("gold", "gold_result") if k in raw)
        problems.extend(_spec_problems(raw))
    return problems


def _spec_problems(entry: Mapping[str, object]) -> list[tuple[object, object, str, str]]:
    """The problems of ``clarification:`` in ``entry`` (a case or a turn)."""
    spec = entry.get("clarification")
    if spec is None:
        return []
    if not isinstance(spec, Mapping):
        return [(entry, "clarification", "clarification",
                 "must be a mapping: {asks_about: [terms]}")]
    problems: list[tuple[object, object, str, str]] = [
        (spec, key, f"clarification.{key}",
         f"unknown key (known: {', '.join(CLARIFICATION_KEYS)})")
        for key in spec if key not in CLARIFICATION_KEYS]
    if "asks_about" in spec and not _terms_ok(spec.get("asks_about")):
        problems.append((spec, "asks_about", "clarification.asks_about",
                         "must be a term or a non-empty list of terms (non-blank text)"))
    return problems


def _terms_ok(value: object) -> bool:
    if isinstance(value, str):
        return bool(value.strip())
    return isinstance(value, list) and bool(value) and all(
        isinstance(v, str) and v.strip() for v in value)


def asks_about_terms(case: Case) -> tuple[str, ...]:
    """The case's ``clarification.asks_about`` terms (none when not given)."""
    spec = case.clarification or {}
    terms = spec.get("asks_about")
    if isinstance(terms, str):
        return (terms,)
    return tuple(t for t in terms if isinstance(t, str)) if isinstance(terms, list) else ()


def clarify_thresholds(case: Case, written: Mapping[str, object]) -> None:
    """An ``expect: clarify`` case is judged by ``clarified >= 1`` (and ``asks_about >= 1``
    with terms) unless its own thresholds bound them; without a reply, bounds on answer
    metrics inherited from the suite mean nothing there and are dropped."""
    names = [CLARIFIED, *([ASKS_ABOUT] if asks_about_terms(case) else [])]
    kept = dict(case.thresholds) if case.reply is not None else {
        m: t for m, t in case.thresholds.items()
        if not judges_answer(m) or m in UNANSWERED_BOUNDS}
    bounds = {m: case.thresholds.get(m, Threshold(m, min=1.0)) for m in names}
    case.thresholds = {**kept, **bounds}
    defaults = [m for m in names if m not in written]
    case.default_thresholds = defaults if case.reply is None else \
        [*case.default_thresholds, *defaults]
