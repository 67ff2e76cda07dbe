"""The gold audit of a transpiled gold: run on its engine and compared with the result of the
gold it was transpiled from, run on a source of that dialect.

Why: sqlglot's transpile gave the same result for 84 % of 87 Spider golds on DuckDB and 75 % on
PostgreSQL, so a transpiled gold is only trusted once its result is seen to agree. The source
of the original dialect is found among the case's own sources (``datasource:`` a list); a case
without one gets a finding that says the transpile is unchecked.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...errors import QueryEvalError, SourceUnavailable
from ...model import Case, Context
from .findings import AuditResult


def audit_transpiled(written: Case, resolved: Case, source_dialect: str, dialect: str,
                     ctx: Context, result: AuditResult, ran: Case | None = None) -> None:
    """``written``: the case as collected (its ``gold:`` mapping); ``resolved``: with the
    transpiled gold of its own ``dialect``; ``ran``: that case as the run executes it (its
    source's ``now:`` clock applied; ``resolved`` when none). Both sides run as the run runs
    them, each pinned to its own source's clock: on a ``now:`` source the audit used to run and
    report the text before the rewrite, which no run executed. The check's outcome is kept in
    ``result.transpiled``: only a ``matched`` gold may become an explicit one (its ``gold``, the
    transpiled text before any rewrite, since the run pins it again; ``gold_run``: the text
    run)."""
    from ..._yaml.yamlload import plain
    from ...metrics.table import compare_tables
    from ...metrics.tsse_sql import order_matters
    from ...sources.dialects import dialect_of

    ran = ran or resolved
    check: dict[str, object] = {
        "case": written.fanned_from or written.id, "dialect": dialect, "from": source_dialect,
        "source": plain(written.gold[source_dialect]), "gold": plain(resolved.gold),
        "gold_run": plain(ran.gold), "checked": "unchecked"}
    result.transpiled = check
    sibling = next(((name, spec) for name, spec in sorted(written.fanned_sources.items())
                    if dialect_of(spec) == source_dialect), None)
    if sibling is None:
        result.add("transpile-unchecked", f"the gold was transpiled from {source_dialect}, and "
                   f"the case has no {source_dialect} datasource to compare its result with "
                   "(add one to its datasource: list, or write this dialect's gold)")
        return
    name, spec = sibling
    from ..sql.case import pin_golds

    sibling_case = replace(written, datasource=name, source_spec=dict(spec),
                           dialect=source_dialect, gold=written.gold[source_dialect])
    original = _texts(pin_golds(sibling_case)[0].gold)  # as that item's run executes it
    transpiled = _texts(ran.gold)
    reference = ctx.source(sibling_case)
    here = ctx.source(resolved)
    check["checked"] = "matched"
    for index, (src_text, new_text) in enumerate(zip(original, transpiled, strict=True)):
        at = index if len(original) > 1 else None
        try:
            want = reference.execute(src_text, trusted=True)
            got = here.execute(new_text, trusted=True)
        except SourceUnavailable:
            check["checked"] = "unchecked"
            raise
        except QueryEvalError as exc:
            check["checked"] = "mismatch"
            result.add("transpile-mismatch", f"not comparable: {exc.reason()}", at)
            continue
        cmp = compare_tables(want, got, order_matters=order_matters(src_text))
        if not cmp.ex:
            check["checked"] = "mismatch"
            result.add("transpile-mismatch", f"{_show(got.rows)} on {resolved.datasource}, "
                       f"{_show(want.rows)} from the {source_dialect} gold on {name}; the text "
                       f"run was: {' '.join(new_text.split())[:200]}", at)


def _show(rows: list[Any]) -> str:
    shown = ", ".join(repr(tuple(r)) for r in rows[:3])
    return f"{len(rows)} rows [{shown}{', ...' if len(rows) > 3 else ''}]"


def _texts(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]
