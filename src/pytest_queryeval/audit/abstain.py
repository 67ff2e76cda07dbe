"""The gold audit of an ``expect: abstain`` case: does its data answer it after all?

An abstain case says the data cannot answer its question. Data change (a ``Salary`` column
is added), and a reviewer's belief can be wrong; the audit checks it on the data, with the
queries the case names under ``probe:``: what a model would write to answer (the gold-like
query). A probe that returns a row with a value that is not NULL means the data answers the
question: ``abstain-answerable``. A probe that fails (``no such column: Salary``) or returns
nothing agrees with the case. Deterministic: nothing is guessed from the question's words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import QueryEvalError, SourceUnavailable

if TYPE_CHECKING:
    from ..kinds.goldchecks.findings import AuditResult
    from ..model import Case, Context

#: The case key holding the probes (a query or a list of queries).
PROBE = "probe"


def probes(case: Case) -> list[str] | None:
    """The case's probe queries; None when ``probe:`` is not a query or a list of queries."""
    value = case.options.get(PROBE)
    if value is None:
        return []
    if isinstance(value, str) and value.strip():
        return [value]
    if isinstance(value, list) and value and all(isinstance(q, str) and q.strip()
                                                 for q in value):
        return [str(q) for q in value]
    return None


def audit_abstain(case: Case, ctx: Context, result: AuditResult) -> None:
    """Each probe executed live: one that returns a non-NULL value is ``abstain-answerable``."""
    queries = probes(case)
    if queries is None:
        result.add("invalid-case", f"{PROBE}: must be an SQL query or a list of SQL queries")
        return
    if not queries or case.source_spec is None:
        return
    src = ctx.source(case)
    for i, query in enumerate(queries):
        try:
            table = src.execute(query, trusted=True)
        except SourceUnavailable:
            raise
        except QueryEvalError:
            continue  # the data lacks what the probe reads: as the case says
        answered = [row for row in table.rows if any(cell is not None for cell in row)]
        if answered:
            where = f"{PROBE}[{i}]" if len(queries) > 1 else PROBE
            result.add("abstain-answerable",
                       f"{where} returns {len(table.rows)}"
                       f"{'+' if table.truncated else ''} rows (first: {answered[0]!r}): the "
                       "data answers the question this case expects no answer to -- "
                       f"{query.strip()[:120]}")
