"""A gold per engine: a case's ``gold:`` keyed by dialect, and transpiling as an authoring aid.

Why transpiling is never a silent substitute: measured on 87 Spider golds, sqlglot's transpile
gave the same result on DuckDB for 84 % and on PostgreSQL for 75 %. So a transpiled gold is
recorded as the text actually run, any construct sqlglot cannot carry over raises instead of
being dropped, and the gold audit runs it on its engine and compares its result with the source
dialect's (a checked transpile can then be written into the case file as an explicit gold).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The dialect names a ``gold:`` mapping may use, as the engines' sources call themselves.
DIALECTS = ("sqlite", "duckdb", "postgres")


class TranspileError(ValueError):
    """sqlglot cannot carry the query over to the target dialect exactly."""


def dialect_of(spec: Mapping[str, object]) -> str | None:
    """The dialect a datasource spec runs (the name a ``gold:`` mapping uses), None when it is
    not a SQL engine's: its type's entry in ``sources.SOURCE_TYPES`` says."""
    from . import source_type

    return source_type(spec.get("type")).dialect(spec)


def gold_that_ran(gold: Mapping[str, Any], chosen: Mapping[str, Any] | None,
                  dialect: str | None) -> Any:
    """The gold a record shows for a ``gold:`` keyed by dialect: the text run when it was
    transpiled (``chosen``: the case's ``details.gold_dialect``), else its dialect's entry as
    written; the whole mapping only where no dialect is known (a case that never ran). A
    failing fanned-out item printed every dialect's gold, not the one that failed."""
    if chosen and "gold_run" in chosen:
        return chosen["gold_run"]
    which = (chosen or {}).get("dialect") or dialect
    return gold.get(which, gold) if which else gold


def transpile(sql: str, source: str, target: str) -> str:
    """``sql`` written for ``source``, as ``target`` reads it; TranspileError names what could
    not be carried over (sqlglot's ``unsupported_level=RAISE``)."""
    import sqlglot
    from sqlglot.errors import ErrorLevel, ParseError, UnsupportedError

    if source == target:
        return sql
    try:
        out = sqlglot.transpile(sql, read=source, write=target, unsupported_level=ErrorLevel.RAISE)
    except (ParseError, UnsupportedError) as exc:
        raise TranspileError(f"cannot transpile from {source} to {target}: "
                             f"{' '.join(str(exc).split())[:300]}") from None
    if len(out) != 1:
        raise TranspileError(f"cannot transpile from {source} to {target}: {len(out)} statements")
    return out[0]


def gold_for(gold: object, dialect: str, transpile_from: str | None = None
             ) -> tuple[Any, str | None]:
    """The gold a case runs on ``dialect``: its own entry of a ``gold:`` mapping, else the
    ``transpile_from`` entry transpiled (the second value names the source dialect then), else
    a plain gold as written. A KeyError names the missing dialect."""
    if not isinstance(gold, Mapping):
        return gold, None
    if dialect in gold:
        return gold[dialect], None
    if transpile_from is None or transpile_from not in gold:
        have = ", ".join(sorted(str(k) for k in gold))
        raise KeyError(f"gold: no entry for {dialect} (the case has {have}; add one, or "
                       f"transpile: {{from: <one of them>}})")
    source = gold[transpile_from]
    texts = source if isinstance(source, list) else [source]
    done = [transpile(t, transpile_from, dialect) for t in texts]
    return (done if isinstance(source, list) else done[0]), transpile_from
