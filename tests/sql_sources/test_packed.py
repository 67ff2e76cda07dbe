"""Large results cross the sandbox pipe packed (sources/packed.py) and come back exactly."""

from __future__ import annotations

import math
import pickle
import sqlite3
from pathlib import Path

import pytest

from pytest_queryeval.results import ResultTable, Term
from pytest_queryeval.sources import open_source
from pytest_queryeval.sources.packed import (
    PackedRows,
    pack_rows,
    pack_terms,
    rows_of,
    term_columns,
    unpack_rows,
    unpack_terms,
)
from pytest_queryeval.sources.sqlite import worker_query

XSD = "http://www.w3.org/2001/XMLSchema#"


def _same(a: list[tuple[object, ...]], b: list[tuple[object, ...]]) -> bool:
    """Equal cell by cell, types included (1 == 1.0 == True would hide a changed type)."""
    if len(a) != len(b):
        return False
    for ra, rb in zip(a, b, strict=True):
        if len(ra) != len(rb):
            return False
        for x, y in zip(ra, rb, strict=True):
            if type(x) is not type(y):
                return False
            if isinstance(x, float) and math.isnan(x):
                if not math.isnan(y):  # type: ignore[arg-type]
                    return False
            elif isinstance(x, float):
                if math.copysign(1.0, x) != math.copysign(1.0, y) or x != y:  # type: ignore
                    return False
            elif x != y:
                return False
    return True


def test_plain_cells_go_as_one_marshal_dump_and_come_back_exactly() -> None:
    odd = [None, True, False, 0, -0.0, math.nan, math.inf, 10**40, "\ud800", "", b"\x00",
           1.5, "é"]
    rows = [tuple(odd[(i + j) % len(odd)] for j in range(5)) for i in range(2000)]
    packed = pack_rows(rows)
    assert isinstance(packed, PackedRows) and packed.kind == "marshal"
    back = unpack_rows(pickle.loads(pickle.dumps(packed, protocol=pickle.HIGHEST_PROTOCOL)))
    assert _same(back, rows)


@pytest.mark.parametrize("cell", [bytearray(b"ab"), memoryview(b"ab"), Term("uri", "x"),
                                  type("S", (str,), {})("sub")])
def test_other_types_are_sent_as_they_are(cell: object) -> None:
    """marshal writes a buffer as bytes and refuses subclasses: such rows are not packed."""
    rows = [(i, "x") for i in range(5000)] + [(1, cell)]
    assert pack_rows(rows) is rows
    assert unpack_rows(rows) == rows


def test_small_results_are_not_packed() -> None:
    rows = [(1, "a"), (2, "b")]
    assert pack_rows(rows) is rows


def test_sqlite_worker_reply_is_packed_and_the_source_returns_the_same_rows(
        tmp_path: Path) -> None:
    db = tmp_path / "t.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE t (a INTEGER, b TEXT, c REAL, d BLOB)")
    conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?)",
                     [(i, f"n{i % 7}" if i % 5 else None, i / 3, bytes([i % 256]))
                      for i in range(3000)])
    conn.commit()
    conn.close()
    query = "SELECT a, b, c, d FROM t"
    reply = worker_query(str(db), "t", query, 10.0, 100_000, 1 << 26)
    assert isinstance(reply[1], PackedRows)
    here = open_source("here", {"type": "sqlite", "path": str(db), "isolation": "thread"})
    there = open_source("there", {"type": "sqlite", "path": str(db)})
    try:
        expected = here.execute(query, trusted=True).rows
        assert len(expected) == 3000
        assert _same(there.execute(query).rows, expected)
    finally:
        here.close()
        there.close()


def test_term_columns_build_one_term_per_distinct_value_and_pack_exactly() -> None:
    calls: list[object] = []

    def fields(t: object) -> tuple[str, str, str | None, str | None] | None:
        calls.append(t)
        if t is None:
            return None
        kind, value = str(t).split(":", 1)
        if kind == "lit":
            return ("literal", value, XSD + "integer", None)
        if kind == "lang":
            return ("literal", value, None, "en")
        return ("uri", value, None, None)

    raw = [(f"uri:s{i % 3}", None if i % 4 == 0 else f"lit:{i % 2}", f"lang:v{i}")
           for i in range(12)]
    n, columns, cut = term_columns(raw, fields)
    assert (n, cut) == (12, False)
    assert len(calls) == 3 + 3 + 12  # distinct values per column (None once in column 2)
    expected = [tuple(None if f is None else Term(*f) for f in map(fields, row))
                for row in raw]
    assert rows_of(n, columns) == expected
    packed = pack_terms(n, columns)
    back = unpack_rows(pickle.loads(pickle.dumps(packed)))
    assert back == expected
    assert [tuple(map(type, r)) for r in back] == [tuple(map(type, r)) for r in expected]
    again, terms = unpack_terms(packed, None)
    shared, _ = unpack_terms(pack_terms(n, columns), terms)
    assert again == shared == expected
    assert all(a is b for ra, rb in zip(again, shared, strict=True)
               for a, b in zip(ra, rb, strict=True))  # the previous result's term objects


def test_term_columns_of_rows_without_columns() -> None:
    n, columns, cut = term_columns([(), ()], lambda t: t)
    assert (n, columns, cut) == (2, [], False)
    assert unpack_rows(pack_terms(n, columns)) == [(), ()]


def test_term_columns_read_chunks_and_stop_one_past_the_limit() -> None:
    """The solutions are read a chunk at a time (a term seen in an earlier chunk keeps its
    index), and no more than ``limit + 1`` of them: the rows are the first ``limit``."""
    from itertools import count

    from pytest_queryeval.sources import packed

    def fields(t: object) -> tuple[str, str, str | None, str | None] | None:
        return None if t is None else ("uri", str(t), None, None)

    size = 3 * packed._CHUNK + 5
    raw = [(f"s{i % 1000}", None if i % 7 == 0 else f"o{i % 13}") for i in range(size)]
    expected = [tuple(None if c is None else Term(*fields(c)) for c in row)  # type: ignore[misc]
                for row in raw]
    for limit, cut in ((None, False), (size, False), (size - 1, True),
                       (packed._CHUNK, True), (0, True)):
        read = count()
        solutions = (row for row in raw if next(read) >= 0)
        n, columns, truncated = packed.term_columns(solutions, fields, limit)
        keep = size if limit is None else min(size, limit)
        assert (n, truncated) == (keep, cut)
        assert next(read) == (size if limit is None else min(size, limit + 1))
        assert rows_of(n, columns) == expected[:keep]
        assert all(len(terms) <= most  # each distinct term once, None included
                   for (terms, _), most in zip(columns, (1000, 14), strict=True))


def _fetch(batches: list[list[tuple[object, ...]]], max_rows: int, max_bytes: int,
           ) -> tuple[list[tuple[object, ...]], bool, dict[str, object]]:
    """What the parent gets for these batches fetched in a worker (PACK_BATCHES)."""
    from pytest_queryeval.sources.base import FetchedRows
    from pytest_queryeval.sources.sandboxed import packing, worker_reply

    def run() -> ResultTable:
        fetched = FetchedRows(max_rows, max_bytes)
        for batch in batches:
            if not fetched.add(batch[: fetched.wanted(len(batch))]):
                break
        return fetched.table(["a", "b"], 0.0)

    _, rows, truncated, meta, _ = worker_reply(packing(run), max_bytes)
    return unpack_rows(pickle.loads(pickle.dumps(rows))), truncated, meta


def test_worker_batches_are_kept_packed_and_come_back_exactly() -> None:
    from pytest_queryeval.sources.base import PackedBatches

    plain = [[(i, f"s{i}") for i in range(k, k + 100)] for k in range(0, 300, 100)]
    rows, truncated, meta = _fetch(plain, 1000, 1 << 20)
    assert rows == [r for b in plain for r in b] and not truncated and meta == {}
    # the table the worker's query function makes holds no row objects
    from pytest_queryeval.sources.base import FetchedRows
    from pytest_queryeval.sources.sandboxed import packing

    def run() -> ResultTable:
        fetched = FetchedRows(1000, 1 << 20)
        fetched.add(plain[0])
        return fetched.table(["a", "b"], 0.0)

    table = packing(run)
    assert isinstance(table.rows, PackedBatches) and len(table.rows.chunks) == 1
    # a batch marshal cannot carry exactly turns the rest back into rows, types kept
    mixed = [plain[0], [(1, bytearray(b"x")), (2, 10**40)], plain[1]]
    rows, _, _ = _fetch(mixed, 1000, 1 << 20)
    assert rows == [r for b in mixed for r in b]
    assert type(rows[100][1]) is bytearray and type(rows[0][1]) is str


def test_worker_batches_still_cut_at_max_rows_and_max_bytes() -> None:
    plain = [[(i, f"{i:050d}") for i in range(k, k + 100)] for k in range(0, 300, 100)]
    rows, truncated, meta = _fetch(plain, 150, 1 << 20)
    assert len(rows) == 150 and truncated and meta == {"max_rows": 150}
    assert rows == [r for b in plain for r in b][:150]
    rows, truncated, meta = _fetch(plain, 1000, 6000)
    assert truncated and meta == {"max_bytes": 6000}
    assert 0 < len(rows) < 200 and rows == [r for b in plain for r in b][: len(rows)]
