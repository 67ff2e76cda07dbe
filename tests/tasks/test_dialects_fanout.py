"""A gold per engine and ``datasource:`` a list (issue 28 item 6) through pytest itself: one item
per source (``id[source]``), a marker per dialect, the reports broken down by dialect, a gold
transpiled from SQLite recorded as the text actually run, on a real SQLite Chinook file and a
real DuckDB file holding the same tables."""

from __future__ import annotations

import json
import shutil
import sqlite3
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from tests.support import read_report, write_suite

ROOT = Path(__file__).resolve().parents[2]
CHINOOK = ROOT / "example_suite" / "data" / "chinook.sqlite"


def duckdb_copy(path: Path, tables: tuple[str, ...] = ("Genre", "Track")) -> None:
    """The named Chinook tables in a DuckDB file, as the SQLite file holds them."""
    duckdb = pytest.importorskip("duckdb")
    src = sqlite3.connect(CHINOOK)
    dst = duckdb.connect(str(path))
    for table in tables:
        cols = src.execute(f"SELECT name, type FROM pragma_table_info('{table}')").fetchall()
        types = {"INTEGER": "INTEGER", "NVARCHAR": "VARCHAR", "NUMERIC": "DECIMAL(10,2)"}
        dst.execute(f"CREATE TABLE {table} (" + ", ".join(
            f"{n} {types.get(t.split('(')[0], 'VARCHAR')}" for n, t in cols) + ")")
        rows = src.execute(f"SELECT * FROM {table}").fetchall()
        dst.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(cols))})", rows)
    dst.close()
    src.close()


CASES: dict[str, Any] = {"kind": "sql", "thresholds": {"execution_accuracy": 1.0}, "cases": [
    {"id": "rock", "datasource": ["chinook", "duck"],
     "gold": {"sqlite": "SELECT count(*) FROM Track WHERE GenreId = 1"},
     "transpile": {"from": "sqlite"}},
    {"id": "names", "datasource": ["chinook", "duck"],
     "gold": {"sqlite": "SELECT Name FROM Genre WHERE GenreId < 4",
              "duckdb": "SELECT Name FROM Genre WHERE GenreId IN (1, 2, 3)"},
     "predicted": "SELECT Name FROM Genre WHERE GenreId <= 3"},
    {"id": "raise", "datasource": ["chinook", "duck"], "task": "dml",
     "gold": "UPDATE Track SET UnitPrice = UnitPrice + 0.1 WHERE GenreId = 1",
     "predicted": "UPDATE Track SET UnitPrice = UnitPrice + 0.1 WHERE GenreId = 1",
     "checks": [{"query": "SELECT TrackId, UnitPrice FROM Track ORDER BY TrackId",
                 "compare": "gold"}]},
    {"id": "missing", "datasource": ["chinook", "duck"],
     "gold": {"sqlite": "SELECT 1"}, "predicted": "SELECT 1"},
    {"id": "bad-list", "datasource": ["chinook", "chinook"], "gold": "SELECT 1",
     "predicted": "SELECT 1"},
]}


@pytest.fixture
def fanout_suite(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copyfile(CHINOOK, pytester.path / "chinook.sqlite")
    duckdb_copy(pytester.path / "chinook.duckdb")
    write_suite(pytester.path, {
        "datasources": {
            "chinook": {"type": "sqlite", "path": "chinook.sqlite", "writable": "sandbox"},
            "duck": {"type": "duckdb", "path": "chinook.duckdb", "writable": "sandbox"}},
        "predictions": {"source": "file", "path": "predictions.jsonl"}}, {
        "test_fan.yaml": json.dumps(CASES, indent=1),
        # keyed by the id as written: the same prediction for every source
        "predictions.jsonl": json.dumps(
            {"id": "rock", "predicted": "SELECT COUNT(*) FROM Track WHERE GenreId = 1"}) + "\n"})
    return pytester


def report(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = read_report(path)
    return data


def test_one_item_per_source_with_dialect_golds(fanout_suite: pytest.Pytester) -> None:
    result = fanout_suite.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider", "-v")
    data = report(fanout_suite.path / "r.json")
    cases = {c["id"]: c for c in data["cases"]}
    assert sorted(cases) == ["bad-list", "missing[chinook]", "missing[duck]", "names[chinook]",
                             "names[duck]", "raise[chinook]", "raise[duck]", "rock[chinook]",
                             "rock[duck]"]
    result.stdout.fnmatch_lines(["*test_fan.yaml::rock?duck? PASSED*"])
    for source, dialect in (("chinook", "sqlite"), ("duck", "duckdb")):
        assert cases[f"rock[{source}]"]["outcome"] == "passed"
        assert cases[f"rock[{source}]"]["dialect"] == dialect
        assert cases[f"names[{source}]"]["outcome"] == "passed"
        assert cases[f"raise[{source}]"]["outcome"] == "passed"
    assert cases["rock[duck]"]["details"]["gold_dialect"] == {
        "dialect": "duckdb", "transpiled_from": "sqlite",
        "gold_run": "SELECT COUNT(*) FROM Track WHERE GenreId = 1"}
    assert cases["rock[chinook]"]["details"]["gold_dialect"] == {"dialect": "sqlite"}
    # the hardness of the entry each source runs (a gold mapping has none of its own)
    assert cases["rock[duck]"]["difficulty"] == cases["rock[chinook]"]["difficulty"] == "easy"
    assert cases["raise[duck]"]["difficulty"] == "unknown"  # statements that write: unrated
    assert cases["missing[chinook]"]["outcome"] == "passed"
    assert cases["missing[duck]"]["outcome"] == "error"
    assert "gold: no entry for duckdb, the dialect of datasource 'duck' (the case has " \
        "sqlite; add one, or transpile: {from: <one of them>})" in cases["missing[duck]"]["error"]
    assert "cases[4].datasource: a list of datasource names, each once" in \
        cases["bad-list"]["error"]
    by_dialect = data["aggregates"]["by_dialect"]
    assert {d: (s["count"], s["passed"]) for d, s in by_dialect.items()} == {
        "duckdb": (4, 3), "sqlite": (4, 4)}
    result.stdout.fnmatch_lines(["*dialect*cases*pass*", "*duckdb*4*75.0%*"])


def test_a_marker_per_dialect(fanout_suite: pytest.Pytester) -> None:
    fanout_suite.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider", "-m", "duckdb",
                    "--strict-markers")
    ids = sorted(c["id"] for c in report(fanout_suite.path / "r.json")["cases"])
    assert ids == ["missing[duck]", "names[duck]", "raise[duck]", "rock[duck]"]


def test_a_construct_sqlglot_cannot_carry_is_an_error(fanout_suite: pytest.Pytester) -> None:
    fanout_suite.makefile(".yaml", test_fan=json.dumps({"kind": "sql", "cases": [
        {"id": "rock", "datasource": ["duck"], "transpile": {"from": "sqlite"},
         "gold": {"sqlite": "SELECT count(*) FROM Track WHERE GenreId = "}}]}))
    fanout_suite.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider")
    case = report(fanout_suite.path / "r.json")["cases"][0]
    assert case["outcome"] == "error"
    assert "cannot transpile from sqlite to duckdb" in case["error"]


def test_the_audit_compares_a_transpiled_gold_with_its_original(fanout_suite: pytest.Pytester) -> None:
    """SQLite's LIKE ignores case and DuckDB's does not: the transpiled gold runs, and only
    the comparison with the SQLite gold's result shows it means something else."""
    fanout_suite.makefile(".yaml", test_fan=json.dumps({"kind": "sql", "cases": [
        {"id": "rock", "datasource": ["chinook", "duck"], "transpile": {"from": "sqlite"},
         "gold": {"sqlite": "SELECT count(*) FROM Track WHERE GenreId = 1"}},
        {"id": "like", "datasource": ["chinook", "duck"], "transpile": {"from": "sqlite"},
         "gold": {"sqlite": "SELECT count(*) FROM Genre WHERE Name LIKE 'rock%'"}},
        {"id": "alone", "datasource": ["duck"], "transpile": {"from": "sqlite"},
         "gold": {"sqlite": "SELECT count(*) FROM Genre"}}]}))
    result = fanout_suite.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider",
                             "--queryeval-audit-golds")
    findings = report(fanout_suite.path / "r.json")["audit"]["findings"]
    found = {(f["id"], f["code"]) for f in findings}
    assert found == {("like[duck]", "transpile-mismatch"), ("alone[duck]", "transpile-unchecked")}
    like = next(f for f in findings if f["code"] == "transpile-mismatch")
    assert like["message"] == ("1 rows [(0,)] on duck, 1 rows [(2,)] from the sqlite gold on "
                               "chinook; the text run was: SELECT COUNT(*) FROM Genre WHERE Name "
                               "LIKE 'rock%'")
    assert result.ret == 1


def test_a_prediction_keyed_by_dialect(fanout_suite: pytest.Pytester) -> None:
    fanout_suite.makefile(".yaml", test_fan=json.dumps({
        "kind": "sql", "thresholds": {"execution_accuracy": 1.0}, "cases": [
        {"id": "names", "datasource": ["chinook", "duck"],
         "gold": "SELECT Name FROM Genre WHERE GenreId < 4",
         "predicted": {"sqlite": "SELECT Name FROM Genre WHERE GenreId < 4",
                       "duckdb": "SELECT Name FROM Genre WHERE GenreId < 3"}},
        {"id": "partial", "datasource": ["duck"], "gold": "SELECT 1",
         "predicted": {"sqlite": "SELECT 1"}}]}))
    fanout_suite.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider")
    cases = {c["id"]: c for c in report(fanout_suite.path / "r.json")["cases"]}
    assert cases["names[chinook]"]["outcome"] == "passed"
    assert cases["names[duck]"]["outcome"] == "failed"  # its own entry ran: one genre short
    assert cases["partial[duck]"]["outcome"] == "error"
    assert cases["partial[duck]"]["error"] == ("prediction error: the prediction has no entry "
                                               "for duckdb (it has sqlite)")


class _Tables(HTMLParser):
    """The rows of the HTML report's summary tables (cell texts), keyed by each table's
    ``data-kind`` or ``dialects``."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[list[str]]] = {}
        self._table: list[list[str]] | None = None
        self._cell: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table" and "summary" in (a.get("class") or ""):
            self._table = self.tables.setdefault(
                "dialects" if "data-dialects" in a else str(a.get("data-kind")), [])
        elif tag == "tr" and self._table is not None:
            self._table.append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._table = None
        elif tag in ("td", "th") and self._table is not None and self._cell is not None:
            self._table[-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def test_html_markdown_and_excel_break_results_down_by_dialect(fanout_suite: pytest.Pytester) -> None:
    """The dialect table of the terminal and JSON reports is in the three document reports
    too, with the columns their per-kind tables have."""
    openpyxl = pytest.importorskip("openpyxl")
    pytest.importorskip("xlsxwriter")
    fanout_suite.runpytest("--queryeval-json=r.json", "--queryeval-html=r.html",
                    "--queryeval-markdown=r.md", "--queryeval-xlsx=r.xlsx",
                    "-p", "no:cacheprovider")
    by_dialect = report(fanout_suite.path / "r.json")["aggregates"]["by_dialect"]
    ex = {d: s["metrics"]["execution_accuracy"]["mean"] for d, s in by_dialect.items()}

    tables = _Tables((fanout_suite.path / "r.html").read_text(encoding="utf-8")).tables
    head, *rows = tables["dialects"]
    assert head[:4] == ["dialect", "cases", "pass rate", "execution_accuracy"]
    assert [r[:4] for r in rows] == [["duckdb", "4", "75.0 %", f"{ex['duckdb']:.3f}"],
                                     ["sqlite", "4", "100.0 %", f"{ex['sqlite']:.3f}"]]
    assert tables["sql"][0][:3] == ["difficulty", "cases", "pass rate"]  # kinds' tables stay

    md = (fanout_suite.path / "r.md").read_text(encoding="utf-8").splitlines()
    at = md.index("### by dialect")
    assert md[at + 2].startswith("| dialect | cases | pass rate | execution\\_accuracy |")
    assert md[at + 4].startswith(f"| duckdb | 4 | 75.0 % | {ex['duckdb']:.3f} |")
    assert md[at + 5].startswith(f"| sqlite | 4 | 100.0 % | {ex['sqlite']:.3f} |")

    wb = openpyxl.load_workbook(fanout_suite.path / "r.xlsx")
    assert wb.sheetnames[:4] == ["Outcome", "Summary", "All metrics", "By dialect"]
    sheet = [list(r) for r in wb["By dialect"].iter_rows(values_only=True)]
    assert sheet[0][:4] == ["Dialect", "Number of samples", "Percent correct",
                            "execution_accuracy"]
    assert [r[:4] for r in sheet[1:]] == [["duckdb", 4, 0.75, ex["duckdb"]],
                                          ["sqlite", 4, 1.0, ex["sqlite"]]]
    assert "By dialect" not in openpyxl.load_workbook(
        _single_dialect_workbook(fanout_suite)).sheetnames


def _single_dialect_workbook(fanout_suite: pytest.Pytester) -> Path:
    """A run of one plain SQLite case: no dialect breakdown, no sheet for it."""
    fanout_suite.makefile(".yaml", test_fan=json.dumps({"kind": "sql", "cases": [
        {"id": "one", "datasource": "chinook", "gold": "SELECT 1", "predicted": "SELECT 1"}]}))
    fanout_suite.runpytest("--queryeval-xlsx=one.xlsx", "--queryeval-json=one.json",
                    "-p", "no:cacheprovider")
    assert "by_dialect" not in report(fanout_suite.path / "one.json")["aggregates"]
    return fanout_suite.path / "one.xlsx"


def test_a_failing_item_shows_the_gold_that_ran(fanout_suite: pytest.Pytester) -> None:
    """Issue 43: a failing fanned-out item printed the whole per-dialect mapping; it shows its
    dialect's entry, or the transpiled text it ran, and a failing gold still records which
    dialect's gold ran (``details.gold_dialect`` was null)."""
    fanout_suite.makefile(".yaml", test_fan=json.dumps({"kind": "sql", "cases": [
        {"id": "names", "datasource": ["chinook", "duck"],
         "gold": {"sqlite": "SELECT Name FROM Genre WHERE GenreId < 4",
                  "duckdb": "SELECT Name FROM Genre WHERE GenreId IN (1, 2, 3)"},
         "predicted": "SELECT Name FROM Genre WHERE GenreId < 3"},
        {"id": "rock", "datasource": ["duck"], "transpile": {"from": "sqlite"},
         "gold": {"sqlite": "SELECT count(*) FROM Track WHERE GenreId = 1"},
         "predicted": "SELECT 0"},
        {"id": "broken", "datasource": ["chinook", "duck"], "transpile": {"from": "sqlite"},
         "gold": {"sqlite": "SELECT nope FROM Genre"}, "predicted": "SELECT 1"}]}))
    result = fanout_suite.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider")
    cases = {c["id"]: c for c in report(fanout_suite.path / "r.json")["cases"]}
    assert cases["names[chinook]"]["gold"] == "SELECT Name FROM Genre WHERE GenreId < 4"
    assert cases["names[duck]"]["gold"] == "SELECT Name FROM Genre WHERE GenreId IN (1, 2, 3)"
    assert cases["rock[duck]"]["gold"] == "SELECT COUNT(*) FROM Track WHERE GenreId = 1"
    out = result.stdout.str()
    assert "gold:      SELECT Name FROM Genre WHERE GenreId IN (1, 2, 3)\n" in out
    assert "gold:      SELECT COUNT(*) FROM Track WHERE GenreId = 1\n" in out
    assert '"duckdb":' not in out and '"sqlite":' not in out
    assert cases["broken[chinook]"]["outcome"] == cases["broken[duck]"]["outcome"] == "error"
    assert cases["broken[chinook]"]["details"]["gold_dialect"] == {"dialect": "sqlite"}
    assert cases["broken[duck]"]["details"]["gold_dialect"] == {
        "dialect": "duckdb", "transpiled_from": "sqlite", "gold_run": "SELECT nope FROM Genre"}


def test_on_a_pinned_clock_the_audit_runs_and_reports_the_text_the_run_executed(
        fanout_suite: pytest.Pytester) -> None:
    """Issue 43: on a ``now:`` source the run executes the transpiled gold as the clock rewrote
    it; the audit ran and reported the text before the rewrite. Both sides now run pinned, and
    ``gold_run`` (the audit's and the run's) is the text executed; ``gold``, what
    ``--queryeval-write-transpiled`` writes, stays the transpiled text, which the run pins."""
    config = json.loads((fanout_suite.path / "queryeval.yaml").read_text())
    for spec in config["datasources"].values():
        spec["now"] = "2024-05-01"
    fanout_suite.makefile(".yaml", queryeval=json.dumps(config))
    # the clock decides: every track before 2025 at the pinned instant, none unpinned today
    gold = "SELECT count(*) FROM Track WHERE CURRENT_DATE < '2025-01-01'"
    fanout_suite.makefile(".yaml", test_fan=json.dumps({"kind": "sql", "cases": [
        {"id": "dated", "datasource": ["chinook", "duck"], "transpile": {"from": "sqlite"},
         "gold": {"sqlite": gold}, "predicted": "SELECT 3503"}]}))
    result = fanout_suite.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    ran = "SELECT COUNT(*) FROM Track WHERE CAST('2024-05-01' AS DATE) < '2025-01-01'"
    run = {c["id"]: c for c in report(fanout_suite.path / "r.json")["cases"]}
    assert run["dated[duck]"]["details"]["gold_dialect"]["gold_run"] == ran
    assert run["dated[duck]"]["gold"] == ran
    fanout_suite.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider",
                    "--queryeval-audit-golds")
    audited = {c["id"]: c for c in report(fanout_suite.path / "r.json")["cases"]}
    check = audited["dated[duck]"]["details"]["audit"]["transpiled"]
    assert (check["gold_run"], check["checked"]) == (ran, "matched")
    assert check["gold"] == "SELECT COUNT(*) FROM Track WHERE CURRENT_DATE < '2025-01-01'"
