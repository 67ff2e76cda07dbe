"""A sql/sparql/json case's ``conversation:`` read into :class:`~..model.Turn` objects
(issue 42, docs/conversations.md), every problem located at its turn's line.

Why apart from :mod:`.cases`: a conversation is a list of small cases (each user turn with a
gold is scored as one case of the kind), with rules of its own (roles, turn keys, the turn
numbers a predictions file names, the case-level prediction list); the reader there calls
:func:`read_conversation` once the case's thresholds are resolved. SDMX conversations keep
their own format (:mod:`..kinds.sdmx`) and never come here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, cast

from .. import kinds as kind_registry
from .._util.wording import suggest
from .._yaml.yamlload import LocDict, plain
from ..metricnames import CONVERSATION_METRICS, INTERACTION_ACCURACY
from ..model import MISSING, Case, Kind, Threshold, Turn
from ..results import ResultTable
from ..rules.thresholds import apply_default, judges_answer, parse_threshold


class _Errors(Protocol):
    """The reader's located messages (:class:`.cases._Errors`)."""

    items: list[str]

    def add(self, container: object, key: object, path: str, message: str) -> None: ...

#: ``history:`` values: what an earlier turn's assistant answer is when a later turn is asked.
HISTORY_MODES = ("gold", "predicted")
#: ``conversation_scoring:`` values (:mod:`..metrics.tsse`): a missing turn scores 0, or is
#: dropped as the Spider test-suite evaluator's ``zip`` drops it.
SCORING_MODES = ("all", "tsse")
#: Keys of a user turn (``expect``, ``clarification``, ``reply``: abstention and
#: clarification per turn, docs/abstention.md).
USER_TURN_KEYS = frozenset({"role", "content", "gold", "gold_result", "predicted", "expect",
                            "clarification", "reply", "thresholds"})
#: Keys of a scripted assistant turn: history, sent as written, never scored.
ASSISTANT_TURN_KEYS = frozenset({"role", "content"})
#: The keys that make a user turn scored.
_GOLD_KEYS = ("gold", "gold_result")


def has_turns(entry: object, kind: str) -> bool:
    """Whether a case entry is a conversation of scored turns (sql, sparql, json)."""
    return isinstance(entry, dict) and "conversation" in entry and \
        kind_registry.declares(kind, "conversation_turns")


def read_conversation(case: Case, entry: LocDict, merged: dict[str, Any], kp: Callable[[str], str],
                      errors: _Errors, kind: Kind, is_metric: Callable[[str, str], bool] | None,
                      record_only: bool) -> None:
    """Fill ``case.turns``, ``case.history_mode``, the case's and each turn's thresholds, and
    its question from ``entry["conversation"]``; every problem goes to ``errors``."""
    before = len(errors.items)
    _read_modes(case, entry, merged, kp, errors)
    _refuse_case_golds(case, entry, merged, kp, errors)
    turns = _read_turns(entry, kp, errors)
    if turns is None:
        return
    scored = [t for t in turns if t.scored]
    if not scored and len(errors.items) == before:
        errors.add(entry, "conversation", kp("conversation"), "no scored turn: give at least "
                   "one user turn a gold (gold: or gold_result:)")
    _case_predictions(case, entry, scored, kp, errors)
    _thresholds(case, turns, entry, kp, errors, kind, is_metric, record_only)
    case.turns = turns
    if case.difficulty is None and len(errors.items) == before:
        from ..rules.conversation import conversation_difficulty

        case.difficulty = conversation_difficulty(kind, case)
    if case.question is None:
        case.question = " / ".join(t.question for t in turns)


def _read_modes(case: Case, entry: LocDict, merged: dict[str, Any], kp: Callable[[str], str],
                errors: _Errors) -> None:
    """``history:`` and ``conversation_scoring:`` may come from a file header or the suite, so
    a wrong value is located at the case's key when it has one, else at its conversation."""
    mode = merged.get("history", "gold")
    if mode not in HISTORY_MODES:
        errors.add(entry, "history" if "history" in entry else "conversation", kp("history"),
                   f"must be one of {', '.join(HISTORY_MODES)}, not {mode!r}")
    else:
        case.history_mode = str(mode)
    scoring = merged.get("conversation_scoring", "all")
    if scoring not in SCORING_MODES:
        key = "conversation_scoring" if "conversation_scoring" in entry else "conversation"
        errors.add(entry, key, kp("conversation_scoring"),
                   f"must be one of {', '.join(SCORING_MODES)}, not {scoring!r}")
    else:
        case.conversation_scoring = str(scoring)


def _refuse_case_golds(case: Case, entry: LocDict, merged: dict[str, Any],
                       kp: Callable[[str], str], errors: _Errors) -> None:
    """A conversation's golds belong to its user turns: a case-level one (or a file header's,
    which every case of the file inherits) would be silently ignored."""
    for key in ("gold", "gold_result", "predicted_result"):
        if merged.get(key) is not None and key in entry:
            errors.add(entry, key, kp(key), f"a conversation case gives its golds on its user "
                       f"turns: remove the case-level {key} (or the conversation)")
        elif merged.get(key) is not None:  # a file header's: its cases are conversations
            errors.add(entry, "conversation", key, f"the file's {key} cannot apply to conversation case "
                       f"{case.id!r}: give each turn its gold")


def _read_turns(entry: LocDict, kp: Callable[[str], str], errors: _Errors) -> list[Turn] | None:
    """The user turns in order, each scripted assistant turn kept as the replies of the user
    turn before it; ``None`` when there is no list of turns to read at all."""
    turns_value = entry["conversation"]
    if not isinstance(turns_value, list) or not turns_value:
        errors.add(entry, "conversation", kp("conversation"),
                   "must be a non-empty list of turns (role: user | assistant, content: ...)")
        return None
    turns: list[Turn] = []
    number = 0
    for i, raw in enumerate(turns_value):
        path = kp(f"conversation[{i}]")
        if not isinstance(raw, dict):
            errors.add(turns_value, i, path, "a turn must be a mapping (role, content, ...)")
            continue
        role = raw.get("role")
        if role not in ("user", "assistant"):
            errors.add(raw, "role", f"{path}.role",
                       f"must be user or assistant, not {role!r}")
            continue
        _check_turn_keys(raw, role, path, errors)
        content = raw.get("content")
        if not isinstance(content, str) or (role == "user" and not content.strip()):
            errors.add(raw, "content" if "content" in raw else "role", f"{path}.content",
                       "a turn needs its text (content: ...)")
            continue
        if role == "assistant":
            if turns:
                turns[-1].replies.append(content)
            else:
                errors.add(raw, "role", f"{path}.role", "the conversation starts with the "
                           "user: an assistant turn answers the user turn before it")
            continue
        number += 1
        turns.append(_user_turn(cast(LocDict, raw), i, number, content, path, errors))
    return turns


def _check_turn_keys(raw: dict[Any, Any], role: str, path: str, errors: _Errors) -> None:
    """A user turn's key on an assistant turn is told apart from a misspelt key: the author
    meant it for the user turn that assistant turn answers."""
    allowed = USER_TURN_KEYS if role == "user" else ASSISTANT_TURN_KEYS
    for key in raw:
        if key in allowed:
            continue
        if role == "assistant" and key in USER_TURN_KEYS:
            errors.add(raw, key, f"{path}.{key}",
                       f"an assistant turn is history, sent as written and never scored: "
                       f"put {key} on the user turn it answers")
        else:
            errors.add(raw, key, f"{path}.{key}", f"unknown key{suggest(str(key), allowed)}")


def _user_turn(raw: LocDict, index: int, number: int, content: str, path: str,
               errors: _Errors) -> Turn:
    turn = Turn(number=number, index=index, question=content, raw=plain(raw))
    turn.gold = plain(raw.get("gold"))
    if "predicted" in raw:
        turn.predicted = plain(raw["predicted"])
    expect = raw.get("expect", "answer")
    from ..rules.abstain import EXPECT_VALUES

    known = EXPECT_VALUES  # answer, abstain, clarify
    if expect not in known:
        errors.add(raw, "expect", f"{path}.expect",
                   f"must be one of {', '.join(known)}, not {expect!r}")
    else:
        turn.expect = str(expect)
    if turn.expect == "clarify" or "clarification" in raw or "reply" in raw:
        from ..rules.clarify import check_turn

        for container, key, sub, message in check_turn(raw, turn.expect):
            errors.add(container, key, f"{path}.{sub}", message)
    if turn.expect == "abstain":
        for key in _GOLD_KEYS:
            if key in raw:
                errors.add(raw, key, f"{path}.{key}", f"a turn with expect: abstain has no "
                           f"{key}: the right output is no answer (remove one of the two)")
    recorded = raw.get("gold_result")
    if recorded is not None:
        if isinstance(recorded, str | list) and all(isinstance(v, str) for v in
                                                    ([recorded] if isinstance(recorded, str)
                                                     else recorded)):
            errors.add(raw, "gold_result", f"{path}.gold_result", "a turn's gold_result is a "
                       "recorded table (columns: [...], rows: [[...]]), not a CSV file")
        else:
            try:
                turn.gold_result = ResultTable.from_recorded(plain(recorded))
            except (ValueError, TypeError, AttributeError, KeyError) as exc:
                errors.add(raw, "gold_result", f"{path}.gold_result", str(exc))
    return turn


def _case_predictions(case: Case, entry: LocDict, scored: list[Turn], kp: Callable[[str], str],
                      errors: _Errors) -> None:
    """A case-level ``predicted:`` is a list, one prediction per scored turn in order."""
    if case.predicted is MISSING:
        return
    value = case.predicted
    if not isinstance(value, list):
        errors.add(entry, "predicted", kp("predicted"), "a conversation's predicted: is a list "
                   "with one prediction per scored turn (or predicted: on each turn)")
        return
    if any(t.predicted is not MISSING for t in scored):
        errors.add(entry, "predicted", kp("predicted"), "predictions are given both per turn "
                   "and as the case's list: keep one of the two")
        return
    if len(value) > len(scored):
        errors.add(entry, "predicted", kp("predicted"), f"{len(value)} predictions for "
                   f"{len(scored)} scored turns")
        return
    for turn, predicted in zip(scored, value, strict=False):  # fewer: the rest are missing
        turn.predicted = predicted


def _thresholds(case: Case, turns: list[Turn], entry: LocDict, kp: Callable[[str], str],
                errors: _Errors, kind: Kind, is_metric: Callable[[str, str], bool] | None,
                record_only: bool) -> None:
    """The case keeps the bounds on its conversation metrics (by default every scored turn
    passes: ``interaction_accuracy >= 1``); each turn is judged by the others, then its own
    ``thresholds:``, then the kind's default when none of them judges its answer."""
    conversation = {m: t for m, t in case.thresholds.items() if m in CONVERSATION_METRICS}
    shared = {m: t for m, t in case.thresholds.items() if m not in CONVERSATION_METRICS}
    defaults = [m for m in case.default_thresholds if m not in CONVERSATION_METRICS]
    for turn in turns:
        if not turn.scored:
            continue
        own = dict(shared)
        spec = turn.raw.get("thresholds")
        raw = entry["conversation"][turn.index]
        path = kp(f"conversation[{turn.index}].thresholds")
        if spec is not None and not isinstance(spec, dict):
            errors.add(raw, "thresholds", path, "must be a mapping of metric: bound")
        elif spec:
            container = raw["thresholds"]
            for metric, bound in spec.items():
                name = str(metric)
                if name in CONVERSATION_METRICS or (is_metric is not None
                                                    and not is_metric(case.kind, name)):
                    errors.add(container, metric, f"{path}.{name}",
                               f"unknown metric for a turn of kind {case.kind}")
                    continue
                try:
                    own[name] = parse_threshold(name, bound)
                except ValueError as exc:
                    errors.add(container, metric, f"{path}.{name}", str(exc))
            if any(judges_answer(m) for m in spec):  # the turn's own bound replaces defaults
                own = {m: t for m, t in own.items() if m not in defaults or m in spec}
        apply_default(own, kind, case, record_only=record_only)
        turn.thresholds = own
    case.thresholds = conversation or {
        INTERACTION_ACCURACY: Threshold(INTERACTION_ACCURACY, min=1.0)}
    case.default_thresholds = [] if conversation else [INTERACTION_ACCURACY]
