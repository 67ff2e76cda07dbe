from __future__ import annotations

from tests.sdmx_cases import GDP, GDP_PLUS, MEX, dump, sdmx_case, selection
from tests.support import read_report


def test_cases_file_and_single_case_file_are_collected_with_ids_and_lines(suite):
    suite.makefile(".yaml", test_many=dump({
        "kind": "sdmx",
        "tags": ["weo"],
        "cases": [sdmx_case("gdp", selection(GDP), selection(GDP)),
                  sdmx_case("mex", selection(MEX), selection(MEX))],
    }))
    # the seed's one-case file, as written, with an inline prediction beside the target
    suite.makefile(".yaml", test_single=dump(sdmx_case("c48d7624", selection(MEX), selection(MEX),
                                                       name="mexico", tags=["imf"], comments="")))
    result = suite.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(["test_many.yaml::gdp", "test_many.yaml::mex",
                                 "test_single.yaml::c48d7624"])
    result = suite.runpytest("-v")
    result.assert_outcomes(passed=3)
    # location points at the case's line in the YAML file (JSON text: one key per line)
    text = (suite.path / "test_many.yaml").read_text().splitlines()
    mex_line = next(i for i, line in enumerate(text, 1) if '"id": "mex"' in line) - 1
    items = suite.getitems(suite.path / "test_many.yaml")
    by_name = {i.name: i for i in items}
    assert by_name["mex"].location[1] == mex_line - 1  # 0-based line of the case mapping


def test_markers_from_kind_difficulty_and_tags_work_with_strict_markers(suite):
    suite.makefile(".yaml", test_m=dump({
        "kind": "sdmx",
        "cases": [sdmx_case("a", selection(GDP), selection(GDP), tags=["imf", "weo"], difficulty="hard"),
                  sdmx_case("b", selection(MEX), selection(MEX), tags=["cpi"], difficulty="easy")],
    }))
    result = suite.runpytest("--strict-markers", "-m", "imf and hard", "-v")
    result.assert_outcomes(passed=1, deselected=1)
    result.stdout.fnmatch_lines(["*test_m.yaml::a PASSED*"])
    result = suite.runpytest("--strict-markers", "-m", "sdmx and not cpi")
    result.assert_outcomes(passed=1, deselected=1)
    result = suite.runpytest("--strict-markers", "-k", "b")
    result.assert_outcomes(passed=1, deselected=1)


def test_xfail_and_skip_reasons(suite):
    suite.makefile(".yaml", test_x=dump({
        "kind": "sdmx",
        "thresholds": {"macro_precision": 1.0},
        "cases": [
            sdmx_case("known-gap", selection(GDP), selection(GDP_PLUS), xfail="extra GDP term"),
            sdmx_case("later", selection(GDP), selection(GDP), skip="dataset not loaded yet"),
            sdmx_case("ok", selection(GDP), selection(GDP)),
        ],
    }))
    result = suite.runpytest("-rxs", "--queryeval-json=r.json")
    result.assert_outcomes(passed=1, xfailed=1, skipped=1)
    result.stdout.fnmatch_lines(["*XFAIL*known-gap*extra GDP term*", "*SKIPPED*dataset not loaded yet*"])
    report = read_report(suite.path / "r.json")
    assert {c["id"]: c["outcome"] for c in report["cases"]} == {
        "known-gap": "xfailed", "later": "skipped", "ok": "passed"}
    # the xfailed case's real scores still count in the metric means
    precision = report["aggregates"]["overall"]["metrics"]["macro_precision"]
    assert precision["n"] == 2
    assert abs(precision["mean"] - (1.0 + 2 / 3) / 2) < 1e-12


def test_nearest_config_applies_and_child_overrides_parent(suite):
    suite.makefile(".yaml", queryeval=dump({"thresholds": {"macro_precision": 1.0}}))
    sub = suite.mkdir("sub")
    (sub / "queryeval.yaml").write_text(dump({"thresholds": {"macro_precision": 0.5}}))
    case = dump({"kind": "sdmx", "cases": [sdmx_case("p", selection(GDP), selection(GDP_PLUS))]})
    (suite.path / "test_top.yaml").write_text(case.replace('"p"', '"top"'))
    (sub / "test_sub.yaml").write_text(case.replace('"p"', '"sub"'))
    result = suite.runpytest("-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_top.yaml::top FAILED*"])
    result.stdout.fnmatch_lines(["*sub/test_sub.yaml::sub PASSED*"])


def _shop(suite):
    import sqlite3

    conn = sqlite3.connect(suite.path / "shop.sqlite")
    conn.execute("CREATE TABLE sales (id INTEGER PRIMARY KEY, store_id INTEGER)")
    conn.executemany("INSERT INTO sales (store_id) VALUES (?)", [(1,), (2,), (2,)])
    conn.commit()
    conn.close()
    suite.makefile(".yaml", queryeval=dump({
        "datasources": {"shop": {"type": "sqlite", "path": "shop.sqlite"}}}))


def test_gold_and_question_at_file_level(suite):
    """Issue 19: many predictions for one question state the gold once, like datasource."""
    _shop(suite)
    suite.makefile(".yaml", test_variants="""\
kind: sql
datasource: shop
question: How many stores sold something?
gold: SELECT count(DISTINCT store_id) FROM sales
thresholds: {execution_accuracy: 1.0}
cases:
  - id: group-by
    predicted: SELECT count(*) FROM (SELECT store_id FROM sales GROUP BY store_id)
  - id: no-distinct
    predicted: SELECT count(store_id) FROM sales
  - id: own-gold
    question: How many sales?
    gold: SELECT count(*) FROM sales
    predicted: SELECT count(id) FROM sales
""")
    result = suite.runpytest("--queryeval-json=r.json")
    result.assert_outcomes(passed=2, failed=1)
    cases = {c["id"]: c for c in read_report(suite.path / "r.json")["cases"]}
    assert {k: c["outcome"] for k, c in cases.items()} == {
        "group-by": "passed", "no-distinct": "failed", "own-gold": "passed"}
    assert cases["group-by"]["gold"] == "SELECT count(DISTINCT store_id) FROM sales"
    assert cases["group-by"]["question"] == "How many stores sold something?"
    assert cases["own-gold"]["gold"] == "SELECT count(*) FROM sales"
    assert cases["own-gold"]["question"] == "How many sales?"


def test_a_bad_file_level_gold_is_located_at_the_file_header(suite):
    _shop(suite)
    suite.makefile(".yaml", test_bad_gold="""\
kind: sql
datasource: shop
gold: 42
cases:
  - id: a
    predicted: SELECT 1
""")
    result = suite.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*error: test_bad_gold.yaml:3: gold: must be an SQL string*"])
