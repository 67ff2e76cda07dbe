"""A dead endpoint costs seconds, not minutes (issue 59 item 4): each live network source is
checked once when the run starts (its preflight) and stops asking after a few consecutive
connection failures (its breaker). Real sockets throughout: a closed port is a bound socket
that does not listen (the kernel refuses every connection), a hung server a socket that
listens and never accepts (the kernel completes the handshake and nothing answers), a server
that is up the OpenAI stand-in (tests/fixtures/openai_standin.py: a real model cannot run
here). What is asserted is what the run records (each case's reason and the connection
attempts its source had made), not wall-clock time."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from tests.fixtures.openai_standin import KEY, MODEL, OpenAIStandin
from tests.fixtures.quiet_http import QuietHTTPServer
from tests.sdmx_cases import GDP, dump, sdmx_case, selection
from tests.support import run_report

CASES = 40


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port that refuses connections, held for the test (bound, never listening)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


@pytest.fixture
def hung_port() -> Iterator[socket.socket]:
    """A server that is hung: it listens (the kernel accepts connections into its queue) and
    never accepts one nor answers. The test counts the connections queued afterwards."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    try:
        yield sock
    finally:
        sock.close()


def _cases(pytester: pytest.Pytester, n: int = CASES) -> list[str]:
    ids = [f"case-{i:03d}" for i in range(n)]
    pytester.makefile(".yaml", test_cases=dump({
        "kind": "sdmx", "thresholds": {"macro_precision": 1.0},
        "cases": [sdmx_case(i, selection(GDP)) for i in ids]}))
    return ids


def _http(pytester: pytest.Pytester, port: int, extra: str = "", retries: int = 3) -> None:
    pytester.makefile(".yaml", queryeval=(
        "predictions:\n"
        "  source: http\n"
        f"  url: http://127.0.0.1:{port}/predict\n"
        "  body: {case: '{case}'}\n"
        "  response_path: predicted\n"
        f"  retries: {retries}\n"
        "  concurrency: 4\n" + extra))


def _errors(report: object) -> dict[str, dict[str, object]]:
    cases = report["cases"]  # type: ignore[index]
    return {c["id"]: c for c in cases if c["outcome"] == "error"}


def test_a_closed_port_is_found_by_the_preflight_and_no_case_is_asked(suite, closed_port):
    ids = _cases(suite)
    _http(suite, closed_port)
    start = time.monotonic()
    _, report = run_report(suite)
    took = time.monotonic() - start
    errors = _errors(report)
    assert sorted(errors) == ids  # every case, each with its record in the report
    reasons = {str(c["error"]) for c in errors.values()}
    assert len(reasons) == 1, reasons  # one reason, the same for every case
    reason = reasons.pop()
    assert f"queryeval.yaml:1: predictions: POST http://127.0.0.1:{closed_port}/predict did " \
           "not answer the preflight check: cannot connect to 127.0.0.1" in reason
    assert "none of its cases is asked (preflight: false skips the check)" in reason
    # the preflight's connection was the only one: no case made an attempt (with retries: 3
    # each case made 4, 160 in all, before)
    assert {c["details"]["source_down"]["connection_attempts"] for c in errors.values()} == {1}
    print(f"40 cases against a closed port: {took:.2f} s")


def test_the_breaker_stops_a_source_after_consecutive_connection_failures(suite, closed_port):
    """Without the preflight, the source stops after ``stop_after`` failed connections: the
    requests already running stop at their next attempt, the others are not made."""
    ids = _cases(suite)
    _http(suite, closed_port, "  preflight: false\n  stop_after: 3\n  backoff: 0.05\n")
    _, report = run_report(suite)
    errors = _errors(report)
    assert sorted(errors) == ids
    reasons = {str(c["error"]) for c in errors.values()}
    assert len(reasons) == 1, reasons
    assert f"queryeval.yaml:1: predictions: stopped asking POST http://127.0.0.1:{closed_port}/" \
           "predict after 3 consecutive connection failures (the last: ConnectionRefusedError" \
           in reasons.pop()
    attempts = {c["details"]["source_down"]["connection_attempts"] for c in errors.values()}
    # 3 failures open it; at most the 3 other running requests were then mid-attempt
    assert max(attempts) <= 3 + 3, attempts


def test_server_answers_are_not_connection_failures(suite, model_service_500):
    """HTTP 500 after the retries is each case's own error: the server is up, so the source
    keeps asking (every case asked, none stopped by the breaker)."""
    ids = _cases(suite, 8)
    _http(suite, model_service_500.port, "  stop_after: 2\n", retries=0)
    _, report = run_report(suite)
    errors = _errors(report)
    assert sorted(errors) == ids
    assert all("HTTP 500" in str(c["error"]) and "source_down" not in c["details"]
               for c in errors.values())
    assert model_service_500.requests == len(ids)


def test_a_hung_openai_server_fails_the_preflight_within_its_timeout(suite, hung_port,
                                                                     monkeypatch):
    """A server that accepts and never answers cost timeout x attempts per case (8 minutes
    with the defaults); its preflight (GET /models) is bounded by ``preflight_timeout``."""
    ids = _cases(suite, 12)
    port = hung_port.getsockname()[1]
    monkeypatch.setenv("STANDIN_KEY", KEY)
    suite.makefile(".yaml", queryeval=(
        "predictions:\n"
        "  source: openai\n"
        f"  model: {MODEL}\n"
        f"  base_url: http://127.0.0.1:{port}/v1\n"
        "  api_key: ${STANDIN_KEY}\n"
        "  preflight_timeout: 1\n"))
    start = time.monotonic()
    _, report = run_report(suite)
    took = time.monotonic() - start
    errors = _errors(report)
    assert sorted(errors) == ids
    reasons = {str(c["error"]) for c in errors.values()}
    assert reasons == {
        f"prediction error: queryeval.yaml:1: predictions: http://127.0.0.1:{port}/v1 (model "
        f"{MODEL}) did not answer the preflight check: no answer from 127.0.0.1:{port} within 1 s; "
        "none of its cases "
        "is asked (preflight: false skips the check)"}, reasons
    assert {c["details"]["source_down"]["connection_attempts"] for c in errors.values()} == {1}
    assert _queued(hung_port) == 1  # the server saw the preflight's connection only
    print(f"12 cases against a hung server: {took:.2f} s")


def test_the_other_models_still_run(suite, closed_port, openai_standin: OpenAIStandin,
                                    monkeypatch):
    """One model's server is down: its cases error with its own located reason; the other
    model's are asked and scored."""
    ids = _cases(suite, 6)
    openai_standin.answers.update({f"Question {i}": selection(GDP) for i in ids})
    monkeypatch.setenv("STANDIN_KEY", KEY)
    suite.makefile(".yaml", queryeval=(
        "predictions:\n"
        "  up:\n"
        "    source: openai\n"
        f"    model: {MODEL}\n"
        f"    base_url: {openai_standin.base_url}\n"
        "    api_key: ${STANDIN_KEY}\n"
        "  down:\n"
        "    source: openai\n"
        f"    model: {MODEL}\n"
        f"    base_url: http://127.0.0.1:{closed_port}/v1\n"
        "    api_key: ${STANDIN_KEY}\n"))
    _, report = run_report(suite)
    errors = _errors(report)
    assert sorted(errors) == [f"{i}[down]" for i in ids]
    assert {str(c["error"]).split(" did not")[0] for c in errors.values()} == {
        f"prediction error: queryeval.yaml:7: predictions.down: http://127.0.0.1:{closed_port}"
        f"/v1 (model {MODEL})"}
    up = [c for c in report["cases"] if c["id"].endswith("[up]")]
    assert len(up) == len(ids) and all(c["outcome"] != "error" for c in up), up
    assert len(openai_standin.requests) == len(ids)  # each of its cases asked once


def test_the_guards_keys_are_checked(suite, closed_port):
    _cases(suite, 2)
    _http(suite, closed_port, "  stop_after: -1\n")
    _, report = run_report(suite)
    assert {str(c["error"]) for c in report["cases"]} == {
        "prediction error: predictions.stop_after: must be a whole number >= 0 (0: never stop "
        "asking), not -1"}


def _queued(listener: socket.socket) -> int:
    """The connections waiting in a listening socket's queue (accepted and closed here)."""
    listener.setblocking(False)
    count = 0
    while True:
        try:
            conn, _ = listener.accept()
        except BlockingIOError:
            return count
        conn.close()
        count += 1


class _Failing:
    """A loopback server that answers every request with HTTP 500 (the server is up)."""

    def __init__(self) -> None:
        import http.server
        import threading

        owner = self
        self.requests = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner.requests += 1
                self.send_response(500)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                return None

        self.server = QuietHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_port
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def model_service_500() -> Iterator[_Failing]:
    server = _Failing()
    try:
        yield server
    finally:
        server.server.shutdown()
        server.server.server_close()


def test_under_xdist_each_worker_checks_once(suite, closed_port):
    """``-n 2``: each worker's preflight finds the port closed; no case is asked."""
    ids = _cases(suite, 12)
    _http(suite, closed_port)
    _, report = run_report(suite, "-n", "2", subprocess=True)
    errors = _errors(report)
    assert sorted(errors) == ids
    assert all("did not answer the preflight check" in str(c["error"]) for c in errors.values())
    assert {c["details"]["source_down"]["connection_attempts"] for c in errors.values()} == {1}


def test_a_hung_http_server_fails_the_preflight_within_its_timeout(suite, hung_port):
    """The http source's preflight is ``HEAD url``, answered within ``preflight_timeout``: a
    server that accepts connections and never answers (a TCP connection alone passed it, and
    each case then cost the timeout times its attempts) errors every case at once."""
    ids = _cases(suite, 12)
    port = hung_port.getsockname()[1]
    _http(suite, port, "  preflight_timeout: 1\n  timeout: 30\n")
    _, report = run_report(suite)
    errors = _errors(report)
    assert sorted(errors) == ids
    reasons = {str(c["error"]) for c in errors.values()}
    assert len(reasons) == 1, reasons
    (reason,) = reasons
    assert f"no answer from 127.0.0.1:{port} within 1 s" in reason, reason
    assert "did not answer the preflight check" in reason
    assert {c["details"]["source_down"]["connection_attempts"] for c in errors.values()} == {1}
    assert _queued(hung_port) == 1  # the preflight's connection only: no case was asked


class _Resetting:
    """A loopback listener that resets its first ``resets`` connections (SO_LINGER 0: the
    kernel sends RST, as it does for the connections queued at a listener that closes), then
    answers HTTP. Real sockets; the fault is the kernel's."""

    def __init__(self, resets: int) -> None:
        import socket
        import struct
        import threading

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0

        def serve() -> None:
            while True:
                try:
                    conn, _ = self.sock.accept()
                except OSError:
                    return
                self.accepted += 1
                if self.accepted <= resets:
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    conn.close()
                    continue
                conn.recv(1024)
                conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                conn.close()

        threading.Thread(target=serve, daemon=True).start()

    def close(self) -> None:
        self.sock.close()


def test_a_reset_connection_is_tried_again_by_the_preflight():
    """One reset made the source dead for the run (every case of it an error: the e2e soak's
    example agents, whose stand-in shares its port with other runs); the preflight tries a
    reset connection again, within its timeout, and a server that keeps resetting is still
    found. Fails before: the first server was reported unreachable."""
    from pytest_queryeval.predict.breaker import PREFLIGHT_TRIES, answer_check

    once = _Resetting(1)
    always = _Resetting(10**6)
    try:
        assert answer_check(f"http://127.0.0.1:{once.port}/v1/models", 5.0) is None
        assert once.accepted == 2
        why = answer_check(f"http://127.0.0.1:{always.port}/v1/models", 5.0)
        assert why is not None and "reset" in why.lower(), why
        assert always.accepted == PREFLIGHT_TRIES
    finally:
        once.close()
        always.close()
