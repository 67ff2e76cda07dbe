"""Spider 2.0 EX: ``spider2_ex`` and our corrected ``spider2_ex_aligned``.

Reference: xlang-ai/Spider2 at commit e12c5f1e6550a5df88995520c3bf00bbe7bad2d2,
``spider2-lite/evaluation_suite/evaluate.py`` (``compare_pandas_table``,
``compare_multi_pandas_table``, ``extract_sql_query``; MIT licence). Per-item agreement with that
file, run unmodified, is asserted by ``tests/spider2`` on real gold CSVs of the repository.

The reference compares pandas DataFrames that went through a CSV round trip: the predicted
result is written with ``DataFrame.to_csv(index=False)`` and read back with ``pd.read_csv``; a gold
is ``pd.read_csv`` of the shipped file. What a value *is* at comparison time (an int, a float, a
string, NaN) is therefore decided by pandas' CSV type inference, column by column, and then by
``DataFrame.transpose()``, which gives all columns one common dtype (an int column beside a float
column becomes floats). Those rules decide string comparison and the sort order under
``ignore_order``, so they are reproduced here without pandas: :func:`to_csv_fields` (the writer),
:func:`~pytest_queryeval.metrics.results_csv.infer_column` (the reader, shared with case loading) and
:func:`_vectors` (the transpose).

Quirks kept in ``spider2_ex`` (see docs/metrics-sql.md): NULL/NaN counts as 0; numbers match
within ``math.isclose(abs_tol=1e-2)`` and booleans are numbers; strings match exactly; names are
ignored and a predicted column may serve several gold columns; under ``ignore_order`` every
column is sorted on its own, so rows need not line up (Spider2 issues 200, 226).
``spider2_ex_aligned`` is the same comparison, except that under ``ignore_order`` the matched
columns must also agree row by row (rows sorted as whole tuples).

This module is pytest-free and pandas-free.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from itertools import product
from typing import Any

from ..errors import SearchBudgetExhausted
from ..results import ResultTable
from .results_csv import (
    NA_STRINGS,
    Column,
    Frame,
    frame_table,
    infer_column,
    is_na,
    make_frame,
    read_csv_file,
    read_csv_text,
)

#: The metric names this module produces (the contract with reports and thresholds).
SPIDER2_METRIC_NAMES: tuple[str, ...] = ("spider2_ex", "spider2_ex_aligned")
#: The reference commit these metrics follow (docs and provenance name it too).
REFERENCE_COMMIT = "e12c5f1e6550a5df88995520c3bf00bbe7bad2d2"
TOLERANCE = 1e-2
#: Column assignments ``spider2_ex_aligned`` tries before giving up (never guessing a score).
ALIGNED_BUDGET = 20_000

_SQL_FENCE = re.compile(r"```sql\n(.*?)\n```", re.DOTALL)


class Spider2Error(ValueError):
    """Where the reference raises inside its comparison (an out-of-range ``condition_cols``
    index, a missing per-gold list): it then scores 0 and records the message."""


# -- the CSV round trip -------------------------------------------------------------------------


def extract_sql_query(text: str) -> str:
    """The reference's ``extract_sql_query``: the body of the first ```` ```sql ```` block
    (lower-case tag, newline after it and before the closing fence), stripped; else the text
    unchanged."""
    m = _SQL_FENCE.search(text)
    return m.group(1).strip() if m else text


def _datetime_fields(values: Sequence[_dt.datetime]) -> list[str]:
    """How ``to_csv`` writes a ``datetime64`` column: dates only when every value is at
    midnight, microseconds for all when any has them (tz-aware columns keep the time)."""
    aware = values[0].tzinfo is not None
    micro = any(v.microsecond for v in values)
    if not aware and not micro and all(v.time() == _dt.time() for v in values):
        return [v.strftime("%Y-%m-%d") for v in values]
    spec = "microseconds" if micro else "seconds"
    return [v.isoformat(sep=" ", timespec=spec) for v in values]


def to_csv_fields(column: Sequence[Any]) -> list[str | None]:
    """One result column as ``DataFrame.to_csv`` writes it (None: an empty, NA field).

    The DataFrame is built from the rows the way ``pd.read_sql_query`` does (Decimal written as
    its text, as BigQuery's NUMERIC columns are); a column whose non-null values are all naive
    datetimes, or all aware ones in one zone, becomes ``datetime64`` and is formatted as such.
    """
    present = [v for v in column if not is_na(v)]
    if present and all(type(v) is _dt.datetime for v in present):
        zones = {v.tzinfo is None for v in present}
        offsets = {v.utcoffset() for v in present}
        if len(zones) == 1 and (None in offsets or len(offsets) == 1):
            texts = iter(_datetime_fields(present))
            return [None if is_na(v) else next(texts) for v in column]
    out: list[str | None] = []
    for v in column:
        if is_na(v):
            out.append(None)
        elif isinstance(v, bool):
            out.append("True" if v else "False")
        elif isinstance(v, int):
            out.append(str(v))
        elif isinstance(v, float):
            out.append(repr(v))
        elif isinstance(v, Decimal):
            out.append(str(v))
        elif isinstance(v, bytes | bytearray | memoryview):
            out.append(str(bytes(v)))
        else:
            out.append(str(v))
    return out


def round_trip(table: ResultTable) -> Frame:
    """``pd.read_csv(io.StringIO(df.to_csv(index=False)))`` of a result table.

    With one column, a row whose text is only blanks is a blank line to ``read_csv`` and is
    dropped (pandas quotes an empty field, so a NULL row survives)."""
    width = len(table.columns)
    cols = [to_csv_fields([r[i] if i < len(r) else None for r in table.rows])
            for i in range(width)]
    rows = list(zip(*cols, strict=True)) if cols else []
    if width == 1:
        rows = [r for r in rows if r[0] is None or r[0].strip(" \t\r\n\v\f") or r[0] == ""]
    return make_frame(table.columns, rows)


def frame_of(table: ResultTable) -> Frame:
    """The table as the reference compares it: a gold CSV as read, anything else round-tripped."""
    frame = table.meta.get("spider2_frame")
    return frame if isinstance(frame, Frame) else round_trip(table)


# -- the comparison ---------------------------------------------------------------------------


def _iloc(frame: Frame, condition_cols: object) -> list[Column]:
    """``gold.iloc[:, condition_cols]`` (or the whole frame when falsy, as the reference)."""
    if not condition_cols:
        return list(frame.columns)
    cols = condition_cols if isinstance(condition_cols, list | tuple) else [condition_cols]
    n = len(frame.columns)
    out = []
    for c in cols:
        if isinstance(c, bool) or not isinstance(c, int):
            raise Spider2Error(f"condition_cols: {c!r} is not a column position")
        if not -n <= c < n:
            raise Spider2Error("positional indexers are out-of-bounds")
        out.append(frame.columns[c])
    return out


def _vectors(columns: Sequence[Column]) -> list[list[Any]]:
    """``frame.transpose().values.tolist()``: one common dtype for all the columns."""
    kinds = {c.dtype for c in columns}
    if len(kinds) > 1 and kinds <= {"int64", "uint64", "float64"}:
        return [[float(v) for v in c.values] for c in columns]
    return [list(c.values) for c in columns]


def _normalize(value: object) -> object:
    return 0 if is_na(value) else value


def _key(x: object) -> tuple[bool, str, bool]:
    return (x is None, str(x), isinstance(x, int | float))


def _cells_match(a: object, b: object) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(float(a), float(b), abs_tol=TOLERANCE)
    return bool(a == b)  # values here are str, bool, int or float: == is the negation of !=


def _prepared(vector: Sequence[Any], ignore_order: bool) -> list[Any]:
    out = [_normalize(x) for x in vector]
    if ignore_order:
        out.sort(key=_key)
    return out


def _prepared_match(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return len(a) == len(b) and all(_cells_match(x, y) for x, y in zip(a, b, strict=True))


def vectors_match(v1: Sequence[Any], v2: Sequence[Any], ignore_order: bool) -> bool:
    """The reference's ``vectors_match`` (NaN is 0; each vector sorted on its own)."""
    return _prepared_match(_prepared(v1, ignore_order), _prepared(v2, ignore_order))


def _row_key(row: Sequence[Any]) -> tuple[tuple[bool, str, bool], ...]:
    return tuple(_key(x) for x in row)


def _aligned(gold: list[list[Any]], pred: list[list[Any]], candidates: list[list[int]]) -> bool:
    """Some assignment of candidate predicted columns whose rows, sorted as tuples by the
    reference's key, match the gold rows pairwise: the rows line up."""
    g_rows = sorted(zip(*([_normalize(x) for x in col] for col in gold), strict=True),
                    key=_row_key)
    p_norm = [[_normalize(x) for x in col] for col in pred]
    # identical predicted columns are interchangeable: try one of each
    distinct: list[list[int]] = []
    for cands in candidates:
        seen: dict[tuple[str, ...], int] = {}
        for k in cands:
            seen.setdefault(tuple(repr(x) for x in p_norm[k]), k)
        distinct.append(list(seen.values()))
    for tried, assignment in enumerate(product(*distinct), start=1):
        if tried > ALIGNED_BUDGET:
            raise SearchBudgetExhausted(
                f"spider2_ex_aligned: more than {ALIGNED_BUDGET:,} column assignments")
        p_rows = sorted(zip(*(p_norm[k] for k in assignment), strict=True), key=_row_key)
        if all(_cells_match(x, y) for gr, pr in zip(g_rows, p_rows, strict=True)
               for x, y in zip(gr, pr, strict=True)):
            return True
    return False


def compare_table(pred: Frame, gold: Frame, condition_cols: object = None,
                  ignore_order: bool = False, *, aligned: bool = False) -> int:
    """``compare_pandas_table``: 1 when every gold column (or the ``condition_cols``) equals
    some predicted column; ``aligned`` also requires the rows to line up under
    ``ignore_order``. Raises :class:`Spider2Error` where the reference raises."""
    gold_vectors = _vectors(_iloc(gold, condition_cols))
    pred_vectors = _vectors(pred.columns)
    preds = [_prepared(p, ignore_order) for p in pred_vectors]
    search = aligned and ignore_order and bool(gold_vectors)
    candidates: list[list[int]] = []
    for g in gold_vectors:
        prepared = _prepared(g, ignore_order)
        if not search:
            if not any(_prepared_match(prepared, p) for p in preds):
                return 0
            continue
        matches = [k for k, p in enumerate(preds) if _prepared_match(prepared, p)]
        if not matches:
            return 0
        candidates.append(matches)
    if search:
        return int(_aligned(gold_vectors, pred_vectors, candidates))
    return 1


def compare_multi(pred: Frame, golds: Sequence[Frame], condition_cols: object = None,
                  ignore_order: bool = False, *, aligned: bool = False) -> int:
    """``compare_multi_pandas_table``: 1 when any gold matches. A flat ``condition_cols`` is
    shared by all golds only when there are several (with one gold, its first element is
    used, as the reference does); a list of lists pairs with the golds by position."""
    if not golds:
        return 0
    if condition_cols is not None and not isinstance(condition_cols, list):
        raise Spider2Error(f"condition_cols {condition_cols!r} is not a list")
    if condition_cols in (None, [], [[]], [None]):
        per_gold: list[object] = [[] for _ in golds]
    elif len(golds) > 1 and not all(isinstance(s, list) for s in condition_cols):
        per_gold = [condition_cols for _ in golds]
    else:
        per_gold = condition_cols
    for i, gold in enumerate(golds):
        if i >= len(per_gold):
            raise Spider2Error("list index out of range")
        if compare_table(pred, gold, per_gold[i], ignore_order, aligned=aligned):
            return 1
    return 0


@dataclass
class Spider2Result:
    metrics: dict[str, float]
    reason: str | None = None  # why the reference scores 0 without comparing (empty, error)


def spider2_scores(pred: ResultTable, golds: Sequence[ResultTable], *, multi: bool,
                   condition_cols: object = None, ignore_order: bool = False,
                   empty_scores_zero: bool = True) -> Spider2Result:
    """Both metrics for one case. ``multi``: the golds are the reference's ``_a``, ``_b``...
    files (``compare_multi_pandas_table``), else one gold (``compare_pandas_table``).
    ``empty_scores_zero``: an empty predicted result scores 0, as on the reference's BigQuery
    and Snowflake paths (its SQLite and CSV paths compare it)."""
    zero = {name: 0.0 for name in SPIDER2_METRIC_NAMES}
    if empty_scores_zero and not pred.rows:
        return Spider2Result(zero, "the predicted result is empty (scored 0, as the "
                                   "reference does on BigQuery and Snowflake)")
    p = frame_of(pred)
    g = [frame_of(t) for t in golds]
    out: dict[str, float] = {}
    try:
        for name, aligned in (("spider2_ex", False), ("spider2_ex_aligned", True)):
            if multi:
                score = compare_multi(p, g, condition_cols, ignore_order, aligned=aligned)
            else:
                score = compare_table(p, g[0], condition_cols, ignore_order, aligned=aligned)
            out[name] = float(score)
    except Spider2Error as e:
        return Spider2Result(zero, f"spider2 comparison error: {e}")
    return Spider2Result(out)


def check_condition_cols(value: object) -> str | None:
    """Why ``value`` is not a valid ``condition_cols`` (None when it is): null, an integer, a
    list of integers, or a list of such lists (one per gold result file)."""
    def is_int(x: object) -> bool:
        return isinstance(x, int) and not isinstance(x, bool)

    if value is None or is_int(value):
        return None
    if not isinstance(value, list):
        return "must be a list of 0-based column positions, or one such list per gold file"
    if all(is_int(x) for x in value):
        return None
    if all(isinstance(x, list) and all(is_int(y) for y in x) for x in value):
        return None
    if all(x is None for x in value):
        return None
    return ("must be a list of 0-based column positions, or one such list per gold file "
            "(not a mix of both)")


__all__ = [
    "ALIGNED_BUDGET",
    "NA_STRINGS",
    "REFERENCE_COMMIT",
    "SPIDER2_METRIC_NAMES",
    "Column",
    "Frame",
    "Spider2Error",
    "Spider2Result",
    "check_condition_cols",
    "compare_multi",
    "compare_table",
    "extract_sql_query",
    "frame_of",
    "frame_table",
    "infer_column",
    "read_csv_file",
    "read_csv_text",
    "round_trip",
    "spider2_scores",
    "to_csv_fields",
    "vectors_match",
]
