"""A data source described for a model's prompt (the ``{schema}`` of a prompt template).

What a text-to-query model is shown decides what it can answer, so the description is the
source's own, introspected (never written by hand beside the suite, where it goes stale):

* SQL sources (sqlite, duckdb, sqlalchemy): the ``CREATE TABLE`` statements, with column
  types, primary and foreign keys — the format of the text-to-SQL prompting literature
  (Rajkumar et al. 2022, DIN-SQL, DAIL-SQL) — optionally followed by a few rows of each table
  (``schema_rows: N``), fetched through the source's own read-only execution.
* RDF sources (rdf, sparql): the classes with their instance counts and the properties with
  their use counts, most used first, from two SPARQL aggregates run on the source.
* SDMX structures (sdmx-structure): per dataset, its dimensions and each dimension's codelist
  (codes and names, the first ``schema_codes`` of each).

SQLite and DuckDB are read through the source's in-process read-only connection (the one
its ``tables()`` uses); SQLAlchemy through its engine's inspector.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..errors import QueryEvalError
from . import source_type
from .base import DataSource, no_ddl

if TYPE_CHECKING:
    from .sdmx_structure import SdmxStructure

#: Rows per table shown with ``schema_rows``; and characters per shown value.
MAX_SAMPLE_ROWS = 20
_VALUE_CHARS = 60
#: Classes and properties listed for an RDF source (most used first).
RDF_LIMIT = 60
#: Codes listed per SDMX dimension unless ``schema_codes`` says otherwise.
SDMX_CODES = 40


def describe(source: DataSource, *, rows: int = 0, datasets: Sequence[str] = (),
             codes: int = SDMX_CODES, structure: SdmxStructure | None = None) -> str:
    """The text of ``{schema}`` for ``source`` (``structure``: a parsed SDMX structure); how
    a type is described is what its entry declares (``sources.SOURCE_TYPES``): ``sql``, its
    DDL and sample rows; ``sparql``, its classes and properties; ``ddl``, its own
    :meth:`~.base.DataSource.ddl` statements (a graph's tables: a type registered through the
    hooks declares it as a built-in would). A type that declares none cannot be described."""
    if structure is not None:
        return describe_sdmx(structure, datasets, codes)
    entry = source_type(source.type)
    if entry.sql:
        return describe_sql(source, rows)
    if entry.sparql:
        return describe_rdf(source)
    if entry.ddl:
        return "\n\n".join(ddl for _, ddl in source.ddl())
    raise no_ddl(source.name, source.type)


# ------------------------------------------------------------------------------- SQL


def sql_ddl(source: DataSource) -> list[tuple[str, str]]:
    """``(table, CREATE TABLE ...)`` for every table of a SQL source, in definition order
    (:meth:`DataSource.ddl`)."""
    return source.ddl()


def describe_sql(source: DataSource, rows: int = 0) -> str:
    parts: list[str] = []
    for table, ddl in sql_ddl(source):
        parts.append(ddl)
        if rows > 0:
            sample = _sample(source, table, min(rows, MAX_SAMPLE_ROWS))
            if sample:
                parts.append(sample)
    return "\n\n".join(parts)


def _sample(source: DataSource, table: str, rows: int) -> str:
    quoted = '"' + table.replace('"', '""') + '"'
    try:
        result = source.execute(f"SELECT * FROM {quoted} LIMIT {int(rows)}", trusted=True)
    except QueryEvalError:
        return ""  # a table the engine cannot read still has its DDL shown
    if not result.rows:
        return ""
    lines = [f"/* {len(result.rows)} example row(s) of {table}:",
             " | ".join(map(str, result.columns))]
    lines += [" | ".join(_short(v) for v in row) for row in result.rows]
    return "\n".join(lines) + " */"


def _short(value: object) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= _VALUE_CHARS else text[:_VALUE_CHARS - 3] + "..."


# ------------------------------------------------------------------------------- RDF

_CLASSES = ("SELECT ?class (COUNT(?s) AS ?n) WHERE { ?s a ?class } GROUP BY ?class "
            "ORDER BY DESC(?n) ?class LIMIT %d")
_PROPERTIES = ("SELECT ?property (COUNT(*) AS ?n) WHERE { ?s ?property ?o } GROUP BY ?property "
               "ORDER BY DESC(?n) ?property LIMIT %d")


def describe_rdf(source: DataSource, limit: int = RDF_LIMIT) -> str:
    classes = source.execute(_CLASSES % limit, trusted=True)
    props = source.execute(_PROPERTIES % limit, trusted=True)
    out = ["Classes (instances):"]
    out += [f"  {_iri(c)} ({_count(n)})" for c, n in classes.rows]
    out.append("Properties (uses):")
    out += [f"  {_iri(p)} ({_count(n)})" for p, n in props.rows]
    return "\n".join(out)


def _iri(term: object) -> str:
    text = str(getattr(term, "value", term))
    return text if text.startswith(("<", "_:")) else f"<{text}>"


def _count(term: object) -> str:
    return str(getattr(term, "value", term))


# ------------------------------------------------------------------------------- SDMX


def describe_sdmx(structure: SdmxStructure, datasets: Sequence[str], codes: int = SDMX_CODES) -> str:
    """Each dataset's dimensions with their codelists; every parsed dataflow without
    ``datasets``."""
    names = list(datasets) or [f"{d.agency}:{d.id}" for d in structure.dataflows]
    out: list[str] = []
    for name in names:
        dims = structure.dimensions(name)
        out.append(f"Dataset {name}:")
        if dims is None:
            out.append("  (no data structure parsed for it)")
            continue
        for dim in dims:
            found = structure.resolve(name, dim)
            if found is None:
                out.append(f"  dimension {dim}: no codelist")
                continue
            items = list(found.codes.items())
            out.append(f"  dimension {dim} (codelist {found.agency}:{found.id}, "
                       f"{len(items)} codes):")
            out += [f"    {code}: {label}" for code, label in items[:codes]]
            if len(items) > codes:
                out.append(f"    ... and {len(items) - codes} more")
    return "\n".join(out)


def target_datasets(turns: Iterable[object]) -> list[str]:
    """The dataset ids an SDMX case's conversation targets (the datasets the question is
    about), in order of first mention."""
    found: list[str] = []
    for turn in turns:
        target = turn.get("target") if isinstance(turn, dict) else None
        sels = target.get("indicator_selection") if isinstance(target, dict) else None
        for sel in sels if isinstance(sels, list) else []:
            ds = sel.get("dataset_id") if isinstance(sel, dict) else None
            if isinstance(ds, str) and ds not in found:
                found.append(ds)
    return found
