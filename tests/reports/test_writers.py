"""The report formats are one table, :data:`pytest_queryeval.plugin.declare.REPORT_WRITERS` (issue 40
item 1): its entries and the options, the end of a run and ``queryeval merge`` agree, and a new
format is one writer module plus one entry. A format used to be four hand-made lists (the
option, ``ReportOptions.outputs``, a field of ``Outputs`` and a branch of ``write_reports``)."""

from __future__ import annotations

import argparse
import contextlib
import inspect
import io
import sqlite3
from pathlib import Path

import pytest
from tests.support import dump, read_report

from pytest_queryeval.conclude import load_writer
from pytest_queryeval.conclude.merge import _parser as merge_parser
from pytest_queryeval.conclude.merge import run as merge_run
from pytest_queryeval.plugin.declare import REPORT_WRITERS, ReportFile, add_report_options
from pytest_queryeval.plugin.options import ReportOptions
from pytest_queryeval.suite.checks import MetricCatalog

#: A format the package does not have, as a contributor would add it: one module.
CSV_WRITER = '''
def write_csv(report, path, comparison):
    lines = ["id,outcome"] + [f"{c['id']},{c['outcome']}" for c in report["cases"]]
    path.write_text("\\n".join(lines) + "\\n", encoding="utf-8")
'''

CSV = ReportFile("CSV report", "write the per-case CSV here", "qe_csv_writer:write_csv")


def test_the_json_report_is_written_first() -> None:
    """The one CI keeps: a later writer that fails leaves it written."""
    assert next(iter(REPORT_WRITERS)) == "json"


@pytest.mark.parametrize("name", list(REPORT_WRITERS))
def test_every_writer_takes_the_one_signature(name: str) -> None:
    """What every format must satisfy, a built-in's or a plugin's (``test_locality`` runs this
    on its copy with a new one)."""
    entry = REPORT_WRITERS[name]
    params = list(inspect.signature(load_writer(entry)).parameters)
    assert params[:3] == ["report", "path", "comparison"], name
    assert entry.label and entry.help


@pytest.mark.parametrize("merge", [False, True])
def test_every_entry_is_an_option_of_the_plugin_and_of_merge(merge: bool) -> None:
    parser = argparse.ArgumentParser()
    add_report_options(parser.add_argument, merge=merge)
    for name in REPORT_WRITERS:
        args = parser.parse_args([f"--queryeval-{name}", f"out.{name}"])
        assert getattr(args, f"queryeval_{name}") == f"out.{name}"
    if merge:  # the JSON entry's further spellings
        assert parser.parse_args(["-o", "m.json"]).queryeval_json == "m.json"


def test_a_format_s_missing_dependency_is_a_usage_problem(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    monkeypatch.setitem(REPORT_WRITERS, "csv", ReportFile(
        "CSV report", "write the CSV here", "qe_csv_writer:write_csv",
        needs=("qe_no_such_module", "csv")))
    args = merge_parser().parse_args(["s.json", "--queryeval-csv", "m.csv"])
    options = ReportOptions.from_namespace(args, tmp_path)
    assert options.needs() == [("--queryeval-csv", "qe_no_such_module", "csv")]
    assert options.problems(MetricCatalog([])) == [
        "--queryeval-csv needs qe_no_such_module: pip install pytest-queryeval[csv]"]


def test_a_new_format_is_one_table_entry(suite: pytest.Pytester,
                                         tmp_path_factory: pytest.TempPathFactory,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    module_dir = tmp_path_factory.mktemp("writer")
    (module_dir / "qe_csv_writer.py").write_text(CSV_WRITER, encoding="utf-8")
    monkeypatch.syspath_prepend(str(module_dir))
    monkeypatch.setitem(REPORT_WRITERS, "csv", CSV)
    # a SQL suite on SQLite: the JSON kind scored with the semantic extra's embedding model,
    # which a core install does not have (a format's test needs no extra)
    with sqlite3.connect(suite.path / "x.sqlite") as con:
        con.execute("CREATE TABLE t (x INTEGER)")
        con.execute("INSERT INTO t VALUES (1)")
    suite.makefile(".yaml", queryeval=dump(
        {"datasources": {"db": {"type": "sqlite", "path": "x.sqlite"}}}))
    suite.makefile(".yaml", test_q=dump({"kind": "sql", "datasource": "db", "cases": [
        {"id": "a", "gold": "SELECT x FROM t", "predicted": "SELECT x FROM t"},
        {"id": "b", "gold": "SELECT x FROM t", "predicted": "SELECT x + 1 FROM t"}]}))

    # the option is accepted and the file written at the session's end, named after the JSON
    result = suite.runpytest_inprocess("-p", "no:randomly", "--queryeval-shard=1/1",
                                       "--queryeval-json=r.json", "--queryeval-csv=r.csv")
    result.assert_outcomes(passed=1, failed=1)
    expected = "id,outcome\na,passed\nb,failed\n"
    assert (suite.path / "r.csv").read_text(encoding="utf-8") == expected
    out = result.stdout.str()
    assert out.index("JSON report: ") < out.index(f"CSV report: {suite.path / 'r.csv'}")
    assert read_report(suite.path / "r.json").outcomes == {"a": "passed", "b": "failed"}

    # and by queryeval merge, with no edit of merge.py
    monkeypatch.chdir(suite.path)
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        status = merge_run(["r.json", "-o", "m.json", "--queryeval-csv", "m.csv"])
    assert status == 1, sink.getvalue()  # case b failed
    assert (suite.path / "m.csv").read_text(encoding="utf-8") == expected
    assert f"CSV report: {suite.path / 'm.csv'}" in sink.getvalue()
