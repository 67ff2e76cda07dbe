"""Quirks of BuildingQA's metrics that we reproduce on purpose (docs/metrics-sparql.md).

Expected values come from the research notes' verified list (sparql-json-sdmx-anchors.md §1)
and from the reference's documented semantics, cross-checked with the brute-force oracle.
"""

from __future__ import annotations

import pytest

from pytest_queryeval.metrics.alignment import (
    ALIGNMENT_METRIC_NAMES,
    alignment_details,
    alignment_diff,
    alignment_metrics,
    arity_f1,
    arity_from_query,
    normalize_value,
)
from pytest_queryeval.results import ResultTable, Term

from .brute_force import bf_arity_count, bf_normalize, bf_table_metrics


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("SELECT * WHERE { ?s ?p ?o }", 1),
        ("SELECT (COUNT(?s) AS ?n) WHERE { ?s ?p ?o }", 1),
        ("SELECT REDUCED ?a WHERE { ?a ?p ?o }", 2),
        ("SELECT ?a FROM <http://g> WHERE { ?a ?p ?o }", 3),
        ("SELECT ?x { ?x ?p ?o }", 0),
        ("ASK { ?s ?p ?o }", 0),
        ("select distinct ?a ?b where { ?a ?p ?b }", 2),
        ("SELECT ?a WHERE { { SELECT ?a ?b ?c WHERE { ?a ?b ?c } } }", 1),
        ("SELECT ?a (CONCAT(?b, ' ', ?c) AS ?d)\n  WHERE {}", 2),
        ("# SELECT ?x ?y WHERE\nSELECT ?a WHERE {}", 2),
        ("SELECT ?a) ?b ?c WHERE {}", 1),
        (None, 0),
    ],
)
def test_arity_from_query_quirks(query, expected):
    assert arity_from_query(query) == expected
    assert bf_arity_count(query) == expected


def test_arity_f1_counts():
    assert arity_f1(2, 2) == 1.0
    assert arity_f1(1, 2) == pytest.approx(2 / 3)
    assert arity_f1(3, 2) == pytest.approx(0.8)
    assert arity_f1(0, 0) == 1.0
    assert arity_f1(0, 3) == 0.0


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (" Alice ", "alice"),
        ('"Alice"', "alice"),
        ("Alice@en", "alice"),
        ("alice@en-US", "alice"),
        ("user@ab", "user"),
        ("a^^xsd:int", "a"),
        ('"5"^^<http://www.w3.org/2001/XMLSchema#integer>', '"5"'),  # quotes go before ^^
        ("HTTP://Example.org/X", "http://example.org/x"),
        ('"', '"'),
        ("a^^b\nc", "a^^b\nc"),
        ("alice@eng", "alice@eng"),
    ],
)
def test_normalize_value(raw, expected):
    assert normalize_value(raw) == expected
    assert bf_normalize(raw) == expected


def lit(v: str) -> Term:
    return Term("literal", v)


def test_first_row_keys_are_the_columns():
    # ?b is unbound in the first gold row: the metrics see one gold column only.
    gold = ResultTable(["a", "b"], [(lit("x"), None), (lit("y"), lit("q"))])
    pred = ResultTable(["p"], [(lit("x"),), (lit("y"),)])
    d = alignment_details(gold, pred, arity_from="result")
    assert d.gold_columns == ["a"]
    assert d.metrics == {
        "arity_f1": 1.0,
        "entity_set_f1": 1.0,
        "row_match_f1": 1.0,
        "exact_match_f1": 1.0,
    }


def test_unbound_is_the_empty_entity_but_matches_only_unbound():
    gold = ResultTable(["a", "b"], [(lit("x"), lit("1")), (lit("y"), None)])
    pred = ResultTable(["a", "b"], [(lit("x"), lit("1")), (lit("y"), lit(""))])
    m = alignment_metrics(gold, pred)
    assert m["entity_set_f1"] == 1.0  # {'1', ''} on both sides
    assert m["row_match_f1"] == 0.5  # (y, unbound) != (y, "")
    assert m == {k: v for k, v in bf_table_metrics(gold, pred, "sparql").items() if k != "mapping"}


def test_entity_sets_are_raw_but_rows_are_normalised():
    gold = ResultTable(["a"], [(lit("Alice"),), (Term("uri", "http://x/B"),)])
    pred = ResultTable(["a"], [(lit("alice"),), (Term("literal", "http://x/B"),)])
    m = alignment_metrics(gold, pred)
    assert m["row_match_f1"] == 1.0  # case folded, term type ignored
    assert m["entity_set_f1"] == 0.5  # 'Alice' != 'alice'; the URI text matches the literal


def test_fewer_predicted_columns_is_zero_and_extra_columns_are_free():
    gold = ResultTable(["a", "b"], [(lit("x"), lit("y"))])
    one = ResultTable(["a"], [(lit("x"),)])
    three = ResultTable(["z", "b", "a"], [(lit("q"), lit("y"), lit("x"))])
    assert alignment_metrics(gold, one)["entity_set_f1"] == 0.0
    m = alignment_metrics(gold, three)
    assert (m["entity_set_f1"], m["row_match_f1"], m["exact_match_f1"]) == (1.0, 1.0, 0.0)
    assert m["arity_f1"] == pytest.approx(0.8)


def test_tie_goes_to_first_permutation():
    # Both mappings give row F1 0 and entity F1 1.0: the identity (first) mapping is kept.
    gold = ResultTable(["a", "b"], [(lit("x"), lit("y")), (lit("y"), lit("y"))])
    pred = ResultTable(["p", "q"], [(lit("y"), lit("x")), (lit("y"), lit("z"))])
    d = alignment_details(gold, pred)
    want = bf_table_metrics(gold, pred, "sparql")
    assert d.mapping == want["mapping"]
    assert d.metrics["row_match_f1"] == want["row_match_f1"]


def test_empty_sides():
    empty = ResultTable(["a"], [])
    one = ResultTable(["a"], [(lit("x"),)])
    both = alignment_metrics(empty, ResultTable(["b"], []))
    assert both == dict.fromkeys(ALIGNMENT_METRIC_NAMES, 1.0)
    m = alignment_metrics(empty, one, arity_from="result")
    assert m == {"arity_f1": 0.0, "entity_set_f1": 0.0, "row_match_f1": 0.0, "exact_match_f1": 0.0}


def test_sql_null_keeps_its_column():
    gold = ResultTable(["a", "b"], [(1, None), (2, "x")])
    pred = ResultTable(["b", "a"], [(None, 1), ("X", 2)])
    d = alignment_details(gold, pred)
    assert d.kind == "sql"
    assert d.gold_columns == ["a", "b"]
    assert d.mapping == [("a", "a"), ("b", "b")]
    assert d.metrics["row_match_f1"] == 1.0  # NULL = NULL, 'x' ~ 'X'
    assert d.metrics["entity_set_f1"] == pytest.approx(2 * 0.75 * 0.75 / 1.5)
    want = bf_table_metrics(gold, pred, "sql")
    assert d.metrics["entity_set_f1"] == want["entity_set_f1"]


def test_arity_from_queries_only_when_both_given():
    gold = ResultTable(["a", "b"], [(lit("x"), lit("y"))])
    pred = ResultTable(["a", "b"], [(lit("x"), lit("y"))])
    q2, q3 = "SELECT ?a ?b WHERE {}", "SELECT ?a ?b ?c WHERE {}"
    assert alignment_metrics(gold, pred, gold_query=q2, pred_query=q3)["arity_f1"] == 0.8
    assert alignment_metrics(gold, pred, gold_query=q2)["arity_f1"] == 1.0
    m = alignment_metrics(gold, pred, gold_query=q2, pred_query=q3, arity_from="result")
    assert m["arity_f1"] == 1.0
    with pytest.raises(ValueError, match="arity_from"):
        alignment_metrics(gold, pred, arity_from="projection")


def test_diff_lists_mapping_and_rows():
    gold = ResultTable(["a", "b"], [(lit("x"), lit("1")), (lit("y"), lit("2"))])
    pred = ResultTable(["n", "m", "extra"], [(lit("1"), lit("X"), lit("e")), (lit("3"), lit("z"), lit("e"))])
    lines = alignment_diff(gold, pred)
    assert lines[0] == "column mapping (predicted -> gold): m -> a, n -> b"
    assert lines[1] == "ignored predicted columns: [extra]"
    assert lines[2] == "rows: 1 matched, 1 gold row(s) missing, 1 extra predicted row(s)"
    assert lines[3] == "  missing (a, b) = ('y', '2')"
    assert lines[4] == "  extra (a, b) = ('z', '3')"
    short = alignment_diff(gold, ResultTable(["n"], [(lit("1"),)]))
    assert short == ["no column mapping: 1 predicted column(s) [n] for 2 gold column(s) [a, b]"]


def test_kind_override_for_plain_values():
    # A recorded SPARQL result given as {columns, rows} has plain strings: kind="sparql" makes an
    # unbound first-row cell drop its column, as SPARQL JSON would.
    gold = ResultTable(["a", "b"], [("x", None), ("y", "q")])
    pred = ResultTable(["p"], [("x",), ("y",)])
    assert alignment_details(gold, pred, kind="sparql").gold_columns == ["a"]
    assert alignment_details(gold, pred).gold_columns == ["a", "b"]  # detected as SQL
