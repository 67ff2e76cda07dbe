"""The compact form in which a result's rows cross the sandbox pipe.

Why not the rows themselves: pickle walks every cell and keeps a memo entry per object, which
cost 0.8 s in the worker for a 1,000,000 x 4 SQLite result (and as much again as fetching it),
and a SPARQL result paid for a :class:`~pytest_queryeval.results.Term` dataclass per cell on
both sides. Here:

* plain cells (``None``, ``bool``, ``int``, ``float``, ``str``, ``bytes``, exactly those types)
  go as one :mod:`marshal` dump of the rows (one C pass, 13x faster than pickle to write; the
  parent and the worker are the same interpreter, and the parent trusts the worker's replies
  already, which are pickles). marshal would write any buffer object (``memoryview``,
  ``bytearray``) as ``bytes`` and refuses subclasses, so rows holding any other type are sent
  as they are;
* a SQL worker's fetch keeps each batch of plain cells as the marshal dump that counted its
  bytes (``sources.base.FetchedRows`` under ``PACK_BATCHES``) and sends the dumps
  (``chunks``), so it never holds a large result as Python objects;
* RDF results go by column: each column's distinct terms once, as plain tuples, and the cells
  as indices into them (:func:`pack_terms`), so the worker builds one normalised term per
  distinct value and the parent one :class:`Term` per distinct value, rows sharing them.

:func:`unpack_rows` is the parent's inverse; it accepts rows as they are too.
"""

from __future__ import annotations

import marshal
from collections.abc import Callable, Iterable
from itertools import chain, count, filterfalse, islice
from operator import itemgetter
from typing import Any

from .._util.gcpolicy import gc_paused
from ..results import Term, term_of

#: Cell types marshal writes and reads back as exactly themselves.
PLAIN = frozenset({type(None), bool, int, float, str, bytes})
#: Fewer cells than this go as they are (packing saves nothing measurable on small results).
_MIN_CELLS = 4096


#: No cyclic GC while a result is built: a large result is hundreds of thousands of new
#: objects and no garbage cycle, and the collections they trigger re-scan the growing heap
#: (two thirds of unpacking a 100,000-row RDF result). A decorator: each call pauses anew.
_no_gc = gc_paused()


class PackedRows:
    """Rows in one of the compact forms above (``kind`` says which)."""

    __slots__ = ("data", "kind")

    def __init__(self, kind: str, data: Any) -> None:
        self.kind = kind
        self.data = data

    def __reduce__(self) -> tuple[Any, ...]:
        return PackedRows, (self.kind, self.data)


def pack_rows(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]] | PackedRows:
    """``rows`` as one marshal dump when every cell is a plain value (see the module
    docstring), else unchanged."""
    if not rows or len(rows) * len(rows[0]) < _MIN_CELLS:
        return rows
    if not set(map(type, chain.from_iterable(rows))) <= PLAIN:
        return rows
    try:
        return PackedRows("marshal", marshal.dumps(rows))
    except ValueError:  # pragma: no cover - every plain type marshals
        return rows


#: One column of a result in the column form: its distinct terms' fields (type, value,
#: datatype, lang; None for unbound) and each cell's index there.
TermColumn = tuple[list[Any], list[int]]


#: Solutions read from the engine at a time by :func:`term_columns`.
_CHUNK = 8192


@_no_gc
def term_columns(rows: Iterable[tuple[Any, ...]], fields: Callable[[Any], Any],
                 limit: int | None = None,
                 fields_of: Callable[[list[Any]], list[Any]] | None = None,
                 ) -> tuple[int, list[TermColumn], bool]:
    """An engine's solutions (tuples of its own terms, None when unbound) in the column form:
    ``fields`` (the engine's term to the fields of its :class:`Term`, or None) is called once
    per distinct engine term of a column instead of once per cell, and no :class:`Term` is
    built. At most ``limit`` solutions are kept (one more is read, to know the result was
    cut). ``fields_of``, when given, is ``fields`` of a column's distinct terms at once.
    Returns the row count, the columns and whether the result was cut.

    The solutions are read a chunk at a time and each chunk's cells replaced by indices at
    once (in C: ``itemgetter``, ``dict.fromkeys``, ``filterfalse``), so the worker never
    holds every solution's tuple and a Python object per cell, only each distinct term
    (a third of a 100,000-row result's peak in the worker)."""
    solutions = iter(rows)
    stop = None if limit is None else limit + 1
    indexes: list[dict[Any, int]] = []
    cells: list[list[int]] = []
    n = 0
    while chunk := list(islice(solutions, _CHUNK if stop is None else min(_CHUNK, stop - n))):
        if not indexes:
            indexes = [{} for _ in chunk[0]]
            cells = [[] for _ in chunk[0]]
        n += len(chunk)
        for i, (index, out) in enumerate(zip(indexes, cells, strict=True)):
            column = list(map(itemgetter(i), chunk))
            new = list(filterfalse(index.__contains__, dict.fromkeys(column)))
            index.update(zip(new, count(len(index))))
            out.extend(map(index.__getitem__, column))
        if stop is not None and n >= stop:
            break
    truncated = limit is not None and n > limit
    if truncated:
        n = limit  # type: ignore[assignment]
        for out in cells:
            del out[n:]
    columns: list[TermColumn] = []
    for index, out in zip(indexes, cells, strict=True):
        distinct = list(index)
        columns.append((fields_of(distinct) if fields_of is not None
                        else list(map(fields, distinct)), out))
        del distinct
        index.clear()
    return n, columns, truncated


def rows_of(n: int, columns: list[TermColumn]) -> list[tuple[Any, ...]]:
    """The rows of the column form, one :class:`Term` per distinct value of a column (its
    cells share it)."""
    return _rows(n, [([None if t is None else term_of(t) for t in tuples], indices)
                     for tuples, indices in columns])


def _rows(n: int, columns: list[tuple[list[Any], list[int]]]) -> list[tuple[Any, ...]]:
    if not columns:
        return [()] * n
    return list(zip(*(map(terms.__getitem__, indices) for terms, indices in columns),
                    strict=True))


def pack_terms(n: int, columns: list[TermColumn]) -> PackedRows:
    """The column form as one marshal dump."""
    return PackedRows("terms", marshal.dumps((n, columns)))


@_no_gc
def unpack_terms(rows: PackedRows | Iterable[tuple[Any, ...]], previous: dict[Any, Term] | None,
                 ) -> tuple[list[tuple[Any, ...]], dict[Any, Term]]:
    """:func:`unpack_rows` of an RDF reply, with the :class:`Term` objects of ``previous``
    (the terms of the result unpacked before) reused for equal terms; returns the rows and
    this result's terms. Why: the gold and the predicted result of a case then share their
    term objects, so that the metrics' dict lookups and row comparisons find equal terms by
    identity instead of calling ``Term.__eq__`` (2.6 million calls on a 100,000-row pair).

    The terms are kept by their value (a string the :class:`Term` holds anyway), a hit
    checked on its other three fields; only a second term of the same value (another type,
    datatype or language) is kept by its four fields. A map by the four fields kept every
    distinct term's field tuple alive, and on the second result of a pair a second copy of
    its strings too (70 MB of a 100,000-row pair's parent). ``rows``' packed bytes are dropped
    once read (a reply is unpacked once)."""
    if not isinstance(rows, PackedRows) or rows.kind != "terms":
        return unpack_rows(rows), {}
    n, columns = marshal.loads(rows.data)
    rows.data = None
    known = previous or {}
    seen: dict[Any, Term] = {}
    built = []
    for tuples, indices in columns:
        terms: list[Any] = []
        for t in tuples:
            if t is None:
                terms.append(None)
                continue
            value = t[1]
            term = seen.get(value) or known.get(value)
            if term is not None and not (term.type == t[0] and term.datatype == t[2]
                                         and term.lang == t[3]):
                # several terms of this value: the others are kept by their four fields
                term = seen.get(t) or known.get(t)
                if term is None:
                    other = known.get(value)
                    if other is not None and (other.type == t[0] and other.datatype == t[2]
                                              and other.lang == t[3]):
                        term = other
            if term is None:
                term = term_of(t)
            first = seen.setdefault(term.value, term)
            if first is not term:
                seen[t] = term
            terms.append(term)
        built.append((terms, indices))
        tuples.clear()  # the field tuples (their strings live on in the terms)
    del columns
    return _rows(n, built), seen


@_no_gc
def unpack_rows(rows: PackedRows | Iterable[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The rows of a reply: :func:`pack_rows`' or :func:`pack_terms`' form undone (plain
    rows pass through)."""
    if not isinstance(rows, PackedRows):
        return list(rows)
    if rows.kind == "chunks":  # the batches of a fetch (sources.base.FetchedRows)
        out: list[tuple[Any, ...]] = []
        for data in rows.data:
            out.extend(marshal.loads(data))
        return out
    if rows.kind == "marshal":
        whole = marshal.loads(rows.data)
        if not isinstance(whole, list):
            raise ValueError("malformed packed rows")
        return whole
    if rows.kind == "terms":
        n, columns = marshal.loads(rows.data)
        return rows_of(n, columns)
    raise ValueError(f"unknown packed rows {rows.kind!r}")
