"""The plugin's own reports go back in (issue 43 items 1-2): shards of a suite with compared
failures (``near_miss`` lists) merge and resume, the merged near-miss counts are the single
run's, and a shard that selects no case writes a report that the merge counts."""

from __future__ import annotations

import sqlite3
import sys

import pytest

from pytest_queryeval.suite.shard import shard_of
from tests.support import read_report, run_report, write_suite

#: Three cases: a pass, a failure no relaxation explains (``near_miss: []``) and one DISTINCT
#: explains (``["distinct"]``), on a real SQLite file.
CASES = [
    {"id": "ann-total", "gold": "SELECT sum(total) FROM orders WHERE customer = 'ann'",
     "predicted": "SELECT SUM(total) FROM orders WHERE customer = 'ann'"},
    {"id": "big-orders", "gold": "SELECT id FROM orders WHERE total >= 12",
     "predicted": "SELECT id FROM orders WHERE total > 12"},
    {"id": "customers", "gold": "SELECT DISTINCT customer FROM orders",
     "predicted": "SELECT customer FROM orders"},
]


@pytest.fixture
def shop(pytester: pytest.Pytester) -> pytest.Pytester:
    write_suite(pytester.path, {"datasources": {"shop": {"type": "sqlite", "path": "shop.db"}},
                                "thresholds": {"execution_accuracy": 1.0}},
                {"test_orders.yaml": {"kind": "sql", "datasource": "shop", "cases": CASES}})
    with sqlite3.connect(pytester.path / "shop.db") as db:
        db.executescript("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, total REAL);"
                         "INSERT INTO orders VALUES (1, 'ann', 30), (2, 'bob', 12), (3, 'ann', 7);")
    db.close()
    return pytester


def merge(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.run(sys.executable, "-m", "pytest_queryeval.conclude.cli", "merge", *args)


def test_shards_with_near_miss_lists_merge_and_resume_as_one_run(shop):
    _, whole = run_report(shop, name="whole.json")
    assert {c["id"]: c["near_miss"] for c in whole["cases"]} == {
        "ann-total": None, "big-orders": [], "customers": ["distinct"]}
    for index in (1, 2):
        run_report(shop, f"--queryeval-shard={index}/2", name=f"s{index}.json")
    result = merge(shop, "s1.json", "s2.json", "-o", "merged.json")
    assert result.ret == 1, result.stderr.str()  # two failing cases: failed, not refused (4)
    merged = read_report(shop.path / "merged.json")
    assert merged["near_miss"] == whole["near_miss"]
    assert merged["near_miss"]["overall"] == {"distinct": 1}
    assert {c["id"]: c["near_miss"] for c in merged["cases"]} == \
        {c["id"]: c["near_miss"] for c in whole["cases"]}
    # a retry of either shard, and of the whole run, resumes from the plugin's own report
    for name in ("s1.json", "s2.json", "whole.json", "merged.json"):
        retry = shop.runpytest(f"--queryeval-resume={name}")
        assert retry.ret == 1, retry.stderr.str()
        retry.stdout.fnmatch_lines(["carried: * scored by an earlier attempt*"])


def test_a_shard_that_selects_no_case_writes_its_report_and_passes(shop):
    ids = [c["id"] for c in CASES]
    total = 5  # more shards than cases: one of them is empty
    empty = next(i for i in range(1, total + 1) if all(shard_of(c, total) != i for c in ids))
    result, report = run_report(shop, f"--queryeval-shard={empty}/{total}",
                                "--queryeval-markdown=e.md", name=f"s{empty}.json")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([f"queryeval: shard {empty}/{total} selected none of the "
                                 "suite's 3 cases: its reports hold no case*"])
    assert report["cases"] == [] and report["run"]["shard"] == f"{empty}/{total}"
    assert report["run"]["suite"]["cases"] == 3 and report["run"]["suite_ids"] == sorted(ids)
    assert (shop.path / "e.md").is_file()
    for index in range(1, total + 1):
        if index != empty:
            run_report(shop, f"--queryeval-shard={index}/{total}", name=f"s{index}.json")
    done = merge(shop, *(f"s{i}.json" for i in range(1, total + 1)), "-o", "merged.json")
    assert done.ret == 1, done.stderr.str()  # the two failing cases, not a missing shard
    assert "missing shard" not in done.stdout.str()
    merged = read_report(shop.path / "merged.json")
    assert sorted(merged.outcomes) == sorted(ids)
    assert merged["run"]["predictions"] is None and len(merged["run"]["merged_from"]) == total
    # under xdist, too
    again = shop.runpytest("-n", "2", f"--queryeval-shard={empty}/{total}",
                           "--queryeval-json=x.json")
    assert again.ret == pytest.ExitCode.OK
    assert read_report(shop.path / "x.json")["run"]["suite"]["cases"] == 3


def test_no_case_selected_without_the_shard_option_stays_exit_5(shop):
    result = shop.runpytest("-k", "nothing-matches", "--queryeval-json=none.json")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert not (shop.path / "none.json").exists()


def test_resume_refuses_an_edited_record_naming_the_report_and_the_case(shop):
    run_report(shop, name="first.json")
    text = (shop.path / "first.json").read_text(encoding="utf-8")
    line = next(ln for ln in text.splitlines() if '"id": "big-orders"' in ln)
    edited = line.replace('"outcome": "failed"', '"outcome": "passed"', 1)
    assert edited != line
    (shop.path / "edited.json").write_text(text.replace(line, edited), encoding="utf-8")
    result = shop.runpytest("--queryeval-resume=edited.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--queryeval-resume: edited.json: cases[[]1[]] (case "
                                 "'big-orders'): its 'digest' is not the digest of its content "
                                 "(edited after the run)*"])
    # a record without a digest (an older report, or one stripped by hand) is refused too
    bare = text.replace(line, line.split(', "digest": ')[0] + "}" + ("," if
                        line.endswith(",") else ""))
    (shop.path / "bare.json").write_text(bare, encoding="utf-8")
    result = shop.runpytest("--queryeval-resume=bare.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*bare.json: cases[[]1[]] (case 'big-orders'): no 'digest'*"])


def test_the_records_of_errors_and_crashes_are_ones_the_shard_check_knows():
    """The writers no run of the end-to-end layer reaches (a case file that cannot be read, a
    worker that crashed), written and read back as a report is."""
    import json

    from pytest_queryeval.plugin.resume import edited
    from pytest_queryeval.report.json_report import dumps
    from pytest_queryeval.report.records import CASE_META, crash_record, error_record
    from pytest_queryeval.report.shardcheck import CASE, CASE_UNCHECKED, check_report

    meta = ["c", "test_x.yaml", "/abs/test_x.yaml", 3, "sql", "easy", ["t"], None, "shop"]
    assert len(meta) == len(CASE_META)
    records = [error_record("test_bad.yaml", "cannot read: not YAML", outcome="error",
                            near_miss=None),
               crash_record("test_x.yaml::c", "worker crashed", meta),
               crash_record("test_x.yaml::d", "worker crashed", None)]
    report = json.loads(dumps({"version": 1, "run": {}, "cases": records}))
    assert check_report(report) == []
    assert edited(report["cases"]) == []
    unknown = {k for c in report["cases"] for k in c} - set(CASE) - CASE_UNCHECKED
    assert not unknown
