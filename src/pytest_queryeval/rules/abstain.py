"""The abstention rules a suite states: which ``expect:`` a case may have, the threshold an
``expect: abstain`` case is judged by, and the ``abstain_patterns:`` and ``abstention:`` keys.

Why here and not beside the recognition of an abstention (:mod:`..engine.abstain`): suite
reading checks these keys when it reads a case or a ``queryeval.yaml``, and suite reading is on
a floor below the engine (docs/architecture.md, floors).
"""

from __future__ import annotations

import re

#: ``expect:`` values: the default, an answer; ``abstain``: no answer is the right output;
#: ``clarify``: a question back is (:mod:`..engine.clarify`).
EXPECT_VALUES = ("answer", "abstain", "clarify")
#: The threshold an ``expect: abstain`` case is judged by.
ABSTAINED = "abstained"
#: ``abstention:`` in ``queryeval.yaml``: which texts abstain. ``default``: none but those
#: matching ``abstain_patterns`` (an empty text is an answer); ``ehrsql``: also the text the
#: EHRSQL 2024 reference reads as its skip indicator ``'null'`` (:func:`..metrics.reliability.
#: skips`), so a suite of its files scores as its ``scoring_v2.py`` does.
ABSTENTION_RULES = ("default", "ehrsql")


def check_patterns(value: object) -> tuple[tuple[str, ...], str | None]:
    """``abstain_patterns:`` as regular expressions (searched case-insensitively), or why not."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        return (), "must be a list of regular expressions (strings)"
    for pattern in value:
        try:
            re.compile(pattern)
        except re.error as exc:
            return (), f"{pattern!r} is not a regular expression: {exc}"
    return tuple(value), None


def check_rule(value: object) -> str | None:
    """Why ``abstention:`` is not one of :data:`ABSTENTION_RULES`, or None."""
    if value in ABSTENTION_RULES:
        return None
    return f"must be one of {', '.join(ABSTENTION_RULES)}, not {value!r}"
