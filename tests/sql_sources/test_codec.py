"""The gold-cache codec must give back exactly what went in (type and value)."""

from __future__ import annotations

import datetime as dt
import json
import math
import uuid
from decimal import Decimal
from typing import Any

import pytest

from pytest_queryeval.results import ResultTable, Term
from pytest_queryeval.sources.codec import CodecError, decode_table, encode_table

CELLS = [
    None, True, False, 0, -1, 2**80, 1.5, -0.0, 1.0, 1e-300, "", "text", "ünïcode ✓",
    {"$looks": "like a tag"}, b"\x00\xffbytes", Decimal("1.10"), Decimal("-0.00"),
    Decimal("123456789012345678901234567890.123"), dt.date(2024, 2, 29),
    dt.datetime(2009, 1, 1, 0, 0, 0, 123456),
    dt.datetime(2021, 3, 4, 5, 6, 7, tzinfo=dt.timezone(dt.timedelta(hours=-3))),
    dt.time(12, 30, 1), dt.timedelta(days=-1, seconds=5), uuid.UUID(int=7),
    (1, "a"), [1, [2, None]], Term("uri", "http://x/y"), Term("literal", "1", lang="en"),
]


def roundtrip(table: ResultTable) -> ResultTable:
    return decode_table(json.loads(json.dumps(encode_table(table))))


@pytest.mark.parametrize("cell", CELLS, ids=repr)
def test_cell_roundtrip(cell: object) -> None:
    back = roundtrip(ResultTable(["c"], [(cell,)])).rows[0][0]
    assert type(back) is type(cell)
    assert back == cell
    if isinstance(cell, Decimal):
        assert str(back) == str(cell)  # scale kept: 1.10 stays 1.10
    if isinstance(cell, float):
        assert math.copysign(1, back) == math.copysign(1, cell)


def test_non_finite_floats() -> None:
    back = roundtrip(ResultTable(["a", "b", "c"], [(math.inf, -math.inf, math.nan)])).rows[0]
    assert back[0] == math.inf
    assert back[1] == -math.inf
    assert math.isnan(back[2])


def test_table_fields_roundtrip() -> None:
    t = ResultTable(["x", "y"], [(1, "a"), (2, None)], truncated=True, seconds=0.25,
                    meta={"max_rows": 2})
    back = roundtrip(t)
    assert back == t


def test_unknown_types_are_refused() -> None:
    with pytest.raises(CodecError):
        encode_table(ResultTable(["c"], [(object(),)]))
    with pytest.raises(CodecError):
        decode_table({"v": 999})
    with pytest.raises(CodecError):
        decode_table({"v": 1, "columns": ["a"], "rows": [[{"$nope": 1}]]})


def _cells() -> Any:
    from hypothesis import strategies as st

    scalar = st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(),
        st.binary(), st.decimals(allow_nan=False), st.dates(), st.datetimes(),
        st.datetimes(timezones=st.timezones()), st.times(), st.timedeltas(), st.uuids(),
    )
    return st.recursive(scalar, lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.tuples(inner, inner)), max_leaves=5)


def test_roundtrip_property() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.lists(_cells(), min_size=2, max_size=2).map(tuple), max_size=5))
    def check(rows: list[tuple[Any, ...]]) -> None:
        table = ResultTable(["a", "b"], rows)
        back = roundtrip(table)
        assert back.rows == table.rows
        for r1, r2 in zip(back.rows, table.rows, strict=True):
            assert [type(x) for x in r1] == [type(x) for x in r2]

    check()
