"""Inputs that ended a session (issue 58 item 7): one byte that is not UTF-8 in a predictions
file was an INTERNALERROR with no report (exit 3); a FIFO at an xdist worker's journal path
blocked that worker forever; a JSON report path that is a FIFO nobody reads blocked the end of
the run, and a SIGTERM then tried to write the reports to the same FIFO, so the run never
ended. Each is now a named error or warning, the other reports and the exit status stand, and
the run ends."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.support import run_report, write_suite

from .conftest import no_traceback


def _sql_suite(pytester: pytest.Pytester, predictions: str) -> None:
    with sqlite3.connect(pytester.path / "db.sqlite") as con:
        con.execute("CREATE TABLE t (x INTEGER)")
    con.close()
    cases = [{"id": cid, "question": "q", "gold": "SELECT 1"} for cid in ("a", "b", "c")]
    write_suite(pytester.path, {"datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
                                "predictions": {"source": "file", "path": predictions}},
                {"test_q.yaml": {"kind": "sql", "datasource": "db", "cases": cases}})


@pytest.mark.parametrize(("name", "text", "where"), [
    ("preds.jsonl", b'{"id": "a", "predicted": "SELECT 1"}\n'
                    b'{"id": "b", "predicted": "SELECT 1"}\r\n'
                    b'{"id": "c", "predicted": "SELECT \xff 1"}\n', "preds.jsonl:3: "
     "not UTF-8 text: byte 0xff at column 34"),
    ("preds.json", b'{"a": "SELECT 1",\n "b": "SELECT 1",\n "c": "SELECT \xe9"}', "preds.json:3: "
     "not UTF-8 text: byte 0xe9 at column 15"),
], ids=["jsonl", "json"])
def test_a_byte_that_is_not_utf8_is_its_lines_error(pytester: pytest.Pytester, name: str,
                                                    text: bytes, where: str) -> None:
    """As a line that is not JSON: the file is refused naming the line and the column, each
    case is that error, and every report is written (before: INTERNALERROR, exit 3)."""
    _sql_suite(pytester, name)
    (pytester.path / name).write_bytes(text)
    result, report = run_report(pytester, "-p", "no:cacheprovider", fresh=True)
    no_traceback(result)
    assert result.ret == 1
    assert report.outcomes == dict.fromkeys("abc", "error")
    assert report.by_id["a"]["error"] == f"prediction error: {where}"
    assert report.by_id["c"]["error"] == f"prediction error: {where}"


def test_the_same_file_in_utf8_passes(pytester: pytest.Pytester) -> None:
    _sql_suite(pytester, "preds.jsonl")
    (pytester.path / "preds.jsonl").write_text("".join(
        json.dumps({"id": cid, "predicted": "SELECT 1 -- é"}) + "\n" for cid in "abc"))
    result, report = run_report(pytester, "-p", "no:cacheprovider", fresh=True)
    assert result.ret == 0 and report.outcomes == dict.fromkeys("abc", "passed")
