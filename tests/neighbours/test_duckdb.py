"""Counterexamples on a real DuckDB file: DuckDB enforces the copied constraints (keys, NOT
NULL, CHECK, foreign keys), the counterexample is written as a DuckDB file, and queries that
agree everywhere are never flagged."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from pytest_queryeval.metrics.table import table_metrics
from pytest_queryeval.neighbours import Budget, search
from pytest_queryeval.neighbours.engines import ENGINES, engine_for
from pytest_queryeval.results import ResultTable

duckdb = pytest.importorskip("duckdb")


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    path = tmp_path / "shop.duckdb"
    conn = duckdb.connect(str(path))
    conn.execute("CREATE TABLE customer (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
                 "country VARCHAR)")
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL "
                 "REFERENCES customer(id), total DOUBLE NOT NULL CHECK (total >= 0))")
    conn.execute("INSERT INTO customer VALUES (1, 'ann', 'NO'), (2, 'bob', 'SE'), (3, 'cy', 'NO')")
    conn.execute("INSERT INTO orders VALUES (1, 1, 30), (2, 2, 12), (3, 1, 7), (4, 3, 50)")
    conn.close()
    return path


def same(g: ResultTable, p: ResultTable) -> bool:
    return table_metrics(g, p, order_matters=False)["execution_accuracy"] == 1.0


def test_the_file_is_recognised_as_duckdb(shop: Path) -> None:
    assert engine_for(shop) is ENGINES["duckdb"]


@pytest.mark.parametrize(("gold", "predicted"), [
    ("SELECT count(*) FROM orders WHERE total >= 12", "SELECT count(*) FROM orders WHERE total > 7"),
    ("SELECT o.id FROM orders o JOIN customer c ON c.id = o.customer_id WHERE c.name = 'ann'",
     "SELECT id FROM orders WHERE customer_id = 1"),
    ("SELECT count(*) FROM customer", "SELECT count(country) FROM customer"),
])
def test_coincidental_passes_are_proven_wrong(shop: Path, gold: str, predicted: str,
                                              tmp_path: Path) -> None:
    real = ENGINES["duckdb"].open_real(shop)
    try:
        deadline = time.monotonic() + 60
        assert same(ENGINES["duckdb"].run(real, gold, deadline),  # type: ignore[arg-type]
                    ENGINES["duckdb"].run(real, predicted, deadline))  # type: ignore[arg-type]
    finally:
        real.close()
    found = search(shop, gold, predicted, same, budget=Budget(databases=200, seconds=600))
    ce = found.counterexample
    assert ce is not None and ce.engine == "duckdb"
    out = tmp_path / "ce.duckdb"
    ce.write(out)
    conn = duckdb.connect(str(out), read_only=True)
    try:
        g = ResultTable(["x"], conn.execute(gold).fetchall())
        p = ResultTable(["x"], conn.execute(predicted).fetchall())
        totals = conn.execute("SELECT total FROM orders").fetchall()
    finally:
        conn.close()
    assert not same(g, p)
    assert all(t >= 0 for (t,) in totals)  # the CHECK constraint held


@pytest.mark.parametrize(("gold", "predicted"), [
    ("SELECT count(*) FROM orders o JOIN customer c ON c.id = o.customer_id",
     "SELECT count(*) FROM orders"),  # NOT NULL foreign key: every order has its customer
    ("SELECT DISTINCT country FROM customer", "SELECT country FROM customer GROUP BY country"),
])
def test_equivalent_rewrites_are_not_flagged(shop: Path, gold: str, predicted: str) -> None:
    found = search(shop, gold, predicted, same, budget=Budget(databases=40, seconds=600))
    assert found.counterexample is None
    assert found.checked == 40


# -- one kept database per thread (issue 41 item 6) -------------------------------------------

CHINOOK = Path(__file__).resolve().parents[2] / "example_suite" / "data" / "chinook.sqlite"


@pytest.fixture(scope="module")
def chinook_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Chinook's SQLite file and a DuckDB copy of it (the DDL transpiled, the same rows)."""
    import sqlite3

    import sqlglot

    from pytest_queryeval.neighbours.schema import introspect

    path = tmp_path_factory.mktemp("chinook") / "chinook.duckdb"
    src = sqlite3.connect(f"file:{CHINOOK}?mode=ro", uri=True)
    dst = duckdb.connect(str(path))
    for table in introspect(src).tables:
        dst.execute(sqlglot.transpile(table.ddl, read="sqlite", write="duckdb")[0])
        rows = src.execute(f'SELECT * FROM "{table.name}"').fetchall()
        marks = "(" + ", ".join("?" for _ in table.columns) + ")"
        # one INSERT per 500 rows (executemany is slow); one per row where a row may refer to
        # an earlier one of its table (DuckDB checks a statement against the rows before it)
        step = 1 if any(c.references and c.references[0] == table.name
                        for c in table.columns) else 500
        for at in range(0, len(rows), step):
            chunk = rows[at:at + step]
            dst.execute(f'INSERT INTO "{table.name}" VALUES ' + ", ".join([marks] * len(chunk)),
                        [v for row in chunk for v in row])
    dst.close()
    src.close()
    return CHINOOK, path


CORPUS = yaml.safe_load((Path(__file__).resolve().parents[1] / "data" / "neighbours"
                         / "chinook.yaml").read_text())
#: (gold, predicted, a counterexample exists): corpus pairs both engines settle within a few
#: candidates, or, for the equivalent ones, within the 40 checked here.
PAIRS = [(CORPUS["coincidental"][i]["gold"], CORPUS["coincidental"][i]["predicted"], True)
         for i in (2, 3, 6, 9)] + [
         (CORPUS["equivalent"][i]["gold"], CORPUS["equivalent"][i]["predicted"], False)
         for i in (0, 1, 4)]


@pytest.mark.parametrize(("gold", "predicted", "wrong"), PAIRS)
def test_sqlite_and_duckdb_give_the_same_verdicts(chinook_pair: tuple[Path, Path], gold: str,
                                                  predicted: str, wrong: bool) -> None:
    for path, engine in zip(chinook_pair, ("sqlite", "duckdb"), strict=True):
        found = search(path, gold, predicted, same, budget=Budget(databases=40 if not wrong
                                                                  else 200, seconds=600),
                       engine=ENGINES[engine], scope="verdicts")
        assert (found.counterexample is not None) is wrong, engine
        if not wrong:
            assert found.checked == 40, engine


def test_a_duckdb_search_opens_no_database_per_candidate(
        chinook_pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening a DuckDB database costs about a hundred times what a candidate's rows and
    queries cost: the candidates share one kept in-memory database (the real file and the
    kept database are the only ones opened)."""
    opened: list[str] = []
    real_connect = duckdb.connect

    def counting(database: str = ":memory:", *args: object, **kwargs: object) -> object:
        opened.append(str(database))
        return real_connect(database, *args, **kwargs)

    monkeypatch.setattr(duckdb, "connect", counting)
    found = search(chinook_pair[1], "SELECT DISTINCT Country FROM Customer",
                   "SELECT Country FROM Customer GROUP BY Country", same,
                   budget=Budget(databases=60, seconds=600), scope="opened")
    assert found.counterexample is None and found.checked == 60
    assert opened.count(":memory:") <= 1
    assert len(opened) <= 2


def test_a_known_file_is_not_opened_again_and_candidates_run_on_one_thread(
        shop: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second search of an unchanged file opens no database at all: the file's schema and
    samples are remembered and the kept database is reused (opening the file is about 40 ms a
    case). The kept database runs on one thread (a candidate's few rows make no second task;
    more threads only wake DuckDB's workers). A changed file is opened and read again."""
    gold, predicted = "SELECT count(*) FROM orders", "SELECT count(id) FROM orders"
    first = search(shop, gold, predicted, same, budget=Budget(databases=20, seconds=600),
                   scope="known")
    opened: list[str] = []
    real_connect = duckdb.connect

    def counting(database: str = ":memory:", *args: object, **kwargs: object) -> object:
        opened.append(str(database))
        return real_connect(database, *args, **kwargs)

    monkeypatch.setattr(duckdb, "connect", counting)
    again = search(shop, gold, predicted, same, budget=Budget(databases=20, seconds=600),
                   scope="known")
    assert (again.checked, again.counterexample) == (first.checked, None) == (20, None)
    assert opened == []
    from pytest_queryeval.neighbours import engines

    assert engines._LOCAL.space.conn.execute(
        "SELECT current_setting('threads')").fetchone() == (1,)
    monkeypatch.setattr(duckdb, "connect", real_connect)
    conn = duckdb.connect(str(shop))
    conn.execute("ALTER TABLE orders ADD COLUMN note VARCHAR")
    conn.close()
    monkeypatch.setattr(duckdb, "connect", counting)
    changed = search(shop, gold, predicted, same, budget=Budget(databases=5, seconds=600),
                     scope="known")
    assert changed.checked == 5 and str(shop) in opened
    real = ENGINES["duckdb"].open_real(shop)
    try:
        assert ENGINES["duckdb"].introspect(real).table("orders").columns[-1].name == "note"
    finally:
        real.close()


def test_kept_database_holds_exactly_the_rows_a_fresh_one_holds(chinook_pair: tuple[Path, Path],
                                                                shop: Path) -> None:
    """Rows the engine refuses one by one (a repeated key, a parent that is not there, a
    timestamp that is no timestamp, a CHECK, a reference to a refused row of the same table)
    are refused in the kept database too, candidate after candidate, and nothing of one
    candidate is left for the next. A refused row's key is free for a later row."""
    eng = ENGINES["duckdb"]
    cases = []
    real = eng.open_real(chinook_pair[1])
    employee_schema = eng.introspect(real)
    real.close()
    emp = [c.name for c in employee_schema.table("Employee").columns]

    def employee(key: int, boss: int | None, born: str) -> tuple[object, ...]:
        values = {"EmployeeId": key, "LastName": f"L{key}", "FirstName": "F",
                  "ReportsTo": boss, "BirthDate": born}
        return tuple(values.get(c) for c in emp)

    cases.append((employee_schema, {
        "Employee": [employee(1, None, "1970-01-01"), employee(2, 1, "x y"),
                     employee(2, 1, "1975-01-01"), employee(3, 2, "1971-02-03"), employee(1, None, "1972-01-01"),
                     employee(4, 1, "1973-01-01")],
        "Customer": []}))
    real = eng.open_real(shop)
    shop_schema = eng.introspect(real)
    real.close()
    cases.append((shop_schema, {
        "customer": [(1, "ann", "NO"), (1, "bob", "SE"), (2, "cy", None), (3, None, "NO")],
        "orders": [(1, 1, 5.0), (2, 3, 6.0), (3, 2, -1.0), (1, 2, 7.0), (4, 2, 8.0),
                   (2, 1, 9.0)]}))
    cases.append((shop_schema, {"customer": [(5, "dee", "DK")], "orders": [(9, 5, 1.5)]}))
    query = ["SELECT 1"]
    for schema, rows in cases * 2:
        fresh = eng.build(schema, rows)
        try:
            want = eng.held_rows(fresh, schema, list(rows))
        finally:
            fresh.close()
        with eng.candidate(schema, rows, query) as conn:
            assert eng.held_rows(conn, schema, list(rows)) == want
        if "orders" in rows and len(rows["orders"]) > 1:
            assert (2, 1, 9.0) in want["orders"]
    assert [r[0] for r in want["customer"]] == [5]  # nothing of the earlier candidates


@pytest.mark.parametrize("predicted", [
    "SELECT count(*) FROM orders; DELETE FROM orders",
    "INSERT INTO orders VALUES (99, 1, 1) RETURNING 1",
])
def test_a_query_that_could_write_gets_a_database_of_its_own(shop: Path, predicted: str) -> None:
    from pytest_queryeval.neighbours.engines import plain_query

    assert not plain_query(predicted)
    gold = "SELECT count(*) FROM orders"
    found = search(shop, gold, predicted, same, budget=Budget(databases=30, seconds=600),
                   scope="writes")
    again = search(shop, gold, "SELECT count(*) FROM orders", same,
                   budget=Budget(databases=30, seconds=600), scope="writes")
    assert again.counterexample is None and again.checked == 30
    assert found.checked >= 1


def test_a_refused_row_in_one_multi_row_insert_keeps_what_one_by_one_keeps(tmp_path: Path) -> None:
    """A UNIQUE or CHECK that only the engine can judge refuses the table's one INSERT: the
    table then goes in row by row, and the kept database holds exactly the rows one-by-one
    inserts into a fresh database hold (the refused ones out, the rest in their order)."""
    path = tmp_path / "tags.duckdb"
    conn = duckdb.connect(str(path))
    conn.execute("CREATE TABLE tag (id INTEGER PRIMARY KEY, label VARCHAR UNIQUE, "
                 "weight INTEGER CHECK (weight < 10))")
    conn.execute("INSERT INTO tag VALUES (1, 'a', 1)")
    conn.close()
    eng = ENGINES["duckdb"]
    real = eng.open_real(path)
    schema = eng.introspect(real)
    real.close()
    candidates = [
        {"tag": [(1, "a", 1), (2, "a", 2), (3, "b", 3), (4, "c", 12), (5, "c", 4)]},
        {"tag": [(1, "x", 1), (2, "y", 2)]},
        {"tag": [(7, "q", 11), (8, "q", 1)]},
    ]
    for rows in candidates * 2:
        fresh = eng.build(schema, rows)
        try:
            want = eng.held_rows(fresh, schema, list(rows))
        finally:
            fresh.close()
        with eng.candidate(schema, rows, ["SELECT count(*) FROM tag"]) as kept:
            assert eng.held_rows(kept, schema, list(rows)) == want
            assert eng.attempt(kept, "SELECT count(*) FROM tag", 5) == ResultTable(
                ["count_star()"], [(len(want["tag"]),)])
    assert want == {"tag": [(8, "q", 1)]}


def test_a_prepared_query_fails_with_the_engines_own_message(shop: Path) -> None:
    """The kept database runs the gold and prediction as prepared statements; one that fails
    on a candidate says what the plain query says on a fresh database (with its LINE), and
    the candidate's rows are still there to be read afterwards."""
    eng = ENGINES["duckdb"]
    real = eng.open_real(shop)
    schema = eng.introspect(real)
    real.close()
    rows = {"customer": [(1, "ann", "NO"), (2, "bob", None)], "orders": [(1, 2, 3.0)]}
    bad = "SELECT CAST(name AS INTEGER) FROM customer"
    good = "SELECT count(*) FROM orders"
    fresh = eng.build(schema, rows)
    try:
        want = eng.attempt(fresh, bad, 5)
    finally:
        fresh.close()
    assert not isinstance(want, ResultTable) and "LINE 1" in want.message
    for _ in range(2):
        with eng.candidate(schema, rows, (good, bad)) as kept:
            assert eng.attempt(kept, good, 5) == ResultTable(["count_star()"], [(1,)])
            assert eng.attempt(kept, bad, 5) == want
            assert eng.held_rows(kept, schema, ["customer"]) == {"customer": rows["customer"]}
    from pytest_queryeval.neighbours import engines

    assert {good, bad} <= set(engines._LOCAL.space.names)  # both ran as prepared statements


def test_sampled_values_are_read_again_when_the_file_changes(shop: Path) -> None:
    """A file's sampled values are remembered between cases, not across a change of it."""
    eng = ENGINES["duckdb"]
    real = eng.open_real(shop)
    first = eng.sample(real, "customer", "country")
    assert eng.sample(real, "customer", "country") == first
    real.close()
    conn = duckdb.connect(str(shop))
    conn.execute("INSERT INTO customer VALUES (4, 'dee', 'DK')")
    conn.close()
    real = eng.open_real(shop)
    try:
        assert "DK" in eng.sample(real, "customer", "country") and "DK" not in first
    finally:
        real.close()
