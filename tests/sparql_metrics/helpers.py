"""Turn the reference's inputs (SPARQL-JSON binding lists, pyoxigraph solutions) into tables."""

from __future__ import annotations

from typing import Any

from pytest_queryeval.results import ResultTable, Term

XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
RDF_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"


def table_from_bindings(rows: list[dict[str, dict[str, str]]]) -> ResultTable:
    """A SPARQL table whose first row has exactly the first binding's keys, in its order."""
    columns: list[str] = []
    for r in rows:
        columns.extend(k for k in r if k not in columns)
    return ResultTable(
        columns,
        [tuple(Term.from_binding(r[c]) if c in r else None for c in columns) for r in rows],
    )


def term_from_oxigraph(t: Any) -> Term | None:
    """The SPARQL JSON form Oxigraph's own result writer produces for a term."""
    import pyoxigraph as ox

    if t is None:
        return None
    if isinstance(t, ox.NamedNode):
        return Term("uri", t.value)
    if isinstance(t, ox.BlankNode):
        return Term("bnode", t.value)
    if isinstance(t, ox.Literal):
        if t.language is not None:
            return Term("literal", t.value, lang=t.language)
        dt = t.datatype.value
        return Term("literal", t.value, None if dt == XSD_STRING else dt)
    raise TypeError(f"unexpected term {t!r}")


def run_select(store: Any, query: str) -> ResultTable:
    solutions = store.query(query)
    names = [v.value for v in solutions.variables]
    rows = [tuple(term_from_oxigraph(s[i]) for i in range(len(names))) for s in solutions]
    return ResultTable(names, rows)
