"""Cases written in Python (issue 44 item 5): the ``queryeval`` fixture scores a case with the
machinery of a YAML case, and the case lands in the same records, reports, gates and baseline;
``pytest_queryeval.check`` does the same outside pytest. A real SQLite file throughout."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support import read_report

GOLD = "SELECT name FROM customer WHERE country = 'FR' ORDER BY name"

TEST_PY = '''
import pytest

CASES = [
    {"id": "py-french", "question": "French customers?", "gold": GOLD,
     "predicted": "SELECT name FROM customer WHERE country = 'FR' ORDER BY name"},
    {"id": "py-wrong", "question": "French customers?", "gold": GOLD,
     "predicted": "SELECT name FROM customer ORDER BY name"},
]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_shop(queryeval, case):
    record = queryeval.check(kind="sql", datasource="shop", **case)
    assert record["metrics"]["execution_accuracy"] == 1.0
'''.replace("GOLD", repr(GOLD))


def _shop(root: Path) -> None:
    with sqlite3.connect(root / "shop.sqlite") as conn:
        conn.execute("CREATE TABLE customer (id INT, name TEXT, country TEXT)")
        conn.executemany("INSERT INTO customer VALUES (?, ?, ?)",
                         [(1, "Anne", "FR"), (2, "Bob", "US"), (3, "Chloé", "FR")])
    (root / "queryeval.yaml").write_text(
        "datasources:\n  shop: {type: sqlite, path: shop.sqlite}\n", encoding="utf-8")


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    _shop(pytester.path)
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    pytester.makepyfile(test_py_cases=TEST_PY)
    return pytester


def _cases(root: Path, name: str = "r.json") -> dict[str, dict[str, object]]:
    return {str(c["id"]): c for c in read_report(root / name)["cases"]}


def test_python_cases_alone_land_in_the_report(suite: pytest.Pytester) -> None:
    result = suite.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    cases = _cases(suite.path)
    assert set(cases) == {"py-french", "py-wrong"}
    assert cases["py-french"]["outcome"] == "passed"
    assert cases["py-wrong"]["outcome"] == "failed"
    assert cases["py-wrong"]["metrics"]["execution_accuracy"] == 0.0  # type: ignore[index]
    assert cases["py-wrong"]["nodeid"] == "test_py_cases.py::test_shop[py-wrong]"
    assert cases["py-wrong"]["file"] == "test_py_cases.py"
    # the same failure text as a YAML case: reason, predicted vs gold, the rows that differ
    out = result.stdout.str()
    assert "sql case 'py-wrong'" in out or "py-wrong" in out
    assert "extra rows (1 in predicted, not in gold" in out
    assert "queryeval: FAILED: 1 failed case (py-wrong)" in out


def test_python_and_yaml_cases_in_one_run_with_gates(suite: pytest.Pytester) -> None:
    (suite.path / "queryeval.yaml").write_text(
        "datasources:\n  shop: {type: sqlite, path: shop.sqlite}\n"
        "gates: {execution_accuracy: 0.9}\n", encoding="utf-8")
    suite.makefile(".yaml", test_yaml_cases=json.dumps({
        "kind": "sql", "datasource": "shop",
        "cases": [{"id": "yaml-count", "question": "How many?",
                   "gold": "SELECT count(*) FROM customer",
                   "predicted": "SELECT count(id) FROM customer"}]}))
    result = suite.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    report = read_report(suite.path / "r.json")
    assert {c["id"] for c in report["cases"]} == {"py-french", "py-wrong", "yaml-count"}
    assert report["aggregates"]["overall"]["metrics"]["execution_accuracy"]["mean"] == pytest.approx(2 / 3)
    assert report["gates"][0]["passed"] is False  # 0.667 < 0.9, over both kinds of case


def test_a_located_error_names_the_test_file_and_line(pytester: pytest.Pytester) -> None:
    _shop(pytester.path)
    pytester.makepyfile(test_bad='''
        def test_bad(queryeval):
            queryeval.check(kind="sql", id="bad", datasource="shop", question="q",
                            gold="SELECT 1", predicted="SELECT 1", treshold=0.5)
    ''')
    result = pytester.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    assert "test_bad.py:2: treshold: unknown key" in result.stdout.str()
    assert _cases(pytester.path)["bad"]["outcome"] == "error"


def test_one_case_per_test(pytester: pytest.Pytester) -> None:
    _shop(pytester.path)
    pytester.makepyfile(test_two='''
        def test_two(queryeval):
            queryeval.check(kind="sql", id="a", datasource="shop", question="q",
                            gold="SELECT 1", predicted="SELECT 1")
            queryeval.check(kind="sql", id="b", datasource="shop", question="q",
                            gold="SELECT 1", predicted="SELECT 1")
    ''')
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert "queryeval.check scores one case per test" in result.stdout.str()


def test_xdist_and_shards_merge_to_the_serial_report(suite: pytest.Pytester) -> None:
    suite.runpytest_subprocess("--queryeval-json=serial.json", "-p", "no:cacheprovider")
    suite.runpytest_subprocess("--queryeval-json=xdist.json", "-p", "no:cacheprovider",
                               "-n", "2")
    for i in (1, 2):
        suite.runpytest_subprocess(f"--queryeval-json=s{i}.json", "-p", "no:cacheprovider",
                                   f"--queryeval-shard={i}/2")
    merged = subprocess.run([sys.executable, "-m", "pytest_queryeval.conclude.cli", "merge",
                             "s1.json", "s2.json", "--queryeval-json=merged.json"],
                            cwd=suite.path, capture_output=True, text=True, check=False)
    assert merged.returncode in (0, 1), merged.stderr

    def outcomes(name: str) -> dict[str, object]:
        return {k: (v["outcome"], v["metrics"]) for k, v in _cases(suite.path, name).items()}

    def drop_seconds(o: dict[str, object]) -> dict[str, object]:
        return {k: (v[0], {m: x for m, x in v[1].items() if not m.endswith("_seconds")})  # type: ignore[index,union-attr]
                for k, v in o.items()}

    serial = drop_seconds(outcomes("serial.json"))
    assert set(serial) == {"py-french", "py-wrong"}
    assert drop_seconds(outcomes("xdist.json")) == serial
    assert drop_seconds(outcomes("merged.json")) == serial


def test_check_outside_pytest(tmp_path: Path) -> None:
    _shop(tmp_path)
    script = tmp_path / "score.py"
    script.write_text(textwrap.dedent(f'''
        import pytest_queryeval
        ok = pytest_queryeval.check(kind="sql", id="ok", datasource="shop", question="q",
                                    gold={GOLD!r}, predicted={GOLD!r})
        print("ok", ok["outcome"], ok["metrics"]["execution_accuracy"])
        try:
            pytest_queryeval.check(kind="sql", id="bad", datasource="shop", question="q",
                                   gold={GOLD!r}, predicted="SELECT name FROM customer")
        except pytest_queryeval.CaseFailed as exc:
            print("bad", exc.record["outcome"])
            print(exc)
    '''), encoding="utf-8")
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                         text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert "ok passed 1.0" in run.stdout
    assert "bad failed" in run.stdout
    assert "extra rows (1 in predicted, not in gold" in run.stdout


def test_resume_carries_a_scored_python_case(suite: pytest.Pytester) -> None:
    suite.runpytest("--queryeval-json=first.json", "-p", "no:cacheprovider")
    result = suite.runpytest("--queryeval-json=second.json", "-p", "no:cacheprovider",
                             "--queryeval-resume=first.json")
    result.assert_outcomes(passed=1, failed=1)
    first, second = _cases(suite.path, "first.json"), _cases(suite.path, "second.json")
    assert second["py-french"].get("carried") and second["py-wrong"].get("carried")
    assert second["py-wrong"]["metrics"] == first["py-wrong"]["metrics"]
