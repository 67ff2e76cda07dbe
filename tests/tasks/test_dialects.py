"""A gold per dialect and transpiling as a checked authoring aid (issue 28 item 6, engine
side), on the example suite's Chinook golds run on real SQLite and DuckDB."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import pytest
import yaml

from pytest_queryeval.sources.dialects import TranspileError, gold_for, transpile

ROOT = Path(__file__).resolve().parents[2]


def test_a_mapping_gives_each_dialect_its_own_gold() -> None:
    gold = {"sqlite": "SELECT strftime('%Y', d) FROM t", "postgres": "SELECT extract(year FROM d) FROM t"}
    assert gold_for(gold, "postgres") == ("SELECT extract(year FROM d) FROM t", None)
    assert gold_for("SELECT 1", "duckdb") == ("SELECT 1", None)
    text, source = gold_for(gold, "duckdb", transpile_from="sqlite")
    assert source == "sqlite" and "STRFTIME" in text.upper()
    with pytest.raises(KeyError, match="gold: no entry for duckdb \\(the case has postgres, "
                                       "sqlite; add one, or transpile"):
        gold_for(gold, "duckdb")


def test_an_untranslatable_construct_raises() -> None:
    with pytest.raises(TranspileError, match="cannot transpile from postgres to sqlite"):
        transpile("SELECT x FROM t FOR UPDATE SKIP LOCKED", "postgres", "sqlite")


def test_example_golds_transpiled_to_duckdb_give_sqlites_results(tmp_path: Path) -> None:
    """Every gold of the example suite's SQL cases that sqlglot carries over runs on a DuckDB
    copy of Chinook (made from the SQLite file's rows) with the same multiset of rows."""
    duckdb = pytest.importorskip("duckdb")
    src = sqlite3.connect(ROOT / "example_suite" / "data" / "chinook.sqlite")
    target = duckdb.connect(str(tmp_path / "chinook.duckdb"))
    from pytest_queryeval.neighbours.schema import introspect

    target.begin()  # one transaction: row-by-row inserts commit once
    for table in introspect(src).tables:  # parents before the tables referencing them
        name, ddl = table.name, table.ddl
        target.execute(transpile(ddl.replace("[", '"').replace("]", '"'), "sqlite", "duckdb"))
        rows = src.execute(f'SELECT * FROM "{name}"').fetchall()
        if rows:
            marks = ", ".join("?" for _ in rows[0])
            target.executemany(f'INSERT INTO "{name}" VALUES ({marks})', [list(r) for r in rows])
    target.commit()
    golds = []
    for path in sorted((ROOT / "example_suite" / "sql").glob("test_*.yaml")):
        doc = yaml.safe_load(path.read_text())
        for case in doc.get("cases", [doc]) if isinstance(doc, dict) else []:
            gold = case.get("gold", doc.get("gold"))
            if isinstance(gold, str):
                golds.append(gold)
    assert len(golds) >= 20
    same = 0
    for gold in golds:
        try:
            text = transpile(gold, "sqlite", "duckdb")
            got = target.execute(text).fetchall()
        except (TranspileError, duckdb.Error):
            continue
        want = src.execute(gold).fetchall()
        norm = lambda rows: Counter(tuple(round(v, 6) if isinstance(v, float) else v  # noqa: E731
                                          for v in r) for r in rows)
        same += norm(got) == norm(want)
    print(f"{same} of {len(golds)} transpiled golds give SQLite's rows on DuckDB")
    assert same >= len(golds) * 0.6  # an authoring aid, checked by the audit: never assumed
