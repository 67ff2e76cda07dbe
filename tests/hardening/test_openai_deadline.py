"""The openai source under a hard deadline and on the origin it was given, with the real
``openai`` client against loopback stand-ins for the user's model service (which cannot run
here): a raw TCP server that sends its status line and headers one byte every 2 s, and a server
answering ``307`` towards another port where the OpenAI stand-in listens.

The trickling case ends by its ``timeout`` (both attempts), with its reason and the seconds its
attempts took as the source measured them, within the sum of their timeouts, and the report is
written; the redirect
is an error that names where it pointed, and the other port receives nothing. The http source
follows a redirect only within its URL's origin: a 302 elsewhere (urllib turned it into a GET
with the configured headers, a key among them) is the case's error."""

from __future__ import annotations

import json
import socket
import socketserver
import sqlite3
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from tests.fixtures.openai_standin import KEY, MODEL, OpenAIStandin
from tests.fixtures.quiet_http import QuietHTTPServer

from .conftest import by_id, dump, no_traceback, read_report

pytest.importorskip("openai")

#: The trickled case: timeout 5 s, retries 1 (two attempts) and a short backoff.
TIMEOUT_S, ATTEMPTS, BACKOFF_S = 5, 2, 0.1
#: The seconds the two attempts may take at most, as the source measures them.
DEADLINE_S = ATTEMPTS * TIMEOUT_S + BACKOFF_S
STATUS_AND_HEADERS = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                      + b"X-Slow: " + b"a" * 400 + b"\r\n\r\n")


class _TrickleHandler(socketserver.BaseRequestHandler):
    """Reads the request, then sends the status line and headers one byte every 2 s."""

    def handle(self) -> None:
        sock: socket.socket = self.request
        data = b""
        while b"\r\n\r\n" not in data:
            part = sock.recv(65536)
            if not part:
                return
            data += part
        for i in range(len(STATUS_AND_HEADERS)):
            try:
                sock.sendall(STATUS_AND_HEADERS[i:i + 1])
            except OSError:
                return
            time.sleep(2)


class _TrickleServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


@pytest.fixture
def trickle_url() -> Iterator[str]:
    server = _TrickleServer(("127.0.0.1", 0), _TrickleHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def _suite(pytester: pytest.Pytester, base_url: str, **extra: object) -> None:
    conn = sqlite3.connect(pytester.path / "tiny.sqlite")
    conn.execute("CREATE TABLE t (x INTEGER)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.commit()
    conn.close()
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    pytester.makefile(".yaml", queryeval=dump({
        "datasources": {"db": {"type": "sqlite", "path": "tiny.sqlite"}},
        "predictions": {"source": "openai", "model": MODEL, "base_url": base_url,
                        "api_key": "${QE_TEST_KEY}", **extra}}))
    pytester.makefile(".yaml", test_cases=dump({
        "kind": "sql", "datasource": "db", "thresholds": {"execution_accuracy": 1.0},
        "cases": [{"id": "c1", "question": "How many rows?", "gold": "SELECT x FROM t"}]}))


def test_headers_trickled_a_byte_every_2_s_end_at_the_timeout(
        pytester: pytest.Pytester, trickle_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QE_TEST_KEY", KEY)
    _suite(pytester, trickle_url, timeout=TIMEOUT_S, retries=ATTEMPTS - 1, backoff=BACKOFF_S)
    # the old client waited per byte: 440 bytes x 2 s; the subprocess limit proves the end of
    # the process (a generous one: it includes start-up on a loaded machine)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--queryeval-json=r.json",
                                           timeout=DEADLINE_S + 300)
    no_traceback(result)
    case = by_id(read_report(pytester.path / "r.json"))["c1"]
    assert case["outcome"] == "error"
    prefix = (f"prediction error: {trickle_url} (model {MODEL}) failed: timed out: no complete "
              f"answer within {TIMEOUT_S} s after {ATTEMPTS} attempt(s) in ")
    assert case["error"].startswith(prefix) and case["error"].endswith(" s"), case["error"]
    # The bound is proved from what the run recorded, not from the wall clock around a pytest
    # subprocess (its start-up on a loaded machine took more than any fixed margin): the
    # source measures its attempts from the first request to the error. Each ends at its
    # deadline whatever the load (the wait sleeps; only waking up may lag): twice their sum is
    # the slack. A client that waits per byte records 880 s per attempt.
    took = float(case["error"][len(prefix):-2])
    assert ATTEMPTS * TIMEOUT_S <= took < 2 * DEADLINE_S, f"the attempts took {took} s"


class _Redirect(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    target = ""
    seen: list[str] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).seen.append(self.path)
        self.send_response(307)
        self.send_header("Location", self.target + "/chat/completions?token=secret-in-query")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_a_redirect_to_another_origin_is_not_followed(
        pytester: pytest.Pytester, openai_standin: OpenAIStandin,
        monkeypatch: pytest.MonkeyPatch) -> None:
    _Redirect.target = openai_standin.base_url
    _Redirect.seen = []
    server = QuietHTTPServer(("127.0.0.1", 0), _Redirect)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("QE_TEST_KEY", KEY)
        base = f"http://127.0.0.1:{server.server_address[1]}/v1"
        _suite(pytester, base, retries=0)
        result = pytester.runpytest("-p", "no:cacheprovider", "--queryeval-json=r.json")
        no_traceback(result)
    finally:
        server.shutdown()
        server.server_close()
    case = by_id(read_report(pytester.path / "r.json"))["c1"]
    port = openai_standin.base_url.split(":")[2].split("/")[0]
    assert case["outcome"] == "error"
    assert case["error"] == (
        f"prediction error: {base} (model {MODEL}): HTTP 307 (a redirect to "
        f"http://127.0.0.1:{port}, not followed: requests go only to base_url; set it to the "
        "server that answers)"), case["error"]
    assert _Redirect.seen == ["/v1/chat/completions"]
    assert openai_standin.requests == []  # the prompt never reached the other port
    assert json.dumps(case).count("secret-in-query") == 0


class _Recorder(BaseHTTPRequestHandler):
    """The other origin: records whatever reaches it."""

    seen: list[tuple[str, str, str | None]] = []

    def _record(self) -> None:
        type(self).seen.append((self.command, self.path, self.headers.get("Authorization")))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    do_GET = do_POST = _record

    def log_message(self, *args: object) -> None:
        pass


def test_the_http_source_follows_no_redirect_to_another_origin(
        pytester: pytest.Pytester) -> None:
    _Recorder.seen = []
    other = QuietHTTPServer(("127.0.0.1", 0), _Recorder)
    other.daemon_threads = True
    threading.Thread(target=other.serve_forever, daemon=True).start()

    class Found(_Redirect):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.1:{other.server_address[1]}/steal")
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = QuietHTTPServer(("127.0.0.1", 0), Found)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/predict"
    try:
        _suite(pytester, "http://unused/v1")
        pytester.makefile(".yaml", queryeval=dump({
            "datasources": {"db": {"type": "sqlite", "path": "tiny.sqlite"}},
            "predictions": {"source": "http", "url": url, "retries": 0,
                            "headers": {"Authorization": "Bearer sk-http-secret-123456"}}}))
        result = pytester.runpytest("-p", "no:cacheprovider", "--queryeval-json=r.json")
        no_traceback(result)
    finally:
        for srv in (server, other):
            srv.shutdown()
            srv.server_close()
    case = by_id(read_report(pytester.path / "r.json"))["c1"]
    assert case["outcome"] == "error"
    assert case["error"].startswith(
        f"prediction error: POST {url} failed: HTTP 302 Found after 1 attempt(s)"), case["error"]
    assert _Recorder.seen == []  # neither the request nor the key reached the other origin
