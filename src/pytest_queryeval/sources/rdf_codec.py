"""One normal form for RDF terms, whatever engine (or endpoint) produced them.

Engines disagree on details that carry no meaning, which would make identical answers compare
unequal:

* rdflib keeps ``"x"`` and ``"x"^^xsd:string`` as two terms; RDF 1.1 stores (Oxigraph) merge them
  and report ``xsd:string`` on every simple literal. Normal form: **no datatype** for simple and
  ``xsd:string`` literals (as in SPARQL 1.1 JSON results, and as ``Term.from_binding`` reads
  them), no datatype for language-tagged ones (``rdf:langString`` is implied by ``lang``).
* Language tags are case-insensitive; Oxigraph lower-cases them, rdflib keeps the source case.
  Normal form: lower case.
* Numeric and boolean lexical forms: Oxigraph returns canonical forms (``"1.0"^^xsd:double`` comes
  back as ``"1"``), rdflib the form written in the file. Normal form: the canonical lexical form
  of the value as Oxigraph writes it (integers without sign/leading zeros; decimals without
  trailing zeros, an integral one without a point: ``"3.0"`` and ``"3"`` are ``"3"``, as the
  engines and the reference evaluators, which compare value strings, see them; doubles via
  ``repr(float)``; booleans ``true``/``false``). Unparseable lexical forms are kept.
* Derived integer types (``xsd:int``, ``xsd:short``, ``xsd:nonNegativeInteger``...): Oxigraph
  stores them all as ``xsd:integer``, rdflib keeps the declared type. Normal form:
  ``xsd:integer``.

The gold-result cache encodes tables with :mod:`.codec` (shared with SQL; it keeps Terms).
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from ..results import ResultTable, Term

XSD = "http://www.w3.org/2001/XMLSchema#"
XSD_STRING = XSD + "string"
RDF_LANGSTRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
_INTEGERS = frozenset(
    XSD + t
    for t in ("integer", "int", "long", "short", "byte", "nonNegativeInteger", "positiveInteger",
              "nonPositiveInteger", "negativeInteger", "unsignedLong", "unsignedInt",
              "unsignedShort", "unsignedByte")
)
_FLOATS = frozenset({XSD + "double", XSD + "float"})


def canonical_lexical(value: str, datatype: str) -> str:
    """The canonical lexical form of a numeric/boolean literal; ``value`` if not parseable."""
    v = value.strip()
    try:
        if datatype in _INTEGERS:
            return str(int(v))
        if datatype == XSD + "decimal":
            d = Decimal(v)
            if not d.is_finite():
                return value
            return "0" if d.is_zero() else format(d.normalize(), "f")
        if datatype in _FLOATS:
            f = float(v)
            if f != f:
                return "NaN"
            if f in (float("inf"), float("-inf")):
                return "INF" if f > 0 else "-INF"
            return repr(f)
        if datatype == XSD + "boolean":
            if v in ("true", "1"):
                return "true"
            if v in ("false", "0"):
                return "false"
    except (ValueError, InvalidOperation):
        return value
    return value


#: A term's four fields (type, value, datatype, lang): what crosses a worker's pipe.
Fields = tuple[str, str, "str | None", "str | None"]


def make_term(kind: str, value: str, datatype: str | None = None,
              lang: str | None = None) -> Term:
    """Build a :class:`Term` in the normal form described in this module's docstring."""
    return Term(*term_fields(kind, value, datatype, lang))


def term_fields(kind: str, value: str, datatype: str | None = None,
                lang: str | None = None) -> Fields:
    """The fields of :func:`make_term`'s term, without building it (a worker sends them)."""
    if kind == "typed-literal":
        kind = "literal"
    if kind != "literal":
        return (kind, value, None, None)
    if lang:
        return ("literal", value, None, lang.lower())
    if datatype in (None, "", XSD_STRING, RDF_LANGSTRING):
        return ("literal", value, None, None)
    assert datatype is not None
    lexical = canonical_lexical(value, datatype)
    if datatype in _INTEGERS:  # Oxigraph stores every derived integer type as xsd:integer
        datatype = XSD + "integer"
    return ("literal", lexical, datatype, None)


def normalize_cell(cell: object) -> object:
    """Re-normalise one cell (a Term from an endpoint or a recorded result; other values kept)."""
    if isinstance(cell, Term):
        return make_term(cell.type, cell.value, cell.datatype, cell.lang)
    return cell


def from_binding(binding: dict[str, Any]) -> Term:
    """A SPARQL 1.1 JSON binding (``{"type", "value", "datatype"|"xml:lang"}``) in normal form."""
    t = Term.from_binding(binding)
    return make_term(t.type, t.value, t.datatype, t.lang)


def star_columns_sorted(columns: list[str], rows: list[tuple[Any, ...]], select_star: bool,
                        ) -> tuple[list[str], list[tuple[Any, ...]]]:
    """``SELECT *``: engines order such columns differently (rdflib: set order, which changes
    between runs), so the normal form sorts them by name. Other projections are untouched."""
    if not select_star or columns == sorted(columns):
        return columns, rows
    order = sorted(range(len(columns)), key=lambda i: columns[i])
    return [columns[i] for i in order], [tuple(r[i] for i in order) for r in rows]


def has_bnodes(table: ResultTable) -> bool:
    """Whether any cell is a blank node (labels are per load/response: never cache those)."""
    return any(isinstance(c, Term) and c.type == "bnode" for row in table.rows for c in row)
