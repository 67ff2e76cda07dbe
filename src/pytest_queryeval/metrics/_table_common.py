"""What the pure-Python table path (``table``) and its numpy fast path (``_table_fast``) share.

Kept apart so that ``_table_fast`` needs nothing from ``table``: ``table`` imports the fast path
lazily, and the fast path imports only this module, so neither imports the other back (and both
return the same permutation and the same :class:`PositionalF1` for one pair of tables).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PositionalF1:
    """Outcome of the BIRD/Denodo positional cell F1 (fractions, not percentages)."""

    f1: float
    precision: float
    recall: float
    #: Denodo ``set_precision`` / 100 ("Subsetting Percentage", our ``percent_subset``).
    set_precision: float


#: Work :func:`search_assignment` may do, in deterministic units (100 per check, for its fixed
#: cost, plus rows x columns, the cells a check may read),
#: before it stops with SearchBudgetExhausted. Columns with equal value multisets whose
#: projections all agree but one made the search factorial (12 columns: hours); an honest
#: comparison needs a few checks. Deterministic, unlike a deadline: the outcome of a case does
#: not depend on the machine's load.
ASSIGNMENT_BUDGET = 20_000_000


def search_assignment(
    candidates: list[list[int]],
    projection_ok: Callable[[dict[int, int]], bool],
    full_ok: Callable[[tuple[int, ...]], bool],
    rows: int = 0,
) -> tuple[int, ...] | None:
    """The first gold -> predicted column bijection (gold ``i`` takes one of ``candidates[i]``)
    that ``full_ok`` accepts, or None. Gold columns with fewer candidates go first; a partial
    assignment with a choice to make is pruned when ``projection_ok`` rejects it. Shared by the
    pure and the numpy paths, so both return the same permutation. Each check costs
    ``100 + rows * columns`` units of :data:`ASSIGNMENT_BUDGET`; past it,
    :class:`SearchBudgetExhausted`."""
    from .._isolation.comparison_deadline import check_deadline
    from ..errors import SearchBudgetExhausted

    ncol = len(candidates)
    order = sorted(range(ncol), key=lambda i: len(candidates[i]))
    chosen: dict[int, int] = {}
    spent = 0
    cost = 100 + rows * ncol

    def spend(units: int = cost) -> None:
        nonlocal spent
        spent += units
        if spent > ASSIGNMENT_BUDGET:
            raise SearchBudgetExhausted(
                f"the column assignment of {ncol} columns (execution accuracy) stopped after "
                f"{ASSIGNMENT_BUDGET:,} units of work")
        check_deadline(lambda: f"the column assignment of {ncol} columns (execution accuracy)")

    def search(depth: int, used: set[int]) -> bool:
        if depth == ncol:
            spend()
            return full_ok(tuple(chosen[i] for i in range(ncol)))
        i = order[depth]
        options = [j for j in candidates[i] if j not in used]
        for j in options:
            # a step that checks nothing costs nothing per row (a column with one candidate:
            # 1,000,000 rows x 4 forced columns were five checks' worth, the whole budget)
            checked = len(options) > 1 and 0 < depth < ncol - 1
            spend(cost if checked else 100)
            chosen[i] = j
            if checked and not projection_ok(chosen):
                del chosen[i]
                continue
            used.add(j)
            if search(depth + 1, used):
                return True
            used.discard(j)
            del chosen[i]
        return False

    if search(0, set()):
        return tuple(chosen[i] for i in range(ncol))
    return None


__all__ = ["ASSIGNMENT_BUDGET", "PositionalF1", "search_assignment"]
