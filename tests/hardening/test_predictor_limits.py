"""HTTP and command prediction sources under a hard deadline and a byte cap, with real loopback
servers and real commands: a server trickling a byte every 2 s, a server streaming 256 MiB (made
on the fly, never held), a command printing 256 MiB and a command that hangs with a child of its
own. Each case ends by its own ``timeout`` or ``max_bytes`` with a precise reason, the honest case
passes, the hanging command's whole process group is gone, and the peak RSS of the pytest process
(measured inside that subprocess) stays within PREDICTOR_RSS_BUDGET_MIB of the same suite's honest
case alone (docs/reference.md, "Limits for untrusted input"). No timing is asserted; a generous outer limit
only proves the run ends."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from .conftest import by_id, dump, read_report

#: What the hostile cases may add to the peak RSS over the honest case alone: the cap is
#: 16 MiB per answer (default max_bytes); without it, the bodies below (256 MiB) were
#: buffered whole, decoded and parsed (over 700 MiB).
PREDICTOR_RSS_BUDGET_MIB = 150
BIG = 256 * 1024 * 1024

MEASURE = """
import resource, sys
import pytest
rc = pytest.main(sys.argv[1:])
print(f"QE_PEAK_RSS_KIB={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}")
sys.exit(rc)
"""


class _Hostile(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        path = self.path.strip("/")
        if path == "honest":
            body = json.dumps({"sql": "SELECT x FROM t"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif path == "trickle":  # headers, then one byte every 2 s, for ever
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            with_stop(lambda: (self.wfile.write(b"S"), self.wfile.flush(), time.sleep(2)))
        elif path == "huge":  # 256 MiB, generated as it is sent
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(BIG))
            self.end_headers()
            chunk = b"SELECT 1 " * 7282 + b"12"  # 65,540 bytes
            sent = 0
            while sent < BIG:
                part = chunk[: BIG - sent]
                try:
                    self.wfile.write(part)
                except OSError:
                    return
                sent += len(part)

    def log_message(self, *args: object) -> None:
        pass


def with_stop(step: Any) -> None:
    for _ in range(300):
        try:
            step()
        except OSError:
            return


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # the client gave up: a broken pipe here is expected


@pytest.fixture
def hostile_server() -> Iterator[str]:
    server = _Server(("127.0.0.1", 0), _Hostile)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _measure(directory: Path) -> tuple[dict[str, Any], float, str]:
    (directory / "measure.py").write_text(MEASURE)
    (directory / "report.json").unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "measure.py", "-p", "no:cacheprovider", "--queryeval-json=report.json",
         "-k", "honest" if (directory / "HONEST_ONLY").exists() else ""],
        cwd=directory, capture_output=True, text=True, timeout=300, check=False)
    out = done.stdout + done.stderr
    assert "Traceback (most recent call last)" not in out, out[-3000:]
    line = next(x for x in out.splitlines() if x.startswith("QE_PEAK_RSS_KIB="))
    return read_report(directory / "report.json"), int(line.split("=")[1]) / 1024, out


def _suite(pytester: pytest.Pytester, predictions: dict[str, Any], ids: list[str]) -> None:
    conn = sqlite3.connect(pytester.path / "tiny.sqlite")
    conn.execute("CREATE TABLE t (x INTEGER)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.commit()
    conn.close()
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    pytester.makefile(".yaml", queryeval=dump({
        "datasources": {"db": {"type": "sqlite", "path": "tiny.sqlite"}},
        "predictions": predictions}))
    pytester.makefile(".yaml", test_cases=dump({
        "kind": "sql", "datasource": "db", "thresholds": {"execution_accuracy": 1.0},
        "cases": [{"id": i, "gold": "SELECT x FROM t"} for i in ids]}))


def _run_both(pytester: pytest.Pytester) -> tuple[dict[str, dict[str, Any]], float, float, str]:
    (pytester.path / "HONEST_ONLY").touch()
    honest, honest_rss, _ = _measure(pytester.path)
    assert [c["outcome"] for c in honest["cases"]] == ["passed"]
    (pytester.path / "HONEST_ONLY").unlink()
    report, rss, out = _measure(pytester.path)
    return by_id(report), rss, honest_rss, out


def test_http_predictor_deadline_and_byte_cap(pytester: pytest.Pytester,
                                              hostile_server: str) -> None:
    _suite(pytester, {"source": "http", "url": hostile_server + "/{id}", "response_path": "sql",
                      "timeout": 2, "retries": 0}, ["honest", "trickle", "huge"])
    recs, rss, honest_rss, out = _run_both(pytester)
    assert recs["honest"]["outcome"] == "passed"
    url = hostile_server + "/{id}"  # the template: the rendered URL may carry case data
    assert recs["trickle"]["outcome"] == "error"
    assert recs["trickle"]["error"].startswith(
        f"prediction error: POST {url} failed: timed out: no complete answer within "
        "2 s after 1 attempt(s)"), recs["trickle"]["error"]
    assert recs["huge"]["outcome"] == "error"
    assert recs["huge"]["error"].startswith(
        f"prediction error: POST {url}: the response body holds more than max_bytes "
        "(16,777,216 bytes;"), recs["huge"]["error"]
    assert rss - honest_rss < PREDICTOR_RSS_BUDGET_MIB, (
        f"peak RSS {rss:.0f} MiB vs {honest_rss:.0f} MiB for the honest case alone\n{out[-2000:]}")


COMMAND = """
import json, os, subprocess, sys, time
case = json.load(sys.stdin)
if case["id"] == "honest":
    print("SELECT x FROM t")
elif case["id"] == "flood":
    chunk = "x" * 65536
    for _ in range(4096):  # 256 MiB
        sys.stdout.write(chunk)
elif case["id"] == "hang":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    with open("hang.pids", "w") as fh:
        fh.write(f"{os.getpid()} {child.pid}")
    time.sleep(300)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (not yet reaped by its parent) is dead for our purpose
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_command_predictor_deadline_and_byte_cap(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(model=COMMAND)
    _suite(pytester, {"source": "command", "command": [sys.executable, "model.py"],
                      "timeout": 3}, ["honest", "flood", "hang"])
    recs, rss, honest_rss, out = _run_both(pytester)
    assert recs["honest"]["outcome"] == "passed"
    assert recs["flood"]["outcome"] == "error"
    assert recs["flood"]["error"] == ("prediction error: command printed more than max_bytes "
                                      "(16,777,216 bytes) (killed)")
    assert recs["hang"]["outcome"] == "error"
    assert recs["hang"]["error"] == "prediction error: command timed out after 3 s (killed)"
    pids = [int(p) for p in (pytester.path / "hang.pids").read_text().split()]
    try:
        deadline = time.monotonic() + 30
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(p) for p in pids), "the command's process group survived"
    finally:
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert rss - honest_rss < PREDICTOR_RSS_BUDGET_MIB, (
        f"peak RSS {rss:.0f} MiB vs {honest_rss:.0f} MiB for the honest case alone\n{out[-2000:]}")
