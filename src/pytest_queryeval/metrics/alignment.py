"""BuildingQA's four result-table metrics, with the reference's exact answers but no brute force.

``arity_f1``, ``entity_set_f1``, ``row_match_f1`` and ``exact_match_f1`` reproduce
INFERLab/BuildingQA ``metrics.py`` (HEAD 6eaa879) value for value, quirks included (see
docs/metrics-sparql.md). The reference tries every column permutation and compares every gold row
with every predicted row; here rows are counted as hashed multisets and the permutation search is
a branch and bound (:mod:`._alignment_search`) that returns the very mapping the reference picks.

Why one module of this size: the four metrics share one column mapping, one encoding of the
cells and the short cut for results whose columns are only permuted; split apart, each would
re-encode the cells (the cost that short cut removes) or pass the shared state between modules.
The search itself already lives in :mod:`._alignment_search`.
"""

from __future__ import annotations

import operator
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import compress, filterfalse, islice, permutations, repeat
from itertools import count as counting
from math import perm
from operator import attrgetter, itemgetter
from typing import Any, Literal

from .._isolation.comparison_deadline import check_deadline
from ..results import FIRST_ROW_KEYS, ResultTable, Term
from ._alignment_search import (
    Matrices,
    best_mapping,
    check_affordable,
    entity_f1,
    entity_matrices,
    entity_scores,
    multiset_tp,
    row_f1,
)

__all__ = [
    "ALIGNMENT_METRIC_NAMES",
    "AlignmentDetails",
    "alignment_details",
    "alignment_diff",
    "alignment_metrics",
    "arity_f1",
    "arity_from_query",
    "normalize_value",
]

ALIGNMENT_METRIC_NAMES: tuple[str, ...] = (
    "arity_f1",
    "entity_set_f1",
    "row_match_f1",
    "exact_match_f1",
)

TableKind = Literal["sparql", "sql"]

# ---------------------------------------------------------------------------------------------
# Arity


_SELECT_CLAUSE = re.compile(r"SELECT\s+(.+?)\s+WHERE", re.IGNORECASE | re.DOTALL)


def arity_from_query(query: object) -> int:
    """Projection width as the reference reads it from the text (quirks kept, see the docs).

    The text between the first ``SELECT`` and the first following ``WHERE`` is split on
    whitespace outside parentheses and every token except ``DISTINCT`` counts, so ``*`` counts 1,
    ``REDUCED`` and ``FROM <g>`` count too, and a query without ``WHERE`` (or not a string) is 0.
    """
    if not isinstance(query, str):
        return 0
    found = _SELECT_CLAUSE.search(query)
    if found is None:
        return 0
    tokens: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in found.group(1).strip():
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if depth == 0 and ch.isspace():
            if current:
                tokens.append("".join(current))
                current = []
        else:
            current.append(ch)
    if current:
        tokens.append("".join(current))
    return sum(1 for t in tokens if t.upper() != "DISTINCT")


def arity_f1(pred_width: int, gold_width: int) -> float:
    """Dice of two column counts: ``2·min/(a+b)``, and 1.0 when both are 0."""
    if pred_width == 0 and gold_width == 0:
        return 1.0
    return 2 * min(pred_width, gold_width) / (pred_width + gold_width)


# ---------------------------------------------------------------------------------------------
# Value forms


_DATATYPE_TAIL = re.compile(r"\^\^.*$")
_LANG_TAIL = re.compile(r"@[a-z]{2}(-[a-z]{2})?$")


def normalize_value(value: str) -> str:
    """The reference's row-matching form of a value string (lowercased, tags stripped).

    strip, lowercase, drop one pair of surrounding double quotes, then delete a ``^^...`` tail and
    a trailing ``@xx``/``@xx-yy`` (so ``user@ab`` becomes ``user``, URIs are lowercased too).
    """
    out = value.strip().lower()
    if len(out) > 1 and out[0] == '"' and out[-1] == '"':
        out = out[1:-1]
    out = _DATATYPE_TAIL.sub("", out)
    return _LANG_TAIL.sub("", out)


def normalize_values(values: list[str]) -> list[str]:
    """``[normalize_value(v) for v in values]``, in C for the values that need only the strip
    and the lowercasing: a value holding no ``^^`` and no ``@`` and not starting with a double
    quote (after both) is left as they leave it; the others take :func:`normalize_value`."""
    out = list(map(str.lower, map(str.strip, values)))
    n = len(out)
    special = set(compress(range(n), map(operator.contains, out, repeat("^^"))))
    special.update(compress(range(n), map(operator.contains, out, repeat("@"))))
    special.update(compress(range(n), map(str.startswith, out, repeat('"'))))
    for i in special:
        out[i] = normalize_value(values[i])
    return out


def _table_kind(table: ResultTable) -> TableKind | None:
    """``sparql`` when cells are :class:`Term`, ``sql`` for plain values, None if all are unbound."""
    declared = table.meta.get("kind")
    if declared in ("sparql", "sql"):
        return declared  # type: ignore[no-any-return]
    for row in table.rows:
        for v in row:
            if v is not None:
                return "sparql" if isinstance(v, Term) else "sql"
    return None


def _resolve_kind(gold: ResultTable, pred: ResultTable, kind: TableKind | None) -> TableKind:
    if kind is not None:
        if kind not in ("sparql", "sql"):
            raise ValueError(f"kind must be 'sparql' or 'sql', not {kind!r}")
        return kind
    return _table_kind(gold) or _table_kind(pred) or "sparql"


def _first_row_columns(table: ResultTable, kind: TableKind) -> list[int]:
    """Indices of the metric's columns: the first row's keys (SPARQL) or every column (SQL).

    SPARQL JSON leaves unbound variables out of a binding, and the reference takes the first
    binding's keys as the column set; a SQL row always has every column.
    """
    if not table.rows:
        return []
    if kind == "sql":
        return list(range(len(table.columns)))
    keys = table.meta.get(FIRST_ROW_KEYS)
    if isinstance(keys, list):  # a recorded JSON result: the order its first binding's keys came
        index = {name: i for i, name in enumerate(table.columns)}
        return [index[k] for k in keys if k in index and table.rows[0][index[k]] is not None]
    return [i for i, v in enumerate(table.rows[0]) if v is not None]


def _raw_column(rows: list[tuple[Any, ...]], index: int, kind: TableKind) -> list[str | None]:
    """One column as the reference's ``binding['value']`` strings, None where unbound/NULL (and
    where a recorded row is shorter than the table: a ragged ``rows:`` list, such as the rows of
    characters a flat list of strings is to the EHRSQL reference, docs/abstention.md)."""
    try:
        cells = list(map(itemgetter(index), rows))
    except IndexError:
        cells = [row[index] if index < len(row) else None for row in rows]
    if kind == "sparql":
        try:
            return list(map(_VALUE, cells))  # the common case: no unbound cell
        except AttributeError:  # unbound cells, or plain values in a recorded SPARQL table
            return [None if v is None else v.value if isinstance(v, Term) else str(v) for v in cells]
    return [None if v is None else str(v) for v in cells]


_VALUE = attrgetter("value")


@dataclass(slots=True)
class _Side:
    """One table reduced to what the metrics look at."""

    names: list[str]
    n_rows: int
    codes: list[list[int]]  # per column: normalised value id per row, 0 = unbound
    entities: list[frozenset[str]]  # per column: distinct raw value strings, '' for unbound


#: normalize_value results across calls: a suite's values repeat from case to case. Only
#: short values are kept (a 64 MB cell stayed in memory for the rest of the session).
_NORMALIZED: dict[str, str] = {}
_NORMALIZED_MAX = 100_000
_NORMALIZED_CHARS = 256


class _Codebook:
    """Shared integer ids for normalised values, so gold and predicted rows hash alike."""

    def __init__(self) -> None:
        self.by_raw: dict[str | None, int] = {None: 0}
        self.by_norm: dict[str, int] = {}
        self.norm_of: list[str | None] = [None]

    def encode(self, raw: list[str | None]) -> list[int]:
        by_raw = self.by_raw
        new = set(raw).difference(by_raw)
        if len(new) > _MANY:
            self._add_many(list(new))  # type: ignore[arg-type]
            return list(map(by_raw.__getitem__, raw))
        for s in new:
            assert s is not None
            n = _NORMALIZED.get(s)
            if n is None:
                n = normalize_value(s)
                if len(s) <= _NORMALIZED_CHARS:
                    if len(_NORMALIZED) >= _NORMALIZED_MAX:
                        _NORMALIZED.clear()
                    _NORMALIZED[s] = n
            code = self.by_norm.get(n)
            if code is None:
                code = self.by_norm[n] = len(self.norm_of)
                self.norm_of.append(n)
            by_raw[s] = code
        return list(map(by_raw.__getitem__, raw))

    def _add_many(self, new: list[str]) -> None:
        """Codes for many new raw values at once, without a Python step per value (a
        100,000-row SPARQL pair has 250,000 distinct values; the loop above took a second):
        :func:`normalize_values` of them, the new normalised values numbered in one
        ``dict.update``. The codes' order differs from the loop's; they only name values."""
        norms = normalize_values(new)
        by_norm, norm_of = self.by_norm, self.norm_of
        fresh = list(filterfalse(by_norm.__contains__, dict.fromkeys(norms)))
        by_norm.update(zip(fresh, counting(len(norm_of))))
        norm_of.extend(fresh)
        self.by_raw.update(zip(new, map(by_norm.__getitem__, norms), strict=True))


#: New values of one column from which :meth:`_Codebook.encode` codes them all at once.
_MANY = 2048


def _prepare(table: ResultTable, cols: list[int], kind: TableKind, book: _Codebook,
             what: Callable[[], str]) -> _Side:
    """One column at a time, under the comparison's deadline (a 100,000-row result of 40
    columns takes seconds to encode on a loaded machine; ``what`` names the work)."""
    codes: list[list[int]] = []
    entities: list[frozenset[str]] = []
    for c in cols:
        check_deadline(what)
        raw = _raw_column(table.rows, c, kind)
        codes.append(book.encode(raw))
        values = set(raw)
        if None in values:
            values.discard(None)
            values.add("")
        entities.append(frozenset(values))  # type: ignore[arg-type]
    return _Side(
        names=[table.columns[c] for c in cols],
        n_rows=len(table.rows),
        codes=codes,
        entities=entities,
    )


# ---------------------------------------------------------------------------------------------
# Metrics


@dataclass(slots=True)
class AlignmentDetails:
    """Scores plus how they came about: the chosen column mapping and the search effort.

    ``mapping`` lists ``(pred_column, gold_column)`` pairs in gold column order, as the reference
    would have chosen it; None when no mapping was searched (an empty side, or fewer predicted
    than gold columns). ``gold_columns``/``pred_columns`` are the columns the metrics saw (first-row
    keys for SPARQL). ``permutations`` is how many mappings the reference would enumerate and
    ``leaves`` how many full mappings the search actually scored.
    """

    metrics: dict[str, float]
    kind: TableKind
    gold_columns: list[str]
    pred_columns: list[str]
    mapping: list[tuple[str, str]] | None
    row_tp: int = 0
    entity_precision: float = 0.0
    entity_recall: float = 0.0
    permutations: int = 0
    nodes: int = 0
    leaves: int = 0
    _sides: tuple[_Side, _Side, _Codebook] | None = field(default=None, repr=False)
    _perm: tuple[int, ...] | None = field(default=None, repr=False)


def alignment_details(
    gold: ResultTable,
    pred: ResultTable,
    *,
    gold_query: str | None = None,
    pred_query: str | None = None,
    arity_from: str = "query",
    kind: TableKind | None = None,
) -> AlignmentDetails:
    """Score ``pred`` against ``gold`` and keep the mapping chosen (see :class:`AlignmentDetails`)."""
    if arity_from not in ("query", "result"):
        raise ValueError(f"arity_from must be 'query' or 'result', not {arity_from!r}")
    k = _resolve_kind(gold, pred, kind)
    book = _Codebook()
    gcols, pcols = _first_row_columns(gold, k), _first_row_columns(pred, k)

    def what() -> str:
        return f"the column alignment of {len(pcols)} predicted to {len(gcols)} gold columns"

    g = _prepare(gold, gcols, k, book, what)
    p = _prepare(pred, pcols, k, book, what)

    if arity_from == "query" and gold_query is not None and pred_query is not None:
        arity = arity_f1(arity_from_query(pred_query), arity_from_query(gold_query))
    else:
        arity = arity_f1(len(p.names), len(g.names))

    details = AlignmentDetails(
        metrics={},
        kind=k,
        gold_columns=g.names,
        pred_columns=p.names,
        mapping=None,
        _sides=(g, p, book),
    )
    entity, row = _mapped_scores(g, p, book, details)

    details.metrics = {
        "arity_f1": arity,
        "entity_set_f1": entity,
        "row_match_f1": row,
        "exact_match_f1": _exact_match(g, p),
    }
    return details


def _mapped_scores(g: _Side, p: _Side, book: _Codebook,
                   details: AlignmentDetails) -> tuple[float, float]:
    """``entity_set_f1`` and ``row_match_f1`` under the column mapping the reference would
    choose (searched the cheapest way that finds its choice), the mapping and the search
    effort kept on ``details``."""
    ng, np_ = len(g.names), len(p.names)
    if g.n_rows == 0 or p.n_rows == 0:
        both = 1.0 if g.n_rows == 0 and p.n_rows == 0 else 0.0
        entity, row = both, both
    elif np_ < ng:
        entity, row = 0.0, 0.0
    elif ng == 0:
        # The reference maps nothing and scores an empty mapping 0.
        entity, row = 0.0, 0.0
        details.mapping, details._perm = [], ()
    else:
        details.permutations = perm(np_, ng)
        if g.codes == p.codes and g.entities == p.entities:
            # Identical tables: the identity scores the maximum (1, 1) and is the first
            # permutation, so it is the reference's choice (a shape too wide to search
            # still scores a prediction identical to its gold).
            best, tp = tuple(range(ng)), g.n_rows
            entity, details.entity_precision, details.entity_recall = 1.0, 1.0, 1.0
        elif details.permutations <= _SMALL_PERMS and g.n_rows + p.n_rows <= _SMALL_ROWS:
            best, tp, (entity, details.entity_precision, details.entity_recall) = \
                _reference_search(g, p)
            details.nodes = details.leaves = details.permutations
        else:
            check_affordable(ng, np_)  # before the matrices: ng x np_ pairs
            mats = Matrices.build(g.codes, p.codes, g.entities, p.entities)
            found = best_mapping(g.codes, p.codes, mats, len(book.norm_of))
            details.nodes, details.leaves = found.nodes, found.leaves
            best, tp = found.perm, found.tp
            entity, details.entity_precision, details.entity_recall = entity_f1(mats, best)
        details._perm = best
        details.mapping = [(p.names[j], g.names[i]) for i, j in enumerate(best)]
        details.row_tp = tp
        row = row_f1(tp, g.n_rows, p.n_rows)
    return entity, row


#: Up to this many column mappings and rows (both sides), the reference's own loop over every
#: permutation is cheaper than setting up the branch and bound (most CI suites: a few rows).
_SMALL_PERMS = 6
_SMALL_ROWS = 64


def _reference_search(g: _Side, p: _Side) -> tuple[tuple[int, ...], int, tuple[float, float, float]]:
    """BuildingQA's loop itself: every permutation in itertools order, first best kept."""
    gold_rows = Counter(zip(*g.codes, strict=True))
    precision, recall = entity_matrices(g.entities, p.entities)
    best: tuple[int, ...] = ()
    best_key = (-1.0, -1.0)
    best_tp = 0
    best_entity = (0.0, 0.0, 0.0)
    for candidate in permutations(range(len(p.names)), len(g.names)):
        tp = multiset_tp(gold_rows, Counter(zip(*(p.codes[j] for j in candidate), strict=True)))
        entity = entity_scores(precision, recall, candidate)
        key = (row_f1(tp, g.n_rows, p.n_rows), entity[0])
        if key > best_key:
            best, best_key, best_tp, best_entity = candidate, key, tp, entity
    return best, best_tp, best_entity


def _exact_match(g: _Side, p: _Side) -> float:
    """Row F1 under the positional mapping; 0 when the first-row widths differ."""
    if g.n_rows == 0 and p.n_rows == 0:
        return 1.0
    if g.n_rows == 0 or p.n_rows == 0 or len(g.names) != len(p.names) or not g.names:
        return 0.0
    # A position whose codes the two sides do not share matches no row: no need to count the
    # rows (two Counters of every row were a sixth of a 100,000-row SPARQL pair's scoring,
    # for a prediction whose columns are merely permuted).
    if any(set(gc).isdisjoint(pc) for gc, pc in zip(g.codes, p.codes, strict=True)):
        return row_f1(0, g.n_rows, p.n_rows)
    tp = multiset_tp(Counter(zip(*g.codes, strict=True)), Counter(zip(*p.codes, strict=True)))
    return row_f1(tp, g.n_rows, p.n_rows)


def alignment_metrics(
    gold: ResultTable,
    pred: ResultTable,
    *,
    gold_query: str | None = None,
    pred_query: str | None = None,
    arity_from: str = "query",
    kind: TableKind | None = None,
) -> dict[str, float]:
    """The four metrics, keyed by :data:`ALIGNMENT_METRIC_NAMES`.

    Arity comes from the two query texts when both are given and ``arity_from == "query"``
    (what BuildingQA's agent does), else from the first-row widths of the results. ``kind``
    overrides detecting SPARQL (cells are :class:`Term`) versus SQL (plain values) tables.
    """
    if arity_from in ("query", "result") and _resolve_kind(gold, pred, kind) == "sql":
        fast = _permuted_copy(gold, pred)
        if fast is not None:
            entity, row, exact = fast
            if arity_from == "query" and gold_query is not None and pred_query is not None:
                arity = arity_f1(arity_from_query(pred_query), arity_from_query(gold_query))
            else:
                arity = arity_f1(len(pred.columns), len(gold.columns))
            return {"arity_f1": arity, "entity_set_f1": entity, "row_match_f1": row,
                    "exact_match_f1": exact}
    return alignment_details(
        gold, pred, gold_query=gold_query, pred_query=pred_query, arity_from=arity_from, kind=kind
    ).metrics


def alignment_diff(
    gold: ResultTable,
    pred: ResultTable,
    *,
    limit: int = 5,
    kind: TableKind | None = None,
    details: AlignmentDetails | None = None,
) -> list[str]:
    """Human-readable lines: the chosen column mapping, then missing and extra rows under it.

    Rows are shown in the normalised form the row metric compares (lowercased, tags removed),
    at most ``limit`` of each. Pass ``details`` from :func:`alignment_details` to skip the search.
    """
    d = details if details is not None else alignment_details(gold, pred, kind=kind)
    assert d._sides is not None
    g, p, book = d._sides
    lines: list[str] = []
    if d.mapping is None:
        if g.n_rows == 0 or p.n_rows == 0:
            lines.append(f"no column mapping: {g.n_rows} gold rows, {p.n_rows} predicted rows")
        else:
            lines.append(
                f"no column mapping: {len(p.names)} predicted column(s) "
                f"{_names(p.names)} for {len(g.names)} gold column(s) {_names(g.names)}"
            )
        return lines
    pairs = ", ".join(f"{pc} -> {gc}" for pc, gc in d.mapping)
    lines.append(f"column mapping (predicted -> gold): {pairs or '(none)'}")
    used = {pc for pc, _ in d.mapping}
    ignored = [n for n in p.names if n not in used]
    if ignored:
        lines.append(f"ignored predicted columns: {_names(ignored)}")
    if d._perm is None or not d._perm:
        return lines
    gold_rows = Counter(zip(*g.codes, strict=True))
    pred_rows = Counter(zip(*(p.codes[j] for j in d._perm), strict=True))
    missing = gold_rows - pred_rows
    extra = pred_rows - gold_rows
    lines.append(
        f"rows: {d.row_tp} matched, {missing.total()} gold row(s) missing, "
        f"{extra.total()} extra predicted row(s)"
    )
    header = "(" + ", ".join(g.names) + ")"
    for label, bag in (("missing", missing), ("extra", extra)):
        for key, count in islice(bag.items(), limit):
            shown = ", ".join("UNBOUND" if c == 0 else repr(book.norm_of[c]) for c in key)
            times = f" x{count}" if count > 1 else ""
            lines.append(f"  {label} {header} = ({shown}){times}")
    return lines


def _names(names: list[str]) -> str:
    return "[" + ", ".join(names) + "]"


# ---------------------------------------------------------------------------------------------
# Large SQL results whose columns are merely permuted


#: Cells (both sides) from which :func:`_permuted_copy` is tried: below, encoding is cheap.
_PERMUTED_MIN_CELLS = 20_000
#: Cell types whose equality implies equal ``str()`` forms when a column holds one of them
#: (with None): ``1 == 1.0 == True`` and ``0.0 == -0.0`` print differently, so at most one of
#: the number types per column, and no float zero.
_PLAIN_TYPES = frozenset({str, int, float, bool, bytes, type(None)})
_NUMBER_TYPES = frozenset({int, float, bool})


def _plain_column(cells: list[Any]) -> bool:
    types = set(map(type, cells))
    if not types <= _PLAIN_TYPES or len(types & _NUMBER_TYPES) > 1:
        return False
    return float not in types or 0.0 not in cells


def _permuted_copy(gold: ResultTable, pred: ResultTable) -> tuple[float, float, float] | None:
    """``(entity_set_f1, row_match_f1, exact_match_f1)`` when the prediction holds the gold's
    rows (in any order) with its columns permuted, without encoding a cell; None otherwise
    (then the search runs).

    Why exact: the permutation is the one the column names spell, else the one order-free
    column digests (a sum of hashes) suggest, and is checked by comparing the two row
    multisets under it, with every column of a type whose equality implies equal ``str()``
    forms (:func:`_plain_column`). Equal raw multisets give equal normalised multisets and
    entity sets, so that mapping scores the maximum (1, 1) the reference's search can reach,
    and both metrics are then 1 whichever first mapping reaches it (why this short cut is
    for the metric values only: :func:`alignment_details` still names the reference's
    mapping). Why it matters: on a 1,000,000-row pair encoding every cell and searching took
    62% of the case. ``exact_match_f1`` (the identity mapping) is 1 when the permutation is the
    identity, 0 when some column position holds no normalised value on one side that the
    other side holds (no row can match there), and left to the search otherwise.
    """
    g_rows, p_rows = gold.rows, pred.rows
    width = len(gold.columns)
    n = len(g_rows)
    if (width == 0 or len(pred.columns) != width or len(p_rows) != n
            or 2 * n * width < _PERMUTED_MIN_CELLS):
        return None
    if set(map(len, g_rows)) != {width} or set(map(len, p_rows)) != {width}:
        return None
    check_deadline(lambda: f"the column alignment of {width} predicted to {width} gold columns")
    g_cols = [list(map(itemgetter(i), g_rows)) for i in range(width)]
    p_cols = [list(map(itemgetter(i), p_rows)) for i in range(width)]
    perm_ = _by_names(gold.columns, pred.columns) or _by_digests(g_cols, p_cols)
    if perm_ is None:
        return None
    if not all(_plain_column(c) for c in g_cols) or not all(_plain_column(c) for c in p_cols):
        return None
    identity = perm_ == list(range(width))
    if identity:
        pair = Counter(g_rows), Counter(p_rows)
    elif width == 1:
        pair = Counter(g_cols[0]), Counter(p_cols[perm_[0]])
    else:
        pair = Counter(g_rows), Counter(map(itemgetter(*perm_), p_rows))
    # dict's own comparison (in C): Counter's == walks both in a Python generator
    if not dict.__eq__(*pair):
        return None
    full = row_f1(n, n, n)
    if identity:
        return 1.0, full, full
    # The identity mapping: a position whose normalised value sets are disjoint matches no
    # row. Predicted column j holds gold column k's values (perm_[k] == j), so only the gold
    # columns' sets are needed; the pair with the fewest distinct values is normalised.
    holder = {j: k for k, j in enumerate(perm_)}
    sets = {i: set(g_cols[i]) for i in range(width) if perm_[i] != i}
    _, i = min((len(sets[i]) + len(sets[holder[i]]), i) for i in sets)
    if _normalised(sets[i]).isdisjoint(_normalised(sets[holder[i]])):
        return 1.0, full, row_f1(0, n, n)
    return None


def _by_names(gold: list[str], pred: list[str]) -> list[int] | None:
    """The permutation that the column names spell (case-insensitive, all distinct)."""
    index = {name.lower(): j for j, name in enumerate(pred)}
    if len(index) != len(pred):
        return None
    perm_ = [index.get(name.lower(), -1) for name in gold]
    return perm_ if -1 not in perm_ and len(set(perm_)) == len(perm_) else None


def _by_digests(g_cols: list[list[Any]], p_cols: list[list[Any]]) -> list[int] | None:
    """A permutation matching each gold column to a predicted column with the same order-free
    digest (a sum of hashes); only a candidate, which the caller checks."""
    mask = (1 << 64) - 1
    p_digest = [sum(map(hash, c)) & mask for c in p_cols]
    free = list(range(len(p_cols)))
    perm_: list[int] = []
    for col in g_cols:
        digest = sum(map(hash, col)) & mask
        match = next((j for j in free if p_digest[j] == digest), None)
        if match is None:
            return None
        free.remove(match)
        perm_.append(match)
    return perm_


def _normalised(values: set[Any]) -> set[str | None]:
    """The reference's row-matching forms of distinct SQL cells (None stays None: unbound)."""
    return {None if v is None else normalize_value(str(v)) for v in values}
