"""Google EvalBench 1.20.0's agent scores: ``TrajectoryMatcher``, ``AgentSteps`` and
``TurnCount``, reproduced to the float.

Reference: GoogleCloudPlatform/evalbench, release 1.20.0 as published on PyPI
(``google_evalbench-1.20.0-py3-none-any.whl``, sha256 ac31c475…45ad3e):
``evalbench/scorers/trajectorymatcher.py``, ``scorers/agentsteps.py``,
``scorers/turncount.py`` and ``generators/models/tool_naming.py``
(``looks_like_canonical_mcp_name``). Apache-2.0. The oracle, made by running them unmodified,
is ``tests/data/evalbench/``.

Why reproduce rather than score our own way: suites migrating from EvalBench compare our
number with theirs. Its rules, kept as they are:

* a truthy ``generated_error`` scores 0.0, before anything else;
* ``None`` (or any falsy value) on either side is the empty trajectory; anything else that is
  not a ``list`` (a tuple, a string, a dict) scores 0.0;
* with ``filter_native_tools`` (its default) a name counts only if it looks like
  ``<server>__<tool>`` with both parts non-empty (``str.partition("__")``), so native tools
  drop out of both sides; both sides empty then scores 100.0;
* ``enforce_order`` false (its default): Jaccard of the two name **sets** × 100; true:
  ``(1 - levenshtein / max_len) × 100``.

The set is a quirk: an agent that runs the same query nine times scores like one that ran it
once. :func:`trajectory_score` keeps it (the metric ``trajectory_match``, EvalBench's number);
:func:`multiset_score` is the correction beside it (``trajectory_match_multiset``): the same
rules with the Jaccard of the multisets, so each repeated call is one more element of the
union.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

#: EvalBench's canonical separator between an MCP server and its tool.
SEPARATOR = "__"


def looks_like_mcp(name: object) -> bool:
    """EvalBench's ``looks_like_canonical_mcp_name``: ``x__y`` with both parts non-empty."""
    if not name:
        return False
    server, sep, tool = str(name).partition(SEPARATOR)
    return bool(sep and server and tool)


def _prepare(expected: object, actual: object, generated_error: object, filter_native: bool,
             ) -> tuple[list[Any], list[Any], tuple[float, str] | None]:
    """Both sides as the reference compares them, or the score a rule gives first."""
    if generated_error:
        return [], [], (0.0, f"Generation error: {generated_error}")
    expected = expected or []
    actual = actual or []
    if not isinstance(expected, list) or not isinstance(actual, list):
        return [], [], (0.0, "Trajectory data must be lists.")
    if filter_native:
        expected = [t for t in expected if looks_like_mcp(t)]
        actual = [t for t in actual if looks_like_mcp(t)]
    return expected, actual, None


def levenshtein(a: Sequence[object], b: Sequence[object]) -> int:
    """Edit distance of two name sequences (insertion, deletion, substitution: 1 each)."""
    if not a:
        return len(b)
    if not b:
        return len(a)
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (0 if x == y else 1))
        prev = cur
    return prev[-1]


def trajectory_score(expected: object, actual: object, *, enforce_order: bool = False,
                     filter_native_tools: bool = True, generated_error: object = None,
                     ) -> tuple[float, str]:
    """EvalBench's ``TrajectoryMatcher.compare`` score (0-100) and a short reason."""
    exp, act, ruled = _prepare(expected, actual, generated_error, filter_native_tools)
    if ruled is not None:
        return ruled
    if not exp and not act:
        return 100.0, "both trajectories are empty"
    if enforce_order:
        distance = levenshtein(exp, act)
        max_len = max(len(exp), len(act))
        score = (max(0.0, 1.0 - (distance / max_len)) if max_len > 0 else 1.0) * 100.0
        return score, f"edit distance {distance} over {max_len} calls"
    e, a = set(exp), set(act)
    union = len(e | a)
    score = (len(e & a) / union if union else 1.0) * 100.0
    return score, f"{len(e & a)} of {union} distinct tools shared"


def multiset_score(expected: object, actual: object, *, enforce_order: bool = False,
                   filter_native_tools: bool = True, generated_error: object = None,
                   ) -> tuple[float, str]:
    """:func:`trajectory_score` with repeated calls counted (multiset Jaccard); the ordered
    mode already counts them and is the same."""
    if enforce_order:
        return trajectory_score(expected, actual, enforce_order=True,
                                filter_native_tools=filter_native_tools,
                                generated_error=generated_error)
    exp, act, ruled = _prepare(expected, actual, generated_error, filter_native_tools)
    if ruled is not None:
        return ruled
    if not exp and not act:
        return 100.0, "both trajectories are empty"
    e, a = Counter(exp), Counter(act)
    shared, union = sum((e & a).values()), sum((e | a).values())
    return shared / union * 100.0, f"{shared} of {union} calls shared, repeats counted"


def _history(value: object) -> list[Any] | str:
    """The conversation history list as AgentSteps/TurnCount read it, or why not."""
    if not value:
        return "No conversation history provided."
    try:
        history = json.loads(value) if isinstance(value, str) else value
        if isinstance(history, dict):
            history = history.get("conversation_history", "[]")
        if isinstance(history, str):
            history = json.loads(history)
    except json.JSONDecodeError:
        return "Failed to parse conversation history as JSON."
    if not isinstance(history, list):
        return "Conversation history is not a list."
    return history


def _steps_of(payload: object) -> int | None:
    if isinstance(payload, str):
        try:
            payload = json.loads(payload)
        except (json.JSONDecodeError, TypeError):
            return None
    if not isinstance(payload, dict):
        return None
    stats = payload.get("stats", {})
    tools = stats.get("tools", {}) if isinstance(stats, dict) else {}
    if isinstance(tools, dict) and "totalCalls" in tools:
        try:
            return int(tools["totalCalls"])
        except (TypeError, ValueError):
            pass
    calls = payload.get("tool_calls")
    return len(calls) if isinstance(calls, list) else 0


def agent_steps(history: object, generated_error: object = None) -> float:
    """EvalBench's ``agent_steps``: tool calls summed over the rounds (``stats.tools.
    totalCalls`` when a payload has it, else its ``tool_calls``' length)."""
    if generated_error:
        return 0.0
    rounds = _history(history)
    if isinstance(rounds, str):
        return 0.0
    total = 0
    for entry in rounds:
        if isinstance(entry, dict):
            total += _steps_of(entry.get("agent", "")) or 0
    return float(total)


def turn_count(history: object, generated_error: object = None) -> float:
    """EvalBench's ``turn_count``: the number of user-agent rounds in the history."""
    if generated_error:
        return 0.0
    rounds = _history(history)
    return 0.0 if isinstance(rounds, str) else float(len(rounds))
