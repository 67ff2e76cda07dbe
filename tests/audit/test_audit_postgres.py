"""The gold audit on the loopback PostgreSQL server (Chinook, read-only role)."""

from __future__ import annotations

import pytest

from .test_audit import _free_port, _yaml, codes, finding, run

pytestmark = pytest.mark.postgres


def test_postgres_findings(pytester: pytest.Pytester, postgres_url: str) -> None:
    down = f"postgresql+psycopg://nobody:secret-pw@127.0.0.1:{_free_port()}/chinook"
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    pytester.makefile(".yaml", queryeval=_yaml({
        "datasources": {"pg": {"type": "sqlalchemy", "url": postgres_url, "timeout": 10},
                        "down": {"type": "sqlalchemy", "url": down, "timeout": 5}},
        "thresholds": {"execution_accuracy": 1.0}}))
    pytester.makefile(".yaml", test_pg=_yaml({"kind": "sql", "datasource": "pg", "cases": [
        {"id": "fine", "gold": "SELECT count(*) FROM artist"},
        {"id": "ties", "gold": "SELECT name FROM track ORDER BY unit_price DESC LIMIT 3"},
        {"id": "no-ties", "gold": "SELECT name FROM track ORDER BY track_id DESC LIMIT 3"},
        {"id": "clock", "gold": "SELECT count(*) FROM invoice WHERE invoice_date <= now()"},
        {"id": "clock-cast", "gold": "SELECT count(*) FROM invoice "
                                     "WHERE invoice_date <= 'today'::date"},
        {"id": "missing-column", "gold": "SELECT nope FROM artist"},
        {"id": "empty", "gold": "SELECT name FROM track WHERE unit_price > 5"},
        {"id": "alternatives", "gold": ["SELECT name FROM genre WHERE genre_id < 3",
                                        "SELECT name FROM genre WHERE genre_id IN (1, 2)"]},
        {"id": "unreachable", "datasource": "down", "gold": "SELECT 1"},
    ]}))
    result, report = run(pytester, "--queryeval-audit-golds")
    assert result.ret == 1
    found = codes(report)
    assert "fine" not in found and "no-ties" not in found
    assert found["ties"] == {"ties-at-limit"}
    assert found["clock"] == {"clock-dependent"}
    assert "NOW()" in finding(report, "clock", "clock-dependent")["message"]
    assert found["clock-cast"] == {"clock-dependent"}
    assert found["missing-column"] == {"gold-error"}
    assert 'column "nope" does not exist' in finding(report, "missing-column",
                                                     "gold-error")["message"]
    assert found["empty"] == {"empty-result"}
    assert found["alternatives"] == {"redundant-alternative"}
    assert found["unreachable"] == {"source-unavailable"}
    text = (pytester.path / "audit.json").read_text() + result.stdout.str()
    assert "secret-pw" not in text  # the URL's password never reaches a report
