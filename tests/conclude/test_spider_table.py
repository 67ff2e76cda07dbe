"""Spider's dev pairs through the plugin print the official evaluator's table, line for line."""

from __future__ import annotations

import subprocess
import sys

from tests.support import write_suite


def test_the_1034_dev_pairs_print_the_official_table(tmp_path, shared_data):
    spider = shared_data / "spider"
    suite = tmp_path / "suite"
    rc = subprocess.run([sys.executable, "-m", "pytest_queryeval.importers.cli", "spider",
                         "--gold", str(spider / "gold_example.txt"), "--pred", str(spider / "pred_example.txt"),
                         "--tables", str(spider / "tables.json"), "--out", str(suite)],
                        capture_output=True, text=True, check=False)
    assert rc.returncode == 0, rc.stderr
    proc = subprocess.run([sys.executable, "-m", "pytest", str(suite), "-q", "-p", "no:randomly",
                           "-p", "no:cacheprovider", "--queryeval-spider-table", "--rootdir", str(suite)],
                          capture_output=True, text=True, cwd=tmp_path, check=False, timeout=900)
    oracle = (spider / "oracle" / "spider_head_match__gold_example.txt").read_text().splitlines()
    start = next(i for i, line in enumerate(oracle) if line.split() == ["easy", "medium", "hard", "extra", "all"])
    expected = [line.rstrip() for line in oracle[start:] if line.strip()]
    out = [line.rstrip() for line in proc.stdout.splitlines()]
    first = out.index(expected[0])
    got = [line for line in out[first:first + 2 * len(expected)] if line.strip()][: len(expected)]
    assert got == expected


def test_a_failing_case_lists_the_spider_components_only_on_request(pytester):
    """Issue 19: the 30 component scores flooded every failing SQL case's metric table."""
    import json
    import sqlite3

    with sqlite3.connect(pytester.path / "db.sqlite") as con:
        con.execute("CREATE TABLE t (x INTEGER)")
        con.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (3,)])
    con.close()
    write_suite(pytester.path, {"datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
                                "thresholds": {"execution_accuracy": 1.0}})
    pytester.makefile(".yaml", test_q=json.dumps({
        "kind": "sql", "datasource": "db", "cases": [
            {"id": "q", "question": "q", "gold": "SELECT x FROM t",
             "predicted": "SELECT x FROM t WHERE x > 1"}]}))
    # the gated metric leads; the others (exact_set_match) are listed with -v (issue 24)
    assert "exact_set_match" not in pytester.runpytest().stdout.str()
    result = pytester.runpytest("-v")
    out = result.stdout.str()
    assert "execution_accuracy" in out and "exact_set_match" in out
    assert "where_f1" not in out and "select_acc" not in out
    result.stdout.fnmatch_lines(["structure: where: gold - | pred t.x > value",  # diff first
                                 "(30 Spider component metrics: --queryeval-spider-table shows them)"])
    full = pytester.runpytest("-v", "--queryeval-spider-table").stdout.str()
    assert "where_f1" in full and "select_acc" in full and "Spider component metrics" not in full
