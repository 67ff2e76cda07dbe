"""The opt-in metrics shared by the SQL and SPARQL kinds (issue 30 item 7).

Why opt-in: both cost more than the metrics every case pays for (a schema hallucination parses
the prediction against the introspected schema; an IRI check asks the graph once per IRI;
``relaxed_ex`` recomputes the table metrics under each relaxation), and neither may change a
strict score. A case asks for one by naming it in a threshold, or by its option:

* ``schema_hallucination`` (SQL) / ``iri_hallucination`` (SPARQL): option ``hallucination:
  true`` or a threshold (``{max: 0}``). Computed for every prediction that has a text, also
  when it failed to execute: an invented column is the usual reason it failed.
* ``relaxed_ex``: option ``relaxed_ex: [row_order, numeric_tolerance, ...]``, the near-miss
  relaxations (:data:`..rules.nearmiss.RELAXATIONS`) the suite accepts. 1 when execution accuracy is 1,
  or when any one chosen relaxation, applied alone, makes it 1; else 0. ``execution_accuracy``
  and every reference metric keep their values (the acceptance test of Spider2#220).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .._util.wording import shortlist
from ..errors import ConfigError
from ..model import Case, Context, Scored
from ..sources.base import DataSource

#: The hallucination metric of each query syntax (a kind's declared ``query_syntax``): a kind
#: is asked which language it reads, not switched on by its name, so a kind derived from the
#: SQL kind under another name checks its predictions against the schema as SQL's do.
HALLUCINATION_METRICS = {"sql": "schema_hallucination", "sparql": "iri_hallucination"}
RELAXED_EX = "relaxed_ex"
#: Case option keys this module reads (added to the SQL and SPARQL kinds' ``option_keys``).
OPTION_KEYS = frozenset({"hallucination", RELAXED_EX})


def check_options(case: Case) -> None:
    """ConfigError (naming the key) for a malformed ``hallucination`` or ``relaxed_ex``."""
    flag = case.options.get("hallucination", False)
    if not isinstance(flag, bool):
        raise ConfigError("must be true or false", key="hallucination")
    chosen = case.options.get(RELAXED_EX)
    if chosen is None:
        return
    from .._util.wording import suggest
    from ..rules.nearmiss import RELAXATIONS

    if not isinstance(chosen, list) or not chosen:
        raise ConfigError("must be a list of near-miss relaxations, e.g. [row_order]; known: "
                          + ", ".join(RELAXATIONS), key=RELAXED_EX)
    for i, name in enumerate(chosen):
        if name not in RELAXATIONS:
            hint = suggest(name, RELAXATIONS) if isinstance(name, str) else ""
            raise ConfigError(f"unknown relaxation {name!r}{hint}; known: "
                              + ", ".join(RELAXATIONS), key=f"{RELAXED_EX}[{i}]")


def _syntax(case: Case) -> str:
    from ..kindregistry import declared_text

    return declared_text(case.kind, "query_syntax") or ""


def wants_hallucination(case: Case) -> bool:
    if _syntax(case) not in HALLUCINATION_METRICS:
        return False
    return bool(case.options.get("hallucination")) \
        or HALLUCINATION_METRICS[_syntax(case)] in case.thresholds


def add_hallucination(scored: Scored, case: Case, ctx: Context, src: DataSource | None,
                      prediction: str | None) -> None:
    """``schema_hallucination`` / ``iri_hallucination`` and the names it did not find
    (``details``), when the case asks for it and there is a text and a source to check."""
    if prediction is None or src is None or not wants_hallucination(case):
        return
    syntax = _syntax(case)
    name = HALLUCINATION_METRICS[syntax]
    found = (_sql if syntax == "sql" else _sparql)(ctx, src, prediction)
    if found is not None:
        scored.metrics[name] = found.rate
        scored.details[name] = {"referenced": found.referenced, "unknown": list(found.unknown)}
        if found.unknown:
            scored.diff.append(f"{name}: {found.rate:.3f}: not in the datasource: "
                               + shortlist(found.unknown, 10))


def _sql(ctx: Context, src: DataSource, sql: str) -> Any:
    from ..metrics.hallucination import schema_from_ddl, sql_hallucination
    from ..sources.describe import sql_ddl

    dialect = getattr(src, "dialect", None)
    schema = ctx.shared(f"hallucination-schema:{id(src)}",
                        lambda: schema_from_ddl(sql_ddl(src), dialect))
    return sql_hallucination(sql, schema, dialect)


def _sparql(ctx: Context, src: DataSource, query: str) -> Any:
    from ..metrics.hallucination import ask_known, iri_hallucination, sparql_iris

    iris = sparql_iris(query)
    if iris is None:
        return None
    known: dict[str, bool] = ctx.shared(f"hallucination-iris:{id(src)}", dict)

    def holds(iri: str) -> bool:
        if iri not in known:
            table = src.execute(ask_known(iri))
            known[iri] = table.rows == [(True,)]
        return known[iri]

    return iri_hallucination(iris, holds)


def relaxed_ex(case: Case, metrics: Mapping[str, float],
               relaxed: Callable[..., Mapping[str, Mapping[str, float]]] | None,
               details: dict[str, Any]) -> float | None:
    """The ``relaxed_ex`` of a scored case asking for it (None: it does not, or nothing was
    compared); the relaxation that made it 1 goes to ``details.relaxed_ex``."""
    chosen = case.options.get(RELAXED_EX)
    if not chosen or "execution_accuracy" not in metrics:
        return None
    if metrics["execution_accuracy"] == 1.0:
        return 1.0
    if relaxed is None:
        return 0.0
    from ..rules.nearmiss import EX_ONLY

    try:
        values = relaxed(EX_ONLY)
    except Exception as exc:  # too large to relax: strict, and said so
        details[RELAXED_EX] = f"not relaxed: {exc}"
        return 0.0
    for name in chosen:
        if (values.get(name) or {}).get("execution_accuracy") == 1.0:
            details[RELAXED_EX] = name
            return 1.0
    return 0.0
