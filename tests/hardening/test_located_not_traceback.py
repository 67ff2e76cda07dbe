"""Issue 50 item 7: located errors instead of tracebacks.

* a reply of 200,000 nested ``[`` from an ``http`` or ``openai`` source (real loopback
  servers): before, a ``RecursionError`` out of the json module; now the case's prediction
  error says the reply is nested too deeply;
* a case written in Python with a 100,000-deep ``thresholds=`` or a self-containing
  ``tags=``: before, a ``RecursionError`` in the reader; now a located error naming the key;
* ``queryeval init`` with ``--dir`` an existing file (before: a ``FileExistsError``
  traceback), ``--datasource /dev/zero`` or a FIFO (before: "no such file"), and a database
  holding one blob over the source's value cap (before: the whole datasource refused; now a
  suite from the other columns and tables).
"""

from __future__ import annotations

import os
import sqlite3
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from tests.fixtures.quiet_http import QuietHTTPServer
from tests.support import dump, read_report

DEEP = b"[" * 200_000


class _Deep(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(DEEP)))
        self.end_headers()
        self.wfile.write(DEEP)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def deep_server() -> Iterator[str]:
    server = QuietHTTPServer(("127.0.0.1", 0), _Deep)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _suite(pytester: pytest.Pytester, predictions: dict[str, object]) -> None:
    with sqlite3.connect(pytester.path / "tiny.sqlite") as conn:
        conn.execute("CREATE TABLE t (x INTEGER)")
        conn.execute("INSERT INTO t VALUES (1)")
    conn.close()
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    pytester.makefile(".yaml", queryeval=dump({
        "datasources": {"db": {"type": "sqlite", "path": "tiny.sqlite"}},
        "predictions": predictions}))
    pytester.makefile(".yaml", test_cases=dump({
        "kind": "sql", "datasource": "db",
        "cases": [{"id": "c1", "question": "How many rows?", "gold": "SELECT x FROM t"}]}))


def _no_traceback(result: pytest.RunResult) -> None:
    out = result.stdout.str() + result.stderr.str()
    assert "RecursionError" not in out and "Traceback" not in out, out[-3000:]


@pytest.mark.parametrize("source", ["http", "openai"])
def test_a_reply_nested_200000_deep_is_a_located_prediction_error(
        pytester: pytest.Pytester, deep_server: str, source: str) -> None:
    spec: dict[str, object] = (
        {"source": "http", "url": deep_server + "/predict", "response_path": "sql",
         "retries": 0} if source == "http" else
        {"source": "openai", "model": "m", "base_url": deep_server + "/v1", "api_key": "none",
         "retries": 0})
    _suite(pytester, spec)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--queryeval-json=r.json")
    _no_traceback(result)
    case = {c["id"]: c for c in read_report(pytester.path / "r.json")["cases"]}["c1"]
    assert case["outcome"] == "error"
    assert case["error"].startswith("prediction error: "), case["error"]
    if source == "http":
        assert case["error"].endswith("response is not valid JSON: not JSON: nested deeper "
                                      "than 200 levels"), case["error"]
    else:
        assert "the reply is not JSON: '[[[[" in case["error"], case["error"]


def test_a_judge_reply_nested_200000_deep_is_a_judge_error() -> None:
    from pytest_queryeval.judge.run import JudgeError, _content, _usage

    with pytest.raises(JudgeError, match="no choices"):  # before: RecursionError
        _content(DEEP)
    assert _usage(DEEP) == {}


PY_CASES = '''
import pytest

deep = {"execution_accuracy": 1.0}
for _ in range(100_000):
    deep = {"nested": deep}
loop = ["a"]
loop.append(loop)


def test_deep(queryeval):
    queryeval.check(kind="sql", datasource="db", id="deep", question="q",
                    gold="SELECT x FROM t", predicted="SELECT x FROM t", thresholds=deep)


def test_loop(queryeval):
    queryeval.check(kind="sql", datasource="db", id="loop", question="q",
                    gold="SELECT x FROM t", predicted="SELECT x FROM t", tags=loop)


def test_fine(queryeval):
    queryeval.check(kind="sql", datasource="db", id="fine", question="q",
                    gold="SELECT x FROM t", predicted="SELECT x FROM t")
'''


def test_a_python_case_too_deep_or_holding_itself_is_a_located_error(
        pytester: pytest.Pytester) -> None:
    _suite(pytester, {"source": "file", "path": "none.jsonl"})
    (pytester.path / "test_cases.yaml").unlink()
    (pytester.path / "queryeval.yaml").write_text(dump({
        "datasources": {"db": {"type": "sqlite", "path": "tiny.sqlite"}}}))
    pytester.makepyfile(test_py_cases=PY_CASES)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    _no_traceback(result)
    result.assert_outcomes(passed=1, failed=2)
    out = result.stdout.str()
    assert "test_py_cases.py:11: thresholds: nested deeper than 200 levels (the limit of a " \
           "case file's YAML)" in out, out[-3000:]
    assert "test_py_cases.py:16: tags: contains itself (a list or mapping that holds itself " \
           "is no YAML value)" in out, out[-3000:]


def _init(cwd: Path, *args: str) -> tuple[int, str]:
    import subprocess

    done = subprocess.run([sys.executable, "-m", "pytest_queryeval.conclude.cli", "init", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=300, check=False)
    return done.returncode, done.stdout + done.stderr


def _small_db(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE artist (id INTEGER PRIMARY KEY, name TEXT)")
        conn.executemany("INSERT INTO artist VALUES (?, ?)", [(1, "Pink Floyd"), (2, "Can")])
    conn.close()


def test_init_into_an_existing_file_is_a_usage_error(tmp_path: Path) -> None:
    _small_db(tmp_path / "db.sqlite")
    (tmp_path / "taken").write_text("a file")
    code, out = _init(tmp_path, "--datasource", "db.sqlite", "--dir", "taken")
    assert "Traceback" not in out, out
    assert (code, out.strip()) == (4, "queryeval init: --dir taken: exists and is not a "
                                      "directory; nothing was written")


def test_init_from_a_device_or_a_fifo_says_what_it_is(tmp_path: Path) -> None:
    code, out = _init(tmp_path, "--datasource", "/dev/zero", "--dir", "s")
    assert (code, out.strip()) == (4, "queryeval init: /dev/zero: a character device, not a "
                                      "regular file (a SQLite, DuckDB or RDF file, or a URL)")
    os.mkfifo(tmp_path / "pipe.sqlite")
    code, out = _init(tmp_path, "--datasource", "pipe.sqlite", "--dir", "s")
    assert (code, out.strip()) == (4, "queryeval init: pipe.sqlite: a FIFO (named pipe), not a "
                                      "regular file (a SQLite, DuckDB or RDF file, or a URL)")


def test_init_from_a_database_with_one_huge_blob_uses_the_other_columns(tmp_path: Path) -> None:
    """One cell over the SQLite source's value cap (16 MiB): its column is left out, the
    suite is written from the rest (before: ``cannot read ...: string or blob too big``)."""
    from pytest_queryeval.sources.sqlite import MAX_VALUE_BYTES

    db = tmp_path / "music.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE album (id INTEGER PRIMARY KEY, title TEXT, cover BLOB)")
        conn.execute("INSERT INTO album VALUES (1, 'Tago Mago', zeroblob(?))",
                     (MAX_VALUE_BYTES + 1024,))
        conn.execute("INSERT INTO album VALUES (2, 'Ege Bamyasi', x'00')")
        conn.execute("CREATE TABLE artist (id INTEGER PRIMARY KEY, name TEXT)")
        conn.executemany("INSERT INTO artist VALUES (?, ?)", [(1, "Can"), (2, "Neu!")])
    conn.close()
    code, out = _init(tmp_path, "--datasource", "music.sqlite", "--dir", "suite")
    assert code == 0, out
    cases = (tmp_path / "suite" / "test_examples.yaml").read_text()
    assert 'gold: "SELECT count(*) FROM \\"album\\""' in cases
    assert "\\\"cover\\\"" not in cases
    assert "wrote suite/test_examples.yaml" in out
