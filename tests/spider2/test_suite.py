"""Spider 2.0 EX in YAML cases: gold result CSV files, condition_cols, ignore_order, the
reference's SQL extraction, and located errors for bad keys."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.support import run_report, write_suite

CONFIG = "datasources:\n  db: {type: sqlite, path: db.sqlite}\n"


@pytest.fixture
def spider2_suite(pytester: pytest.Pytester) -> pytest.Pytester:
    write_suite(pytester.path, CONFIG, {"gold/q_a.csv": "name,n\na,1\nb,2\nc,3\n",
                                        "gold/q_b.csv": "total\n6\n"})
    con = sqlite3.connect(pytester.path / "db.sqlite")
    con.executescript("CREATE TABLE t(name TEXT, n INTEGER, x REAL);"
                      "INSERT INTO t VALUES ('a', 1, 0.5), ('b', 2, NULL), ('c', 3, 1.25);")
    con.commit()
    con.close()
    return pytester


def _cases(spider2_suite: pytest.Pytester, cases: list[dict[str, Any]], *args: str) -> dict[str, Any]:
    spider2_suite.makefile(".yaml", test_s2=json.dumps({"kind": "sql", "datasource": "db",
                                                "cases": cases}, indent=1))
    return run_report(spider2_suite, *args)[1].by_id


def test_gold_files_condition_cols_and_ignore_order(spider2_suite: pytest.Pytester) -> None:
    files = ["gold/q_a.csv", "gold/q_b.csv"]
    got = _cases(spider2_suite, [
        # the second gold file matches (any file wins); names ignored
        {"id": "sum", "gold_result": files, "predicted": "SELECT sum(n) AS s FROM t"},
        # misaligned rows: the reference accepts them, the aligned variant does not
        {"id": "misaligned", "gold_result": files, "ignore_order": True,
         "predicted": "SELECT name, (SELECT max(n) FROM t) + 1 - n FROM t"},
        # per-gold condition_cols: only the names of the first file are checked
        {"id": "names", "gold_result": files, "condition_cols": [[0], [0]],
         "predicted": "SELECT name, x FROM t ORDER BY name DESC", "ignore_order": True},
        # NULL counts as 0, and 0.004 is within 1e-2
        {"id": "nulls", "gold": "SELECT coalesce(x, 0.004) FROM t",
         "predicted": "SELECT x FROM t", "ignore_order": False},
        # opt-in: a case without Spider 2.0 keys, CSV golds or thresholds has no spider2_ex
        {"id": "plain", "gold": "SELECT x FROM t", "predicted": "SELECT x FROM t"},
    ])
    assert "spider2_ex" not in got.pop("plain")["metrics"]
    m = {k: (v["metrics"]["spider2_ex"], v["metrics"]["spider2_ex_aligned"])
         for k, v in got.items()}
    assert m == {"sum": (1.0, 1.0), "misaligned": (1.0, 0.0), "names": (1.0, 1.0),
                 "nulls": (1.0, 1.0)}
    assert got["nulls"]["metrics"]["execution_accuracy"] == 0.0  # the Spider 1 EX differs


def test_the_reference_extracts_sql_from_prose(spider2_suite: pytest.Pytester) -> None:
    text = "The query:\n```sql\nSELECT sum(n) FROM t\n```\nIt sums n."
    got = _cases(spider2_suite, [{"id": "prose", "gold_result": ["gold/q_b.csv"], "predicted": text},
                         {"id": "upper", "gold_result": ["gold/q_b.csv"],
                          "predicted": "```SQL\nSELECT sum(n) FROM t\n```"}])
    # the plugin scores a bare answer only; Spider 2.0 EX takes the first ```sql block
    assert got["prose"]["metrics"]["execution_accuracy"] == 0.0
    assert got["prose"]["metrics"]["spider2_ex"] == 1.0
    assert got["prose"]["details"]["spider2_sql"] == "SELECT sum(n) FROM t"
    # an upper-case tag is not the reference's fence: it runs the text as is, and fails
    assert got["upper"]["metrics"]["execution_accuracy"] == 1.0
    assert got["upper"]["metrics"]["spider2_ex"] == 0.0


def test_empty_prediction_on_sqlite_is_compared(spider2_suite: pytest.Pytester) -> None:
    (spider2_suite.path / "gold" / "empty.csv").write_text("name\n")
    got = _cases(spider2_suite, [{"id": "e", "gold_result": "gold/empty.csv",
                          "predicted": "SELECT name FROM t WHERE n > 5"}])
    assert got["e"]["metrics"]["spider2_ex"] == 1.0  # the reference's SQLite path has no check


def test_bad_keys_are_located(spider2_suite: pytest.Pytester) -> None:
    spider2_suite.makefile(".yaml", test_bad=(
        "kind: sql\n"
        "datasource: db\n"
        "cases:\n"
        "- id: cc\n"
        "  gold: SELECT 1\n"
        "  predicted: SELECT 1\n"
        "  condition_cols: [0, [1]]\n"
        "- id: io\n"
        "  gold: SELECT 1\n"
        "  predicted: SELECT 1\n"
        "  ignore_order: 'yes'\n"
        "- id: missing\n"
        "  gold_result: [gold/q_a.csv, gold/nope.csv]\n"
        "  predicted: SELECT 1\n"
        "- id: good\n"
        "  gold: SELECT 1\n"
        "  predicted: SELECT 1\n"
        "  condition_cols: [0]\n"
        "  ignore_order: true\n"))
    result = spider2_suite.runpytest()
    result.assert_outcomes(passed=1, failed=3)
    out = result.stdout.str()
    for line in (
        "test_bad.yaml:7: cases[0].condition_cols: must be a list of 0-based column positions,"
        " or one such list per gold file (not a mix of both)",
        "test_bad.yaml:11: cases[1].ignore_order: must be true or false",
        "test_bad.yaml:13: cases[2].gold_result[1]: 'gold/nope.csv': no such file",
    ):
        assert line in out


def test_predicted_result_csv_files_score_as_the_reference_scores_submissions(
        pytester: pytest.Pytester, shared_data: Path) -> None:
    """``predicted_result: file.csv``: Spider 2.0's executed-CSV submissions (the
    repository's example submission folder), scored against the gold files as the reference's
    CSV mode scores them (the oracle's ``#submission`` items, from the unmodified
    ``compare_multi_pandas_table``)."""
    import shutil

    root = shared_data / "spider2"
    oracle = json.loads((root / "oracle.json").read_text(encoding="utf-8"))
    items = [i for i in oracle["items"] if "pred_csv" in i]
    assert len(items) == 3
    write_suite(pytester.path)
    for sub in ("exec_result", "pred_csv"):
        shutil.copytree(root / sub, pytester.path / sub)
    cases = [{"id": i["instance_id"], "predicted_result": i["pred_csv"],
              "gold_result": [f"exec_result/{f}" for f in i["gold_files"]],
              "condition_cols": i["condition_cols"], "ignore_order": i["ignore_order"]}
             for i in items]
    cases.append({"id": "not-csv", "predicted_result": "pred_csv/bq011.txt",
                  "gold_result": "exec_result/bq011_a.csv"})
    cases.append({"id": "missing", "predicted_result": "pred_csv/nowhere.csv",
                  "gold_result": "exec_result/bq011_a.csv"})
    cases.append({"id": "two", "predicted_result": ["pred_csv/bq011.csv", "pred_csv/bq003.csv"],
                  "gold_result": "exec_result/bq011_a.csv"})
    pytester.makefile(".yaml", test_sub=json.dumps({"kind": "sql", "cases": cases}, indent=1))
    got = run_report(pytester)[1].by_id
    for item in items:
        case = got[item["instance_id"]]
        assert case["metrics"]["spider2_ex"] == item["oracle"]["spider2_ex"], case
    assert got["bq011"]["outcome"] == "passed"
    assert "'pred_csv/bq011.txt': a predicted result file must be a .csv file" in \
        got["not-csv"]["error"]
    assert "'pred_csv/nowhere.csv': no such file (relative to test_sub.yaml)" in \
        got["missing"]["error"]
    assert "one predicted result file (a list of files is for gold_result)" in got["two"]["error"]
    assert all(got[k]["outcome"] == "error" and "test_sub.yaml:" in got[k]["error"]
               for k in ("not-csv", "missing", "two"))
