"""An installed package extends the plugin exactly as the built-ins do (issue 51 item 2): one
plugin module, loaded with ``-p`` as pytest loads a ``pytest11`` entry point, adds a kind, a
datasource type, a prediction source and a report format through the registry hooks, and a
real run uses all four. A ``queryeval merge`` of that run writes the plugin's format from the
full records (item 3)."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from pytest_queryeval.conclude.merge import run as merge_run
from tests.support import kind_source, read_report, write_suite

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

#: The third-party plugin: nothing in it is known to the package by name.
PLUGIN = '''
import json
import sqlite3
from pathlib import Path

from pytest_queryeval.model import Scored
from pytest_queryeval.report.formats import ReportFile
from pytest_queryeval.predict.base import Prediction
from pytest_queryeval.sources import SourceType
from pytest_queryeval.sources.sqlite import SqliteSource


''' + kind_source("Echo", "echo", "same",
                  '        return Scored({"same": float(prediction == case.gold)})',
                  doc="A kind: 1 when the prediction is the gold word.") + '''

class ScriptSqlite(SqliteSource):
    """A SQLite database built from the .sql scripts of a folder."""
    type = "sqlscript"

    @classmethod
    def from_spec(cls, name, spec):
        directory = Path(spec["directory"])
        db = directory.parent / (directory.name + ".sqlite")
        db.unlink(missing_ok=True)
        con = sqlite3.connect(db)
        for script in sorted(directory.glob("*.sql")):
            con.executescript(script.read_text())
        con.commit()
        con.close()
        return cls(name, db, isolation="thread")


class MapFile:
    """A prediction source: one JSON object, case id -> prediction."""
    fixed = True
    path_keys = ("path",)

    @classmethod
    def from_spec(cls, spec, base, search, context=None):
        return cls((base / spec["path"]).resolve())

    def __init__(self, path):
        self.path = path

    def predict(self, case):
        return Prediction(json.loads(self.path.read_text())[case.id])

    def paths(self):
        return [self.path]

    def ids(self):
        return list(json.loads(self.path.read_text()))


def write_lines(report, path, comparison):
    """A report format: each full record's id, outcome and heavy fields."""
    rows = [{"id": r["id"], "outcome": r["outcome"], "predicted": r.get("predicted"),
             "gold": r.get("gold"), "question": r.get("question"), "diff": r.get("diff")}
            for r in report.records()]
    slim = [sorted(c) for c in report["cases"]]
    path.write_text(json.dumps({"rows": rows, "keys": slim}), encoding="utf-8")


def pytest_queryeval_kinds(config):
    return {"echo": Echo}


def pytest_queryeval_source_types(config):
    # inherits every capability of the sqlite type but what a folder changes
    return {"sqlscript": SourceType.inherit(ScriptSqlite, keys=frozenset({"directory"}),
                                            database_file=None, sqlite_file=False)}


def pytest_queryeval_prediction_sources(config):
    return {"mapfile": MapFile}


def pytest_queryeval_report_formats():
    return {"lines": ReportFile("Lines report", "write the lines report here", write_lines)}
'''

CASES = {
    "test_sql.yaml": {"kind": "sql", "datasource": "db", "cases": [
        # a gold per dialect: the type's dialect (inherited) picks SQLite's before it opens
        {"id": "count", "question": "How many rows?",
         "gold": {"sqlite": "SELECT COUNT(*) FROM t", "postgres": "SELECT no_such FROM t"}},
        {"id": "max", "question": "The largest?", "gold": "SELECT MAX(x) FROM t"}]},
    "test_echo.yaml": {"kind": "echo", "thresholds": {"same": 1}, "cases": [
        {"id": "word", "question": "Say word", "gold": "word"}]},
}
PREDICTIONS = {"count": "SELECT COUNT(x) FROM t", "max": "SELECT MIN(x) FROM t",
               "word": "word"}


def _suite(pytester: pytest.Pytester, datasource: dict[str, object]) -> None:
    pytester.makepyfile(qe_extension=PLUGIN)
    pytester.syspathinsert()
    write_suite(pytester.path, {"datasources": {"db": datasource},
                                "predictions": {"source": "mapfile", "path": "preds.json"}},
                CASES)
    (pytester.path / "preds.json").write_text(json.dumps(PREDICTIONS), encoding="utf-8")
    scripts = pytester.path / "scripts"
    scripts.mkdir()
    (scripts / "1.sql").write_text("CREATE TABLE t (x INTEGER); "
                                   "INSERT INTO t VALUES (1), (2), (3);", encoding="utf-8")


def test_a_plugin_adds_a_kind_a_source_type_a_prediction_source_and_a_format(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    _suite(pytester, {"type": "sqlscript", "directory": "scripts"})
    result = pytester.runpytest("-p", "qe_extension", "-p", "no:randomly",
                                "-p", "no:cacheprovider", "--queryeval-shard=1/1",
                                "--queryeval-json=r.json", "--queryeval-lines=r.lines")
    result.assert_outcomes(passed=2, failed=1)
    report = read_report(pytester.path / "r.json")
    assert report.outcomes == {"count": "passed", "max": "failed", "word": "passed"}
    # the source type is SQLite's in every respect it did not change: a SQL dialect
    assert report.by_id["count"]["dialect"] == "sqlite"
    assert "Lines report: " in result.stdout.str()
    lines = json.loads((pytester.path / "r.lines").read_text(encoding="utf-8"))
    assert sorted((r["id"], r["outcome"], r["predicted"]) for r in lines["rows"]) == [
        ("count", "passed", "SELECT COUNT(x) FROM t"), ("max", "failed", "SELECT MIN(x) FROM t"),
        ("word", "passed", "word")]

    # queryeval merge of the run: the plugin's writer gets the full records (item 3)
    monkeypatch.chdir(pytester.path)
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        status = merge_run(["r.json", "-o", "m.json", "-p", "qe_extension",
                            "--queryeval-lines", "m.lines"])
    assert status == 1, sink.getvalue()  # case max failed
    merged = json.loads((pytester.path / "m.lines").read_text(encoding="utf-8"))
    by_id = {r["id"]: r for r in merged["rows"]}
    failed = by_id["max"]
    assert (failed["predicted"], failed["gold"], failed["question"]) == (
        "SELECT MIN(x) FROM t", "SELECT MAX(x) FROM t", "The largest?")
    assert failed["diff"], failed
    assert {k for keys in merged["keys"] for k in keys} >= {"predicted", "gold", "question"}


def test_a_typo_in_a_declared_key_is_located_though_the_class_has_its_own_from_spec(
        pytester: pytest.Pytester) -> None:
    _suite(pytester, {"type": "sqlscript", "directry": "scripts"})
    result = pytester.runpytest("-p", "qe_extension", "-p", "no:randomly",
                                "-p", "no:cacheprovider", "--queryeval-json=r.json")
    out = result.stdout.str()
    assert "queryeval.yaml:" in out
    result.stdout.fnmatch_lines(["*queryeval.yaml:*datasources.db.directry*unknown key(s) "
                                 "directry for type sqlscript (did you mean 'directory'?)*"])
    assert read_report(pytester.path / "r.json").outcomes["word"] == "passed"


def test_a_conftest_adds_a_report_format_with_its_option(pytester: pytest.Pytester) -> None:
    """The format hook is historic: a rootdir conftest, registered after the plugin declared
    its options, still gets its ``--queryeval-<name>`` option before the command line is
    parsed."""
    pytester.makeconftest('''
from pytest_queryeval.report.formats import ReportFile


def write_ids(report, path, comparison):
    path.write_text(" ".join(r["id"] for r in report.records()), encoding="utf-8")


def pytest_queryeval_report_formats():
    return {"ids": ReportFile("Ids", "write the case ids here", write_ids)}
''')
    write_suite(pytester.path, {}, {"test_q.yaml": {"kind": "sql", "cases": [
        {"id": "one", "gold": "SELECT 1", "predicted": "SELECT 1",
         "gold_result": {"columns": ["a"], "rows": [[1]]},
         "predicted_result": {"columns": ["a"], "rows": [[1]]}}]}})
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider",
                                "--queryeval-ids=ids.txt")
    result.assert_outcomes(passed=1)
    assert (pytester.path / "ids.txt").read_text(encoding="utf-8") == "one"
    result.stdout.fnmatch_lines(["Ids: *ids.txt"])
