"""The gold audit (``--queryeval-audit-golds``) on real data: each finding type, located.

Every suite runs through pytest itself (pytester), on the Chinook SQLite file, the Brick
model of Soda Hall (in-process pyoxigraph) and the IMF CPI codelists; the findings are read
back from the JSON report, where each one carries its case's file and line.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from tests.support import read_report

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

BRICK = """PREFIX brick: <https://brickschema.org/schema/Brick#>
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _yaml(data: Any) -> str:
    return json.dumps(data, indent=1)  # YAML is a superset of JSON


def run(pytester: pytest.Pytester, *args: str, subprocess: bool = False,
        ) -> tuple[Any, dict[str, Any]]:
    argv = ["-p", "no:cacheprovider", "-p", "no:randomly", "--queryeval-json=audit.json",
            "--queryeval-markdown=audit.md", "--queryeval-html=audit.html", *args]
    result = (pytester.runpytest_subprocess(*argv) if subprocess
              else pytester.runpytest(*argv))
    path = pytester.path / "audit.json"
    return result, read_report(path) if path.exists() else {}


def codes(report: dict[str, Any]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for f in report["audit"]["findings"]:
        out.setdefault(f["id"], set()).add(f["code"])
    return out


def finding(report: dict[str, Any], case_id: str, code: str) -> dict[str, Any]:
    return next(f for f in report["audit"]["findings"] if f["id"] == case_id and f["code"] == code)


SQL_CASES = [
    {"id": "fine", "gold": "SELECT count(*) FROM Artist"},
    {"id": "missing-table", "gold": "SELECT count(*) FROM Nowhere"},
    {"id": "too-slow", "gold": "SELECT count(*) FROM Track a, Track b, Track c", "timeout": 0.5},
    {"id": "empty", "gold": "SELECT Name FROM Track WHERE UnitPrice > 5",
     "thresholds": {"cell_f1": 0.5}},
    {"id": "null-aggregate", "gold": "SELECT sum(Total) FROM Invoice WHERE InvoiceDate LIKE '2013%'"},
    {"id": "clock", "gold": "SELECT count(*) FROM Invoice WHERE InvoiceDate <= date('now')"},
    {"id": "clock-in-a-string-only", "gold": "SELECT count(*) FROM Track WHERE Name = 'now'"},
    {"id": "ties", "gold": "SELECT Name FROM Track ORDER BY UnitPrice DESC LIMIT 1"},
    {"id": "no-ties", "gold": "SELECT Name FROM Track ORDER BY Milliseconds DESC LIMIT 1"},
    {"id": "tied-rows-all-kept", "gold": "SELECT Name FROM Genre ORDER BY GenreId LIMIT 30"},
    {"id": "alternatives", "gold": [
        "SELECT FirstName, LastName FROM Customer WHERE City = 'Prague'",
        "SELECT LastName, FirstName FROM Customer WHERE City = 'Prague'",
        "SELECT FirstName, LastName FROM Customer WHERE City LIKE 'prague'"]},
    {"id": "drift", "gold": "SELECT count(*) FROM Artist",
     "gold_result": {"columns": ["n"], "rows": [[274]]},
     "predicted_result": {"columns": ["n"], "rows": [[274]]}},
    {"id": "recorded-current", "gold": "SELECT count(*) FROM Artist",
     "gold_result": {"columns": ["n"], "rows": [[275]]},
     "predicted_result": {"columns": ["n"], "rows": [[275]]}},
    {"id": "not-a-query-as-prediction", "gold": "PRAGMA table_info(Artist)"},
    {"id": "never-computed", "gold": "WITH x AS (SELECT 1 AS a) SELECT a FROM x",
     "thresholds": {"exact_set_match": 1.0}},
    {"id": "invalid", "gold": "SELECT 1", "no_such_key": 1},
    {"id": "no-gold-query", "gold_result": {"columns": ["n"], "rows": []},
     "predicted_result": {"columns": ["n"], "rows": []}},
]


@pytest.fixture
def sqlite_suite(pytester: pytest.Pytester, shared_data: Path) -> pytest.Pytester:
    db = shared_data / "chinook" / "Chinook_Sqlite.sqlite"
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    pytester.makefile(".yaml", queryeval=_yaml({
        "datasources": {"chinook": {"type": "sqlite", "path": str(db)},
                        "down": {"type": "sparql",
                                 "endpoint": f"http://127.0.0.1:{_free_port()}/query",
                                 "timeout": 5}},
        "thresholds": {"execution_accuracy": 1.0}}))
    pytester.makefile(".yaml", test_chinook=_yaml({"kind": "sql", "datasource": "chinook",
                                                   "cases": SQL_CASES}))
    pytester.makefile(".yaml", test_down=_yaml({"kind": "sparql", "datasource": "down", "cases": [
        {"id": "unreachable", "gold": BRICK + "SELECT ?a WHERE { ?a a brick:AHU }"}]}))
    return pytester


def test_sqlite_findings_are_located_and_typed(sqlite_suite: pytest.Pytester) -> None:
    result, report = run(sqlite_suite, "--queryeval-audit-golds")
    assert result.ret == 1
    found = codes(report)
    assert "fine" not in found and "recorded-current" not in found
    assert "clock-in-a-string-only" not in found and "no-ties" not in found
    assert "tied-rows-all-kept" not in found  # LIMIT 30 keeps all 25 genres: no cut
    assert found["missing-table"] == {"gold-error"}
    assert found["too-slow"] == {"gold-timeout"}
    assert found["empty"] == {"empty-result", "gold-below-threshold"}  # cell_f1 is 0 for it
    assert found["null-aggregate"] == {"empty-result"}
    assert found["clock"] == {"clock-dependent"}
    assert found["ties"] == {"ties-at-limit"}
    assert found["alternatives"] == {"redundant-alternative"}
    assert found["drift"] == {"gold-drift"}
    assert found["not-a-query-as-prediction"] == {"gold-error"}
    assert found["never-computed"] == {"gold-below-threshold"}
    assert found["invalid"] == {"invalid-case"}
    assert found["no-gold-query"] == {"empty-result"}  # only its recording can be checked
    assert found["unreachable"] == {"source-unavailable"}

    lines = {c["id"]: c["line"] for c in report["cases"]}
    for f in report["audit"]["findings"]:
        assert f["file"].endswith(".yaml") and f["line"] == lines[f["id"]]
    assert finding(report, "missing-table", "gold-error")["message"] == (
        "query failed: no such table: Nowhere -- SELECT count(*) FROM Nowhere")
    assert finding(report, "too-slow", "gold-timeout")["message"].startswith(
        "timeout: query exceeded 0.5 s")
    assert "cell_f1 = 0.0000" in finding(report, "empty", "gold-below-threshold")["message"]
    assert finding(report, "clock", "clock-dependent")["message"].startswith(
        "reads the clock (date('now'))")
    assert "as its own prediction: refused" in finding(
        report, "not-a-query-as-prediction", "gold-error")["message"]
    assert "exact_set_match is never computed" in finding(
        report, "never-computed", "gold-below-threshold")["message"]
    drift = finding(report, "drift", "gold-drift")["message"]
    assert "only recorded: (274); only live: (275)" in drift
    redundant = finding(report, "alternatives", "redundant-alternative")
    assert redundant["gold"] == 2 and "same result as gold[0]" in redundant["message"]
    tie = finding(report, "ties", "ties-at-limit")["message"]
    assert '("Women\'s Appreciation")' in tie  # the other tie-break's answer, shown
    # severities, counts, and the verdict of each item: errors fail, warnings pass
    assert report["audit"]["errors"] == 8 and report["audit"]["warnings"] == 6
    outcomes = {c["id"]: c["outcome"] for c in report["cases"]}
    assert outcomes["clock"] == outcomes["ties"] == outcomes["fine"] == "passed"
    assert outcomes["missing-table"] == outcomes["drift"] == "failed"
    assert report["gates"] == []
    # a gold that fails is its own outcome, never a 0 scored for it
    assert next(c for c in report["cases"] if c["id"] == "missing-table")["metrics"] == {}
    text = result.stdout.str()
    assert "gold audit: 18 cases, 8 errors, 6 warnings" in text
    assert "test_chinook.yaml:" in text and "ERROR   gold-timeout" in text


def test_warn_mode_reports_and_exits_0(sqlite_suite: pytest.Pytester) -> None:
    result, report = run(sqlite_suite, "--queryeval-audit-golds=warn")
    assert result.ret == 0
    assert report["audit"]["mode"] == "warn" and report["audit"]["errors"] == 8
    assert "reported, not failed" in result.stdout.str()


def test_reports_hold_the_findings_table(sqlite_suite: pytest.Pytester) -> None:
    pytest.importorskip("xlsxwriter")
    run(sqlite_suite, "--queryeval-audit-golds=warn", "--queryeval-xlsx=audit.xlsx")
    md = (sqlite_suite.path / "audit.md").read_text()
    assert "### Gold audit" in md and "| gold-drift |" in md.replace("\\", "")
    assert "test\\_chinook.yaml:" in md or "test_chinook.yaml:" in md
    html = (sqlite_suite.path / "audit.html").read_text()
    assert 'id="audit"' in html and "ties-at-limit" in html and "gold-timeout" in html
    openpyxl = pytest.importorskip("openpyxl")
    sheet = openpyxl.load_workbook(sqlite_suite.path / "audit.xlsx")["Gold audit"]
    rows = list(sheet.iter_rows(values_only=True))
    assert rows[0][:3] == ("severity", "code", "id") and len(rows) == 1 + 14
    assert rows[1][0] == "error" and rows[-1][0] == "warning"
    assert ("warning", "redundant-alternative", "alternatives", 2) in {r[:4] for r in rows}


def test_xdist_findings_equal_the_serial_run(sqlite_suite: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    _, serial = run(sqlite_suite, "--queryeval-audit-golds=warn")
    result, parallel = run(sqlite_suite, "--queryeval-audit-golds=warn", "-n", "2",
                           subprocess=True)
    assert result.ret == 0
    assert parallel["run"]["workers"] == 2
    strip = [{k: v for k, v in f.items() if k != "message" or "timeout" not in v}
             for f in serial["audit"]["findings"]]
    assert [{k: v for k, v in f.items() if k != "message" or "timeout" not in v}
            for f in parallel["audit"]["findings"]] == strip


def test_audit_cannot_update_the_baseline(sqlite_suite: pytest.Pytester) -> None:
    result = sqlite_suite.runpytest("-p", "no:cacheprovider", "--queryeval-audit-golds",
                                    "--queryeval-update-baseline")
    assert result.ret == 4
    assert "--queryeval-update-baseline cannot be used with --queryeval-audit-golds" in (
        result.stderr.str() + result.stdout.str())


def test_a_bare_audit_flag_before_the_paths_is_not_their_value(
        sqlite_suite: pytest.Pytester) -> None:
    """``pytest --queryeval-audit-golds my_suite`` audits my_suite (argparse alone took
    ``my_suite`` as the option's value and refused it)."""
    suite = sqlite_suite.path
    sub = suite / "my_suite"
    sub.mkdir()
    for path in list(suite.iterdir()):
        if path.suffix == ".yaml" and path.name != "queryeval.yaml":
            path.rename(sub / path.name)
    result = sqlite_suite.runpytest("-p", "no:cacheprovider", "--queryeval-audit-golds",
                                    "my_suite")
    assert result.ret != 4, result.stderr.str()
    assert "gold audit:" in result.stdout.str()
    assert "my_suite/" in result.stdout.str()


def test_an_audit_with_no_gold_says_so(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--queryeval-audit-golds")
    assert result.ret == 5
    assert "gold audit: no gold to audit (no case ran)" in result.stdout.str()


def test_xfail_does_not_hide_a_broken_gold(pytester: pytest.Pytester, shared_data: Path) -> None:
    db = shared_data / "chinook" / "Chinook_Sqlite.sqlite"
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    pytester.makefile(".yaml", queryeval=_yaml({"datasources": {"default": {
        "type": "sqlite", "path": str(db)}}}))
    (pytester.path / "test_x.yaml").write_text(_yaml({
        "kind": "sql", "datasource": "default",
        "cases": [{"id": "known", "gold": "SELECT nope FROM Artist",
                   "xfail": "the model gets this wrong"}]}))
    result, report = run(pytester, "--queryeval-audit-golds")
    assert result.ret == 1
    assert report["cases"][0]["outcome"] == "failed"
    assert codes(report) == {"known": {"gold-error"}}


def test_sparql_findings_on_the_brick_model(pytester: pytest.Pytester, shared_data: Path) -> None:
    ttl = shared_data / "brick" / "soda_brick.ttl"
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    pytester.makefile(".yaml", queryeval=_yaml({
        "datasources": {"soda": {"type": "rdf", "path": str(ttl)}},
        "thresholds": {"execution_accuracy": 1.0}}))
    feeds = "WHERE { ?ahu a brick:AHU ; brick:feeds ?x } GROUP BY ?ahu"
    pytester.makefile(".yaml", test_soda=_yaml({"kind": "sparql", "datasource": "soda", "cases": [
        {"id": "fine", "gold": BRICK + "SELECT ?ahu WHERE { ?ahu a brick:AHU }"},
        {"id": "ties", "gold": BRICK + f"SELECT ?ahu (COUNT(?x) AS ?n) {feeds} ORDER BY ?n LIMIT 1"},
        {"id": "no-ties", "gold": BRICK + f"SELECT ?ahu (COUNT(?x) AS ?n) {feeds} "
                                          "ORDER BY DESC(?n) LIMIT 1"},
        {"id": "clock", "gold": BRICK + "SELECT ?ahu ?t WHERE { ?ahu a brick:AHU BIND(NOW() AS ?t) }"},
        {"id": "now-in-an-iri", "gold": BRICK + "SELECT ?ahu WHERE { ?ahu a brick:AHU "
                                        "FILTER(?ahu != <http://example.org/NOW()>) } # NOW()"},
        # every typed node (1,695 rows): two runs agree in order with odds of 1 in 1,695!
        # (the model's 5 AHUs agreed 1 run in 120, and the case then passed)
        {"id": "random", "gold": "SELECT ?x WHERE { ?x a ?type } ORDER BY RAND()"},
        {"id": "empty", "gold": BRICK + "SELECT ?x WHERE { ?x a brick:Chiller }"},
        {"id": "alternatives", "gold": [
            BRICK + "SELECT ?ahu WHERE { ?ahu a brick:AHU }",
            BRICK + "SELECT DISTINCT ?ahu WHERE { ?ahu a brick:AHU . ?ahu ?p ?o }"]},
        {"id": "drift", "gold": BRICK + "SELECT (COUNT(?a) AS ?n) WHERE { ?a a brick:AHU }",
         "gold_result": {"head": {"vars": ["n"]}, "results": {"bindings": [{"n": {
             "type": "literal", "value": "4",
             "datatype": "http://www.w3.org/2001/XMLSchema#integer"}}]}},
         "predicted_result": {"head": {"vars": ["n"]}, "results": {"bindings": [{"n": {
             "type": "literal", "value": "4",
             "datatype": "http://www.w3.org/2001/XMLSchema#integer"}}]}}},
        {"id": "bad-function", "gold": "SELECT ?x WHERE { ?x ?p ?o FILTER(<http://x/f>(?o)) }"},
        {"id": "syntax", "gold": BRICK + "SELEC ?ahu WHERE { ?ahu a brick:AHU }"},
    ]}))
    result, report = run(pytester, "--queryeval-audit-golds")
    assert result.ret == 1
    found = codes(report)
    assert "fine" not in found and "no-ties" not in found and "now-in-an-iri" not in found
    assert found["ties"] == {"ties-at-limit"}
    assert "ahu_A2" in finding(report, "ties", "ties-at-limit")["message"]
    # NOW() differs between two executions, and so does ORDER BY RAND(): each gold fails
    # against itself, which the audit shows beside the lint that says why
    assert found["clock"] == {"clock-dependent", "gold-below-threshold"}
    assert found["random"] == {"nondeterministic", "gold-below-threshold"}
    assert found["empty"] == {"empty-result"}
    assert found["alternatives"] == {"redundant-alternative"}
    assert found["drift"] == {"gold-drift"}
    assert "only recorded: (4); only live: (5)" in finding(report, "drift", "gold-drift")["message"]
    assert found["bad-function"] == {"gold-error"}
    assert found["syntax"] == {"gold-error"}  # found when the case is read, reported as such
    assert "gold: cannot parse: " in finding(report, "syntax", "gold-error")["message"]


def test_sdmx_codes_checked_against_the_imf_codelists(pytester: pytest.Pytester,
                                                       shared_data: Path) -> None:
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    pytester.makefile(".yaml", queryeval=_yaml({"datasources": {"imf": {
        "type": "sdmx-structure", "paths": [str(shared_data / "sdmx" / "imf")]}},
        "thresholds": {"macro_f1": 1.0, "valid_term_rate": 1.0}}))

    def case(case_id: str, country: tuple[str, str]) -> dict[str, Any]:
        dims = [("INDEX_TYPE", "CPI", "Consumer price index (CPI)"),
                ("COICOP_1999", "CP01", "Food and non-alcoholic beverages"),
                ("COUNTRY", *country)]
        return {"id": case_id, "conversation": [{"role": "user", "content": "food prices?",
                "target": {"indicator_selection": [{"dataset_id": "IMF.STA:CPI", "dimensions": [
                    {"dimension_name": d, "values": [{"id": i, "name": n}]}
                    for d, i, n in dims]}]}}]}

    with_alternative = case("alternative", ("ECU", "Ecuador"))
    turn = with_alternative["conversation"][0]
    alt = json.loads(json.dumps(turn["target"]))
    alt["indicator_selection"][0]["dimensions"][2]["values"] = [{"id": "EQU", "name": "Ecuador"}]
    turn["alternative_targets"] = [turn["target"], alt]
    pytester.makefile(".yaml", test_cpi=_yaml({"kind": "sdmx", "datasource": "imf", "cases": [
        case("fine", ("ECU", "Ecuador")),
        case("made-up-code", ("XKX", "Kosovo")),
        case("other-name", ("KOR", "South Korea")),
        with_alternative,
    ]}))
    result, report = run(pytester, "--queryeval-audit-golds")
    assert result.ret == 1
    found = codes(report)
    assert "fine" not in found
    assert found["made-up-code"] == {"code-not-in-codelist"}  # not also valid_term_rate
    assert finding(report, "made-up-code", "code-not-in-codelist")["message"] == (
        "conversation[0] IMF.STA:CPI COUNTRY=XKX (Kosovo): code not in codelist")
    assert finding(report, "alternative", "code-not-in-codelist")["message"] == (
        "conversation[0].alternative_targets[1]: conversation[0] IMF.STA:CPI COUNTRY=EQU "
        "(Ecuador): code not in codelist")
    assert found["alternative"] == {"code-not-in-codelist", "redundant-alternative"}
    assert finding(report, "alternative", "redundant-alternative")["message"].startswith(
        "conversation[0].alternative_targets[0] selects the same terms as target")
    assert found["other-name"] == {"codelist-name-mismatch"}
    assert "'Korea, Republic of'" in finding(report, "other-name",
                                            "codelist-name-mismatch")["message"]


def test_json_gold_that_is_not_json(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    pytester.makefile(".yaml", test_json=_yaml({"kind": "json", "cases": [
        {"id": "broken", "gold": '{"type": "Point", "coordinates": [1, 2]'}]}))
    result, report = run(pytester, "--queryeval-audit-golds")
    assert result.ret == 1
    assert codes(report) == {"broken": {"invalid-json"}}
    assert "not valid JSON" in finding(report, "broken", "invalid-json")["message"]


def test_an_unknown_audit_mode_is_a_usage_error(sqlite_suite: pytest.Pytester) -> None:
    result = sqlite_suite.runpytest("-p", "no:cacheprovider", "--queryeval-audit-golds=loud")
    assert result.ret == 4
    assert "--queryeval-audit-golds=loud: must be error or warn" in result.stderr.str()


def test_sharded_audits_merge_into_the_whole_audit(sqlite_suite: pytest.Pytester) -> None:
    """``--queryeval-shard I/2`` audits merged by ``queryeval merge``: the findings table of
    the union equals the whole run's; a shard of another mode, or of a scored run, is refused;
    no baseline is compared."""
    import sys

    def merge(*args: str) -> Any:
        return sqlite_suite.run(sys.executable, "-m", "pytest_queryeval.conclude.cli", "merge", *args)

    _, whole = run(sqlite_suite, "--queryeval-audit-golds")
    for index in (1, 2):
        run(sqlite_suite, "--queryeval-audit-golds", f"--queryeval-shard={index}/2",
            f"--queryeval-json=shard-{index}.json")
    result = merge("shard-1.json", "shard-2.json", "-o", "merged.json",
                   "--queryeval-markdown=merged.md", "--queryeval-baseline=audit.json")
    merged = read_report(sqlite_suite.path / "merged.json")
    assert result.ret == 1  # error findings fail the audit, as the whole run does

    def strip(report: dict[str, Any]) -> list[dict[str, Any]]:  # a timeout's seconds vary
        return [{k: v for k, v in f.items() if k != "message" or "timeout" not in v}
                for f in report["audit"]["findings"]]

    assert strip(merged) == strip(whole)
    assert {k: v for k, v in merged["audit"].items() if k != "findings"} == \
        {k: v for k, v in whole["audit"].items() if k != "findings"}
    text = result.stdout.str()
    assert "gold audit: 18 cases, 8 errors, 6 warnings" in text
    assert "baseline: not compared in a gold audit" in text and "baseline" not in merged
    assert "### Gold audit" in (sqlite_suite.path / "merged.md").read_text()

    run(sqlite_suite, "--queryeval-audit-golds=warn", "--queryeval-shard=2/2",
        "--queryeval-json=warn-2.json")
    refused = merge("shard-1.json", "warn-2.json", "-o", "x.json")
    assert refused.ret == 4
    refused.stderr.fnmatch_lines(["queryeval merge: refused: *warn-2.json is a gold audit "
                                  "(warn), but *shard-1.json is a gold audit (error)"])
    refused = merge("shard-1.json", "shard-2.json", "--queryeval-baseline=b.json",
                    "--queryeval-update-baseline")
    assert refused.ret == 4 and not (sqlite_suite.path / "b.json").exists()


def test_python_cases_are_audited_and_no_model_is_asked(pytester: pytest.Pytester) -> None:
    """Issue 49 item 2: a case written in Python has its gold audited as a case file's has,
    and the audit asks the suite's predictor nothing (a predictor that would fail: a model
    down)."""
    import sqlite3

    with sqlite3.connect(pytester.path / "shop.sqlite") as conn:
        conn.execute("CREATE TABLE customer (id INT, name TEXT)")
        conn.executemany("INSERT INTO customer VALUES (?, ?)", [(1, "Anne"), (2, "Bob")])
    conn.close()
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    pytester.makefile(".yaml", queryeval=_yaml({
        "datasources": {"shop": {"type": "sqlite", "path": "shop.sqlite"}},
        "predictions": {"source": "python", "function": "model_down:predict"}}))
    pytester.makepyfile(model_down="""
from pathlib import Path

def predict(case):
    Path("asked.txt").open("a").write(case["id"] + "\\n")
    raise RuntimeError("the model is down")
""")
    pytester.makefile(".yaml", test_shop=_yaml({"kind": "sql", "datasource": "shop", "cases": [
        {"id": "yaml-fine", "gold": "SELECT name FROM customer ORDER BY name"}]}))
    pytester.makepyfile(test_py_shop="""
def test_unordered(queryeval):
    queryeval.check(kind="sql", id="py-unordered", datasource="shop",
                    gold="SELECT name FROM customer LIMIT 1")


def test_broken(queryeval):
    queryeval.check(kind="sql", id="py-broken", datasource="shop",
                    gold="SELECT nope FROM customer")
""")
    result, report = run(pytester, "--queryeval-audit-golds")
    assert not (pytester.path / "asked.txt").exists()
    assert codes(report) == {"py-unordered": {"limit-without-order"},
                             "py-broken": {"gold-error"}}
    assert report.outcomes == {"yaml-fine": "passed", "py-unordered": "passed",
                               "py-broken": "failed"}
    assert (report["audit"]["cases"], report["audit"]["errors"],
            report["audit"]["warnings"]) == (3, 1, 1)
    found = finding(report, "py-unordered", "limit-without-order")
    assert (found["file"], found["line"]) == ("test_py_shop.py", 2)  # the check call
    assert result.ret == 1
