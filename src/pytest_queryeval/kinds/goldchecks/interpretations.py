"""The gold audit of an ``interpretations:`` SQL case: can its readings be told apart?

Ambrosia's reference raises ``DublicatesError`` when two golds of a question return the same
result, and so does a run here (the case errors every time): two such readings are one
reading twice, or the data cannot tell them apart, and no prediction can show which it meant.
The audit finds it before any run, naming both readings; each gold is run live first (a
failing gold is ``gold-error``, an empty one ``empty-result``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import QueryEvalError, SourceUnavailable
from ...metrics.ambrosia import duplicate_exact
from ..sql.interpretations import readings

if TYPE_CHECKING:
    from ...model import Case, Context
    from .findings import AuditResult


def audit_interpretations(case: Case, ctx: Context, result: AuditResult) -> None:
    """Each reading's gold executed live; readings with identical results (exactly, as the
    reference compares them: the same rows in the same order) are ``readings-not-distinct``."""
    golds = readings(case)
    src = ctx.source(case)
    rows: list[tuple[int, list[tuple[object, ...]]]] = []
    for i, (label, gold) in enumerate(golds):
        try:
            table = src.execute(gold, trusted=True)
        except SourceUnavailable:
            raise
        except QueryEvalError as exc:
            result.add("gold-error", f"interpretations[{i}] ({label}): {exc.reason()}")
            continue
        if table.truncated:
            result.add("gold-error", f"interpretations[{i}] ({label}): result "
                                     f"{table.cut_by()[0]}")
            continue
        if not table.rows:
            result.add("empty-result", f"interpretations[{i}] ({label}) returns no rows: "
                                       "Ambrosia's comparison never finds an empty result")
        rows.append((i, [tuple(r) for r in table.rows]))
    for k in range(1, len(rows) + 1):
        found, _, idx = duplicate_exact([r for _, r in rows[:k]])
        if found and idx == k:
            second = rows[k - 1][0]
            first = next(i for i, r in rows[:k - 1] if r == rows[k - 1][1])
            result.add("readings-not-distinct",
                       f"interpretations[{first}] ({golds[first][0]}) and "
                       f"interpretations[{second}] ({golds[second][0]}) return the same "
                       f"result ({len(rows[k - 1][1])} rows): the case errors in every run "
                       "(Ambrosia's DublicatesError)")
