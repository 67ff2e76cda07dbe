"""Faults during a session: the data source killed mid-run, a predictor that errors, times out,
answers garbage or hangs up. Each affected case gets an ``error`` outcome with a clear reason
(distinct from a metric ``failed``), the session completes, and every report is written."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.fixtures.oxigraph import OxigraphServer
from tests.fixtures.postgres import PostgresServer

from .conftest import by_id, check_all_reports, dump, no_traceback, run_with_all_reports

#: Inner-suite conftest: at the call of case $QE_KILL_AT, kill a process after $QE_KILL_AFTER s
#: (the PID read from $QE_KILL_PIDFILE's first line, or $QE_KILL_PID) with $QE_KILL_SIGNAL.
KILLER = """
import os, signal, threading, time

def _kill():
    pid = os.environ.get("QE_KILL_PID")
    if not pid:
        with open(os.environ["QE_KILL_PIDFILE"]) as fh:
            pid = fh.readline().strip()
    os.kill(int(pid), getattr(signal, os.environ.get("QE_KILL_SIGNAL", "SIGKILL")))
    for _ in range(200):
        try:
            os.kill(int(pid), 0)
        except OSError:
            return
        time.sleep(0.05)

def pytest_runtest_call(item):
    if item.name == os.environ["QE_KILL_AT"]:
        delay = float(os.environ.get("QE_KILL_AFTER", "0"))
        if delay:
            threading.Timer(delay, _kill).start()
        else:
            _kill()
"""

CHINOOK_OK = {"id": "sqlite-after", "datasource": "local", "gold": "SELECT count(*) FROM genre",
              "predicted": "SELECT count(*) FROM genre"}


@pytest.mark.postgres
def test_postgres_killed_mid_query(suite: pytest.Pytester, postgres: PostgresServer,
                                   chinook_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite.makeconftest(KILLER)
    monkeypatch.setenv("QE_KILL_AT", "pg-3")
    monkeypatch.setenv("QE_KILL_AFTER", "1.0")
    monkeypatch.setenv("QE_KILL_PIDFILE", str(postgres.datadir / "postmaster.pid"))
    suite.makefile(".yaml", queryeval=dump({"datasources": {
        "warehouse": {"type": "sqlalchemy", "url": postgres.readonly_url()},
        "local": {"type": "sqlite", "path": "chinook.sqlite"}}}))
    ok = "SELECT count(*) FROM genre"
    cases = [
        {"id": "pg-1", "gold": ok, "predicted": ok},
        {"id": "pg-2-wrong", "gold": ok, "predicted": "SELECT count(*) FROM artist"},
        # the gold runs for 4 s: the server dies under it
        {"id": "pg-3", "gold": "SELECT count(*) FROM genre, pg_sleep(4)", "predicted": ok},
        {"id": "pg-4", "gold": ok, "predicted": ok},
        {"id": "pg-5", "gold": ok, "predicted": ok},
    ]
    suite.makefile(".yaml", test_pg=dump({
        "kind": "sql", "datasource": "warehouse", "thresholds": {"execution_accuracy": 1.0},
        "cases": [*cases, CHINOOK_OK]}))
    result, report = run_with_all_reports(suite)
    assert not postgres.is_running()
    no_traceback(result)
    recs = by_id(report)
    assert recs["pg-1"]["outcome"] == "passed"
    assert recs["pg-2-wrong"]["outcome"] == "failed"
    assert recs["pg-2-wrong"]["error"] is None
    assert recs["pg-2-wrong"]["failed_metrics"] == ["execution_accuracy"]
    for cid in ("pg-3", "pg-4", "pg-5"):
        assert recs[cid]["outcome"] == "error", recs[cid]
        assert recs[cid]["error"].startswith("source unavailable: "), recs[cid]["error"]
        assert postgres.readonly_password not in recs[cid]["error"]
    assert recs["sqlite-after"]["outcome"] == "passed"  # the rest of the suite still ran
    result.assert_outcomes(passed=2, failed=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    check_all_reports(suite.path, [*(c["id"] for c in cases), "sqlite-after"])
    result.stdout.fnmatch_lines(["*source unavailable: *warehouse*"])


@pytest.mark.oxigraph
def test_oxigraph_killed_mid_session(suite: pytest.Pytester, oxigraph_endpoint: OxigraphServer,
                                     chinook_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert oxigraph_endpoint.proc is not None
    suite.makeconftest(KILLER)
    monkeypatch.setenv("QE_KILL_AT", "ox-3")
    monkeypatch.setenv("QE_KILL_PID", str(oxigraph_endpoint.proc.pid))
    monkeypatch.setenv("QE_KILL_SIGNAL", "SIGTERM")
    vav = "SELECT (COUNT(*) AS ?n) WHERE { ?s a <https://brickschema.org/schema/Brick#VAV> }"
    ahu = ("SELECT (COUNT(*) AS ?n) WHERE "
           "{ ?s a <https://brickschema.org/schema/Brick#AHU> }")
    suite.makefile(".yaml", queryeval=dump({"datasources": {
        "graph": {"type": "sparql", "endpoint": oxigraph_endpoint.query_url, "retries": 1,
                  "backoff": 0.05, "timeout": 5},
        "local": {"type": "sqlite", "path": "chinook.sqlite"}}}))
    cases = [{"id": "ox-1", "gold": vav, "predicted": vav},
             {"id": "ox-2-wrong", "gold": vav, "predicted": ahu},
             {"id": "ox-3", "gold": ahu, "predicted": ahu},
             {"id": "ox-4", "gold": vav, "predicted": vav}]
    suite.makefile(".yaml", test_graph=dump({
        "kind": "sparql", "datasource": "graph", "thresholds": {"execution_accuracy": 1.0},
        "cases": cases}))
    suite.makefile(".yaml", test_zlocal=dump({
        "kind": "sql", "thresholds": {"execution_accuracy": 1.0}, "cases": [CHINOOK_OK]}))
    try:
        result, report = run_with_all_reports(suite, "--queryeval-no-cache")
        assert not oxigraph_endpoint.running()
    finally:
        oxigraph_endpoint.start()
    no_traceback(result)
    recs = by_id(report)
    assert recs["ox-1"]["outcome"] == "passed"
    assert recs["ox-2-wrong"]["outcome"] == "failed"
    assert recs["ox-2-wrong"]["error"] is None
    for cid in ("ox-3", "ox-4"):
        assert recs[cid]["outcome"] == "error", recs[cid]
        assert recs[cid]["error"].startswith("source unavailable: cannot reach "), recs[cid]["error"]
    assert recs["sqlite-after"]["outcome"] == "passed"
    result.assert_outcomes(passed=2, failed=3)
    check_all_reports(suite.path, [*(c["id"] for c in cases), "sqlite-after"])
    assert oxigraph_endpoint.triple_count() == 3_774  # the store survived the kill


class _Faulty(BaseHTTPRequestHandler):
    """A real predictor service with faults chosen by path: /ok, /wrong, /500, /malformed,
    /slow (answers after 3 s), /reset (closes the connection without answering), /html."""

    protocol_version = "HTTP/1.1"
    hits: dict[str, int] = {}

    def _send(self, code: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        path = self.path.strip("/")
        self.hits[path] = self.hits.get(path, 0) + 1
        if path == "ok":
            self._send(200, json.dumps({"sql": "SELECT count(*) FROM genre"}).encode())
        elif path == "wrong":
            self._send(200, json.dumps({"sql": "SELECT count(*) FROM artist"}).encode())
        elif path == "500":
            self._send(500, b'{"detail": "model crashed"}')
        elif path == "malformed":
            self._send(200, b'{"sql": "SELECT count(*) FROM genre"')
        elif path == "slow":
            time.sleep(3)
            self._send(200, json.dumps({"sql": "SELECT 1"}).encode())
        elif path == "reset":
            self.close_connection = True
            self.connection.shutdown(2)
        elif path == "html":
            self._send(200, b"<html><body>Bad gateway</body></html>", "text/html")
        else:
            self._send(404, b"{}")

    def log_message(self, *args: object) -> None:
        pass


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # the client gave up on /slow: a broken pipe here is expected


@pytest.fixture
def faulty_predictor() -> Iterator[str]:
    server = _QuietServer(("127.0.0.1", 0), _Faulty)
    _Faulty.hits = {}
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_http_predictor_faults(suite: pytest.Pytester, chinook_copy: Path,
                               faulty_predictor: str) -> None:
    suite.makefile(".yaml", queryeval=dump({
        "datasources": {"local": {"type": "sqlite", "path": "chinook.sqlite"}},
        "predictions": {"source": "http", "url": faulty_predictor + "/{id}", "response_path": "sql",
                        "timeout": 0.5, "retries": 1, "backoff": 0.01,
                        # one request at a time: under a loaded host, four at once (one of
                        # them the slow one) could pass the 0.5 s deadline and be retried
                        "concurrency": 1}}))
    ids = ["ok", "wrong", "500", "malformed", "slow", "reset", "html"]
    suite.makefile(".yaml", test_http=dump({
        "kind": "sql", "datasource": "local", "thresholds": {"execution_accuracy": 1.0},
        "cases": [{"id": i, "gold": "SELECT count(*) FROM genre"} for i in ids]}))
    result, report = run_with_all_reports(suite)
    no_traceback(result)
    recs = by_id(report)
    assert recs["ok"]["outcome"] == "passed"
    assert recs["ok"]["metrics"]["prediction_seconds"] > 0
    # a wrong prediction is a metric failure, not an error
    assert recs["wrong"]["outcome"] == "failed"
    assert recs["wrong"]["error"] is None
    assert recs["wrong"]["failed_metrics"] == ["execution_accuracy"]
    expected = {
        "500": "failed: HTTP 500",
        "malformed": "response is not valid JSON",
        "slow": "failed: ",
        "reset": "failed: ",
        "html": "response_path 'sql': cannot take 'sql' of a str",
    }
    for cid, fragment in expected.items():
        rec = recs[cid]
        assert rec["outcome"] == "error", rec
        assert rec["error"].startswith("prediction error: "), rec["error"]
        assert fragment in rec["error"], rec["error"]
        assert rec["metrics"] == {}, "an unpredicted case has no scores"
    assert "timed out" in recs["slow"]["error"]
    assert "after 2 attempt(s)" in recs["500"]["error"]  # retried once
    assert _Faulty.hits["500"] == 2 and _Faulty.hits["slow"] == 2
    assert _Faulty.hits["malformed"] == 1  # a 200 with a bad body is not retried
    result.assert_outcomes(passed=1, failed=6)
    check_all_reports(suite.path, ids)
    aggregates = report["aggregates"]["overall"]
    assert aggregates["count"] == 7


#: Inner-suite conftest: the model's client takes the xdist worker down on case "boom".
CRASHING_HOOK = """
import os

def pytest_queryeval_predict(case):
    if case.id == "boom":
        os._exit(3)
    return "SELECT count(*) FROM Genre"
"""


def test_a_case_whose_xdist_worker_crashes_is_an_error_in_every_report(
        suite: pytest.Pytester, chinook_copy: Path) -> None:
    """xdist reports the crash but the worker sent no record: the case used to vanish from
    the reports, and the run, one case short, could become the baseline."""
    pytest.importorskip("xdist")
    suite.makeconftest(CRASHING_HOOK)
    suite.makefile(".yaml", queryeval=dump({
        "datasources": {"local": {"type": "sqlite", "path": "chinook.sqlite"}}}))
    ids = ["a1", "a2", "boom", "b1", "b2", "b3"]
    suite.makefile(".yaml", test_cases=dump({
        "kind": "sql", "datasource": "local", "difficulty": "easy", "tags": ["counts"],
        "cases": [{"id": i, "gold": "SELECT count(*) FROM Genre"} for i in ids]}))
    result, report = run_with_all_reports(suite, "-n", "2", "-p", "no:randomly",
                                          "--queryeval-update-baseline",
                                          "--queryeval-baseline=base.json", subprocess=True)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    cases = by_id(report)
    assert list(cases) == ids  # every case, in the suite's order
    boom = cases["boom"]
    assert boom["outcome"] == "error" and boom["kind"] == "sql"
    assert boom["difficulty"] == "easy" and boom["tags"] == ["counts"]
    assert boom["file"] == "test_cases.yaml" and boom["line"] > 1
    assert "crashed while running 'test_cases.yaml::boom'" in boom["error"]
    assert "the worker process died" in boom["error"]
    assert report["aggregates"]["overall"]["count"] == 6
    assert {c["outcome"] for i, c in cases.items() if i != "boom"} == {"passed"}
    check_all_reports(suite.path, ids)
    assert not (suite.path / "base.json").exists()
    result.stdout.fnmatch_lines(["*baseline NOT updated*1 case(s) ended in an error (boom)*"])
