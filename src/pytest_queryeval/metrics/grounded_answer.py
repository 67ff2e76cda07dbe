"""Is the agent's final answer grounded in its result? dbagenteval 0.1.0's
``numbers_grounded`` check, reproduced: every number the answer states must appear in the
result rows, in the question, or as the row count.

Reference: dbagenteval 0.1.0 as published on PyPI (``dbagenteval-0.1.0-py3-none-any.whl``,
sha256 c93d92e8…bc3c3a9), ``dbagenteval/answer.py`` (``ungrounded_numbers`` and what it
calls). MIT. The oracle, made by running it unmodified, is ``tests/data/dbagenteval/``.

Why this one: it is the only published deterministic check of a data agent's answer text,
and its rules are those a reader applies: a figure stands for the range its last shown digit
allows (``12.5`` for 12.45-12.55), a unit scales it (``1.2k``, ``2 million``), a percentage
may stand for a fraction in the rows, list numbering ("1.", "2.") is not a figure.

Beside it, the suite's tolerance: with a case's ``compare: {float_tolerance: t}`` each
figure's range is widened by ``t`` on both sides, so an answer rounding the way the suite
already forgives is not called ungrounded. Without it the verdict is the reference's.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from decimal import Decimal, InvalidOperation

_NUMBER = re.compile(r"(?<![\w.])\.\d+|\d{1,3}(?:,\d{2,3})+(?:\.\d+)?|\d+(?:\.\d+)?")
_LIST_MARKER = re.compile(r"^[ \t]*(\d+)[.)][ \t]+", re.MULTILINE)
_PERCENT = re.compile(r"\s?(?:%|percent\b)", re.IGNORECASE)
_MAGNITUDE = re.compile(
    r"(k|m|mn|bn)\b|\s?(thousand|million|billion|lakhs?|crores?)\b", re.IGNORECASE)
_MAGNITUDES = {"k": 3, "thousand": 3, "lakh": 5, "lakhs": 5, "m": 6, "mn": 6, "million": 6,
               "crore": 7, "crores": 7, "bn": 9, "billion": 9}
#: Figures of more digits are nobody's figures; the reference skips them.
_MAX_DIGITS = 60
#: Characters of an answer read (a hostile answer of megabytes is cut, and says so).
MAX_ANSWER_CHARS = 100_000


def _numbers(text: str) -> list[tuple[re.Match[str], Decimal, int]]:
    found = []
    for match in _NUMBER.finditer(text):
        token = match.group().replace(",", "")
        if len(token) > _MAX_DIGITS:
            continue
        places = len(token.split(".")[1]) if "." in token else 0
        found.append((match, Decimal(token), places))
    return found


def _cell_numbers(cells: Iterable[object]) -> list[Decimal]:
    values: list[Decimal] = []
    for cell in cells:
        if cell is None or isinstance(cell, bool):
            continue
        if isinstance(cell, int | float | Decimal):
            try:
                number = abs(Decimal(str(cell)))
            except (InvalidOperation, ValueError):
                continue
            if number.is_finite() and abs(number.adjusted()) <= _MAX_DIGITS:
                values.append(number)
        else:
            values.extend(v for _, v, _ in _numbers(str(cell)))
    return values


def _strip_list_markers(text: str) -> str:
    markers = [int(m.group(1)) for m in _LIST_MARKER.finditer(text)]
    if len(markers) < 2 or markers != list(range(1, len(markers) + 1)):
        return text
    return _LIST_MARKER.sub("", text)


def _figures(text: str) -> list[tuple[str, Decimal, Decimal, bool]]:
    text = _strip_list_markers(text)
    figures = []
    for match, value, places in _numbers(text):
        unit = _MAGNITUDE.match(text, match.end())
        scale = Decimal(1)
        if unit:
            scale = Decimal(10) ** _MAGNITUDES[(unit.group(1) or unit.group(2)).lower()]
        tolerance = Decimal(5).scaleb(-places - 1)
        figures.append((match.group() + (unit.group() if unit else ""),
                        (value - tolerance) * scale, (value + tolerance) * scale,
                        _PERCENT.match(text, match.end()) is not None))
    return figures


def _any_within(values: list[Decimal], low: Decimal, high: Decimal) -> bool:
    index = bisect_left(values, low)
    return index < len(values) and values[index] <= high


def ungrounded_numbers(answer: str, question: str, rows: Sequence[Sequence[object]],
                       tolerance: float | None = None) -> list[str]:
    """The figures of ``answer`` found neither in ``rows`` (each row a sequence of cells), nor
    in ``question``, nor as the row count; ``tolerance`` widens each figure's range."""
    cells = (cell for row in rows for cell in row)
    allowed = sorted([*_cell_numbers(cells), *(v for _, v, _ in _numbers(question)),
                      Decimal(len(rows))])
    widen = Decimal(str(tolerance)) if tolerance else Decimal(0)
    out = []
    for text, low, high, percent in _figures(answer[:MAX_ANSWER_CHARS]):
        low, high = low - widen, high + widen
        if _any_within(allowed, low, high):
            continue
        if percent and _any_within(allowed, low / 100, high / 100):
            continue
        out.append(text)
    return out
