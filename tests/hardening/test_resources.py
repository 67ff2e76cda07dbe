"""Resource exhaustion by predicted queries: cartesian products, unbounded recursive CTEs and huge
result sets end by the timeout, the row cap or the byte cap, with a reason, on SQLite, PostgreSQL, an Oxigraph
server and in-process pyoxigraph; and memory stays bounded: the peak RSS of a pytest process
running them (measured inside that subprocess) stays close to the same process running only
the honest cases (query workers are killed at the timeout, so their memory goes with them). No
timing is asserted; a generous outer limit only proves the run ends."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.oxigraph import OXIGRAPH_GRAPH, OxigraphServer
from tests.fixtures.postgres import PostgresServer

from .conftest import by_id, dump, read_report

#: Peak RSS (MiB) the runaway cases may add over the honest-only run of the same suite. Without
#: the caps the same queries would materialise billions of rows (many GiB) or never end.
RSS_BUDGET_MIB = 200

MEASURE = """
import resource, sys
import pytest
rc = pytest.main(sys.argv[1:])
print(f"QE_PEAK_RSS_KIB={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}")
sys.exit(rc)
"""

SQL_RUNAWAY: dict[str, tuple[str, str]] = {
    "cartesian-count": ("SELECT count(*) FROM track a, track b, track c", "timeout: "),
    "recursive-unbounded": ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                            "SELECT x FROM c", "truncated: "),
    "recursive-aggregate": ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                            "SELECT max(x) FROM c", "timeout: "),
    "huge-result": ("SELECT * FROM track a, track b", "truncated: "),
    "huge-result-sorted": ("SELECT a.name, b.name FROM track a, track b ORDER BY 1, 2",
                           "timeout: "),
}
#: 5,000 values of 1 MB: 5 GB under the row cap; max_bytes (64 MiB by default) ends it.
SQLITE_BIG_VALUES = {"huge-values": (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 5000) "
    "SELECT x, zeroblob(1000000) FROM c", "truncated: ")}
PG_BIG_VALUES = {"huge-values": (
    "SELECT x, repeat('x', 1000000) FROM generate_series(1, 5000) AS x", "truncated: ")}
SPARQL_RUNAWAY: dict[str, tuple[str, str]] = {
    "cartesian-rows": ("SELECT * WHERE { ?a ?b ?c . ?d ?e ?f }", "truncated: |timeout: "),
    # 3,774 x 3,774 pairs on Soda Hall through a filter: many seconds of work
    "cartesian-count": ("SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f "
                        "FILTER(STRLEN(STR(?c)) + STRLEN(STR(?f)) < 0) }", "timeout: "),
    "property-path-closure": ("SELECT ?a ?b WHERE { ?a (!<http://example.org/none>)* ?b }", "truncated: |timeout: "),
}


def _measure(pytester: pytest.Pytester, *args: str) -> tuple[dict[str, Any], float, str]:
    (pytester.path / "measure.py").write_text(MEASURE)
    (pytester.path / "report.json").unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "measure.py", "-p", "no:cacheprovider", "--queryeval-json=report.json",
         *args], cwd=pytester.path, capture_output=True, text=True, timeout=600, check=False)
    out = done.stdout + done.stderr
    assert "Traceback (most recent call last)" not in out, out[-3000:]
    line = next(x for x in out.splitlines() if x.startswith("QE_PEAK_RSS_KIB="))
    return read_report(pytester.path / "report.json"), int(line.split("=")[1]) / 1024, out


def _suite(pytester: pytest.Pytester, sources: dict[str, Any], files: dict[str, dict[str, Any]],
           ) -> None:
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    pytester.makefile(".yaml", queryeval=dump({"datasources": sources}))
    for name, content in files.items():
        pytester.makefile(".yaml", **{name: dump(content)})


def _cases(prefix: str, runaway: dict[str, tuple[str, str]], honest: str) -> list[dict[str, Any]]:
    cases = [{"id": f"{prefix}-honest", "gold": honest, "predicted": honest}]
    cases += [{"id": f"{prefix}-{k}", "gold": honest, "predicted": q} for k, (q, _) in runaway.items()]
    return cases


def _check(pytester: pytest.Pytester, expected: dict[str, str]) -> None:
    honest, honest_rss, _ = _measure(pytester, "-k", "honest")
    assert {c["outcome"] for c in honest["cases"]} == {"passed"}
    report, rss, out = _measure(pytester)
    recs = by_id(report)
    assert len(recs) == len(expected) + len(honest["cases"])
    for cid, reason in expected.items():
        rec = recs[cid]
        assert rec["outcome"] == "failed", (cid, rec["outcome"], rec["error"])
        assert any(rec["reason"].startswith(r) for r in reason.split("|")), (cid, rec["reason"])
    for rec in honest["cases"]:
        assert recs[rec["id"]]["outcome"] == "passed"
    assert rss - honest_rss < RSS_BUDGET_MIB, (
        f"peak RSS {rss:.0f} MiB vs {honest_rss:.0f} MiB for the honest cases alone\n{out[-2000:]}")


def test_sqlite_runaway_queries(pytester: pytest.Pytester, shared_data: Path) -> None:
    db = shared_data / "chinook" / "Chinook_Sqlite.sqlite"
    _suite(pytester, {"chinook": {"type": "sqlite", "path": str(db)}}, {"test_sqlite": {
        "kind": "sql", "datasource": "chinook", "timeout": 1, "max_rows": 10_000,
        "thresholds": {"execution_accuracy": 1.0},
        "cases": _cases("sqlite", SQL_RUNAWAY | SQLITE_BIG_VALUES, "SELECT count(*) FROM genre")}})
    _check(pytester, {f"sqlite-{k}": r for k, (_, r) in (SQL_RUNAWAY | SQLITE_BIG_VALUES).items()})


@pytest.mark.postgres
def test_postgres_runaway_queries(pytester: pytest.Pytester, postgres_server: PostgresServer,
                                  ) -> None:
    cases = _cases("pg", SQL_RUNAWAY | PG_BIG_VALUES, "SELECT count(*) FROM genre")
    for case in cases:  # the byte cap, not the 1 s deadline, must stop 5 GB of values, even
        if case["id"] == "pg-huge-values":  # on a busy machine
            case["timeout"] = 30
    _suite(pytester, {"pg": {"type": "sqlalchemy", "url": postgres_server.readonly_url()}},
           {"test_pg": {
        "kind": "sql", "datasource": "pg", "timeout": 1, "max_rows": 10_000,
        "thresholds": {"execution_accuracy": 1.0}, "cases": cases}})
    _check(pytester, {f"pg-{k}": r for k, (_, r) in (SQL_RUNAWAY | PG_BIG_VALUES).items()})


@pytest.mark.oxigraph
def test_sparql_runaway_queries(pytester: pytest.Pytester, oxigraph_endpoint: OxigraphServer,
                                shared_data: Path) -> None:
    vav = "SELECT (COUNT(*) AS ?n) WHERE { ?s a <https://brickschema.org/schema/Brick#VAV> }"
    _suite(pytester, {
        "server": {"type": "sparql", "endpoint": oxigraph_endpoint.query_url, "retries": 0},
        # untrusted predictions on a local graph: the documented isolation (a worker process
        # killed at the timeout; in a thread an abandoned query keeps its memory until it ends)
        "local": {"type": "rdf", "path": str(shared_data / OXIGRAPH_GRAPH),
                  "isolation": "process"},
    }, {
        "test_server": {"kind": "sparql", "datasource": "server", "timeout": 2,
                        "max_rows": 10_000, "thresholds": {"execution_accuracy": 1.0},
                        "cases": _cases("server", SPARQL_RUNAWAY, vav)},
        "test_local": {"kind": "sparql", "datasource": "local", "timeout": 2,
                       "max_rows": 10_000, "thresholds": {"execution_accuracy": 1.0},
                       "cases": _cases("local", SPARQL_RUNAWAY, vav)},
    })
    expected = {f"{p}-{k}": r for p in ("server", "local") for k, (_, r) in SPARQL_RUNAWAY.items()}
    try:
        _check(pytester, expected)
    finally:
        if not oxigraph_endpoint.running():
            oxigraph_endpoint.start()
