"""Vectorised (numpy) fast path of the table metrics, for large tables of plain values.

:func:`compare` returns the same ``ex``, ``perm``, ``bird_ex``, Soft-F1, positional cell F1
and overlap as the pure-Python path in :mod:`.table`, bit for bit, or None when one of its
preconditions fails (then the pure path runs). It only accepts rectangular, non-empty tables
whose columns each hold int (|v| < 2**53), float (no NaN) or str cells, optionally with
None: for those, Python's equality (``1 == 1.0``, ``-0.0 == 0.0``) is equality of canonical
float64 values or of string hashes (checked injective), and the Denodo ``astype(str)`` cast
is equality of int64/float64 bit patterns, string hashes and a missing mask. Everything else
(bool, Decimal, NaN, bytes, dates, str mixed with numbers, huge ints) declines.

Floats are summed in the reference's order: on CPython < 3.12 ``sum()`` of floats is a
sequential double accumulation, which ``np.cumsum`` reproduces; newer versions sum the
``tolist()`` with the builtin.

Why one module of this size: it mirrors the pure-Python path of :mod:`.table` step for step, bit
for bit, and is read beside it.
"""

from __future__ import annotations

import operator
import re
import sys
from collections.abc import Callable, Sequence
from itertools import repeat
from operator import countOf
from typing import Any, TypeAlias

import numpy as np
from numpy.typing import NDArray

from ._table_common import PositionalF1, search_assignment

_NoneType = type(None)
_ALLOWED = frozenset({int, float, str, _NoneType})
_BOUND = float(2**53)
#: Raw kinds: numbers, strings, all-NULL. Cast kinds: str(int), str(float), str, missing.
_N, _S, _Z = 0, 1, 2
_I, _F, _SC, _M = 10, 11, 12, 13
_NUM_START = frozenset("0123456789-")
_SEQUENTIAL_SUM = sys.version_info < (3, 12)

BoolArr: TypeAlias = NDArray[np.bool_]
IntArr: TypeAlias = NDArray[np.int64]
Index: TypeAlias = NDArray[np.intp] | None
Result = tuple[bool, tuple[int, ...] | None, bool, float, PositionalF1, float]


class _Decline(Exception):
    """A precondition failed: the pure-Python path must decide."""


def _is_num_str(s: str) -> bool:
    """True when ``s`` is ``str()`` of some int or float (it could equal a cast number)."""
    if s[:1] not in _NUM_START and s not in ("inf", "nan"):
        return False
    try:
        if str(int(s)) == s:
            return True
    except ValueError:
        pass
    try:
        return str(float(s)) == s
    except ValueError:
        return False


#: A whole string (between "\x00" separators) that may spell a number; a literal first
#: character lets the regex engine skip ahead (4x faster than anchoring with ^ or a lookahead).
_NUMERIC_SPELLING = re.compile(r"\x00[-+.0-9aefin]+\x00")


class _Strings:
    """The strings of every column of both tables. A string's code is its ``hash()``, used only
    once :meth:`check` has found the hashes injective on these strings (and None)."""

    def __init__(self) -> None:
        self._ok: bool | None = None
        self._numlike: bool | None = None
        #: Distinct strings seen so far; ``pending`` columns are not in it yet.
        self.seen: set[Any] = set()
        self.pending: list[_Col] = []

    def distinct(self) -> set[Any]:
        for c in self.pending:
            assert c.py is not None  # string columns are kept
            self.seen.update(c.py)
        self.pending.clear()
        return self.seen

    def check(self) -> None:
        """Decline unless equal codes mean equal strings."""
        if self._ok is None:  # the codes are the hashes of the distinct strings
            distinct = self.distinct()
            self._ok = len(set(map(hash, distinct))) == len(distinct)
        if not self._ok:
            raise _Decline

    def numlike(self) -> bool:
        """Some string spells a number (it could equal a str-cast int or float)."""
        if self._numlike is None:
            strs = self.distinct()
            if None in strs:
                strs = strs - {None}
            # a C-speed filter first: a string that spells a number is made only of digits,
            # signs, dots and the letters of e, inf and nan ("\x00" separates the strings; one
            # inside a string can only add candidates)
            joined = "\x00" + "\x00".join(strs) + "\x00"
            self._numlike = bool(_NUMERIC_SPELLING.search(joined)) and any(
                map(_is_num_str, strs)
            )
        return self._numlike


class _Col:
    """One column: its kind, codes and NULL mask, built lazily."""

    __slots__ = (
        "_argsort",
        "_code",
        "_range",
        "_sorted",
        "cast_code",
        "cast_kind",
        "f",
        "kind",
        "mask",
        "n",
        "negzero",
        "py",
        "strings",
        "types",
    )

    def __init__(
        self,
        py: list[Any] | None,
        types: set[type],
        strings: _Strings,
        pre: NDArray[Any] | None = None,
        n: int | None = None,
    ) -> None:
        """``pre``: the column's float64 values (numbers, no NULL) or hashes (str only), when
        :func:`_build` already computed them; ``py`` (the cells) may then be None, with ``n``."""
        if not types <= _ALLOWED:
            raise _Decline
        if py is None:
            assert pre is not None
            assert n is not None
        else:
            n = len(py)
        self.n = n
        self.py = py
        self.strings = strings
        self.types = types
        nonnull = types - {_NoneType}
        has_none = _NoneType in types
        self.mask: BoolArr | None = None
        if has_none:
            assert py is not None
            self.mask = np.fromiter(map(operator.is_, py, repeat(None)), np.bool_, n)
        self.f: NDArray[np.float64] | None = None
        self._code: IntArr | None = None
        self._sorted: IntArr | None = None
        self._argsort: NDArray[np.intp] | None = None
        self._range: tuple[float, float] | None = None
        self.negzero = False
        if not nonnull:
            self.kind, self.cast_kind = _Z, _M
            self._code = self.cast_code = np.zeros(n, np.int64)
        elif nonnull == {str}:
            self.kind, self.cast_kind = _S, _SC
            strings.pending.append(self)
            if pre is not None and not has_none:
                self._code = self.cast_code = pre
        elif str in nonnull:
            raise _Decline
        else:
            self.kind = _N
            self._set_numbers(py, pre, n, nonnull, has_none)

    def _set_numbers(
        self,
        py: list[Any] | None,
        pre: NDArray[Any] | None,
        n: int,
        nonnull: set[type],
        has_none: bool,
    ) -> None:
        """A number column's float64 values and codes; it declines NaN and ints that float64
        cannot hold exactly (then ``1 == 1.0`` is no longer equality of the values)."""
        if pre is not None and not has_none:
            f = pre
        else:
            assert py is not None
            vals = [0 if v is None else v for v in py] if has_none else py
            try:
                f = np.fromiter(vals, np.float64, n)
            except OverflowError:
                raise _Decline from None
        # two reductions, no temporary array: min and max propagate NaN, bound the ints
        # and tell whether a zero (maybe -0.0) can be there at all
        lo, hi = float(f.min()), float(f.max())
        if float in nonnull:
            if lo != lo:
                raise _Decline
            if lo <= 0 <= hi:
                self.negzero = bool(np.signbit(f[f == 0]).any())
        if int in nonnull and not max(-lo, hi) < _BOUND:
            raise _Decline
        self.f = f
        if self.mask is None:
            self._range = (lo, hi)
        # -0.0 folded into 0.0; ints and NULL fillers are never -0.0
        self._code = (f + 0.0).view(np.int64) if self.negzero else f.view(np.int64)
        if nonnull == {int} and not has_none:
            self.cast_kind, self.cast_code = _I, self._code
        else:  # str(float(v)): one spelling per bit pattern ('-0.0' != '0.0')
            self.cast_kind, self.cast_code = _F, f.view(np.int64)

    @property
    def code(self) -> IntArr:
        """Raw equality codes (strings: their hash, see :class:`_Strings`)."""
        if self._code is None:
            assert self.py is not None
            self._code = np.fromiter(map(hash, self.py), np.int64, self.n)
            if self.kind == _S:
                self.cast_code = self._code
        return self._code

    def get_cast_code(self) -> IntArr:
        self.code  # noqa: B018 - builds the string codes
        return self.cast_code

    @property
    def nulls(self) -> int:
        return self.n if self.kind == _Z else (0 if self.mask is None else int(self.mask.sum()))

    def sorted_codes(self) -> IntArr:
        """The non-NULL codes, sorted (multiset comparisons)."""
        if self._sorted is None:
            c = self.code if self.mask is None else self.code[~self.mask]
            self._sorted = np.sort(c)
        return self._sorted

    def argsort(self) -> NDArray[np.intp]:
        if self._argsort is None:
            self._argsort = np.argsort(self.code, kind="stable")
        return self._argsort

    def value_range(self) -> tuple[float, float]:
        """(min, max) of the non-NULL numbers (compared with ==, so -0.0 is 0.0)."""
        if self._range is None:
            assert self.f is not None
            f = self.f if self.mask is None else self.f[~self.mask]
            self._range = (float(f.min()), float(f.max())) if len(f) else (0.0, 0.0)
        return self._range

    def unique(self) -> bool:
        """No NULL and all values distinct: then every row of the table is distinct."""
        if self.kind == _Z or self.nulls:
            return False
        if self.types == {int} and self._sorted is None:
            assert self.f is not None
            lo, hi = self.value_range()
            if hi - lo <= 4 * self.n:  # counting instead of sorting
                return bool(np.bincount((self.f - lo).astype(np.intp)).max() <= 1)
        s = self.sorted_codes()
        return bool(np.all(s[1:] != s[:-1]))


def _matching(a: _Col, b: _Col) -> tuple[Index, Index]:
    """Row indices pairing equal cells of two unique columns with equal value sets."""
    if a.types == b.types == {int}:
        assert a.f is not None
        assert b.f is not None
        lo, hi = map(int, a.value_range())  # a is unique: no NULL, so its whole range (cached)
        if hi - lo <= 4 * a.n:  # direct addressing instead of two argsorts
            pos = np.empty(hi - lo + 1, np.intp)
            pos[b.f.astype(np.int64) - lo] = np.arange(b.n)
            return None, pos[a.f.astype(np.int64) - lo]
    return a.argsort(), b.argsort()


def _take(a: NDArray[Any], idx: Index) -> NDArray[Any]:
    return a if idx is None else a[idx]


def _mask(c: _Col, idx: Index) -> BoolArr | None:
    if c.kind == _Z:
        return np.ones(c.n if idx is None else len(idx), np.bool_)
    return None if c.mask is None else _take(c.mask, idx)


def _combine(e: BoolArr, am: BoolArr | None, bm: BoolArr | None) -> BoolArr:
    if am is not None:
        e &= ~am
    if bm is not None:
        e &= ~bm
    if am is not None and bm is not None:
        e |= am & bm
    return e


class _Ctx:
    """Both tables' columns and the checks shared by all metrics."""

    def __init__(self, g: list[_Col], p: list[_Col]) -> None:
        self.g, self.p = g, p

    def raw_eq(self, a: _Col, ia: Index, b: _Col, ib: Index) -> BoolArr | None:
        """``a[ia] == b[ib]`` cell by cell (None: never equal)."""
        if a is b and ia is ib:  # whitelisted cells equal themselves (no NaN)
            return np.ones(a.n if ia is None else len(ia), np.bool_)
        am, bm = _mask(a, ia), _mask(b, ib)
        if a.kind == b.kind != _Z:
            if a.kind == _N:
                assert a.f is not None
                assert b.f is not None
                e = _take(a.f, ia) == _take(b.f, ib)
            else:
                a.strings.check()
                e = _take(a.code, ia) == _take(b.code, ib)
            return _combine(e, am, bm)
        if am is None or bm is None:
            return None
        return am & bm

    def cast_eq(self, a: _Col, ia: Index, b: _Col, ib: Index) -> BoolArr | None:
        """``str_cast(a)[ia] == str_cast(b)[ib]`` cell by cell (None: never equal)."""
        if a is b and ia is ib:
            return np.ones(a.n if ia is None else len(ia), np.bool_)
        am, bm = _mask(a, ia), _mask(b, ib)
        if a.cast_kind == b.cast_kind != _M:
            if a.cast_kind == _SC:
                a.strings.check()
            e = _take(a.get_cast_code(), ia) == _take(b.get_cast_code(), ib)
            return _combine(e, am, bm)
        kinds = {a.cast_kind, b.cast_kind}
        if _SC in kinds and kinds & {_I, _F} and a.strings.numlike():
            raise _Decline
        if am is None or bm is None:
            return None
        return am & bm

    # ---- multisets and sets of rows --------------------------------------------------------

    def col_multiset_eq(self, a: _Col, b: _Col) -> bool:
        if a.nulls != b.nulls:
            return False
        if a.n == a.nulls:
            return True
        if a.kind != b.kind:
            return False
        if a.kind == _S:
            a.strings.check()
        elif a.value_range() != b.value_range():  # cheap exact negative, no sort
            return False
        return bool(np.array_equal(a.sorted_codes(), b.sorted_codes()))

    def col_set_eq(self, a: _Col, b: _Col) -> bool:
        if (a.nulls > 0) != (b.nulls > 0):
            return False
        if a.n == a.nulls or b.n == b.nulls:
            return a.n == a.nulls and b.n == b.nulls
        if a.kind != b.kind:
            return False
        if a.kind == _S:
            a.strings.check()
        sa, sb = a.sorted_codes(), b.sorted_codes()
        ua = sa[np.concatenate(([True], sa[1:] != sa[:-1]))]
        ub = sb[np.concatenate(([True], sb[1:] != sb[:-1]))]
        return bool(np.array_equal(ua, ub))

    def _keys(self, cols: Sequence[_Col], cast: bool = False) -> list[NDArray[Any]]:
        """Sort keys whose equality, column by column, is cell equality (kind-tagged)."""
        keys: list[NDArray[Any]] = []
        for c in cols:
            kind = c.cast_kind if cast else c.kind
            if kind in (_S, _SC):
                c.strings.check()
            if kind == (_M if cast else _Z):
                keys += [np.full(c.n, 9, np.int64), np.zeros(c.n, np.int64)]
                continue
            code = c.get_cast_code() if cast else c.code
            tag = np.full(c.n, kind, np.int64)
            if c.mask is not None:
                tag[c.mask] = 9
                code = np.where(c.mask, 0, code)
            keys += [tag, code]
        return keys

    def _groups(self, keys: list[NDArray[Any]]) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
        """(order, start positions of the runs of equal key tuples in that order)."""
        order = np.lexsort(keys[::-1])
        n = len(order)
        change = np.zeros(n, np.bool_)
        change[0] = True
        for k in keys:
            s = k[order]
            change[1:] |= s[1:] != s[:-1]
        return order, np.flatnonzero(change)

    def rows_relation(self, pairs: list[tuple[_Col, _Col]], multiset: bool) -> bool:
        """Multiset (or set) equality of the rows of gold and pred projected on ``pairs``."""
        for a, b in pairs:
            if not (self.col_multiset_eq(a, b) if multiset else self.col_set_eq(a, b)):
                return False
        if multiset:
            for a, b in pairs:
                if a.unique():  # b is too (equal column multisets): the matching is forced
                    oa, ob = _matching(a, b)
                    for a2, b2 in pairs:
                        if a2 is not a:
                            e = self.raw_eq(a2, oa, b2, ob)
                            if e is None or not e.all():
                                return False
                    return True
        keys = [
            np.concatenate((kg, kp))
            for kg, kp in zip(
                self._keys([a for a, _ in pairs]), self._keys([b for _, b in pairs]), strict=True
            )
        ]
        n = pairs[0][0].n
        order, starts = self._groups(keys)
        is_gold = (order < n).astype(np.int64)
        in_gold = np.add.reduceat(is_gold, starts)
        sizes = np.diff(np.append(starts, len(order)))
        in_pred = sizes - in_gold
        if multiset:
            return bool(np.array_equal(in_gold, in_pred))
        return bool(np.all((in_gold > 0) == (in_pred > 0)))

    def first_rows(self, cols: list[_Col], cast: bool) -> Index:
        """Indices of the first occurrence of each distinct (raw or cast) row, in row order;
        None when every row is distinct (a cast keeps distinct whitelisted rows distinct)."""
        if any(c.unique() for c in sorted(cols, key=lambda c: c.kind != _N)):
            return None
        order, starts = self._groups(self._keys(cols, cast))
        return np.sort(np.minimum.reduceat(order, starts))


def _seqsum(k: NDArray[np.int8], w: int, pad: int = 0, count: int = 0) -> float:
    """``sum((k / w).tolist() + [pad] * count)`` bit for bit (the reference pads with ints);
    the counts ``k`` are never negative."""
    if _SEQUENTIAL_SUM:  # int items are added as doubles too
        # adding 0.0 to a sum of non-negative numbers leaves it as it is: zeros are skipped
        # when that makes the sum much shorter (it never changes it)
        if np.count_nonzero(k) < len(k) // 2:
            k = k[k != 0]
        a = k / w
        if count and pad:
            a = np.concatenate((a, np.full(count, float(pad))))
        return float(np.cumsum(a)[-1]) + 0.0 if len(a) else 0.0
    return float(sum((k / w).tolist() + [pad] * count))


def _positional(
    eq: Callable[[_Col, Index, _Col, Index], BoolArr | None],
    g: list[_Col],
    gi: Index,
    p: list[_Col],
    pi: Index,
    n_gold: int,
    set_precision: bool,
) -> PositionalF1:
    """``table._positional`` on de-duplicated rows ``gi`` / ``pi`` (None: all rows)."""
    ng = g[0].n if gi is None else len(gi)
    np_ = p[0].n if pi is None else len(pi)
    m = min(ng, np_)
    ig = None if gi is None and ng == m else (np.arange(m) if gi is None else gi[:m])
    if p is g and pi is gi:
        ip = ig
    else:
        ip = None if pi is None and np_ == m else (np.arange(m) if pi is None else pi[:m])
    wg, wp = len(g), len(p)
    e = [[eq(pj, ip, gk, ig) for gk in g] for pj in p]

    def any_of(vs: list[BoolArr | None]) -> BoolArr:
        out = np.zeros(m, np.bool_)
        for v in vs:
            if v is not None:
                out |= v
        return out

    hits = np.zeros(m, np.int8)  # counts up to 64 columns
    for j in range(wp):
        hits += any_of(e[j])
    in_p = [any_of([e[j][k] for j in range(wp)]) for k in range(wg)]
    found = np.zeros(m, np.int8)
    for v in in_p:
        found += v
    extra = ng - np_
    tp = _seqsum(hits, wg, 0, abs(extra))
    fp = _seqsum(wp - hits, wg, int(extra < 0), abs(extra))
    fn = _seqsum(wg - found, wg, int(extra > 0), abs(extra))
    precision = tp / (tp + fp) if tp + fp > 0 else 0
    recall = tp / (tp + fn) if tp + fn > 0 else 0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0
    set_prec: float = 0
    if set_precision and n_gold > 0:
        fresh = np.zeros(m, np.int8)
        for k in range(wg):
            dup = any_of([eq(g[k], ig, g[k2], ig) for k2 in range(k)])
            fresh += in_p[k] & ~dup
        set_prec = _seqsum(fresh, wg) / n_gold
    return PositionalF1(float(f1), float(precision), float(recall), float(set_prec))


#: Rows per chunk of :func:`_build`: the cells of a chunk stay in the CPU cache between the
#: passes (transpose, type check, conversion), which matters for rows in shuffled memory order.
_CHUNK = 512
_NUMBERS = frozenset({int, float})
_INT = frozenset({int})
_STR = frozenset({str})
_ROW_TYPES = frozenset({tuple, list})


def _build(
    rows: Sequence[Sequence[Any]], strings: _Strings, convert: bool = True
) -> tuple[list[list[Any] | None], list[set[type]], list[NDArray[Any] | None]]:
    """Columns, their cell types and (``convert``) their float64 values or string hashes, built
    chunk by chunk in one sweep over the rows; declines ragged or non-sequence rows. A column
    of numbers that converted is not kept as a list (None): nothing reads its cells again."""
    try:
        n, w = len(rows), len(rows[0])
        if w == 0:
            raise _Decline
        cols: list[list[Any] | None] = [None] * w
        types: list[set[type]] = [set() for _ in range(w)]
        pre: list[NDArray[Any] | None] = [None] * w
        live = [convert] * w
        for start in range(0, n, _CHUNK):
            chunk = rows[start : start + _CHUNK]
            if countOf(map(type, chunk), tuple) != len(chunk) and not set(
                map(type, chunk)
            ) <= _ROW_TYPES:
                raise _Decline
            try:  # one C call transposes the chunk; strict: ragged rows decline
                transposed = list(zip(*chunk, strict=True))
            except ValueError:
                raise _Decline from None
            if len(transposed) != w:
                raise _Decline
            end = start + len(chunk)
            for k, c in enumerate(transposed):
                t0 = type(c[0])  # counting one type is cheaper than building a set of them
                t: set[type] = {t0} if countOf(map(type, c), t0) == len(c) else set(map(type, c))
                types[k] |= t
                if live[k] and t <= _NUMBERS and cols[k] is None:
                    a = pre[k]
                    if a is None:
                        a = pre[k] = np.empty(n, np.float64)
                    # ints through int64: no float object is made per cell
                    a[start:end] = np.fromiter(c, np.int64 if t == _INT else np.float64, len(c))
                    continue
                col = cols[k]
                if col is None:  # the cells of the chunks converted so far, read again once
                    col = cols[k] = [r[k] for r in rows[:start]]
                col += c
                if not live[k]:
                    continue
                if t == _STR:
                    a = pre[k]
                    if a is None:
                        a = pre[k] = np.empty(n, np.int64)
                    a[start:end] = np.fromiter(map(hash, c), np.int64, len(c))
                else:
                    live[k] = False
        for k in range(w):
            if not live[k] or not (types[k] <= _NUMBERS or types[k] == _STR):
                pre[k] = None
        return cols, types, pre
    except (TypeError, IndexError, KeyError, OverflowError):
        raise _Decline from None


def _find_permutation(ctx: _Ctx, ordered: bool) -> tuple[int, ...] | None:
    """``table._find_permutation`` with vectorised predicates (same search, same answer)."""
    g, p = ctx.g, ctx.p
    ncol = len(g)
    identity = tuple(range(ncol))

    def same(a: _Col, b: _Col) -> bool:
        e = ctx.raw_eq(a, None, b, None)
        return e is not None and bool(e.all())

    if ordered:
        if all(same(a, b) for a, b in zip(g, p, strict=True)):
            return identity
        if ncol == 1:
            return None
        pool: list[tuple[int, list[int]]] = []
        for j in range(ncol):
            for rep, js in pool:
                if same(p[rep], p[j]):
                    js.append(j)
                    break
            else:
                pool.append((j, [j]))
        perm = []
        for a in g:
            group = next((js for rep, js in pool if same(a, p[rep])), None)
            if not group:
                return None
            perm.append(group.pop(0))
        return tuple(perm)
    if ctx.rows_relation(list(zip(g, p, strict=True)), multiset=True):
        return identity
    if ncol == 1:
        return None
    candidates: list[list[int]] = []
    for i in range(ncol):
        found = [j for j in range(ncol) if ctx.col_multiset_eq(g[i], p[j])]
        if not found:
            return None
        candidates.append(found)

    def projection_ok(assigned: dict[int, int]) -> bool:
        return ctx.rows_relation([(g[i], p[assigned[i]]) for i in sorted(assigned)], True)

    def full_ok(perm: tuple[int, ...]) -> bool:
        return ctx.rows_relation([(g[i], p[perm[i]]) for i in range(ncol)], True)

    return search_assignment(candidates, projection_ok, full_ok, g[0].n if g else 0)


def _quick_rej_implied(ctx: _Ctx, perm: Sequence[int]) -> bool:
    """``table._quick_rej_implied`` for whitelisted columns."""
    for i, j in enumerate(perm):
        a, b = ctx.g[i], ctx.p[j]
        types = a.types | b.types
        if len(types & {int, float}) > 1 or a.negzero or b.negzero:
            return False
    return True


def _likely_identical(gold: Sequence[Sequence[Any]], pred: Sequence[Sequence[Any]]) -> bool:
    """Same shape and equal first and last rows: then the columns are compared before
    anything is converted (identical tables need no conversion of the prediction)."""
    if len(gold) != len(pred) or len(gold[0]) != len(pred[0]):
        return False
    return all(tuple(gold[i]) == tuple(pred[i]) for i in (0, -1))


def _identical(g: list[_Col], pcols: list[list[Any] | None], ptypes: list[set[type]]) -> bool:
    """Pred equals gold cell for cell, same types, no negative zero: one set of columns."""
    for c, py, types in zip(g, pcols, ptypes, strict=True):
        assert py is not None  # built unconverted: every column is kept
        if c.negzero or len(c.types - {_NoneType}) > 1 or types != c.types or c.py != py:
            return False
        if float in c.types:
            f = np.fromiter(
                (0.0 if v is None else v for v in py) if c.mask is not None else py, np.float64, len(py)
            )
            if np.any(np.signbit(f) & (f == 0)):
                return False
    return True


def compare(
    gold_rows: Sequence[Sequence[Any]], pred_rows: Sequence[Sequence[Any]], order_matters: bool
) -> Result | None:
    """(ex, perm, bird_ex, soft_f1, cell PositionalF1, percent_overlap), or None to decline."""
    try:
        return _compare(gold_rows, pred_rows, order_matters)
    except (_Decline, TypeError):  # TypeError: rows that are not sequences
        return None


def _compare(gold_rows: Sequence[Sequence[Any]], pred_rows: Sequence[Sequence[Any]], ordered: bool) -> Result:
    if not gold_rows or not pred_rows:
        raise _Decline
    if len(gold_rows[0]) * len(pred_rows[0]) > 64:
        raise _Decline
    strings = _Strings()
    likely = _likely_identical(gold_rows, pred_rows)
    gbuilt = _build(gold_rows, strings, convert=not likely)
    ng, npr = len(gold_rows), len(pred_rows)
    g = [_Col(py, t, strings, a, ng) for py, t, a in zip(*gbuilt, strict=True)]
    pbuilt = _build(pred_rows, strings, convert=not likely)
    ppy, ptypes = pbuilt[0], pbuilt[1]
    if likely and _identical(g, ppy, ptypes):
        ctx = _Ctx(g, g)
        gi = ctx.first_rows(g, cast=False)
        gci = gi if gi is None else ctx.first_rows(g, cast=True)
        # Soft-F1 of a table with itself: every de-duplicated row pairs with its equal, so tp is
        # the row count and fp = fn = 0 exactly (the pure path's own short cut); the cell F1 still
        # runs for percent_subset (distinct cells per row).
        soft = 1.0
        cell = _positional(ctx.cast_eq, g, gci, g, gci, ng, True)
        has_cell = any(c.kind != _Z for c in g)
        return True, tuple(range(len(g))), True, soft, cell, 1.0 if has_cell else 0.0
    p = [_Col(py, t, strings, a, npr) for py, t, a in zip(*pbuilt, strict=True)]
    ctx = _Ctx(g, p)
    ex, perm = False, None
    if ng == npr and len(g) == len(p):
        perm = _find_permutation(ctx, ordered)
        if perm is not None:
            if not _quick_rej_implied(ctx, perm):
                raise _Decline
            ex = True
    identity = tuple(range(len(g)))
    gi, pi = ctx.first_rows(g, cast=False), ctx.first_rows(p, cast=False)
    if ex and perm == identity:
        bird = True
    elif len(g) != len(p):
        bird = False
    else:
        pairs = list(zip(g, p, strict=True))
        if gi is None and pi is None:  # sets of distinct rows: equal iff equal multisets
            bird = ng == npr and ctx.rows_relation(pairs, multiset=True)
        else:
            bird = ctx.rows_relation(pairs, multiset=False)
    soft = _positional(ctx.raw_eq, g, gi, p, pi, ng, False).f1
    gci = None if gi is None else ctx.first_rows(g, cast=True)
    pci = None if pi is None else ctx.first_rows(p, cast=True)
    cell = _positional(ctx.cast_eq, g, gci, p, pci, ng, True)
    overlap = (1.0 if any(c.kind != _Z for c in g) else 0.0) if ex else _overlap(ctx)
    return ex, perm, bird, soft, cell, overlap


def _cat(parts: list[NDArray[Any]], dtype: type) -> NDArray[Any]:
    """Concatenation that does not copy a single part."""
    parts = [a for a in parts if len(a)]
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.zeros(0, dtype)


def _nonnull(cols: list[_Col], kind: int) -> IntArr:
    return _cat([c.code if c.mask is None else c.code[~c.mask] for c in cols if c.kind == kind],
                np.int64)


Numbers = tuple[NDArray[np.float64], NDArray[np.float64]]


def _numbers(cols: list[_Col]) -> Numbers:
    """The non-NULL numbers: those of int-only columns (integral, never -0.0), and the others
    (-0.0 folded into 0.0)."""
    ints: list[NDArray[np.float64]] = []
    other: list[NDArray[np.float64]] = []
    for c in cols:
        if c.f is not None:
            (other if float in c.types else ints).append(c.f if c.mask is None else c.f[~c.mask])
    rest = _cat(other, np.float64)
    return _cat(ints, np.float64), rest + 0.0 if any(c.negzero for c in cols) else rest


def _common_numbers(a: Numbers, b: Numbers) -> int:
    """:func:`_common` on numbers: integral values in a dense range are counted with
    ``bincount`` (no sort), the others through their (canonical) bit patterns."""
    (a_int, a_oth), (b_int, b_oth) = a, b
    na, nb = len(a_int) + len(a_oth), len(b_int) + len(b_oth)
    if not na or not nb:
        return 0
    ia = np.isfinite(a_oth) & (a_oth == np.floor(a_oth))
    ib = np.isfinite(b_oth) & (b_oth == np.floor(b_oth))
    ints_a, ints_b = _cat([a_int, a_oth[ia]], np.float64), _cat([b_int, b_oth[ib]], np.float64)
    if len(ints_a) and len(ints_b):
        lo = min(float(ints_a.min()), float(ints_b.min()))
        hi = max(float(ints_a.max()), float(ints_b.max()))
        if hi - lo <= 4 * (na + nb):
            size = int(hi - lo) + 1
            ca = np.bincount((ints_a - lo).astype(np.intp), minlength=size)
            cb = np.bincount((ints_b - lo).astype(np.intp), minlength=size)
            rest = _common(a_oth[~ia].view(np.int64), b_oth[~ib].view(np.int64))
            return int(np.minimum(ca, cb).sum()) + rest
    return _common(_cat([a_int, a_oth], np.float64).view(np.int64),
                   _cat([b_int, b_oth], np.float64).view(np.int64))


def _common(a: IntArr, b: IntArr) -> int:
    """Size of the multiset intersection of two code arrays."""
    if not len(a) or not len(b):
        return 0
    ua, ca = np.unique(a, return_counts=True)
    ub, cb = np.unique(b, return_counts=True)
    ib = np.minimum(np.searchsorted(ub, ua), len(ub) - 1)
    hit = ub[ib] == ua
    return int(np.minimum(ca[hit], cb[ib[hit]]).sum())


def _overlap(ctx: _Ctx) -> float:
    """``table._overlap``: multiset overlap of the non-NULL cells / gold's non-NULL cells."""
    if any(c.kind == _S for c in (*ctx.g, *ctx.p)):
        ctx.g[0].strings.check()
    gn, gs = _numbers(ctx.g), _nonnull(ctx.g, _S)
    total_gold = len(gn[0]) + len(gn[1]) + len(gs)
    if total_gold == 0:
        return 0.0
    total = _common_numbers(gn, _numbers(ctx.p)) + _common(gs, _nonnull(ctx.p, _S))
    return total / total_gold
