"""Result tables: the one form every engine's output is normalised to.

SQL drivers, pyoxigraph, rdflib and SPARQL endpoints all return rows differently; metrics only
ever see a :class:`ResultTable`, so one implementation of each metric serves every engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from typing import Any


@dataclass(frozen=True, slots=True)
class Term:
    """An RDF term as a SPARQL JSON result describes it (hashable, so rows can be counted)."""

    type: str  # "uri" | "literal" | "bnode" | "triple"
    value: str
    datatype: str | None = None
    lang: str | None = None
    #: The hash of the four fields, computed once: rows of terms are hashed and compared
    #: again and again by the table metrics (Counter of rows, column search), and the
    #: generated ``__hash__`` built a tuple each time (3 s of a 100,000-row SPARQL case).
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.type, self.value, self.datatype,
                                                self.lang)))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        """The generated equality (same class, same four fields), with a short cut for
        the same object and for different hashes."""
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        o: Term = other
        return (self._hash == o._hash and self.value == o.value and self.type == o.type
                and self.datatype == o.datatype and self.lang == o.lang)

    def __reduce__(self) -> tuple[Any, ...]:
        # never the cached hash: str hashes differ from one process to the next
        return self.__class__, (self.type, self.value, self.datatype, self.lang)

    def to_binding(self) -> dict[str, str]:
        """The SPARQL 1.1 JSON results form (``{"type", "value", "datatype"|"xml:lang"}``)."""
        out = {"type": self.type, "value": self.value}
        if self.datatype is not None:
            out["datatype"] = self.datatype
        if self.lang is not None:
            out["xml:lang"] = self.lang
        return out

    @classmethod
    def from_binding(cls, b: dict[str, Any]) -> Term:
        kind = b.get("type", "literal")
        if kind == "typed-literal":  # SPARQL JSON from old endpoints
            kind = "literal"
        return cls(kind, str(b.get("value", "")), b.get("datatype"), b.get("xml:lang"))

    def __str__(self) -> str:
        return self.value

    def sparql(self) -> str:
        """The term as a SPARQL user writes it: ``<iri>``, ``"Foundation"@en``,
        ``"3"^^xsd:decimal``, ``_:b0`` (diffs printed the dataclass:
        ``Term(type='literal', value='Foundation', datatype=None, lang='en')``)."""
        if self.type == "uri":
            return f"<{self.value}>"
        if self.type == "bnode":
            return f"_:{self.value}"
        if self.type != "literal":
            return self.value  # an RDF-star triple: its engine's own text
        text = '"' + self.value.translate(_ESCAPES) + '"'
        if self.lang is not None:
            return f"{text}@{self.lang}"
        if self.datatype is None:
            return text
        if self.datatype.startswith(_XSD):
            return f"{text}^^xsd:{self.datatype[len(_XSD):]}"
        return f"{text}^^<{self.datatype}>"


def term_of(fields: tuple[str, str, str | None, str | None]) -> Term:
    """``Term(*fields)``, built without the frozen dataclass's ``__init__`` (a
    ``object.__setattr__`` per field and ``__post_init__``: 2 us a term, most of unpacking a
    large RDF result). The slots are set through their own descriptors; same fields, same
    cached hash."""
    term = _new_term(Term)
    _set_type(term, fields[0])
    _set_value(term, fields[1])
    _set_datatype(term, fields[2])
    _set_lang(term, fields[3])
    _set_hash(term, hash(fields))
    return term


_new_term = object.__new__
_set_type = Term.__dict__["type"].__set__
_set_value = Term.__dict__["value"].__set__
_set_datatype = Term.__dict__["datatype"].__set__
_set_lang = Term.__dict__["lang"].__set__
_set_hash = Term.__dict__["_hash"].__set__

_XSD = "http://www.w3.org/2001/XMLSchema#"
#: SPARQL string escapes (``ECHAR``) for a literal's lexical form between double quotes.
_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r",
                          "\t": "\\t"})


class GraphNode(dict[str, Any]):
    """A node as a graph engine returned it: the mapping of its id (``_ID``), its label
    (``_LABEL``) and its properties.

    Why a class of its own: a query can return a map with the same keys (``{_ID: 1, _LABEL:
    'N'}``), and a metric that took such a map for a node followed ids a prediction chose (the
    fourteenth re-probe: exponential expansion, a RecursionError). Only a source makes these,
    where it reads the engine's own graph values; a map a query built stays a ``dict``. It
    equals, prints and serialises as the ``dict`` it is (the result codec keeps the class)."""

    __slots__ = ()


class GraphRelationship(dict[str, Any]):
    """A relationship as a graph engine returned it: ``_SRC``, ``_DST`` (its ends' ids),
    ``_LABEL`` (its type), ``_ID`` and its properties (:class:`GraphNode` says why)."""

    __slots__ = ()


class GraphPath(dict[str, Any]):
    """A path as a graph engine returned it: ``{"_NODES": [GraphNode, ...], "_RELS":
    [GraphRelationship, ...]}`` (fewer nodes than one more than the relationships: a
    variable-length relationship); :class:`GraphNode` says why a class."""

    __slots__ = ()


_GRAPH_CLASSES = (GraphNode, GraphRelationship, GraphPath)


def well_formed(v: object) -> bool:
    """Whether ``v`` (a :class:`GraphNode`, ``GraphRelationship`` or ``GraphPath``) has the
    shape an engine gives one: ids that are a scalar or a flat mapping of scalars, a text
    label, a path of nodes and relationships, and no graph value among its properties (an
    engine never puts one there). Why: a cached gold (an untrusted file) can hold any
    content under these tags (the fifteenth re-probe's N3: node ``k``'s properties holding
    node ``k-1`` twice, 2^D work from a 3 KB file; N3b: internal errors); what is not so
    shaped is not taken for the engine's value."""
    if isinstance(v, GraphPath):
        nodes, rels = v.get("_NODES"), v.get("_RELS")
        return set(v) == {"_NODES", "_RELS"} and isinstance(nodes, list) \
            and isinstance(rels, list) \
            and all(isinstance(n, GraphNode) and well_formed(n) for n in nodes) \
            and all(isinstance(r, GraphRelationship) and well_formed(r) for r in rels)
    if isinstance(v, GraphRelationship):
        ends = all(v.get(k) is None or _is_id(v.get(k)) for k in ("_SRC", "_DST"))  # Bolt: None
        return ends and "_SRC" in v and "_DST" in v and isinstance(v.get("_LABEL"), str) \
            and _flat_properties(v)
    if isinstance(v, GraphNode):
        return _is_id(v.get("_ID")) and isinstance(v.get("_LABEL", ""), str) \
            and _flat_properties(v)
    return False


def _is_id(v: object) -> bool:
    scalar = (int, str)
    if isinstance(v, dict):
        return all(isinstance(k, str) and isinstance(x, scalar) for k, x in v.items())
    return isinstance(v, scalar) and not isinstance(v, bool)


def _flat_properties(v: dict[str, Any]) -> bool:
    return not any(_holds_graph(x) for x in v.values())


def _holds_graph(v: object) -> bool:
    """Whether a graph value is anywhere in ``v`` (iterative: a nesting of any depth)."""
    stack = [v]
    while stack:
        x = stack.pop()
        if isinstance(x, _GRAPH_CLASSES):
            return True
        if isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, list | tuple):
            stack.extend(x)
    return False


def show_value(value: object) -> str:
    """A cell as a diff shows it: an RDF term in SPARQL syntax, anything else as ``repr``."""
    return value.sparql() if isinstance(value, Term) else repr(value)


def show_row(row: tuple[Any, ...]) -> str:
    """A row as a diff shows it: SPARQL terms as ``("Foundation"@en, <iri>, UNDEF)``, any
    other row as its ``repr``."""
    if not any(isinstance(v, Term) for v in row):
        return repr(row)
    inner = ", ".join("UNDEF" if v is None else show_value(v) for v in row)  # unbound
    return f"({inner},)" if len(row) == 1 else f"({inner})"


@dataclass(slots=True)
class ResultTable:
    """Columns and rows of one executed query.

    ``None`` in a row is SQL NULL or an unbound SPARQL variable. ``truncated`` is set when the
    row cap cut the result: such a table must never be scored as if complete.
    """

    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool = False
    seconds: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.rows)

    def signature(self, ordered: bool = False) -> str:
        """A digest of the rows (a multiset unless ``ordered``; column names left out, as the
        execution metrics leave them): two runs of a case that return the same rows share it."""
        import hashlib

        rows = _row_texts(self.rows)
        if not ordered:
            rows.sort()
        digest = hashlib.sha256("\n".join(rows).encode("utf-8", "surrogatepass")).hexdigest()
        return f"rows:{len(self.rows)}:{digest[:32]}"

    def cut_by(self) -> tuple[str, str]:
        """For a truncated table: what cut it, as a phrase and the option to raise
        (``"has more than 100000 rows"``, ``"max_rows"``)."""
        if "max_bytes" in self.meta:
            return f"holds more than {self.meta['max_bytes']:,} bytes", "max_bytes"
        if "max_values" in self.meta:  # every list item and map entry counted: a graph's source
            return (f"holds more than {self.meta['max_values']:,} values (each list item and "
                    "map entry counted)", "max_values")
        return f"has more than {self.meta.get('max_rows', len(self.rows))} rows", "max_rows"

    @classmethod
    def from_recorded(cls, data: object) -> ResultTable:
        """Build from a recorded result: ``{columns, rows}`` or SPARQL JSON results."""
        if isinstance(data, ResultTable):
            return data
        if not isinstance(data, dict):
            raise ValueError("a recorded result is a mapping with columns/rows or SPARQL JSON results")
        if "head" in data and "results" in data:
            cols = list(data["head"].get("vars", []))
            bindings = data["results"].get("bindings", [])
            rows = [
                tuple(
                    Term.from_binding(b[c]) if isinstance(b.get(c), dict) else None for c in cols
                )
                for b in bindings
            ]
            return cls(cols, rows, meta=first_row_key_order(cols, bindings))
        if "boolean" in data and "head" in data:
            return cls(["boolean"], [(bool(data["boolean"]),)])
        if "rows" not in data:
            raise ValueError("a recorded result needs 'rows' (and usually 'columns')")
        rows_in = data["rows"]
        if not isinstance(rows_in, list):
            raise ValueError("'rows' must be a list of rows")
        rows = [tuple(r) if isinstance(r, list | tuple) else (r,) for r in rows_in]
        columns = data.get("columns")
        if columns is None:
            width = len(rows[0]) if rows else 0
            columns = [f"c{i}" for i in range(width)]
        if not isinstance(columns, list):
            raise ValueError("'columns' must be a list of names")
        return cls([str(c) for c in columns], rows)


def _row_texts(rows: list[tuple[Any, ...]]) -> list[str]:
    """``repr`` of each row with its cells as ``str`` (None kept), column by column: a
    column of only strings or only :class:`Term` cells (``str`` is the term's value) is
    read in C, without a Python call per cell (half a second of a 100,000 x 4 SPARQL pair
    went to the per-row generator)."""
    width = len(rows[0]) if rows else 0
    if not width or set(map(len, rows)) != {width}:
        return [repr(tuple(str(v) if v is not None else None for v in r)) for r in rows]
    cols: list[Any] = []
    for i in range(width):
        col = list(map(itemgetter(i), rows))
        types = set(map(type, col))
        if types == {Term}:
            col = list(map(_TERM_VALUE, col))
        elif types != {str}:
            col = [str(v) if v is not None else None for v in col]
        cols.append(col)
    return list(map(repr, zip(*cols, strict=True)))


_TERM_VALUE = attrgetter("value")


#: ``ResultTable.meta`` key: the variables of a SPARQL JSON result's first binding, in the order
#: its keys came (BuildingQA's metrics take their columns from ``list(rows[0].keys())``).
FIRST_ROW_KEYS = "first_row_keys"


def first_row_key_order(columns: list[str], bindings: object) -> dict[str, Any]:
    """``{FIRST_ROW_KEYS: [...]}`` when the first binding's keys are not in projection order.

    JSON objects keep their key order, and BuildingQA's exact match pairs columns by position in
    that order, so a result whose keys come in another order than ``head.vars`` scores 0 there.
    """
    if not isinstance(bindings, list) or not bindings or not isinstance(bindings[0], dict):
        return {}
    keys = [str(k) for k in bindings[0] if k in columns]
    if keys == [c for c in columns if c in bindings[0]]:
        return {}
    return {FIRST_ROW_KEYS: keys}


def hashable_cell(value: object) -> object:
    """A driver's cell made hashable, since rows are counted as multisets: arrays become tuples,
    JSON objects their canonical text, a ``memoryview`` its bytes (PostgreSQL's drivers return
    all three)."""
    if isinstance(value, list):
        return tuple(hashable_cell(v) for v in value)
    if isinstance(value, dict):
        import json

        return json.dumps(value, sort_keys=True, default=str)
    if isinstance(value, memoryview):
        return bytes(value)
    return value
