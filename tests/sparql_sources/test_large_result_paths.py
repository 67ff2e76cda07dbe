"""The column-wise paths a large SPARQL result takes (issue 30): each agrees with the plain
per-cell transcription it replaces, and the parent keeps one copy of a pair's terms."""

from __future__ import annotations

import marshal

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_queryeval.results import ResultTable, Term
from pytest_queryeval.sources.packed import PackedRows, pack_terms, unpack_terms

XSD_INT = "http://www.w3.org/2001/XMLSchema#integer"

_terms = st.builds(Term, st.sampled_from(["uri", "literal", "bnode"]),
                   st.sampled_from(["a", "b", "1", "x y", "'q'", "é"]),
                   st.sampled_from([None, XSD_INT]), st.sampled_from([None, "en"]))
_cells = st.one_of(st.none(), _terms, st.text(max_size=3), st.integers(-3, 3),
                   st.floats(allow_nan=True), st.booleans())


def _naive_signature(rows: list[tuple[object, ...]], ordered: bool) -> list[str]:
    texts = [repr(tuple(str(v) if v is not None else None for v in r)) for r in rows]
    return texts if ordered else sorted(texts)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 4).flatmap(lambda w: st.lists(
    st.one_of(st.tuples(*[_cells] * w), st.tuples(*[_terms] * w),
              st.tuples(*[st.one_of(st.none(), _terms)] * w)), max_size=12)),
       st.lists(st.tuples(_cells), max_size=3), st.booleans())
def test_signature_equals_the_per_row_texts(rows: list[tuple[object, ...]],
                                            ragged: list[tuple[object, ...]],
                                            ordered: bool) -> None:
    import hashlib

    for table_rows in (rows, rows + ragged):
        naive = _naive_signature(table_rows, ordered)
        digest = hashlib.sha256("\n".join(naive).encode("utf-8", "surrogatepass")).hexdigest()
        expected = f"rows:{len(table_rows)}:{digest[:32]}"
        assert ResultTable(["c"] * 4, table_rows).signature(ordered) == expected


def _packed(rows: list[tuple[tuple[str, str, str | None, str | None] | None, ...]],
            ) -> PackedRows:
    width = len(rows[0])
    columns = []
    for i in range(width):
        column = [r[i] for r in rows]
        distinct = list(dict.fromkeys(column))
        columns.append((distinct, [distinct.index(c) for c in column]))
    return pack_terms(len(rows), columns)


def test_a_pair_shares_its_terms_and_the_map_holds_only_their_own_strings() -> None:
    """The prediction's terms are the gold's objects; the map kept for the next result is
    keyed by the terms' own value strings (no field tuple, no second copy of a string), but
    for a second term of one value (kept by its fields)."""
    one = ("literal", "1", XSD_INT, None)
    gold = [(("uri", "http://e/a", None, None), one),
            (("uri", "http://e/b", None, None), ("literal", "1", None, None))]
    pred = [(("literal", "1", None, None), ("uri", "http://e/b", None, None)),
            (one, ("uri", "http://e/a", None, None)),
            (("literal", "http://e/a", None, None), None)]  # a value shared across types
    g_rows, g_map = unpack_terms(_packed(gold), None)
    p_rows, p_map = unpack_terms(_packed(pred), g_map)
    assert g_rows == [tuple(Term(*f) for f in r) for r in gold]
    assert p_rows == [tuple(None if f is None else Term(*f) for f in r) for r in pred]
    g_terms = {t: t for r in g_rows for t in r}
    assert all(t is g_terms[t] for r in p_rows for t in r if t in g_terms)
    assert p_rows[2][0] not in g_terms and p_rows[2][0].type == "literal"
    # the first term of a value in a result is kept by its value, the others by their fields
    for seen, others in ((g_map, {("literal", "1", None, None)}),
                         (p_map, {one, ("uri", "http://e/a", None, None)})):
        by_value = {k: t for k, t in seen.items() if type(k) is str}
        assert all(k is t.value for k, t in by_value.items())
        assert {k for k in seen if k not in by_value} == others
        assert all(seen[k] == Term(*k) for k in others)


def test_the_packed_bytes_are_dropped_once_read() -> None:
    packed = _packed([(("uri", "http://e/a", None, None),)])
    assert isinstance(marshal.loads(packed.data), tuple)
    rows, _ = unpack_terms(packed, None)
    assert rows == [(Term("uri", "http://e/a"),)] and packed.data is None


_texts = st.text(alphabet=st.sampled_from(list('aB "^@-\n\tx1İ')), max_size=12)


@settings(max_examples=500, deadline=None)
@given(st.lists(_texts, max_size=20))
def test_normalize_values_equals_the_per_value_form(values: list[str]) -> None:
    from pytest_queryeval.metrics.alignment import normalize_value, normalize_values

    assert normalize_values(values) == [normalize_value(v) for v in values]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.none(), _texts), max_size=40), st.integers(0, 3))
def test_many_new_values_get_the_codes_the_loop_gives(raw: list[str | None], many: int,
                                                      ) -> None:
    """Coding a column's new values at once (``_Codebook._add_many``) names the same values
    alike as the loop: equal codes exactly where the normalised values are equal."""
    from pytest_queryeval.metrics import alignment

    books = []
    for threshold in (10**9, many):
        old, alignment._MANY = alignment._MANY, threshold
        try:
            book = alignment._Codebook()
            codes = book.encode(raw) + book.encode(list(reversed(raw)))
        finally:
            alignment._MANY = old
        books.append((book, codes))
    (loop, a), (bulk, b) = books
    assert [loop.norm_of[c] for c in a] == [bulk.norm_of[c] for c in b]
    assert len(loop.norm_of) == len(bulk.norm_of) == len(set(bulk.norm_of))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_terms, st.one_of(st.none(), _terms), _terms), min_size=17,
                max_size=40), st.randoms(use_true_random=False))
def test_term_tables_score_alike_shared_or_not(rows: list[tuple[Term | None, ...]],
                                               rng: object) -> None:
    """A pair sharing its term objects is compared by identity (``_canonical_terms``), one of
    equal copies by ``Term.__eq__``: every table metric is the same."""
    import pickle
    import random

    from pytest_queryeval.metrics import table

    assert isinstance(rng, random.Random)
    canon: dict[Term, Term] = {}
    gold_rows = [tuple(None if c is None else canon.setdefault(c, c) for c in r) for r in rows]
    pred_rows = [(r[2], r[0], r[1]) for r in gold_rows]
    rng.shuffle(pred_rows)
    pred_rows = [*pred_rows[:-1], (*gold_rows[0][:2], gold_rows[-1][0])]
    shared = table.compare_tables(ResultTable(["a", "b", "c"], gold_rows),
                                  ResultTable(["c", "a", "b"], pred_rows), order_matters=False)
    copied = pickle.loads(pickle.dumps(pred_rows))  # equal terms, other objects
    assert copied == pred_rows and (not copied or copied[0][0] is not pred_rows[0][0])
    apart = table.compare_tables(ResultTable(["a", "b", "c"], gold_rows),
                                 ResultTable(["c", "a", "b"], copied), order_matters=False)
    assert shared.metrics() == apart.metrics()
    assert table._canonical_terms(shared.gold, shared.pred)
    assert not table._canonical_terms(apart.gold, apart.pred)


def test_term_tables_never_reach_the_numpy_path(monkeypatch: object) -> None:
    """The fast path declines Term cells; a large SPARQL pair is not handed to it (nor is
    numpy imported for it), and its metrics are the pure path's."""
    import pytest

    from pytest_queryeval.metrics import _table_fast, table

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    assert table.FAST_CELL_TYPES == _table_fast._ALLOWED
    rows = [(Term("uri", f"http://e/{i}"), Term("literal", str(i % 7))) for i in range(30_000)]
    expected = table.compare_tables(ResultTable(["a", "b"], rows),
                                    ResultTable(["b", "a"], [(b, a) for a, b in rows]),
                                    order_matters=False).metrics()
    assert _table_fast.compare(rows, [(b, a) for a, b in rows], False) is None

    class Refuse:
        def compare(self, *args: object) -> None:
            raise AssertionError("handed to the fast path")

    monkeypatch.setattr(table, "_fast_module", Refuse())
    got = table.compare_tables(ResultTable(["a", "b"], rows),
                               ResultTable(["b", "a"], [(b, a) for a, b in rows]),
                               order_matters=False).metrics()
    assert got == expected and got["execution_accuracy"] == 1.0


def test_a_columns_pyoxigraph_terms_at_once_equal_each_term() -> None:
    """``_ox_terms`` (a column's distinct terms at once) gives ``_ox_term``'s fields for
    every mix: only IRIs, only literals (plain, tagged, typed), and mixed columns."""
    import pyoxigraph as ox

    from pytest_queryeval.sources.rdf import _ox_term, _ox_terms

    xsd = "http://www.w3.org/2001/XMLSchema#"
    iris = [ox.NamedNode(f"http://e/{i}") for i in range(5)]
    literals = [ox.Literal("a"), ox.Literal("b", language="EN-gb"),
                ox.Literal("x", datatype=ox.NamedNode(xsd + "string")),
                ox.Literal("007", datatype=ox.NamedNode(xsd + "int")),
                ox.Literal("1.50", datatype=ox.NamedNode(xsd + "decimal")),
                ox.Literal("1e0", datatype=ox.NamedNode(xsd + "double")),
                ox.Literal("y", datatype=ox.NamedNode("http://e/own"))]
    for column in (iris, literals, [*iris, *literals], [ox.BlankNode("b0"), *iris],
                   [None, *literals], []):
        assert _ox_terms(column) == [_ox_term(t) for t in column]
