"""Build the Soft EX conformance inputs and run the reference functions UNMODIFIED on them.

    python make_oracle.py LIVESQLBENCH_TREE MINI_DEV_TREE OUT_DIR

LIVESQLBENCH_TREE: bird-bench/livesqlbench @59d7bd0 (``git archive``); MINI_DEV_TREE:
bird-bench/mini_dev @4d970a9. Writes into OUT_DIR:

- ``texts.json``: real SQL texts (mini_dev prediction files, LiveSQLBench agent samples) and
  hand-written hard cases; ``oracle_texts.json``: per text the outputs of the reference's
  ``remove_comments``, ``remove_distinct``, ``remove_round`` and the chain of
  ``test_case_default`` (livesqlbench's functions; mini_dev's SQLite copy is checked to agree).
- ``values.json``: typed result rows (Decimal, float, date, datetime, arrays, JSON...) as
  gold/pred pairs with ``conditions``; ``oracle_values.json``: ``preprocess_results`` of each
  side and ``ex_base``'s score, with the module's ``execute_queries`` given those rows (the
  only name replaced: it is the database access, everything after it runs as published).
- ``chinook_pairs.json``: gold/pred SQL pairs on the Chinook SQLite database;
  ``oracle_chinook.json``: mini_dev's ``test_case_default`` (SQLite, real execution on a copy
  of ``chinook.sqlite`` given as CHINOOK env var) per pair, 1 or 0 (any exception: 0).
"""

from __future__ import annotations

import base64
import datetime as dt
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import types
from decimal import Decimal
from pathlib import Path
from typing import Any

SEP = "\t----- bird -----\t"
PRED_FILES = [
    "llm/exp_result/TA_output/predict_mini_dev_gpt-4-turbo_cot_SQLite.json",
    "llm/exp_result/sql_output_kg/predict_mini_dev_meta-llama-3-70b-instruct-2_postgresql.json",
    "llm/exp_result/sql_output_kg/predict_mini_dev_mistralai-mixtral-8x7b-instru-4_postgresql.json",
    "llm/exp_result/sql_output_kg/predict_mini_dev_phi-3-medium-128k-instruct-1_mysql.json",
]

HARD_TEXTS = [
    "SELECT DISTINCT name FROM t",
    "SELECT distinct name FROM t",
    "SELECT DiStInCt name FROM t",
    "SELECT DISTINCT\nname FROM t",
    "SELECT\tDISTINCT name FROM t",
    "SELECT COUNT(DISTINCT x) FROM t",
    "SELECT COUNT( DISTINCT x ) FROM t",
    "SELECT DISTINCT ON (a) a, b FROM t",
    "SELECT  DISTINCT  a FROM t",
    "SELECT a FROM t WHERE s = 'a distinct value'",
    "SELECT ROUND(AVG(x), 2) FROM t",
    "SELECT round(x) FROM t",
    "SELECT ROUND (x , 2) FROM t",
    "SELECT ROUND(ROUND(price, 2), 1) FROM t",
    "SELECT ROUND(CAST(a AS REAL) / b, 4) AS r FROM t",
    "SELECT ROUND(SUM(CASE WHEN a > 1 THEN 1 ELSE 0 END) * 100.0 / COUNT(*), 2) FROM t",
    "SELECT myround(x) FROM t",
    "SELECT 'ROUND(1, 2)' FROM t",
    "SELECT ROUND(x FROM t",
    "SELECT ROUND(x, 2 FROM t",
    "SELECT ROUND() FROM t",
    "SELECT a, ROUND(b, 2), ROUND(c) FROM t WHERE ROUND(d, 1) > 2",
    "SELECT a FROM t -- trailing comment without newline",
    "SELECT a -- why\nFROM t",
    "SELECT a -- why\r\nFROM t",
    "SELECT a -- why\rFROM t",
    "/* header */ SELECT a FROM t",
    "SELECT /* multi\nline */ a FROM t",
    "SELECT a FROM t WHERE s = '--not a comment'\n",
    "SELECT a FROM t WHERE s = '/* not */ a comment'",
    "\n\n  SELECT a\n\n\n  FROM t\n\n",
    "SELECT a\n   \n\t\nFROM t",
    "-- only a comment\n",
    "-- only a comment",
    "/* x */",
    "",
    "   ",
    "SELECT DISTINCT ROUND(AVG(x), 2) -- avg\nFROM t /* done */",
    "SELECT 1; SELECT 2",
    "SELECT ROUND(a, (SELECT 2)) FROM t",
    "SELECT ROUND(f(a, b), 2) FROM t",
    "SELECT ROUND(a) + ROUND(b) FROM t",
    "SELECT ROUND(a,2)FROM t",
    "SELECT x FROM t WHERE y = 'it''s DISTINCT'",
    "SELECT DISTINCT\r\na FROM t",
    "select distinct round(avg(t.x), 2) from t group by t.y order by 1",
]


# -- typed values: JSON encoding -------------------------------------------------------------

def enc(v: Any) -> Any:
    if isinstance(v, bool) or v is None or isinstance(v, int | str):
        return v
    if isinstance(v, Decimal):
        return {"$decimal": str(v)}
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return {"$float": repr(v)}
        return v
    if isinstance(v, dt.datetime):
        return {"$datetime": v.isoformat()}
    if isinstance(v, dt.date):
        return {"$date": v.isoformat()}
    if isinstance(v, dt.time):
        return {"$time": v.isoformat()}
    if isinstance(v, bytes):
        return {"$bytes": base64.b64encode(v).decode()}
    if isinstance(v, tuple):
        return {"$tuple": [enc(x) for x in v]}
    if isinstance(v, list):
        return [enc(x) for x in v]
    if isinstance(v, dict):
        return {"$dict": {k: enc(x) for k, x in v.items()}}
    raise TypeError(type(v))


def dec(v: Any) -> Any:
    if isinstance(v, list):
        return [dec(x) for x in v]
    if not isinstance(v, dict):
        return v
    (tag, x), = v.items()
    return {
        "$decimal": lambda: Decimal(x),
        "$float": lambda: float(x),
        "$datetime": lambda: dt.datetime.fromisoformat(x),
        "$date": lambda: dt.date.fromisoformat(x),
        "$time": lambda: dt.time.fromisoformat(x),
        "$bytes": lambda: base64.b64decode(x),
        "$tuple": lambda: tuple(dec(y) for y in x),
        "$dict": lambda: {k: dec(y) for k, y in x.items()},
    }[tag]()


def rows(*rs: Any) -> list[Any]:
    return [enc(tuple(r)) for r in rs]


D = Decimal
DAY = dt.date(2024, 2, 29)
MOMENT = dt.datetime(2024, 2, 29, 23, 59, 59)


def value_cases() -> list[dict[str, Any]]:
    c: list[dict[str, Any]] = []

    def add(cid: str, gold: list[Any], pred: list[Any], conditions: Any = None) -> None:
        c.append({"id": cid, "gold": gold, "pred": pred, "conditions": conditions})

    add("decimal-half-up-2.675", rows((D("2.68"),)), rows((D("2.675"),)))
    add("decimal-half-up-2.665", rows((D("2.67"),)), rows((D("2.665"),)))
    add("decimal-half-up-negative", rows((D("-2.68"),)), rows((D("-2.675"),)))
    add("decimal-1.005", rows((D("1.01"),)), rows((D("1.005"),)))
    add("decimal-1.0049", rows((D("1.00"),)), rows((D("1.0049"),)))
    add("decimal-vs-float", rows((D("2.68"),)), rows((2.675,)))
    add("float-2.675-rounds-down", rows((2.67,)), rows((2.675,)))
    add("float-2.675-vs-2.68", rows((2.68,)), rows((2.675,)))
    add("float-1.005", rows((1.0,)), rows((1.005,)))
    add("float-0.125-half-even", rows((0.12,)), rows((0.125,)))
    add("float-0.135", rows((0.14,)), rows((0.135,)))
    add("float-negative", rows((-0.12,)), rows((-0.125,)))
    add("float-big", rows((1e20,)), rows((1e20 + 1,)))
    add("float-nan", rows((float("nan"),)), rows((float("nan"),)))
    add("float-inf", rows((float("inf"),)), rows((float("inf"),)))
    add("int-vs-float", rows((1,)), rows((1.0,)))
    add("int-vs-decimal", rows((1,)), rows((D("1.00"),)))
    add("bool-vs-int", rows((True,)), rows((1,)))
    add("date-vs-string", rows(("2024-02-29",)), rows((DAY,)))
    add("datetime-drops-time", rows((DAY,)), rows((MOMENT,)))
    add("datetime-vs-datetime", rows((dt.datetime(2024, 2, 29, 1),)), rows((MOMENT,)))
    add("time-kept", rows((dt.time(12, 0),)), rows((dt.time(12, 0),)))
    add("none", rows((None,)), rows((None,)))
    add("none-vs-zero", rows((None,)), rows((0,)))
    add("bytes", rows((b"ab",)), rows((b"ab",)))
    add("empty-both", [], [])
    add("empty-pred", rows((1,)), [])
    add("empty-gold", [], rows((1,)))
    add("set-ignores-order", rows((1,), (2,)), rows((2,), (1,)))
    add("set-ignores-order-explicit", rows((1,), (2,)), rows((2,), (1,)), {"order": False})
    add("list-keeps-order", rows((1,), (2,)), rows((2,), (1,)), {"order": True})
    add("list-same-order", rows((1,), (2,)), rows((1,), (2,)), {"order": True})
    add("set-ignores-duplicates", rows((1,), (1,), (2,)), rows((2,), (1,)))
    add("list-counts-duplicates", rows((1,), (1,), (2,)), rows((1,), (2,)), {"order": True})
    add("conditions-empty", rows((1,), (2,)), rows((2,), (1,)), {})
    add("conditions-livesqlbench", rows((1,), (2,)), rows((2,), (1,)),
        {"decimal": 2, "distinct": False, "order": True})
    add("column-order-counts", rows((1, 2)), rows((2, 1)))
    add("rounding-makes-equal", rows((D("3.14159"), "pi")), rows((3.14, "pi")))
    add("rounding-then-list", rows((1.004,), (2.0,)), rows((1.0,), (2.001,)), {"order": True})
    add("array-of-floats", rows(([1.234, 2.0],)), rows(([1.23, 2.0],)))
    add("array-of-ints", rows(([1, 2],)), rows(([1, 2],)))
    add("array-order-counts", rows(([1, 2],)), rows(([2, 1],)))
    add("array-of-decimals-fails", rows(([D("1.5")],)), rows(([D("1.5")],)))
    add("array-of-dates-fails", rows(([DAY],)), rows(([DAY],)))
    add("array-of-text", rows((["a", "b"],)), rows((["a", "b"],)))
    add("nested-array", rows(([[1.111], [2.0]],)), rows(([[1.11], [2.0]],)))
    add("dict-sorted-keys", rows(({"b": 1, "a": 2.005},)), rows(({"a": 2.0, "b": 1},)))
    add("dict-with-decimal-fails", rows(({"a": D("1")},)), rows(({"a": D("1")},)))
    add("tuple-cell", rows(((1.111, 2),)), rows(((1.11, 2),)))
    add("many-columns", rows((1, "x", 2.5, D("3.333"), DAY, None)),
        rows((1, "x", 2.5, D("3.33"), "2024-02-29", None)))
    return c


# -- Chinook SQL pairs ---------------------------------------------------------------------------

def chinook_pairs() -> list[dict[str, Any]]:
    p: list[dict[str, Any]] = []

    def add(cid: str, gold: str, pred: str, conditions: Any = None) -> None:
        p.append({"id": cid, "gold": gold, "pred": pred, "conditions": conditions})

    add("same", "SELECT Name FROM Genre", "SELECT Name FROM Genre")
    add("column-names-ignored", "SELECT Name FROM Genre", "SELECT Name AS n FROM Genre")
    add("column-order-counts", "SELECT GenreId, Name FROM Genre", "SELECT Name, GenreId FROM Genre")
    add("distinct-vs-group-by", "SELECT DISTINCT BillingCountry FROM Invoice",
        "SELECT BillingCountry FROM Invoice GROUP BY BillingCountry")
    add("distinct-vs-group-by-ordered", "SELECT DISTINCT BillingCountry FROM Invoice",
        "SELECT BillingCountry FROM Invoice GROUP BY BillingCountry", {"order": True})
    add("duplicates-ignored", "SELECT Country FROM Customer",
        "SELECT Country FROM Customer GROUP BY Country")
    add("count-distinct-survives", "SELECT COUNT(DISTINCT Country) FROM Customer",
        "SELECT COUNT(Country) FROM Customer")
    add("count-distinct-spaced-removed", "SELECT COUNT(Country) FROM Customer",
        "SELECT COUNT( DISTINCT Country) FROM Customer")
    add("count-distinct-both", "SELECT COUNT(DISTINCT Country) FROM Customer",
        "SELECT COUNT(DISTINCT Country) FROM Customer")
    add("distinct-newline-survives", "SELECT Country FROM Customer ORDER BY Country",
        "SELECT DISTINCT\nCountry FROM Customer ORDER BY Country", {"order": True})
    add("round-removed", "SELECT ROUND(AVG(Total), 2) FROM Invoice", "SELECT AVG(Total) FROM Invoice")
    add("round-to-2-places", "SELECT AVG(Total) FROM Invoice", "SELECT AVG(Total) + 0.001 FROM Invoice")
    add("round-to-2-places-not-enough", "SELECT AVG(Total) FROM Invoice",
        "SELECT AVG(Total) + 0.01 FROM Invoice")
    add("float-2.675", "SELECT 2.68", "SELECT 2.675")
    add("float-2.675-down", "SELECT 2.67", "SELECT 2.675")
    add("float-1.005", "SELECT 1.0", "SELECT 1.005")
    add("int-vs-real", "SELECT 1", "SELECT 1.0")
    add("null-row", "SELECT NULL", "SELECT NULL")
    add("empty-both", "SELECT Name FROM Genre WHERE 0", "SELECT Name FROM Genre WHERE 1 = 2")
    add("empty-pred", "SELECT Name FROM Genre", "SELECT Name FROM Genre WHERE 0")
    add("empty-gold", "SELECT Name FROM Genre WHERE 0", "SELECT Name FROM Genre")
    add("pred-syntax-error", "SELECT Name FROM Genre", "SELEC Name FROM Genre")
    add("pred-two-statements", "SELECT 2", "SELECT 1; SELECT 2")
    add("order-differs-set", "SELECT Name FROM Genre ORDER BY Name",
        "SELECT Name FROM Genre ORDER BY Name DESC")
    add("order-differs-list", "SELECT Name FROM Genre ORDER BY Name",
        "SELECT Name FROM Genre ORDER BY Name DESC", {"order": True})
    add("order-same-list", "SELECT Name FROM Genre ORDER BY Name",
        "SELECT Name FROM Genre ORDER BY 1", {"order": True, "decimal": -1, "distinct": False})
    add("comments", "SELECT Name FROM Genre",
        "-- list the genres\nSELECT /* all of them */ Name\nFROM Genre")
    add("trailing-comment", "SELECT Name FROM Genre", "SELECT Name FROM Genre -- done")
    add("comment-with-distinct", "SELECT Name FROM Artist",
        "SELECT Name FROM Artist -- a distinct list\n")
    add("round-in-literal", "SELECT 'x'", "SELECT 'ROUND(x)'")
    add("round-nested", "SELECT ROUND(ROUND(SUM(Total), 1), 0) FROM Invoice",
        "SELECT SUM(Total) FROM Invoice")
    add("round-in-where", "SELECT COUNT(*) FROM Invoice WHERE ROUND(Total) = 1",
        "SELECT COUNT(*) FROM Invoice WHERE Total = 0.99")
    add("text-dates-stay-text", "SELECT InvoiceDate FROM Invoice WHERE InvoiceId <= 3",
        "SELECT date(InvoiceDate) FROM Invoice WHERE InvoiceId <= 3")
    add("join-agg", "SELECT T2.Name, COUNT(*) FROM Track AS T1 JOIN Genre AS T2 ON T1.GenreId = "
        "T2.GenreId GROUP BY T2.Name",
        "SELECT g.Name, COUNT(t.TrackId) FROM Genre g JOIN Track t USING (GenreId) GROUP BY g.GenreId")
    add("limit-order", "SELECT Name FROM Track ORDER BY Milliseconds DESC LIMIT 5",
        "SELECT Name FROM Track ORDER BY Milliseconds DESC LIMIT 5", {"order": True})
    add("avg-division", "SELECT ROUND(CAST(SUM(Total) AS REAL) / COUNT(*), 2) FROM Invoice",
        "SELECT AVG(Total) FROM Invoice")
    add("percentage", "SELECT ROUND(100.0 * SUM(CASE WHEN Country = 'USA' THEN 1 ELSE 0 END) / "
        "COUNT(*), 2) FROM Customer",
        "SELECT 100.0 * SUM(Country = 'USA') / COUNT(*) FROM Customer")
    add("distinct-multi-column", "SELECT DISTINCT City, Country FROM Customer",
        "SELECT City, Country FROM Customer")
    add("case-insensitive-distinct", "select distinct Country from Customer",
        "SELECT Country FROM Customer GROUP BY 1")
    # '--' inside a literal: the comment removal eats the rest of the line, quote included
    add("rewritten-gold-fails", "SELECT Name FROM Genre WHERE Name <> '--'\nORDER BY 1",
        "SELECT Name FROM Genre WHERE Name <> 'x' ORDER BY 1")
    add("rewritten-pred-fails", "SELECT Name FROM Genre WHERE Name <> 'x' ORDER BY 1",
        "SELECT Name FROM Genre WHERE Name <> '--'\nORDER BY 1")
    return p


# -- running the reference -----------------------------------------------------------------------

def load_livesqlbench(tree: Path) -> types.ModuleType:
    """livesqlbench's test_utils; psycopg2 and its db_utils are stubbed (never called here)."""
    sys.modules["psycopg2"] = types.ModuleType("psycopg2")
    stub = types.ModuleType("db_utils")
    stub.perform_query_on_postgresql_databases = None  # type: ignore[attr-defined]
    stub.execute_queries = None  # type: ignore[attr-defined]
    sys.modules["db_utils"] = stub
    spec = importlib.util.spec_from_file_location("lsb_test_utils",
                                                  tree / "evaluation/src/test_utils.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    del sys.modules["db_utils"]
    return mod


def load_minidev_sqlite(tree: Path) -> types.ModuleType:
    folder = tree / "live_sql_bench_sqlite/evaluation"
    sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location("minidev_test_utils", folder / "test_utils.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def texts(lsb: Path, minidev: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for rel in PRED_FILES:
        data = json.loads((minidev / rel).read_text(encoding="utf-8"))
        for idx, value in data.items():
            out.append({"id": f"{Path(rel).stem}:{idx}", "sql": value.split(SEP)[0]})
    samples = json.loads((lsb / "LiveSQLBench-Agent/examples/single_turn_samples.json")
                         .read_text(encoding="utf-8"))
    for r in samples["results"]:
        for i, step in enumerate(r["tool_trajectory"]):
            sql = step.get("args", {}).get("sql")
            if isinstance(sql, str):
                out.append({"id": f"single_turn_samples:{r['instance_id']}:{i}", "sql": sql})
    for i, sql in enumerate(HARD_TEXTS):
        out.append({"id": f"hard:{i}", "sql": sql})
    return out


def main() -> None:
    lsb, minidev, out_dir = (Path(a) for a in sys.argv[1:4])
    out_dir.mkdir(parents=True, exist_ok=True)
    ref = load_livesqlbench(lsb)
    sq = load_minidev_sqlite(minidev)

    items = texts(lsb, minidev)
    oracle_texts = []
    for item in items:
        s = [item["sql"]]
        chain = ref.remove_round(ref.remove_distinct(ref.remove_comments(s)))[0]
        row = {"id": item["id"], "remove_comments": ref.remove_comments(s)[0],
               "remove_distinct": ref.remove_distinct(s)[0], "remove_round": ref.remove_round(s)[0],
               "test_case_default": chain}
        assert sq.remove_round(sq.remove_distinct(sq.remove_comments(s)))[0] == chain, item["id"]
        oracle_texts.append(row)

    cases = value_cases()
    oracle_values = []
    for case in cases:
        g, p = [tuple(dec(c) for c in r["$tuple"]) for r in case["gold"]], \
            [tuple(dec(c) for c in r["$tuple"]) for r in case["pred"]]
        entry: dict[str, Any] = {"id": case["id"]}
        for side, rs in (("gold", g), ("pred", p)):
            try:
                entry[f"{side}_processed"] = [enc(r) for r in ref.preprocess_results(rs)]
            except Exception as exc:
                entry[f"{side}_processed"] = f"error: {type(exc).__name__}"
        answers = {"PRED": p, "GOLD": g}
        ref.execute_queries = lambda qs, *a, answers=answers: (answers[qs[0]], False, False)
        try:
            entry["ex_base"] = ref.ex_base(["PRED"], ["GOLD"], None, None, case["conditions"])
        except Exception as exc:
            entry["ex_base"] = 0
            entry["ex_base_error"] = type(exc).__name__
        oracle_values.append(entry)

    pairs = chinook_pairs()
    oracle_chinook = []
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "chinook.sqlite"
        shutil.copyfile(os.environ["CHINOOK"], db)
        for pair in pairs:
            conn = None
            entry = {"id": pair["id"]}
            try:
                _, conn = sq.perform_query_on_sqlite_databases("SELECT 1", str(db))
                entry["soft_ex"] = sq.test_case_default([pair["pred"]], [pair["gold"]], str(db),
                                                        conn, pair["conditions"])
            except AssertionError:
                entry["soft_ex"] = 0
            except Exception as exc:
                entry["soft_ex"] = 0
                entry["error"] = type(exc).__name__
            finally:
                if conn is not None:
                    conn.close()
            oracle_chinook.append(entry)

    def dump(name: str, data: Any) -> None:
        (out_dir / name).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n",
                                    encoding="utf-8")

    dump("texts.json", items)
    dump("oracle_texts.json", oracle_texts)
    dump("values.json", cases)
    dump("oracle_values.json", oracle_values)
    dump("chinook_pairs.json", pairs)
    dump("oracle_chinook.json", oracle_chinook)
    print(len(items), "texts,", len(cases), "value cases,", len(pairs), "chinook pairs",
          sum(e["soft_ex"] for e in oracle_chinook), "pairs scored 1")


if __name__ == "__main__":
    main()
