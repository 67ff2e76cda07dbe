"""Secrets in forms the first scrubber missed, grepped in all six outputs (JSON, HTML, Markdown,
Excel, junit, terminal): a URL password containing ``/`` or a space (both accepted by
SQLAlchemy) when the source is down, and a ``${VAR}`` value a model echoes into SQL that
sqlglot cannot parse (sqlglot logs the statement in a warning, which pytest captures into the
terminal and junit reports)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.model_service import ModelService, Request

from .conftest import by_id, check_all_reports, dump, no_traceback, run_with_all_reports

SLASH_PW = "sl/ash-pw-4f3e"
SPACE_PW = "spa ce-pw-9a8b"
TOKEN = "tok-echo-5d6c7b8a"


class _Echo(ModelService):
    """A model that puts the Authorization header it got into a statement sqlglot cannot
    parse (it falls back to a Command and logs a warning holding the text)."""

    def answer(self, request: Request) -> tuple[int, object]:
        return 200, {"sql": f"EXPLAIN SELECT '{request.headers.get('Authorization')}'"}


@pytest.fixture
def echo_server() -> Iterator[str]:
    server = _Echo().start()
    yield server.url
    server.stop()


def test_url_passwords_with_slash_or_space_and_logged_echoes(
        suite: pytest.Pytester, chinook_copy: Path, echo_server: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QE_TOKEN", TOKEN)
    down = "127.0.0.1:9"  # nothing listens: the source is down
    suite.makefile(".yaml", queryeval=dump({
        "datasources": {
            "pg_slash": {"type": "sqlalchemy",
                         "url": f"postgresql+psycopg://qe:{SLASH_PW}@{down}/chinook"},
            "pg_space": {"type": "sqlalchemy",
                         "url": f"postgresql+psycopg://qe:{SPACE_PW}@{down}/chinook"},
            "local": {"type": "sqlite", "path": "chinook.sqlite"},
        },
        "predictions": {"source": "http", "url": echo_server + "/{id}",
                        "headers": {"Authorization": "Bearer ${QE_TOKEN}"},
                        "response_path": "sql", "retries": 0, "timeout": 5},
    }))
    genre = "SELECT count(*) FROM genre"
    suite.makefile(".yaml", test_sql=dump({
        "kind": "sql", "thresholds": {"execution_accuracy": 1.0},
        "cases": [
            {"id": "slash-down", "datasource": "pg_slash", "gold": genre, "predicted": genre},
            {"id": "space-down", "datasource": "pg_space", "gold": genre, "predicted": genre},
            {"id": "echo-unparsable", "datasource": "local", "gold": genre},
        ]}))
    result, report = run_with_all_reports(suite, "-vv", "-rA", "--log-level=DEBUG",
                                          "--queryeval-worst=20")
    no_traceback(result)
    recs = by_id(report)
    assert recs["slash-down"]["outcome"] == "error"
    assert recs["space-down"]["outcome"] == "error"
    assert recs["echo-unparsable"]["outcome"] == "failed"
    assert recs["echo-unparsable"]["predicted"] == "EXPLAIN SELECT 'Bearer ***'"
    texts = check_all_reports(suite.path, list(recs))
    texts["terminal"] = result.stdout.str() + result.stderr.str()
    for secret in (SLASH_PW, SPACE_PW, TOKEN, "sl/ash", "spa ce"):
        leaks = [name for name, text in texts.items() if secret in text]
        assert not leaks, f"secret {secret[:4]}… leaked into {leaks}"
