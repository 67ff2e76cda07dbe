"""Schema hallucination: the share of the schema a prediction names that the data source does
not have (issue 30 item 7).

Why a metric of its own: execution accuracy says a prediction failed, not that it failed
because the model invented ``customer.email_address`` or ``brick:hasTemperature``. Teams ask
for that share as a number they can track and gate (ragas#2879; t2s-metrics'
``uri_hallucination``). It is deterministic and needs no model: the prediction is parsed, its
references are resolved against the data source's own introspected schema, and nothing is
executed.

* SQL (``schema_hallucination``): the distinct tables and columns a prediction references
  (sqlglot's scopes resolve aliases, CTEs, derived tables and correlated sub-queries), compared
  case-insensitively with the tables and columns of the source's ``CREATE TABLE`` statements
  (:func:`schema_from_ddl`). A column of an invented table is invented too. A column that
  cannot be placed (a derived table of ``SELECT *``) is not counted either way.
* SPARQL (``iri_hallucination``): the distinct IRIs a prediction uses as a subject, predicate,
  object or class (prefixes resolved; literal datatypes, ``FROM``/``SERVICE`` targets and the
  RDF/RDFS/OWL/XSD vocabularies left out), compared with the IRIs the graph holds.

Both are rates in [0, 1], lower is better, 0 when the prediction references nothing; a
prediction that does not parse has no value (its other metrics already say so).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlglot import exp
    from sqlglot.optimizer.scope import Scope

#: IRIs of the standard vocabularies: a query may use them whatever the graph holds.
STANDARD_NAMESPACES = (
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "http://www.w3.org/2000/01/rdf-schema#",
    "http://www.w3.org/2002/07/owl#",
    "http://www.w3.org/2001/XMLSchema#",
)


@dataclass(frozen=True)
class Hallucination:
    """What a prediction references and which of it the source does not have."""

    referenced: int
    unknown: tuple[str, ...] = field(default=())

    @property
    def rate(self) -> float:
        return len(self.unknown) / self.referenced if self.referenced else 0.0


# ----------------------------------------------------------------------------------- SQL


def schema_from_ddl(ddl: Iterable[tuple[str, str]],
                    dialect: str | None = None) -> dict[str, set[str]]:
    """Lower-cased table -> lower-cased column names, from ``(table, CREATE TABLE ...)`` pairs
    (:func:`pytest_queryeval.sources.describe.sql_ddl`). A statement sqlglot cannot read keeps
    its table with no known columns."""
    import sqlglot
    from sqlglot import exp

    schema: dict[str, set[str]] = {}
    for table, text in ddl:
        cols: set[str] = set()
        try:
            tree = sqlglot.parse_one(text, read=dialect)
        except Exception:
            tree = None
        if tree is not None:
            cols = {c.name.lower() for c in tree.find_all(exp.ColumnDef)}
        schema[table.lower()] = cols
    return schema


def sql_hallucination(sql: str, schema: Mapping[str, set[str]],
                      dialect: str | None = None) -> Hallucination | None:
    """The tables and columns ``sql`` references that ``schema`` lacks; None when it does not
    parse."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.optimizer.scope import traverse_scope

    try:
        tree = sqlglot.parse_one(sql, read=dialect)
        scopes = list(traverse_scope(tree))
    except Exception:
        return None
    if not isinstance(tree, exp.Query):
        return None  # "SELEC" parses as a bare column name
    resolver = _Resolver(schema)
    referenced: dict[str, bool] = {}  # shown name -> the source has it
    for scope in scopes:
        for source in scope.sources.values():
            if isinstance(source, exp.Table) and source.name:
                referenced[source.name.lower()] = source.name.lower() in schema
        for column in scope.columns:
            verdict = resolver.column(column, scope)
            if verdict is not None:
                referenced[verdict[0]] = verdict[1]
    unknown = tuple(sorted(name for name, known in referenced.items() if not known))
    return Hallucination(len(referenced), unknown)


class _Resolver:
    """Places a column reference in the scope it was written in, against one schema."""

    def __init__(self, schema: Mapping[str, set[str]]) -> None:
        self.schema = schema

    def column(self, column: exp.Column, scope: Scope) -> tuple[str, bool] | None:
        """(``table.column`` as shown, whether the source has it), or None when the column
        cannot be placed. A qualifier is looked up in this scope, then in the enclosing ones
        (a correlated sub-query)."""
        from sqlglot import exp

        name = column.name.lower()
        if not name:
            return None
        if column.table:
            source = _lookup(scope, column.table)
            if source is None:
                return f"{column.table.lower()}.{name}", False
            if isinstance(source, exp.Table):
                return self.in_table(source, name)
            known = _derived_has(source, name)
            # the query's own column (a CTE's or derived table's) is no schema reference
            return None if known is not False else (f"{column.table.lower()}.{name}", False)
        sources = _candidates(scope)
        tables = [src for src in sources if isinstance(src, exp.Table)]
        for table in tables:
            label, known = self.in_table(table, name)
            if known:
                return label, True
        derived = [_derived_has(src, name) for src in sources if not isinstance(src, exp.Table)]
        if any(d is not False for d in derived):
            return None  # the query's own column, or a SELECT * that may hold it
        return (f"{tables[0].name.lower()}.{name}" if len(tables) == 1 else name), False

    def in_table(self, table: exp.Table, name: str) -> tuple[str, bool]:
        lowered = table.name.lower()
        return f"{lowered}.{name}", name in self.schema.get(lowered, ())


def _derived_has(source: exp.Table | Scope, name: str) -> bool | None:
    """Whether a CTE's or derived table's scope outputs ``name``; None when it selects ``*``."""
    from sqlglot import exp

    selects = getattr(source.expression, "selects", None)
    if selects is None or any(isinstance(s, exp.Star) or (
            isinstance(s, exp.Column) and isinstance(s.this, exp.Star)) for s in selects):
        return None
    return name in {s.alias_or_name.lower() for s in selects}


def _lookup(scope: Scope | None, alias: str) -> exp.Table | Scope | None:
    while scope is not None:
        for key, source in scope.sources.items():
            if key.lower() == alias.lower():
                return source
        scope = scope.parent
    return None


def _candidates(scope: Scope | None) -> list[exp.Table | Scope]:
    """Sources an unqualified column may come from: this scope's, else the enclosing ones'."""
    while scope is not None:
        if scope.sources:
            return list(scope.sources.values())
        scope = scope.parent
    return []


# -------------------------------------------------------------------------------- SPARQL


def sparql_iris(query: str) -> list[str] | None:
    """The distinct IRIs ``query`` names as a subject, predicate, object or class, prefixes
    resolved, in order of first use; standard vocabularies, literal datatypes and the targets
    of ``FROM``/``SERVICE`` left out. A prefixed name whose prefix is not declared is kept as
    written (no graph has it). Read from the guard's tokens (linear, safe on hostile text);
    None when the text has no query form."""
    from ..sources.sparqlguard import _token_re

    toks = [m for m in _token_re().finditer(query) if m.lastgroup not in ("ws", "comment")]
    words = [m.group().upper() if m.lastgroup == "word" else m.group() for m in toks]
    if not any(w in ("SELECT", "ASK") for w in words):
        return None
    prefixes: dict[str, str] = {}
    base = ""
    out: dict[str, None] = {}
    for i, tok in enumerate(toks):
        before = words[i - 1] if i else ""
        two_before = words[i - 2] if i > 1 else ""
        if tok.lastgroup == "iri":
            iri = tok.group()[1:-1]
            if before == "BASE":
                base = iri
                continue
            if two_before == "PREFIX":
                prefixes[toks[i - 1].group().rstrip(":")] = iri
                continue
            if ":" not in iri.split("/", 1)[0] and base:
                iri = base + iri  # relative: enough for the graph check
        elif tok.lastgroup == "word" and ":" in tok.group() and not tok.group().startswith("_:"):
            if before == "PREFIX":
                continue
            label, _, local = tok.group().partition(":")
            iri = prefixes[label] + local if label in prefixes else tok.group()
        else:
            continue
        if before in ("FROM", "NAMED", "SERVICE", "SILENT") or (before, two_before) == ("^", "^"):
            continue  # a graph or service target, or a literal's datatype
        if not iri.startswith(STANDARD_NAMESPACES):
            out.setdefault(iri)
    return list(out)


def iri_hallucination(iris: Iterable[str], known: Callable[[str], object]) -> Hallucination:
    """The IRIs of ``iris`` for which ``known(iri)`` is false (the graph does not hold them)."""
    listed = list(dict.fromkeys(iris))
    return Hallucination(len(listed), tuple(sorted(i for i in listed if not known(i))))


def ask_known(iri: str) -> str:
    """The query that tells whether a graph holds ``iri`` anywhere."""
    i = "<" + iri.replace(">", "%3E") + ">"
    return f"ASK {{ {{ {i} ?p ?o }} UNION {{ ?s {i} ?o }} UNION {{ ?s ?p {i} }} }}"
