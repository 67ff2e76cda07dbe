"""CSV result files read as pandas reads them: recorded gold and predicted results
(``gold_result: file.csv``) and the Spider 2.0 metric's gold files.

Why a module of its own and not in :mod:`.spider2`: loading a case file reads its CSV results,
and case loading must not depend on a metric evaluator; the metric imports the reader from here.
It sits in ``metrics/`` (it was the SQL kind's helper) because the Spider 2.0 metric reads it and
the metrics are on a floor below the kinds (docs/architecture.md, floors).
What a field *is* (an int, a float, a string, NaN) is decided by pandas' CSV type inference
(``pd.read_csv``, column by column), reproduced without pandas by :func:`infer_column`, since
Spider 2.0's reference compares what that inference gives (see :mod:`.spider2`).

This module is pytest-free and pandas-free.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..results import ResultTable

#: pandas' default ``na_values`` (``pandas._libs.parsers.STR_NA_VALUES``): such a field is NaN.
NA_STRINGS = frozenset({
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
    "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
})
_NAN = float("nan")
_INT = re.compile(r"[ \t\n\r\v\f]*[+-]?[0-9]+[ \t\n\r\v\f]*\Z")
_FLOAT = re.compile(
    r"[ \t\n\r\v\f]*[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity)"
    r"[ \t\n\r\v\f]*\Z", re.IGNORECASE)
_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(2 ** 63), 2 ** 63 - 1, 2 ** 64 - 1


class CsvError(ValueError):
    """A CSV file that ``pd.read_csv`` would refuse (no header, a row longer than it)."""


@dataclass(frozen=True, slots=True)
class Column:
    """One column as ``pd.read_csv`` types it: ``dtype`` is ``int64``, ``uint64``, ``float64``,
    ``bool`` or ``object`` (strings, or booleans / big integers mixed with NaN); NaN for NA."""

    dtype: str
    values: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Frame:
    """A table after the reference's CSV round trip: what ``pd.read_csv`` returns."""

    names: tuple[str, ...]
    columns: tuple[Column, ...]

    @property
    def n_rows(self) -> int:
        return len(self.columns[0].values) if self.columns else 0


def is_na(v: object) -> bool:
    """NULL, or NaN: what a CSV field read as NA holds."""
    return v is None or (isinstance(v, float) and math.isnan(v))


def infer_column(fields: Sequence[str | None]) -> Column:
    """``pd.read_csv``'s type inference for one column of text fields (None: empty field)."""
    texts = [None if f is None or f in NA_STRINGS else f for f in fields]
    present = [t for t in texts if t is not None]
    has_na = len(present) != len(texts)
    if not texts:
        return Column("object", ())  # a header-only file
    if not present:
        return Column("float64", tuple(_NAN for _ in texts))
    if all(_INT.match(t) for t in present):
        ints = [int(t) for t in present]
        if not has_na:
            if all(_INT64_MIN <= i <= _INT64_MAX for i in ints):
                return Column("int64", tuple(ints))
            if all(0 <= i <= _UINT64_MAX for i in ints):
                return Column("uint64", tuple(ints))
            return Column("object", tuple(ints))
        return Column("float64", tuple(_NAN if t is None else float(int(t)) for t in texts))
    if all(_FLOAT.match(t) for t in present):
        return Column("float64", tuple(_NAN if t is None else float(t) for t in texts))
    if all(t.lower() in ("true", "false") for t in present):
        vals = tuple(_NAN if t is None else t.lower() == "true" for t in texts)
        return Column("object" if has_na else "bool", vals)
    return Column("object", tuple(_NAN if t is None else t for t in texts))


def make_frame(names: Sequence[str], rows: Iterable[Sequence[str | None]]) -> Frame:
    """A frame from text fields by row (None: an empty field), each column typed as
    ``pd.read_csv`` types it."""
    cols: list[list[str | None]] = [[] for _ in names]
    for row in rows:
        for i, col in enumerate(cols):
            col.append(row[i] if i < len(row) else None)
    return Frame(tuple(names), tuple(infer_column(c) for c in cols))


def read_csv_text(text: str) -> Frame:
    """``pd.read_csv`` of a CSV file's text (a gold result file): the header, blank lines
    skipped, short rows padded with NA. A row longer than the header is an error."""
    records = [r for r in csv.reader(io.StringIO(text, newline=""))
               if r and not (len(r) == 1 and not r[0].strip(" \t\r\n\v\f"))]
    if not records:
        raise CsvError("no columns to parse from the file")
    header, body = records[0], records[1:]
    for n, r in enumerate(body, start=2):
        if len(r) > len(header):
            raise CsvError(f"record {n} has {len(r)} fields, the header {len(header)}")
    return make_frame(header, ([None if f == "" else f for f in r] for r in body))


def read_csv_file(path: Path) -> Frame:
    """A CSV result file a case names: a regular file under the cap (:mod:`.._util.safefile`)."""
    from .._util.safefile import read_text

    return read_csv_text(read_text(path, "csv"))


def frame_table(frame: Frame) -> ResultTable:
    """A gold CSV as a result table for the other metrics (NaN is NULL)."""
    cols = [[None if is_na(v) else v for v in c.values] for c in frame.columns]
    rows = list(zip(*cols, strict=True)) if cols else []
    return ResultTable(list(frame.names), rows, meta={"spider2_frame": frame})
