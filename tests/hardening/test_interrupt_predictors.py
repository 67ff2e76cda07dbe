"""Ctrl-C while a prediction source or the embedding model is busy: SIGINT to the process group
of a real pytest process (as a terminal sends it) stops the session and the JSON report of the
finished cases is written, for an HTTP predictor waiting on a server that never answers, a
command predictor that hangs (in its own process group, which is killed: the terminal's SIGINT
does not reach it) and the embedding model encoding a large batch. No timing is asserted: each
stuck step would run for minutes; a generous outer limit proves the session stopped."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from .conftest import (
    REPORT_ARGS,
    SCORED_CONFTEST,
    check_all_reports,
    ctrl_c,
    dump,
    read_report,
)


def _interrupt(pytester: pytest.Pytester, delay: float = 0.2, scored_first: int = 0,
               ) -> subprocess.CompletedProcess[str]:
    """SIGINT once the stuck step's marker is there and ``scored_first`` cases were scored;
    the stuck step alone would run for minutes."""
    pytester.makeconftest(SCORED_CONFTEST)
    return ctrl_c(pytester, REPORT_ARGS, marker="stuck.marker", scored_first=scored_first,
                  reach_within=300, delay=delay, stop_within=60)[0]


class _Stuck(BaseHTTPRequestHandler):
    """Answers every case at once but ``c-stuck``: for that one it announces itself (a marker
    file) and never answers."""

    marker: Path

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path.strip("/") == "c-stuck":
            self.marker.write_text("x")
            time.sleep(300)
            return
        body = json.dumps({"sql": "SELECT count(*) FROM genre"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass


@pytest.fixture
def stuck_server(suite: pytest.Pytester) -> Iterator[str]:
    _Stuck.marker = suite.path / "stuck.marker"
    server = _Server(("127.0.0.1", 0), _Stuck)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _sql_suite(pytester: pytest.Pytester, predictions: dict[str, object]) -> list[str]:
    pytester.makefile(".yaml", queryeval=dump({
        "datasources": {"local": {"type": "sqlite", "path": "chinook.sqlite"}},
        "predictions": predictions}))
    ids = [f"c-{i:02d}" for i in range(4)] + ["c-stuck"] + [f"d-{i:02d}" for i in range(3)]
    pytester.makefile(".yaml", test_cases=dump({
        "kind": "sql", "datasource": "local", "thresholds": {"execution_accuracy": 1.0},
        "cases": [{"id": i, "gold": "SELECT count(*) FROM genre"} for i in ids]}))
    return ids


def _check(pytester: pytest.Pytester, done: object, finished_ids: list[str]) -> None:
    out = getattr(done, "stdout", "")
    assert getattr(done, "returncode", None) == pytest.ExitCode.INTERRUPTED, out[-3000:]
    assert (pytester.path / "report.json").is_file(), out[-3000:]
    report = read_report(pytester.path / "report.json")
    assert report["run"]["interrupted"] is True
    assert [c["id"] for c in report["cases"]] == finished_ids
    assert {c["outcome"] for c in report["cases"]} <= {"passed"}
    check_all_reports(pytester.path, finished_ids)


def test_ctrl_c_during_an_http_prediction(suite: pytest.Pytester, chinook_copy: Path,
                                          stuck_server: str) -> None:
    ids = _sql_suite(suite, {"source": "http", "url": stuck_server + "/{id}",
                             "response_path": "sql", "timeout": 300, "retries": 0})
    _check(suite, _interrupt(suite, scored_first=4), ids[:4])


HANG = """
import json, pathlib, signal, sys, time
case = json.load(sys.stdin)
if case["id"] == "c-stuck":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a model wrapper that ignores Ctrl-C
    pathlib.Path("stuck.pid").write_text(str(__import__("os").getpid()))
    pathlib.Path("stuck.marker").write_text("x")
    time.sleep(300)
print("SELECT count(*) FROM genre")
"""


def test_ctrl_c_during_a_command_prediction(suite: pytest.Pytester, chinook_copy: Path) -> None:
    suite.makepyfile(hang=HANG)
    ids = _sql_suite(suite, {"source": "command", "command": [sys.executable, "hang.py"],
                             "timeout": 300})
    _check(suite, _interrupt(suite, scored_first=4), ids[:4])
    pid = int((suite.path / "stuck.pid").read_text())
    deadline = time.monotonic() + 30
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    try:
        assert not _alive(pid), "the stuck command survived the interrupted session"
    finally:
        if _alive(pid):
            os.kill(pid, 9)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


MARK_AND_ANSWER = """
import pathlib

def predict(case):
    if case["id"] == "c-stuck":
        pathlib.Path("stuck.marker").write_text("x")
        return pathlib.Path("pred.json").read_text()
    return '{"a": "b"}'
"""


@pytest.mark.slow
def test_ctrl_c_during_embedding(suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The SIGINT lands while sentence-transformers loads or encodes 40,000 texts."""
    pytest.importorskip("sentence_transformers")
    # a fresh venv's first import of torch and transformers writes their .pyc files, over a
    # minute under load (a CI run once aborted there, 60 s after its SIGINT): what this test
    # measures is the plugin's stop, so the import it interrupts is a warm one
    subprocess.run([sys.executable, "-c", "import sentence_transformers"], check=True,
                   capture_output=True, timeout=600)
    monkeypatch.setenv("QUERYEVAL_EMBEDDINGS_CACHE", str(suite.path / "embeddings"))
    rnd = random.Random(0)
    words = ["alpha", "beta", "gamma", "delta", "sensor", "valve", "pump", "zone", "air", "flow"]

    def text() -> str:
        return " ".join(rnd.choice(words) for _ in range(60))

    keys = [f"k{i}" for i in range(20_000)]  # minutes of encoding on a CPU
    (suite.path / "pred.json").write_text(json.dumps({k: text() for k in keys}))
    suite.makepyfile(model=MARK_AND_ANSWER)
    suite.makefile(".yaml", queryeval=dump({
        "predictions": {"source": "python", "function": "model:predict"}}))
    ok = {"columns": ["n"], "rows": [[1]]}
    # a case that finishes first (no embedding), so that the report has something to hold
    suite.makefile(".yaml", test_a_first=dump({
        "kind": "sql", "cases": [{"id": "first", "gold_result": ok, "predicted_result": ok}]}))
    suite.makefile(".yaml", test_json=dump({
        "kind": "json", "cases": [{"id": "c-stuck", "gold": {k: text() for k in keys}}]}))
    _check(suite, _interrupt(suite, delay=3.0, scored_first=1), ["first"])



SWALLOWING_METRIC = SCORED_CONFTEST + """
import pathlib, threading, time

def pytest_queryeval_metric_names(kind, config):
    return ["wrapped"]

def pytest_queryeval_metrics(case, prediction, scored, config):
    if case.id == "c-stuck":
        pathlib.Path("stuck.marker").write_text(threading.current_thread().name)
        try:  # a library that turns every failure into a result, as some do
            time.sleep(300)
        except BaseException:
            return {"wrapped": 0.0}
    return {"wrapped": 1.0}
"""


def test_ctrl_c_a_library_swallowed(suite: pytest.Pytester, chinook_copy: Path) -> None:
    """The Ctrl-C lands where a library turns it into an ordinary result (``transformers``
    once turned it into an import error, and the embedding case ended as "embedding model
    unavailable" while the session ran on): the session stops all the same, and that case is
    not scored."""
    suite.makefile(".yaml", queryeval=dump({
        "datasources": {"local": {"type": "sqlite", "path": "chinook.sqlite"}}}))
    ids = [f"c-{i:02d}" for i in range(4)] + ["c-stuck", "d-00"]
    suite.makefile(".yaml", test_cases=dump({
        "kind": "sql", "datasource": "local", "thresholds": {"execution_accuracy": 1.0},
        "cases": [{"id": i, "gold": "SELECT count(*) FROM genre",
                   "predicted": "SELECT count(*) FROM genre"} for i in ids]}))
    suite.makeconftest(SWALLOWING_METRIC)
    done = ctrl_c(suite, REPORT_ARGS, marker="stuck.marker", scored_first=4, reach_within=300,
                  delay=0.5, stop_within=60)[0]
    assert (suite.path / "stuck.marker").read_text() == "MainThread"
    _check(suite, done, ids[:4])
