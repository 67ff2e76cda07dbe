"""Counterexamples on a real PostgreSQL server (issue 41 item 6): candidates in a throwaway
database the datasource's role makes (never the user's database), the same verdicts as SQLite
on a shared corpus (Chinook's SQLite file loaded into PostgreSQL), and a PostgreSQL datasource
given ``neighbour_ex`` by the case's check."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_queryeval.metrics.table import CompareOptions, table_metrics
from pytest_queryeval.neighbours import Budget, search
from pytest_queryeval.neighbours.check import Settings, check
from pytest_queryeval.neighbours.engines import ENGINES
from pytest_queryeval.results import ResultTable
from tests.neighbours.support import HAVING_15, LIBRARY_LOANS, LIBRARY_MEMBERS
from tests.support import make_case

pytest.importorskip("psycopg")

CHINOOK = Path(__file__).resolve().parents[2] / "example_suite" / "data" / "chinook.sqlite"
CORPUS = yaml.safe_load((Path(__file__).resolve().parents[1] / "data" / "neighbours"
                         / "chinook.yaml").read_text())
SHOP = ("CREATE TABLE customer (id integer PRIMARY KEY, name text NOT NULL, country text)",
        "CREATE TABLE orders (id integer PRIMARY KEY, customer_id integer NOT NULL "
        "REFERENCES customer(id), total numeric(8,2) NOT NULL CHECK (total >= 0))",
        "INSERT INTO customer VALUES (1, 'ann', 'NO'), (2, 'bob', 'SE'), (3, 'cy', 'NO')",
        "INSERT INTO orders VALUES (1, 1, 30), (2, 2, 12), (3, 1, 7), (4, 3, 50)")


def _pg(url: str) -> Any:
    """The PostgreSQL engine bound to ``url`` (imported here: the case-check test runs on a
    tree without it, where it fails as it should)."""
    from pytest_queryeval.neighbours.named import engine_named

    return engine_named("postgres", url)


def same(g: ResultTable, p: ResultTable) -> bool:
    return table_metrics(g, p, order_matters=False)["execution_accuracy"] == 1.0


def _database(server: Any, name: str, statements: tuple[str, ...] | list[str]) -> str:
    """A database owned by the tasks role (LOGIN CREATEDB) holding ``statements``; its URL."""
    import psycopg

    server.superuser_execute(f'DROP DATABASE IF EXISTS "{name}"',
                             f'CREATE DATABASE "{name}" OWNER {server.tasks_user}',
                             database="postgres")
    with psycopg.connect(server.tasks_conninfo(name), autocommit=True) as conn, \
            conn.transaction():
        for statement in statements:
            conn.execute(statement.encode())
    return str(server.tasks_url(name))


@pytest.fixture(scope="module")
def shop(postgres_server: Any) -> str:
    return _database(postgres_server, "nb_shop", SHOP)


SEARCH_ROLE = ("nb_search", "nb-search-pw")


@pytest.fixture(scope="module")
def shop_readonly(postgres_server: Any, shop: str) -> str:
    """``nb_shop`` through the read-only role of docs/sql-sources.md (reads everything, read
    only by default) with CREATEDB added, as docs/neighbours.md asks for a searched source."""
    role, password = SEARCH_ROLE
    postgres_server.superuser_execute(
        f"DROP ROLE IF EXISTS {role}", f"CREATE ROLE {role} LOGIN CREATEDB PASSWORD '{password}'",
        f"GRANT pg_read_all_data TO {role}",
        f"ALTER ROLE {role} SET default_transaction_read_only = on", database="postgres")
    return f"postgresql+psycopg://{role}:{password}@127.0.0.1:{postgres_server.port}/nb_shop"


def _qe_databases(server: Any) -> set[str]:
    import psycopg

    with psycopg.connect(server.conninfo("postgres"), autocommit=True) as conn:
        return {r[0] for r in conn.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE 'qe\\_task\\_%'").fetchall()}


@pytest.mark.parametrize(("gold", "predicted"), [
    ("SELECT count(*) FROM orders WHERE total >= 12", "SELECT count(*) FROM orders WHERE total > 7"),
    ("SELECT o.id FROM orders o JOIN customer c ON c.id = o.customer_id WHERE c.name = 'ann'",
     "SELECT id FROM orders WHERE customer_id = 1"),
    ("SELECT count(*) FROM customer", "SELECT count(country) FROM customer"),
])
def test_coincidental_passes_are_proven_wrong_and_the_database_is_untouched(
        postgres_server: Any, shop: str, gold: str, predicted: str, tmp_path: Path) -> None:
    before = postgres_server.checksum("nb_shop")
    found = search(Path("unused"), gold, predicted, same, engine=_pg(shop),
                   budget=Budget(databases=200, seconds=600))
    ce = found.counterexample
    assert ce is not None and ce.engine == "postgres"
    assert postgres_server.checksum("nb_shop") == before
    # the script loads into an empty database and the two queries differ there
    script = tmp_path / "ce.sql"
    ce.write(script)
    url = _database(postgres_server, "nb_loaded", [])
    import psycopg

    from pytest_queryeval.tasks.pgcopies import conninfo

    with psycopg.connect(conninfo(url), autocommit=True) as conn:
        conn.execute(script.read_text().encode())
        g = ResultTable(["x"], conn.execute(gold.encode()).fetchall())
        p = ResultTable(["x"], conn.execute(predicted.encode()).fetchall())
        totals = conn.execute(b"SELECT total FROM orders").fetchall()
    assert not same(g, p)
    assert all(t >= 0 for (t,) in totals)  # the CHECK constraint held


@pytest.mark.parametrize(("gold", "predicted"), [
    ("SELECT count(*) FROM orders o JOIN customer c ON c.id = o.customer_id",
     "SELECT count(*) FROM orders"),  # NOT NULL foreign key: every order has its customer
    ("SELECT DISTINCT country FROM customer", "SELECT country FROM customer GROUP BY country"),
])
def test_equivalent_rewrites_are_not_flagged(shop: str, gold: str, predicted: str) -> None:
    found = search(Path("unused"), gold, predicted, same, engine=_pg(shop),
                   budget=Budget(databases=40, seconds=600))
    assert found.counterexample is None
    assert found.checked == 40


def test_a_candidate_is_read_only_bounded_and_kept_as_one_by_one_inserts(shop: str) -> None:
    from pytest_queryeval.neighbours.engines import Failed

    eng = _pg(shop)
    real = eng.open_real(Path("unused"))
    schema = eng.introspect(real)
    real.close()
    rows = {"customer": [(1, "a", None), (1, "dup", "NO"), (2, None, "SE"), (3, "c", "SE")],
            "orders": [(1, 3, 5.5), (2, 9, 1.0), (3, 1, -1.0)]}
    with eng.candidate(schema, rows, ()) as cand:
        # a repeated key, a NULL name, a missing parent and a failed CHECK are left out
        assert eng.held_rows(cand, schema, ["customer", "orders"]) == {
            "customer": [(1, "a", None), (3, "c", "SE")], "orders": [(1, 3, 5.5)]}
        slow = eng.attempt(cand, "SELECT pg_sleep(5)", 0.3)
        assert isinstance(slow, Failed) and slow.kind == "timeout"
        count = eng.attempt(cand, "SELECT count(*) FROM customer", 5)
        assert isinstance(count, ResultTable) and count.rows == [(2,)]  # put in again
        write = eng.attempt(cand, "WITH x AS (DELETE FROM customer RETURNING 1) "
                                  "SELECT count(*) FROM x", 5)
        assert isinstance(write, Failed) and "refused" in write.message
        signal = eng.attempt(cand, "SELECT pg_terminate_backend(pg_backend_pid())", 5)
        assert isinstance(signal, Failed) and "pg_terminate_backend" in signal.message
    import psycopg

    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction), \
            eng.candidate(schema, rows, ()) as cand:
        cand.space.conn.execute(b"DELETE FROM customer")  # past the guard: the transaction


def test_a_role_without_createdb_is_not_searched(postgres_server: Any, shop: str) -> None:
    found = check(make_case(source_spec={"type": "sqlalchemy", "url": postgres_server.readonly_url()}),
                  Settings(databases=5), _source(postgres_server.readonly_url()),
                  "SELECT 1", "SELECT 1", 1.0, False, CompareOptions(), False)
    assert found[0] == {} and "CREATEDB" in str(found[1].get("error"))


def _source(url: str) -> Any:
    from pytest_queryeval.sources.sqlalchemy import SqlAlchemySource

    return SqlAlchemySource("shop", url, isolation="thread")


def test_the_case_check_gives_a_postgres_pass_its_neighbour_ex(
        postgres_server: Any, shop: str, tmp_path: Path) -> None:
    """On the main before this change a PostgreSQL datasource got no ``neighbour_ex``."""
    case = make_case(source_spec={"type": "sqlalchemy", "url": shop})
    settings = Settings(databases=100, seconds=60, report_dir=tmp_path, rootdir=tmp_path)
    metrics, info, diff = check(case, settings, _source(shop), "SELECT count(*) FROM customer",
                                "SELECT count(country) FROM customer", 1.0, False,
                                CompareOptions(), False)
    assert metrics == {"neighbour_ex": 0.0}, info
    found = info["counterexample"]
    assert found is not None and found["engine"] == "postgres"
    assert found.get("file", "").endswith(".sql")
    assert (tmp_path / str(found["file"])).read_text().startswith("-- a counterexample")
    assert diff[0].startswith("neighbour_ex: 0: passes on the shop database")
    metrics, info, _ = check(case, settings, _source(shop), "SELECT DISTINCT country FROM customer",
                             "SELECT country FROM customer GROUP BY country", 1.0, False,
                             CompareOptions(), False)
    assert metrics == {"neighbour_ex": 1.0}, info


# -- the same verdicts as SQLite on Chinook ---------------------------------------------------

def chinook_statements() -> list[str]:
    """Chinook's SQLite file as PostgreSQL statements: the DDL transpiled by sqlglot with its
    names unquoted (the corpus's queries name them unquoted), the same rows."""
    import sqlglot
    from sqlglot import exp

    from pytest_queryeval.neighbours.pgengine import pg_literal
    from pytest_queryeval.neighbours.schema import introspect

    src = sqlite3.connect(f"file:{CHINOOK}?mode=ro", uri=True)
    out: list[str] = []
    for table in introspect(src).tables:
        tree = sqlglot.parse_one(table.ddl, read="sqlite")
        for ident in tree.find_all(exp.Identifier):
            ident.set("quoted", False)
        out.append(tree.sql(dialect="postgres"))
        rows = src.execute(f'SELECT * FROM "{table.name}"').fetchall()
        for at in range(0, len(rows), 500):
            values = ", ".join("(" + ", ".join(pg_literal(v) for v in r) + ")"
                               for r in rows[at:at + 500])
            out.append(f"INSERT INTO {table.name} VALUES {values}")
    src.close()
    return out


#: corpus pairs both engines settle within a few candidates (as test_duckdb's)
PAIRS = [(CORPUS["coincidental"][i]["gold"], CORPUS["coincidental"][i]["predicted"], True)
         for i in (2, 3, 6, 9)] + [
         (CORPUS["equivalent"][i]["gold"], CORPUS["equivalent"][i]["predicted"], False)
         for i in (0, 1, 4)]


@pytest.fixture(scope="module")
def chinook_pg(postgres_server: Any) -> str:
    return _database(postgres_server, "nb_chinook", chinook_statements())


@pytest.mark.parametrize(("gold", "predicted", "wrong"), PAIRS)
def test_sqlite_and_postgres_give_the_same_verdicts(postgres_server: Any, chinook_pg: str,
                                                    gold: str, predicted: str,
                                                    wrong: bool) -> None:
    before = postgres_server.checksum("nb_chinook")
    for engine in (ENGINES["sqlite"], _pg(chinook_pg)):
        found = search(CHINOOK, gold, predicted, same,
                       budget=Budget(databases=40 if not wrong else 200, seconds=600),
                       engine=engine, scope="verdicts")
        assert (found.counterexample is not None) is wrong, engine.name
        if not wrong:
            assert found.checked == 40, engine.name
    assert postgres_server.checksum("nb_chinook") == before


def test_a_postgres_suite_run_records_neighbour_ex(pytester: pytest.Pytester,
                                                  postgres_server: Any,
                                                  shop_readonly: str) -> None:
    """A whole run on a PostgreSQL datasource, the search in its sandbox worker: the
    coincidental pass (its results hold numeric values) gets ``neighbour_ex`` 0 with a SQL
    script saved beside the report, the equivalent one 1, and the database is unchanged."""
    import json

    from tests.support import read_report

    before = postgres_server.checksum("nb_shop")
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    pytester.makefile(".yaml", queryeval=json.dumps({
        "datasources": {"shop": {"type": "sqlalchemy", "url": shop_readonly}},
        "thresholds": {"execution_accuracy": 1.0}}))
    pytester.makefile(".yaml", test_nb=json.dumps({"cases": [
        {"id": "wrong", "kind": "sql", "datasource": "shop",
         "gold": "SELECT id, total FROM orders WHERE total >= 12",
         "predicted": "SELECT id, total FROM orders WHERE total > 7"},
        {"id": "right", "kind": "sql", "datasource": "shop",
         "gold": "SELECT DISTINCT country FROM customer",
         "predicted": "SELECT country FROM customer GROUP BY country"}]}))
    result = pytester.runpytest("--queryeval-neighbours", "--queryeval-json", "out/r.json")
    data = read_report(pytester.path / "out" / "r.json")
    cases = {c["id"]: c for c in data["cases"]}
    assert cases["wrong"]["metrics"]["neighbour_ex"] == 0.0, cases["wrong"]["details"]
    assert cases["right"]["metrics"]["neighbour_ex"] == 1.0, cases["right"]["details"]
    found = cases["wrong"]["details"]["neighbours"]["counterexample"]
    assert found["engine"] == "postgres" and found["file"].endswith("wrong.sql")
    assert (pytester.path / "out" / found["file"]).is_file() or \
        (pytester.path / found["file"]).is_file()
    assert result.ret == 0  # no threshold names neighbour_ex
    assert postgres_server.checksum("nb_shop") == before


@pytest.mark.parametrize("index", [
    i for i, p in enumerate(CORPUS["coincidental"]) if "LIKE ignores case" in p["reason"]])
def test_a_pair_wrong_only_where_like_ignores_case_is_not_flagged(chinook_pg: str,
                                                                   index: int) -> None:
    """The two corpus pairs SQLite flags and PostgreSQL does not: PostgreSQL's LIKE is
    case-sensitive, so on it each pair is equivalent (no counterexample exists)."""
    pair = CORPUS["coincidental"][index]
    assert search(CHINOOK, pair["gold"], pair["predicted"], same, engine=ENGINES["sqlite"],
                  budget=Budget(databases=200, seconds=600)).counterexample is not None
    found = search(CHINOOK, pair["gold"], pair["predicted"], same, engine=_pg(chinook_pg),
                   budget=Budget(databases=60, seconds=600))
    assert found.counterexample is None and found.checked == 60


# -- counterexamples a user can trust (issue 49 item 7), on PostgreSQL too ---------------------

@pytest.fixture(scope="module")
def library_pg(postgres_server: Any) -> str:
    from pytest_queryeval.neighbours.pgengine import pg_literal

    rows = [f"INSERT INTO members VALUES ({m}, {pg_literal(n)})" for m, n in LIBRARY_MEMBERS]
    rows += [f"INSERT INTO loans VALUES ({i}, {m}, {pg_literal(d)})" for i, m, d in LIBRARY_LOANS]
    return _database(postgres_server, "nb_library", [
        "CREATE TABLE members (id integer PRIMARY KEY, name text NOT NULL)",
        "CREATE TABLE loans (id integer PRIMARY KEY, member_id integer NOT NULL "
        "REFERENCES members(id), loan_date text)", *rows])


def test_a_right_date_prediction_is_not_refuted(library_pg: str) -> None:
    gold = "SELECT count(*) FROM loans WHERE substr(loan_date, 1, 4) = '2024'"
    predicted = "SELECT count(*) FROM loans WHERE loan_date LIKE '2024-%'"
    found = search(Path("unused"), gold, predicted, same, engine=_pg(library_pg),
                   budget=Budget(databases=200, seconds=600))
    assert found.counterexample is None, found.counterexample.to_sql()  # type: ignore[union-attr]
    assert found.checked == 200


def test_a_group_of_exactly_the_threshold_tells_ge_from_gt(library_pg: str) -> None:
    found = search(Path("unused"), HAVING_15.format(">="), HAVING_15.format(">"), same,
                   engine=_pg(library_pg), budget=Budget(databases=200, seconds=600))
    ce = found.counterexample
    assert ce is not None and ce.engine == "postgres"
    members = [row[1] for row in ce.rows["loans"]]
    assert len(members) == 15 and len(set(members)) == 1
