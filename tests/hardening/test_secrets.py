"""Secrets — passwords in URLs, ``${VAR}`` values — never reach the terminal, the JSON, junit,
Excel, HTML or Markdown reports, or failure messages: every output is grepped, for a serial run
and under xdist, with cases that pass, fail (with row diffs) and error (unreachable sources,
bad credentials, a failing predictor), and a prediction that echoes a secret back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.model_service import ModelService, Request
from tests.fixtures.postgres import PostgresServer

from .conftest import by_id, check_all_reports, dump, no_traceback, run_with_all_reports

TOKEN = "tok-9f8e7d6c5b4a-secret"
URL_TOKEN = "urltok-1a2b3c4d5e"
SPARQL_PW = "sparql-pw-77aa88bb"
WRONG_PW = "Wr0ng-pw-x1y2z3"


class _Echo(ModelService):
    """A predictor service: /ok answers right, /echo puts the Authorization header it got into
    the predicted SQL (a model leaking its credentials), /e500 fails."""

    def answer(self, request: Request) -> tuple[int, object]:
        path = request.path.split("?")[0].strip("/")
        if path == "e500":
            return 500, b""
        sql = "SELECT count(*) FROM genre"
        if path == "echo":
            sql = f"SELECT '{request.headers.get('Authorization')}' AS leaked, " \
                f"'{request.path}' AS url"
        return 200, {"sql": sql}


@pytest.fixture
def echo_server() -> Iterator[str]:
    server = _Echo().start()
    yield server.url
    server.stop()


@pytest.mark.postgres
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_no_secret_in_any_output(suite: pytest.Pytester, postgres_server: PostgresServer,
                                 chinook_copy: Path, echo_server: str,
                                 monkeypatch: pytest.MonkeyPatch, workers: list[str]) -> None:
    pg_pw = postgres_server.password
    monkeypatch.setenv("QE_PG_PASSWORD", pg_pw)
    monkeypatch.setenv("QE_TOKEN", TOKEN)
    monkeypatch.setenv("QE_URL_TOKEN", URL_TOKEN)
    monkeypatch.setenv("QE_SPARQL_PW", SPARQL_PW)
    port = postgres_server.port
    suite.makefile(".yaml", queryeval=dump({
        "datasources": {
            # the superuser's password is the secret under test: allowed explicitly
            "pg_env": {"type": "sqlalchemy", "allow_privileged": True,
                       "url": f"postgresql+psycopg://queryeval:${{QE_PG_PASSWORD}}@127.0.0.1:{port}/chinook"},
            "pg_literal": {"type": "sqlalchemy", "url": postgres_server.url(),
                           "allow_privileged": True},
            "pg_badpw": {"type": "sqlalchemy", "url": postgres_server.url(password=WRONG_PW)},
            "local": {"type": "sqlite", "path": "chinook.sqlite"},
            "graph": {"type": "sparql", "retries": 0,
                      "endpoint": "http://qe:${QE_SPARQL_PW}@127.0.0.1:9/query"},
        },
        "predictions": {"source": "http", "url": echo_server + "/{id}?token=${QE_URL_TOKEN}",
                        "headers": {"Authorization": "Bearer ${QE_TOKEN}"},
                        "response_path": "sql", "retries": 0, "timeout": 5},
    }))
    genre = "SELECT count(*) FROM genre"
    suite.makefile(".yaml", test_sql=dump({
        "kind": "sql", "thresholds": {"execution_accuracy": 1.0},
        "cases": [
            {"id": "pg-env-pass", "datasource": "pg_env", "gold": genre, "predicted": genre},
            {"id": "pg-env-fail", "datasource": "pg_env", "gold": "SELECT name FROM genre",
             "predicted": "SELECT name FROM artist LIMIT 5"},
            {"id": "pg-literal-fail", "datasource": "pg_literal", "gold": genre,
             "predicted": f"SELECT '{pg_pw}' AS pw"},
            {"id": "pg-badpw", "datasource": "pg_badpw", "gold": genre, "predicted": genre},
            {"id": "ok", "datasource": "local", "gold": genre},
            {"id": "echo", "datasource": "local", "gold": genre},
            {"id": "e500", "datasource": "local", "gold": genre},
        ]}))
    suite.makefile(".yaml", test_graph=dump({
        "kind": "sparql", "datasource": "graph", "cases": [
            {"id": "sparql-down", "gold": "SELECT ?s WHERE { ?s ?p ?o } LIMIT 1",
             "predicted": "SELECT ?s WHERE { ?s ?p ?o } LIMIT 1"}]}))
    result, report = run_with_all_reports(suite, "-vv", "-rA", "--queryeval-tags",
                                          "--queryeval-worst=20", *workers,
                                          subprocess=bool(workers))
    no_traceback(result)
    recs = by_id(report)
    outcomes = {k: v["outcome"] for k, v in recs.items()}
    assert outcomes == {"pg-env-pass": "passed", "pg-env-fail": "failed",
                        "pg-literal-fail": "failed", "pg-badpw": "error", "ok": "passed",
                        "echo": "failed", "e500": "error", "sparql-down": "error"}
    # the secrets really were used and really were in the text before masking
    assert "password authentication failed" in recs["pg-badpw"]["error"]
    assert "queryeval:***@" in recs["pg-badpw"]["error"]
    assert recs["echo"]["predicted"].startswith("SELECT 'Bearer ***' AS leaked")
    assert recs["pg-literal-fail"]["predicted"] == "SELECT '***' AS pw"
    assert "HTTP 500" in recs["e500"]["error"]
    texts = check_all_reports(suite.path, list(recs))
    texts["terminal"] = result.stdout.str() + result.stderr.str()
    assert "pg-env-fail" in texts["terminal"] and "missing" in texts["terminal"].lower()
    for secret in (pg_pw, TOKEN, URL_TOKEN, SPARQL_PW, WRONG_PW):
        leaks = [name for name, text in texts.items() if secret in text]
        assert not leaks, f"secret {secret[:4]}… leaked into {leaks}"
    # and nothing in the directory other than the reports holds them either
    for path in suite.path.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".xml", ".html", ".md", ".txt", ".log"):
            text = path.read_text(errors="replace")
            assert not any(s in text for s in (pg_pw, TOKEN, URL_TOKEN, SPARQL_PW, WRONG_PW)), path
