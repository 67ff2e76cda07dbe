"""BIRD "Soft EX" (``soft_ex``), the default test of LiveSQLBench, BIRD-Interact and mini_dev V2.

Reference: bird-bench/livesqlbench@59d7bd0cb3cc5f2d0f478b8dfb5e4d4876ea0dc8
``evaluation/src/test_utils.py`` (MIT): ``test_case_default``, ``ex_base``,
``preprocess_results``, ``process_decimals_recursive``, ``remove_comments``,
``remove_distinct``, ``remove_round``. The same functions, byte for byte in what they do, are
in bird-bench/mini_dev@4d970a9a97b172101840c661d74cc5a5e1c6ffa4
``live_sql_bench_sqlite/evaluation/test_utils.py`` and in BIRD-Interact's
``test_case_utils/test_utils.py``.

The reference's quirks are kept (``docs/metrics-sql.md`` lists them): DISTINCT is removed only
as a token between single spaces (``query.split(" ")``), so ``DISTINCT\\n`` and ``(DISTINCT``
survive and ``COUNT(DISTINCT x)`` keeps its DISTINCT while ``COUNT( DISTINCT x)`` loses it;
``ROUND(`` is found anywhere, inside identifiers and string literals too (``myround(x)``
becomes ``myx``); a ``--`` comment is removed only when a newline follows it; either result
empty scores 0 (an empty gold can never pass); a list or dict cell is compared as its
``json.dumps(..., sort_keys=True)`` text, which fails (score 0) when it holds a Decimal or a
date; column names are ignored, column order is not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import date, datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

#: The metric name this module produces (the contract with reports and thresholds).
SOFT_EX_METRIC_NAMES: tuple[str, ...] = ("soft_ex",)
#: Decimal places of ``preprocess_results`` (the reference's default, used by ``ex_base``).
DECIMAL_PLACES = 2
#: The keys of LiveSQLBench's ``conditions`` case key; only ``order`` changes ``soft_ex`` (the
#: reference reads no other), ``decimal`` and ``distinct`` are accepted so imported cases keep them.
CONDITION_KEYS: tuple[str, ...] = ("order", "decimal", "distinct")
#: The reference's commit, named in reports' details.
REFERENCE = "bird-bench/livesqlbench@59d7bd0 evaluation/src/test_utils.py"

_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
_LINE_COMMENT = re.compile(r"--.*?(\r\n|\r|\n)")
_BLANK_LINES = re.compile(r"\n\s*\n+")
_ROUND = re.compile(r"ROUND\s*\(", re.IGNORECASE)


def remove_comments(sql: str) -> str:
    """``remove_comments`` on one query: ``/* */`` blocks, ``--`` comments that a newline ends
    (the newline stays), blank lines collapsed, then ``strip()``."""
    no_block = _BLOCK_COMMENT.sub("", sql)
    no_line = _LINE_COMMENT.sub(r"\1", no_block)
    return _BLANK_LINES.sub("\n", no_line).strip()


def remove_distinct(sql: str) -> str:
    """``remove_distinct`` on one query: drop the tokens of ``sql.split(" ")`` equal to
    ``distinct`` in any case (only tokens with a single space on both sides)."""
    return " ".join(t for t in sql.split(" ") if t.lower() != "distinct")


def _matching_paren(text: str, start: int) -> int:
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _first_arg_end(text: str, start: int) -> int:
    depth = 0
    for i in range(start, len(text)):
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                return i
            depth -= 1
        elif c == "," and depth == 0:
            return i
    return len(text)


def remove_round(sql: str) -> str:
    """``remove_round_functions``: each ``ROUND(x[, n])`` (the first match in the text, again
    and again) becomes its stripped first argument; stops at an unbalanced parenthesis."""
    result = sql
    while True:
        match = _ROUND.search(result)
        if not match:
            return result
        start = match.start()
        open_paren = match.end() - 1
        arg_end = _first_arg_end(result, open_paren + 1)
        close_paren = _matching_paren(result, open_paren)
        if close_paren == -1:
            return result
        result = result[:start] + result[open_paren + 1:arg_end].strip() + result[close_paren + 1:]


def soft_ex_rewrite(sql: str) -> str:
    """What ``test_case_default`` executes: comments, then DISTINCT, then ROUND removed."""
    return remove_round(remove_distinct(remove_comments(sql)))


def _round_recursive(item: object, quantizer: Decimal, places: int) -> object:
    """``process_decimals_recursive``."""
    if isinstance(item, Decimal):
        return item.quantize(quantizer, rounding=ROUND_HALF_UP)
    if isinstance(item, float):
        return round(item, places)
    if isinstance(item, list | tuple):
        return type(item)(_round_recursive(x, quantizer, places) for x in item)
    if isinstance(item, dict):
        return {k: _round_recursive(v, quantizer, places) for k, v in item.items()}
    return item


def preprocess_results(rows: Sequence[Sequence[Any]], decimal_places: int = DECIMAL_PLACES,
                       ) -> list[tuple[Any, ...]]:
    """``preprocess_results``: dates and datetimes to ``YYYY-MM-DD``, Decimals quantized
    ROUND_HALF_UP, floats ``round()``-ed (half to even on the binary value: 2.675 -> 2.67),
    list and dict cells to sorted-key JSON text after the same rounding.

    Raises TypeError where the reference does (``json.dumps`` of a Decimal or date inside a
    list or dict cell): that instance scores 0 there.
    """
    quantizer = Decimal(1).scaleb(-decimal_places)
    out: list[tuple[Any, ...]] = []
    for row in rows:
        cells: list[Any] = []
        for item in row:
            if isinstance(item, date | datetime):
                cells.append(item.strftime("%Y-%m-%d"))
                continue
            value = _round_recursive(item, quantizer, decimal_places)
            cells.append(json.dumps(value, sort_keys=True) if isinstance(value, dict | list)
                         else value)
        out.append(tuple(cells))
    return out


def array_cells_as_lists(rows: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """Rows with tuple cells turned back into lists.

    The plugin's sources return SQL arrays as tuples (cells must be hashable for the other
    metrics); the reference's driver (psycopg2) returns lists, which ``preprocess_results``
    turns into JSON text. A cell is never a tuple otherwise.
    """
    def cell(v: object) -> object:
        return [cell(x) for x in v] if isinstance(v, tuple) else v

    return [tuple(cell(v) for v in row) for row in rows]


def soft_ex_score(gold_rows: Sequence[Sequence[Any]], pred_rows: Sequence[Sequence[Any]], *,
                  order: bool) -> tuple[float, str | None]:
    """``ex_base`` after execution: (1.0 or 0.0, why it is 0 when not a plain mismatch).

    ``order`` is ``conditions["order"]``: list equality of the processed rows when true, set
    equality otherwise (duplicates and row order ignored; column order counts).
    """
    try:
        pred = preprocess_results(array_cells_as_lists(pred_rows))
        gold = preprocess_results(array_cells_as_lists(gold_rows))
    except TypeError as exc:  # json.dumps of a Decimal/date in an array or JSON cell
        return 0.0, f"the reference's preprocess_results fails here: {exc}"
    if not pred or not gold:
        return 0.0, "empty " + ("gold and predicted results" if not pred and not gold
                                else "predicted result" if not pred else "gold result")
    if order:
        return (1.0 if pred == gold else 0.0), None
    return (1.0 if set(pred) == set(gold) else 0.0), None


__all__ = [
    "CONDITION_KEYS",
    "DECIMAL_PLACES",
    "REFERENCE",
    "SOFT_EX_METRIC_NAMES",
    "array_cells_as_lists",
    "preprocess_results",
    "remove_comments",
    "remove_distinct",
    "remove_round",
    "soft_ex_rewrite",
    "soft_ex_score",
]
