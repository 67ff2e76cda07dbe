"""Behaviour of the Spider metrics beyond the dev-set oracle: schemas, errors, quirks.

Expected values come from the evaluator's documented semantics (research/sql-anchors.md §1-3).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pytest_queryeval.errors import GoldError
from pytest_queryeval.metrics.spider import (
    COMPONENTS,
    METRICS,
    Schema,
    SpiderParseError,
    aggregate,
    format_table,
    hardness,
    parse_sql,
    structure_scores,
)
from pytest_queryeval.metrics.spider.tokenize import tokenize

SINGER = {"singer": ["singer_id", "name", "age", "country"],
          "concert": ["concert_id", "singer_id", "year"]}


@pytest.fixture
def schema() -> Schema:
    return Schema.from_tables(SINGER, [("concert.singer_id", "singer.singer_id")])


@pytest.mark.parametrize(("sql", "expected"), [
    ("SELECT max(age), min(age) FROM singer", "medium"),
    ("SELECT country FROM singer GROUP BY country HAVING count(*) > 1", "easy"),
    ("SELECT name FROM singer WHERE singer_id NOT IN (SELECT singer_id FROM concert)", "hard"),
    ("SELECT name FROM singer ORDER BY age DESC LIMIT 1", "medium"),
    ("SELECT name FROM singer WHERE name LIKE '%a%' OR age > 3", "hard"),
    ("SELECT count(*) FROM (SELECT * FROM singer)", "easy"),
])
def test_hardness_examples(sql: str, expected: str, schema: Schema) -> None:
    assert hardness(sql) == expected
    assert hardness(sql, schema) == expected


def test_tokenizer_quirks() -> None:
    assert tokenize("SELECT a FROM t WHERE x > = 'Ab c'") == [
        "select", "a", "from", "t", "where", "x", ">=", '"Ab c"']
    assert "a=b" in tokenize("select a=b")  # '=' is not split by nltk
    assert tokenize("x <> 1")[1:3] == ["<", ">"]


@pytest.mark.parametrize(("sql", "expected"), [
    # nltk word_tokenize with an empty punkt model (reference outputs of nltk 3.9)
    ("SELECT T1. name FROM t", ["select", "t1", ".", "name", "from", "t"]),
    ("SELECT a FROM t WHERE x = 1. AND y = 2",
     ["select", "a", "from", "t", "where", "x", "=", "1", ".", "and", "y", "=", "2"]),
    ("SELECT a FROM t WHERE x = 1. Name",
     ["select", "a", "from", "t", "where", "x", "=", "1", ".", "name"]),
    ("select a. B from t.", ["select", "a.", "b", "from", "t", "."]),
    ('SELECT count(*) FROM t WHERE a LIKE "A. b"',
     ["select", "count", "(", "*", ")", "from", "t", "where", "a", "like", '"A. b"']),
])
def test_tokenizer_sentence_splitting(sql: str, expected: list[str]) -> None:
    assert tokenize(sql) == expected


def test_values_distinct_and_order_of_select_do_not_matter(schema: Schema) -> None:
    res = structure_scores("SELECT name, age FROM singer WHERE age > 20",
                           "select distinct Age, NAME from SINGER where age > 99", schema)
    assert res.metrics["exact_set_match"] == 1.0
    assert res.pred_parse_error is None
    assert res.diff == []
    assert set(res.metrics) == set(METRICS)


def test_foreign_key_canonicalisation(schema: Schema) -> None:
    gold = ("SELECT T1.name FROM singer AS T1 JOIN concert AS T2 "
            "ON T1.singer_id = T2.singer_id GROUP BY T1.singer_id")
    pred = ("SELECT T1.name FROM singer AS T1 JOIN concert AS T2 "
            "ON T1.singer_id = T2.singer_id GROUP BY T2.singer_id")
    assert structure_scores(gold, pred, schema).exact == 1
    no_fk = Schema.from_tables(SINGER)
    assert structure_scores(gold, pred, no_fk).exact == 0


def test_from_table_check_and_legacy_rule(schema: Schema) -> None:
    gold, pred = "SELECT count(*) FROM singer", "select count(*) from concert"
    res = structure_scores(gold, pred, schema)
    assert res.exact == 0
    assert all(p[2] == 1 for p in res.partial.values())
    assert res.diff == ["from: gold singer | pred concert"]
    assert structure_scores(gold, pred, schema, legacy_from_check=True).exact == 1


def test_unparsable_prediction_scores_zero_with_reason(schema: Schema) -> None:
    res = structure_scores("SELECT name FROM singer", "SELECT name FROM singer WHERE age", schema)
    assert res.pred_parse_error
    assert all(v == 0.0 for v in res.metrics.values())
    # the official aggregation still sees the evaluator's empty query
    assert res.partial["where"] == (1, 1, 1, 0, 0)
    assert res.partial["select"] == (0, 0, 0, 1, 0)
    res = structure_scores("SELECT name FROM singer", "SELECT nme FROM singer", schema)
    assert res.pred_parse_error
    assert "Spider" in res.pred_parse_error


def test_gold_that_does_not_parse_is_a_suite_error(schema: Schema) -> None:
    with pytest.raises(GoldError):
        structure_scores("SELECT nope FROM singer", "SELECT name FROM singer", schema)
    with pytest.raises(GoldError):
        hardness("SELECT a FROM t WHERE x")


def test_global_alias_quirk(schema: Schema) -> None:
    # aliases are scanned over the whole query: the subquery's T1 rebinds the outer T1
    sql = ("SELECT T1.name FROM singer AS T1 WHERE T1.singer_id IN "
           "(SELECT T1.singer_id FROM concert AS T1)")
    with pytest.raises(SpiderParseError):
        parse_sql(sql, schema)


def test_schema_from_sqlite(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    conn = sqlite3.connect(db)
    conn.executescript(
        "CREATE TABLE Singer (Singer_ID INTEGER PRIMARY KEY, Name TEXT, Age INT, Country TEXT);"
        "CREATE TABLE Concert (Concert_ID INT, Singer_ID INT REFERENCES Singer(Singer_ID),"
        " Year INT);")
    conn.close()
    schema = Schema.from_sqlite(db)
    assert schema.tables["singer"] == ["singer_id", "name", "age", "country"]
    assert schema.kmap["__concert.singer_id__"] == "__singer.singer_id__"
    res = structure_scores("SELECT Name FROM Singer", "select name from singer", schema)
    assert res.exact == 1


def test_schema_from_tables_json(shared_data: Path) -> None:
    tables = shared_data / "spider" / "tables.json"
    a = Schema.from_tables_json(tables, "concert_singer")
    assert a is Schema.from_tables_json(str(tables), "concert_singer")
    assert "singer" in a.tables
    with pytest.raises(Exception, match="db_id"):
        Schema.from_tables_json(tables, "no_such_db")


def test_a_tables_json_database_is_built_when_first_used(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A Spider dev run uses 20 of tables.json's 166 databases: only those are built (each
    once, shared); a malformed entry is reported when its database is used, not before."""
    import json

    from pytest_queryeval.errors import ConfigError

    good = {"db_id": "a", "table_names_original": ["t"], "column_names_original":
            [[-1, "*"], [0, "x"]], "foreign_keys": []}
    tables = tmp_path / "tables.json"
    tables.write_text(json.dumps([good, {**good, "db_id": "b"}, {"db_id": "broken"}]))
    built: list[str] = []
    real = Schema.from_spider_entry.__func__  # type: ignore[attr-defined]

    def counting(cls: type[Schema], entry: dict[str, object]) -> Schema:
        built.append(str(entry["db_id"]))
        return real(cls, entry)  # type: ignore[no-any-return]

    monkeypatch.setattr(Schema, "from_spider_entry", classmethod(counting))
    a = Schema.from_tables_json(tables, "a")
    assert Schema.from_tables_json(tables, "a") is a
    assert built == ["a"]
    with pytest.raises(ConfigError, match=r"not a Spider tables\.json"):
        Schema.from_tables_json(tables, "broken")
    with pytest.raises(ConfigError, match="db_id 'c' is not in"):
        Schema.from_tables_json(tables, "c")


def test_aggregate_empty_levels_and_f1_rule(schema: Schema) -> None:
    res = structure_scores("SELECT name FROM singer", "SELECT name FROM singer", schema)
    agg = aggregate([res])
    assert agg["easy"]["count"] == 1
    assert agg["hard"]["count"] == 0
    assert agg["hard"]["partial"]["select"]["f1"] == 0.0
    # no item has IUEN on either side: acc = rec = 0 -> F1 printed as 1
    assert agg["easy"]["partial"]["iuen"] == {"acc": 0.0, "rec": 0.0, "f1": 1.0}
    table = format_table(agg)
    assert table.splitlines()[1].split() == ["count", "1", "0", "0", "0", "1"]
    assert len(table.splitlines()) == 7 + 3 * len(COMPONENTS) + 2


def test_malformed_condition_is_unparsable_not_a_crash(schema: Schema) -> None:
    # the official evaluator accepts this in its parser and crashes while rebuilding it
    res = structure_scores("SELECT name FROM singer",
                           "select name from singer where age = 1 name = 2 and age = 3", schema)
    assert res.pred_parse_error
    with pytest.raises(GoldError):
        structure_scores("select name from singer where age = 1 name = 2 and age = 3",
                         "SELECT name FROM singer", schema)


_VOCAB_TEXT = ("select from where group by order having limit intersect union except join on as "
               "and or not between in like is exists distinct count max min avg ( ) , ; * = > < "
               "! - + . singer concert t1 t2 T1.name T2.year name age country year 1 2.5 'x' "
               "\"y\" asc desc")
_VOCAB = _VOCAB_TEXT.split(" ")


def test_any_prediction_scores_without_crashing(schema: Schema) -> None:
    import random

    rnd = random.Random(4)
    for _ in range(1500):
        toks = ["select", "name", "from", "singer"] if rnd.random() < 0.7 else []
        for _ in range(rnd.randint(0, 12)):
            toks.insert(rnd.randint(0, len(toks)), rnd.choice(_VOCAB))
        res = structure_scores("SELECT name FROM singer WHERE age > 1", " ".join(toks), schema)
        assert 0.0 <= res.metrics["exact_set_match"] <= 1.0


def test_a_text_is_tokenised_once_and_each_parse_gets_its_own_tokens(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A gold is parsed for its difficulty, for ``sql_hardness`` (strictly) and against its
    schema: the three share one tokenisation, and a strict parse dropping the trailing ';'
    does not change the tokens the next parse of the text reads."""
    from pytest_queryeval.metrics.spider import parse as parse_module

    calls: list[str] = []
    real = parse_module.tokenize

    def counting(query: str) -> list[str]:
        calls.append(query)
        return real(query)

    monkeypatch.setattr(parse_module, "tokenize", counting)
    parse_module._tokens.cache_clear()
    text = "SELECT name FROM singer WHERE age > 20 ;"
    lenient = parse_module.parse_sql(text, None)
    strict = parse_module.parse_sql(text, None, strict=True)
    assert parse_module.parse_sql(text, None) == lenient
    assert strict["where"] == lenient["where"]
    assert calls == [text]
    parse_module._tokens.cache_clear()
