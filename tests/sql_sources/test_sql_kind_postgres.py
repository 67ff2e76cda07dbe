"""SqlKind against the loopback PostgreSQL server: refusals, timeouts, masking, SQLite parity."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.engine import Evaluator
from pytest_queryeval.errors import SourceUnavailable
from pytest_queryeval.kinds.sql import SqlKind
from tests.fixtures.postgres import PostgresServer

from .attacks import POSTGRES
from .conftest import make_case

pytestmark = pytest.mark.postgres
KIND = SqlKind()


@pytest.fixture
def pg_spec(postgres_url: str) -> dict[str, Any]:
    return {"type": "sqlalchemy", "url": postgres_url}


def test_correct_prediction_with_structure(pg_spec: dict[str, Any], session: Evaluator) -> None:
    case = make_case("SELECT count(*) FROM album WHERE artist_id = 1", spec=pg_spec)
    s = KIND.evaluate(case, "SELECT COUNT(*) FROM album WHERE artist_id = 1", session)
    assert s.reason is None
    assert s.metrics["execution_accuracy"] == 1.0
    assert s.metrics["exact_set_match"] == 1.0  # schema introspected through SQLAlchemy
    assert s.labels["hardness"] == "easy"


@pytest.mark.parametrize("sql", POSTGRES)
def test_refused_predictions(
    pg_spec: dict[str, Any], postgres_server: PostgresServer, session: Evaluator, sql: str
) -> None:
    before = postgres_server.checksum()
    s = KIND.evaluate(make_case("SELECT count(*) FROM genre", spec=pg_spec), sql, session)
    assert s.reason is not None
    assert s.reason.startswith("refused: ")
    assert s.metrics["execution_accuracy"] == 0.0
    assert postgres_server.checksum() == before


def test_timeout_and_failure(pg_spec: dict[str, Any], session: Evaluator,
                             postgres_server: PostgresServer) -> None:
    case = make_case("SELECT 1", spec=pg_spec, options={"timeout": 0.5})
    s = KIND.evaluate(case, "SELECT count(*) FROM track a, track b, track c", session)
    assert s.reason == "timeout: query exceeded 0.5 s"
    assert s.metrics["execution_accuracy"] == 0.0
    s = KIND.evaluate(case, "SELECT * FROM nowhere", session)
    assert s.reason == 'query failed: relation "nowhere" does not exist'
    assert postgres_server.readonly_password not in repr(s)


def test_server_down_is_source_unavailable(postgres: PostgresServer, session: Evaluator) -> None:
    case = make_case("SELECT 1", spec={"type": "sqlalchemy", "url": postgres.readonly_url()})
    with postgres.down(), pytest.raises(SourceUnavailable) as info:
        KIND.evaluate(case, "SELECT 1", session)
    assert postgres.readonly_password not in info.value.reason()
    assert "***" in info.value.reason()


def test_same_answer_on_sqlite_and_postgres(
    pg_spec: dict[str, Any], chinook_sqlite: Path, session: Evaluator
) -> None:
    """The same question on both engines: Decimal (PostgreSQL) vs float (SQLite) totals."""
    pg = make_case("SELECT billing_country, sum(total) FROM invoice GROUP BY billing_country",
                   spec=pg_spec, name="pg")
    lite = make_case("SELECT billingcountry, sum(total) FROM invoice GROUP BY billingcountry",
                     spec={"type": "sqlite", "path": str(chinook_sqlite)}, name="lite")
    pred_pg = "SELECT billing_country, SUM(total) AS s FROM invoice GROUP BY 1 ORDER BY s"
    pred_lite = "SELECT billingcountry, SUM(total) AS s FROM invoice GROUP BY 1 ORDER BY s"
    assert KIND.evaluate(pg, pred_pg, session).metrics["execution_accuracy"] == 1.0
    assert KIND.evaluate(lite, pred_lite, session).metrics["execution_accuracy"] == 1.0


def test_gold_cache_keyed_by_url_and_version(postgres_url: str, session: Evaluator) -> None:
    def run(version: int | None) -> Any:
        spec: dict[str, Any] = {"type": "sqlalchemy", "url": postgres_url}
        if version is not None:
            spec["version"] = version
        case = make_case("SELECT count(*) FROM artist", spec=spec, name=f"pg{version}")
        return KIND.evaluate(case, "SELECT count(*) FROM artist", session)

    assert run(1).details["gold_cached"] is False
    assert run(1).details["gold_cached"] is True
    assert run(2).details["gold_cached"] is False  # data changed: the suite bumps version
    keys = list(session._cache.data)  # type: ignore[union-attr]
    assert keys
    assert all("pw-" not in json.dumps(session._cache.data[k]) for k in keys)  # type: ignore[union-attr]
