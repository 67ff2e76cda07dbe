"""Branch-and-bound column alignment that returns exactly BuildingQA's brute-force choice.

The reference scores every ``itertools.permutations(pred_cols, n_gold)`` and keeps the first one
with the lexicographically highest ``(row F1, entity F1)``. Row F1 is monotone in the row
multiset-intersection size ``tp`` (fixed row counts), so the target is the lexicographically
first permutation (in index order, which is itertools order) maximising ``(tp, entity F1)``,
where entity F1 must be the reference's float, bit for bit, since ties are decided on it.

Bounds that make the search fast and never change the answer:

* ``tp`` of a full mapping is at most the multiset intersection of any projection of it, so a
  partial mapping's exact prefix ``tp`` (rows counted as tuples of the columns assigned so far)
  and each unassigned gold column's best single-column count bound every completion;
* the entity F1 bound uses each unassigned gold column's best free precision and recall (F1 is
  increasing in both), with a relative margin for float rounding;
* a subtree whose bound only ties the incumbent is skipped when its lexicographically smallest
  completion comes after the incumbent's permutation;
* interchangeable predicted columns (same values in every row) only ever produce exact ties, so
  they are tried in increasing index order along the gold positions, as the first
  permutation of each tie would have them;
* a refinement reads predicted rows in chunks and stops once the rows still alive plus those
  unread cannot reach the incumbent's ``tp`` (each row adds at most 1).

On large inputs a search over a strided sample of predicted rows proposes the first incumbent,
scored exactly; it only speeds up pruning. The gold columns are assigned in a fixed order (most
distinct values first), which is why ties are settled by comparing permutations explicitly.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import compress, repeat
from operator import add, itemgetter, mul
from typing import TypeVar

from .._isolation.comparison_deadline import check_deadline
from ..errors import SearchBudgetExhausted

_K = TypeVar("_K")
#: Predicted rows still able to match (None: all) and their prefix ids (None before depth 1).
_Live = tuple[list[int] | None, list[int] | None]
_CHUNK = 1 << 14  # predicted rows per step of a refinement (how often it may stop early)
_SAMPLE = 2048  # predicted rows in the preliminary search that finds a first incumbent
_MARGIN = 1e-12  # relative slack on the entity-F1 bound: far above float error, far below 1/n

#: Work a search may do, in deterministic units (gold x predicted columns per candidate column
#: tried, for its bounds, plus one per predicted row read by a refinement), before it stops
#: with SearchBudgetExhausted. Legitimate searches stay below (100,000 x 8 against 100,000 x 10
#: columns: ~12 M); 30 predicted against 6 gold columns of look-alike values took 162 s
#: without a bound (now ~5 s). Deterministic, unlike a deadline, so a case's outcome does not
#: depend on the machine's load.
SEARCH_BUDGET = 20_000_000


def np_mean(values: list[float]) -> float:
    """``numpy.mean`` of a float list, bit for bit (numpy's pairwise summation, in pure Python).

    The reference averages the per-column precisions with numpy, and its tie-break compares those
    floats; a plain left-to-right sum rounds differently from 8 values on.
    """
    return _pairwise_sum(values, 0, len(values)) / len(values)


def _pairwise_sum(a: list[float], start: int, n: int) -> float:
    if n < 8:
        res = -0.0
        for i in range(start, start + n):
            res += a[i]
        return res
    if n <= 128:
        r = a[start : start + 8]
        i = 8
        stop = n - n % 8
        while i < stop:
            for k in range(8):
                r[k] += a[start + i + k]
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        while i < n:
            res += a[start + i]
            i += 1
        return res
    half = n // 2
    half -= half % 8
    return _pairwise_sum(a, start, half) + _pairwise_sum(a, start + half, n - half)


def f1_of(precision: float, recall: float) -> float:
    """Harmonic mean with the reference's operation order, 0 when both are 0."""
    total = precision + recall
    return 2 * precision * recall / total if total > 0 else 0.0


def row_f1(tp: int, n_gold: int, n_pred: int) -> float:
    """Row F1 from the matched-row count (precision over predicted, recall over gold rows)."""
    precision = tp / n_pred if n_pred else 1.0
    recall = tp / n_gold if n_gold else 1.0
    return f1_of(precision, recall)


def multiset_tp(gold: Counter[_K], pred: Counter[_K]) -> int:
    """Size of the multiset intersection: what greedy one-to-one row matching counts."""
    common = gold.keys() & pred.keys()
    return sum(map(min, map(gold.__getitem__, common), map(pred.__getitem__, common)))


@dataclass(slots=True)
class Matrices:
    """Per (gold column, predicted column) pair: entity precision/recall and a row-count bound."""

    precision: list[list[float]]
    recall: list[list[float]]
    single: list[list[int]]  # multiset intersection of the two columns' normalised values
    gold_distinct: list[int]

    @classmethod
    def build(
        cls,
        gold_codes: list[list[int]],
        pred_codes: list[list[int]],
        gold_entities: list[frozenset[str]],
        pred_entities: list[frozenset[str]],
    ) -> Matrices:
        gcount = [Counter(c) for c in gold_codes]
        pcount = [Counter(c) for c in pred_codes]
        precision, recall = entity_matrices(gold_entities, pred_entities)
        single = [[multiset_tp(gc, pc) for pc in pcount] for gc in gcount]
        return cls(precision, recall, single, [len(c) for c in gcount])


def entity_matrices(
    gold_entities: list[frozenset[str]], pred_entities: list[frozenset[str]]
) -> tuple[list[list[float]], list[list[float]]]:
    """Per (gold column, predicted column): entity precision and recall (1.0 for an empty set)."""
    precision, recall = [], []
    for ge in gold_entities:
        inter = [len(ge & pe) for pe in pred_entities]
        sizes = [len(pe) for pe in pred_entities]
        precision.append([t / n if n else 1.0 for t, n in zip(inter, sizes, strict=True)])
        recall.append([t / len(ge) if ge else 1.0 for t in inter])
    return precision, recall


def entity_scores(
    precision: list[list[float]], recall: list[list[float]], perm: tuple[int, ...]
) -> tuple[float, float, float]:
    """Entity-set F1 of a full mapping (gold position i -> predicted column perm[i]), with P̄, R̄."""
    p = np_mean([precision[i][j] for i, j in enumerate(perm)])
    r = np_mean([recall[i][j] for i, j in enumerate(perm)])
    return f1_of(p, r), p, r


def entity_f1(m: Matrices, perm: tuple[int, ...]) -> tuple[float, float, float]:
    """:func:`entity_scores` from the matrices."""
    return entity_scores(m.precision, m.recall, perm)


@dataclass(slots=True)
class Found:
    perm: tuple[int, ...]
    tp: int
    nodes: int
    leaves: int


def check_affordable(n_gold: int, n_pred: int) -> None:
    """Refuse, before any work, a shape whose search cannot end within :data:`SEARCH_BUDGET`.

    Its first level alone tries every predicted column for the first gold column and reads
    every (gold, predicted) pair for each one's bounds: ``n_gold * n_pred**2`` units. Past the
    budget the search would only exhaust it (30,000 predicted columns took 5 GB and 107 s in
    the pairing of interchangeable columns before the budget was first counted).
    """
    least = n_gold * n_pred * n_pred
    if least > SEARCH_BUDGET:
        raise SearchBudgetExhausted(
            f"{n_pred:,} predicted against {n_gold:,} gold columns: too wide to align (the "
            f"column alignment needs at least {least:,} units of work, the budget is "
            f"{SEARCH_BUDGET:,})")


def _interchangeable(pred_codes: list[list[int]], m: Matrices) -> list[int]:
    """For each predicted column, the number of its class: columns of one class score
    identically in every mapping (same values in every row, same entity precision and recall
    against every gold column). Grouped by key, in one pass: pairing every two columns made
    30,000 identical columns 900 million pairs."""
    groups: dict[tuple[int, tuple[float, ...], tuple[float, ...]], list[int]] = {}
    cls = [0] * len(pred_codes)
    n_classes = 0
    for j, c in enumerate(pred_codes):
        key = (hash(tuple(c)), tuple(row[j] for row in m.precision),
               tuple(row[j] for row in m.recall))
        members = groups.setdefault(key, [])
        for k in members:  # a hash collision only: split by the values themselves
            if pred_codes[k] == c:
                cls[j] = cls[k]
                break
        else:
            cls[j] = n_classes
            n_classes += 1
            members.append(j)
    return cls


class _GoldLevels:
    """Gold row prefixes as small integers, level by level (shared by the searches of one call).

    Level d numbers the distinct values of the first d ordered gold columns 1..k; a predicted
    row's prefix gets the same number, or none when no gold row has it (it can never match).
    Codes are below ``width``, so ``prefix_id * width + code`` identifies the next prefix.
    """

    def __init__(self, gold_codes: list[list[int]], order: list[int], width: int) -> None:
        self.g = gold_codes
        self.order = order
        self.width = width
        self.levels: list[tuple[dict[int, int], list[int]]] = []
        self.ids: list[int] = []

    def level(self, d: int) -> tuple[dict[int, int], list[int]]:
        """Level ``d``: prefix key -> id, and gold row count per id (index 0 unused)."""
        while len(self.levels) < d:
            col = self.g[self.order[len(self.levels)]]
            keys = list(map(add, map(mul, self.ids, repeat(self.width)), col)) if self.levels else col
            counts = Counter(keys)
            index = {k: i for i, k in enumerate(counts, 1)}
            self.levels.append((index, [0, *counts.values()]))
            self.ids = list(map(index.__getitem__, keys))
        return self.levels[d - 1]


class _Search:
    def __init__(
        self,
        gold_codes: list[list[int]],
        pred_codes: list[list[int]],
        m: Matrices,
        width: int,
        gold: _GoldLevels | None = None,
    ) -> None:
        self.g = gold_codes
        self.p = pred_codes
        self.m = m
        self.ng = len(gold_codes)
        self.np = len(pred_codes)
        self.n_pred_rows = len(pred_codes[0]) if pred_codes else 0
        # Most distinct gold values first: the tightest prefix bounds come earliest.
        self.order = sorted(range(self.ng), key=lambda i: (-m.gold_distinct[i], i))
        self.width = width
        self.gold = gold if gold is not None else _GoldLevels(gold_codes, self.order, width)
        self.same = _interchangeable(pred_codes, m)
        self.assign = [-1] * self.ng  # gold position -> predicted column
        self.position = [-1] * self.np  # predicted column -> gold position
        self.best_tp = -1
        self.best_entity = -1.0
        self.best_perm: tuple[int, ...] = ()
        self.nodes = 0
        self.leaves = 0
        self.work = 0  # budget units spent (see SEARCH_BUDGET)
        self.budget = SEARCH_BUDGET
        self.bound_cost = self.ng * self.np  # the bounds of one candidate read every pair

    def _spend(self, units: int) -> None:
        self.work += units
        if self.work > self.budget:
            raise SearchBudgetExhausted(
                f"the column alignment of {self.np} predicted to {self.ng} gold columns stopped "
                f"after {self.budget:,} units of work")
        check_deadline(lambda: f"the column alignment of {self.np} predicted to {self.ng} "
                               "gold columns")

    # -- bounds ------------------------------------------------------------------------------

    def _free_max(self, table: list[list[int]] | list[list[float]], i: int) -> float:
        return max(v for j, v in enumerate(table[i]) if self.position[j] < 0)

    def _tp_bound(self, d: int, tp_prefix: int) -> int:
        bound = tp_prefix
        for i in self.order[d:]:
            bound = min(bound, int(self._free_max(self.m.single, i)))
        return bound

    def _entity_bound(self) -> float:
        ps: list[float] = []
        rs: list[float] = []
        for i, j in enumerate(self.assign):
            if j >= 0:
                ps.append(self.m.precision[i][j])
                rs.append(self.m.recall[i][j])
            else:
                ps.append(self._free_max(self.m.precision, i))
                rs.append(self._free_max(self.m.recall, i))
        return min(1.0, f1_of(np_mean(ps), np_mean(rs)) * (1 + _MARGIN))

    def _lex_first_completion(self) -> tuple[int, ...]:
        free = iter([j for j in range(self.np) if self.position[j] < 0])
        return tuple(j if j >= 0 else next(free) for j in self.assign)

    def _worth(self, tp_ub: int) -> bool:
        """Could some completion of the current partial mapping replace the incumbent?"""
        if tp_ub != self.best_tp:
            return tp_ub > self.best_tp
        ub = self._entity_bound()
        if ub != self.best_entity:
            return ub > self.best_entity
        return self._lex_first_completion() < self.best_perm

    # -- rows ---------------------------------------------------------------------------------
    #
    # A row prefix (its values in the first d ordered gold columns) is identified by a small
    # integer: level d numbers the distinct gold prefixes 1..k, and a predicted row's prefix gets
    # the same number, or none when no gold row has it (the row can then never match).

    def _refine(self, d: int, live: _Live, floor: int) -> tuple[int, _Live] | None:
        """Exact ``tp`` over the first ``d`` ordered gold columns, and the predicted rows still alive.

        None as soon as fewer than ``floor`` rows can still match: the rows are read in chunks and
        each one adds at most 1 to ``tp``.
        """
        self.nodes += 1
        index, counts = self.gold.level(d)
        rows, prefix = live
        col = self.p[self.assign[self.order[d - 1]]]
        n = self.n_pred_rows if rows is None else len(rows)
        self._spend(n)
        alive: list[int] = []
        kept: list[int] = []
        for start in range(0, n, _CHUNK):
            stop = min(n, start + _CHUNK)
            if rows is None:
                part: range | list[int] = range(start, stop)
                values = col[start:stop]
            else:
                part = rows[start:stop]
                values = [col[part[0]]] if len(part) == 1 else list(itemgetter(*part)(col))
            if prefix is not None:
                values = list(map(add, map(mul, prefix[start:stop], repeat(self.width)), values))
            ids = list(map(index.get, values))
            alive += filter(None, ids)
            kept += compress(part, ids)
            if len(alive) + n - stop < floor:
                return None
        found = Counter(alive)
        tp = sum(map(min, found.values(), map(counts.__getitem__, found)))
        return tp, (rows if len(kept) == n else kept, alive)

    def seed(self, perm: tuple[int, ...]) -> None:
        """Score one full mapping exactly and make it the incumbent (a head start for pruning)."""
        for i, j in enumerate(perm):
            self.assign[i], self.position[j] = j, i
        live: _Live = (None, None)
        tp = 0
        for d in range(1, self.ng + 1):
            step = self._refine(d, live, -1)
            assert step is not None
            tp, live = step
        self._leaf(tp)
        self.assign = [-1] * self.ng
        self.position = [-1] * self.np

    # -- search -------------------------------------------------------------------------------

    def _symmetric_ok(self, j: int, pos: int) -> bool:
        """Interchangeable columns take the gold positions in their index order."""
        cls = self.same
        for kpos, k in enumerate(self.assign):
            if k >= 0 and k != j and cls[k] == cls[j] and (k < j) != (kpos < pos):
                return False
        return True

    def visit(self, d: int, live: _Live, tp_prefix: int) -> None:
        if d == self.ng:
            self._leaf(tp_prefix)
            return
        pos = self.order[d]
        single = self.m.single[pos]
        cands = [j for j in range(self.np) if self.position[j] < 0 and self._symmetric_ok(j, pos)]
        cands.sort(key=lambda j: (-single[j], j))
        for j in cands:
            self._spend(self.bound_cost)
            self.assign[pos] = j
            self.position[j] = pos
            if self._worth(self._tp_bound(d + 1, min(tp_prefix, single[j]))):
                step = self._refine(d + 1, live, self.best_tp)
                if step is not None and self._worth(self._tp_bound(d + 1, step[0])):
                    self.visit(d + 1, step[1], step[0])
            self.assign[pos] = -1
            self.position[j] = -1

    def _leaf(self, tp: int) -> None:
        self.leaves += 1
        perm = tuple(self.assign)
        entity = entity_f1(self.m, perm)[0]
        key = (tp, entity)
        best = (self.best_tp, self.best_entity)
        if key > best or (key == best and perm < self.best_perm):
            self.best_tp, self.best_entity, self.best_perm = tp, entity, perm


def best_mapping(gold_codes: list[list[int]], pred_codes: list[list[int]], m: Matrices, width: int) -> Found:
    """The reference's chosen mapping (gold position -> predicted column) and its row ``tp``.

    Needs at least one gold column, at least as many predicted columns, and rows on both sides;
    every code must be below ``width``. Raises :class:`SearchBudgetExhausted` past
    :data:`SEARCH_BUDGET` units of work.
    """
    check_affordable(len(gold_codes), len(pred_codes))
    s = _Search(gold_codes, pred_codes, m, width)
    start = min(len(gold_codes[0]), s.n_pred_rows)
    if s.n_pred_rows >= 4 * _SAMPLE and s.ng > 1:
        # Search a strided sample of the predicted rows first: its winner, scored on all rows,
        # is usually the answer already, and a strong incumbent lets whole subtrees stop early.
        step = s.n_pred_rows // _SAMPLE
        hint = _Search(gold_codes, [c[::step] for c in pred_codes], m, width, s.gold)
        try:
            hint.visit(0, (None, None), start)
        finally:
            s.work = hint.work  # one budget for both searches
        s.seed(hint.best_perm)
        s.nodes += hint.nodes
    s.visit(0, (None, None), start)
    return Found(s.best_perm, s.best_tp, s.nodes, s.leaves)
