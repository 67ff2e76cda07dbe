"""Issue 24 item 11: live models as they answer.

A chat-style service behind ``source: http`` (or a ``command``) answers "Here is the query:"
and a fenced block; ``extract: fenced`` takes the query out as the openai source does, and
without it the failure says so. A prediction that fails after its retries is an
infrastructure error unless the suite says ``failures: model``. A real SQLite database, a real
loopback HTTP server standing in for the model service, a real command.
"""

from __future__ import annotations

import sqlite3
import sys
from typing import Any

import pytest

from tests.fixtures.model_service import ModelService, Request
from tests.sdmx_cases import dump, outcomes_by_id
from tests.support import read_report, run_report

GOLD = "SELECT x FROM t ORDER BY x"
CHATTY = "Here is the query:\n\n```sql\nSELECT x FROM t ORDER BY x\n```\n\nIt lists every x."


class _Chat(ModelService):
    """Answers like a chat model: prose around a fenced SQL block; ``broken`` case ids get a
    500 on every attempt; ``wrong`` ones a fenced query with the wrong result."""

    def __init__(self) -> None:
        super().__init__()
        self.broken: set[str] = set()
        self.wrong: set[str] = set()

    def answer(self, request: Request) -> tuple[int, Any]:
        case_id = str(request.case_id)
        if case_id in self.broken:
            return 500, b"model overloaded"
        if case_id in self.wrong:
            return 200, {"text": CHATTY.replace("ORDER BY x", "WHERE x > 1")}
        return 200, {"text": CHATTY}


@pytest.fixture
def chat() -> Any:
    server = _Chat().start()
    yield server
    server.stop()


@pytest.fixture
def sql_suite(suite: pytest.Pytester) -> pytest.Pytester:
    with sqlite3.connect(suite.path / "db.sqlite") as con:
        con.execute("CREATE TABLE t (x INTEGER)")
        con.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (3,)])
    con.close()
    suite.makefile(".yaml", test_cases=dump({
        "kind": "sql", "datasource": "db", "thresholds": {"execution_accuracy": 1.0},
        "cases": [{"id": "up", "question": "all x", "gold": GOLD},
                  {"id": "down", "question": "all x again", "gold": GOLD}]}))
    return suite


def _config(pytester: pytest.Pytester, predictions: dict[str, Any]) -> None:
    pytester.makefile(".yaml", queryeval=dump({
        "datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
        "predictions": predictions}))


def _http(server: _Chat, **extra: Any) -> dict[str, Any]:
    return {"source": "http", "url": f"{server.url}/chat", "response_path": "text",
            "retries": 1, "backoff": 0.01, "timeout": 5, **extra}


def _report(pytester: pytest.Pytester, *args: str) -> tuple[Any, dict[str, Any]]:
    return run_report(pytester, *args)


def test_http_answer_with_a_fenced_block_fails_with_a_hint_then_extract_fenced_passes(
        sql_suite, chat):
    _config(sql_suite, _http(chat))
    result, report = _report(sql_suite)
    result.assert_outcomes(failed=2)
    reason = report["cases"][0]["reason"]
    assert "'Here' does not start an SQL statement" in reason
    assert "the answer contains a fenced code block; set extract: fenced" in reason
    _config(sql_suite, _http(chat, extract="fenced"))
    result, report = _report(sql_suite)
    result.assert_outcomes(passed=2)
    case = report["cases"][0]
    assert case["details"]["prediction"]["extraction"] == "```sql block"
    assert case["predicted"] == GOLD


def test_command_answer_extract_fenced(sql_suite):
    sql_suite.makepyfile(chat_model=f"print({CHATTY!r})")
    command = [sys.executable, "chat_model.py"]
    _config(sql_suite, {"source": "command", "command": command})
    result, report = _report(sql_suite)
    result.assert_outcomes(failed=2)
    assert "set extract: fenced" in report["cases"][0]["reason"]
    _config(sql_suite, {"source": "command", "command": command, "extract": "fenced"})
    result, report = _report(sql_suite)
    result.assert_outcomes(passed=2)
    assert report["cases"][1]["details"]["prediction"]["extraction"] == "```sql block"


def test_a_wrong_extract_value_is_named(sql_suite, chat):
    _config(sql_suite, _http(chat, extract="markdown"))
    result, report = _report(sql_suite)
    assert set(outcomes_by_id(report).values()) == {"error"}
    result.stdout.fnmatch_lines(["*predictions.extract: must be fenced*not 'markdown'*"])


def test_a_wrong_failures_value_is_named(sql_suite, chat):
    _config(sql_suite, _http(chat, failures="nobody"))
    result, report = _report(sql_suite)
    assert set(outcomes_by_id(report).values()) == {"error"}
    result.stdout.fnmatch_lines(["*queryeval.yaml:*: predictions.failures: must be error*"
                                 "not 'nobody'*"])


def test_failures_model_makes_a_failed_prediction_the_models_failure(sql_suite, chat):
    """Baseline: ``up`` passes, ``down`` fails. Then the service fails both after its retries:
    by default two errors that no verdict forgives and that block the baseline update; with
    ``failures: model`` a regression (``up``) and a known failure (``down``), and the update
    goes through."""
    chat.wrong = {"down"}
    _config(sql_suite, _http(chat, extract="fenced"))
    result, _ = _report(sql_suite, "--queryeval-update-baseline")
    result.assert_outcomes(passed=1, failed=1)
    assert (sql_suite.path / "queryeval-baseline.json").is_file()
    chat.broken = {"up", "down"}
    args = ("--queryeval-gating=baseline", "--queryeval-baseline=queryeval-baseline.json")

    result, report = _report(sql_suite, *args, "--queryeval-update-baseline")
    assert outcomes_by_id(report) == {"up": "error", "down": "error"}
    assert "2 case(s) ended in an error" in result.stdout.str()

    _config(sql_suite, _http(chat, extract="fenced", failures="model"))
    result, report = _report(sql_suite, *args)
    assert outcomes_by_id(report) == {"up": "failed", "down": "xfailed"}
    by_id = {c["id"]: c for c in report["cases"]}
    assert by_id["up"]["standing"] == "regression"
    assert by_id["down"]["standing"] == "failing since baseline"
    assert by_id["up"]["status"] == "failed"
    assert by_id["up"]["metrics"] == {"execution_accuracy": 0.0}
    assert "HTTP 500" in by_id["up"]["reason"]
    assert "predictions.failures: model" in by_id["up"]["reason"]

    result, report = _report(sql_suite, *args, "--queryeval-update-baseline")
    assert "ended in an error" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*baseline updated:*"])
    baseline = read_report(sql_suite.path / "queryeval-baseline.json")
    assert {c["id"]: c["status"] for c in baseline["cases"]} == {"up": "failed",
                                                                 "down": "failed"}
