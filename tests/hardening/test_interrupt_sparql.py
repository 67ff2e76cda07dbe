"""Ctrl-C while a SPARQL query runs (issue 19 item 9): SIGINT to the process group of a real
pytest process, as a terminal sends it, during a predicted query that would run for minutes,
in each place a SPARQL query can be: the pyoxigraph worker process, pyoxigraph in a thread, the
rdflib worker process, the guard's parser worker, and a remote endpoint (a loopback server
that trickles its answer). The session stops promptly (well before the query's timeout), and
the JSON report of the cases that finished is written, with the other reports."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.sparql_standin import TrickleServer

from .conftest import (
    REPORT_ARGS,
    SCORED_CONFTEST,
    check_all_reports,
    ctrl_c,
    dump,
    read_report,
)

XSD_INT = "http://www.w3.org/2001/XMLSchema#integer"
#: 60 subjects x 3 properties: a four-way cross product is 1.7e12 rows to filter.
GRAPH = "".join(f'<http://example.org/s{i}> <http://example.org/p{j}> "{i * j}"^^<{XSD_INT}> .\n'
                for i in range(60) for j in range(3))
HONEST = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"
SLOW_QUERY = ("SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l "
              "FILTER(?c + ?f + ?i + ?l < 0) }")
#: rdflib's parser needs ~15 s for this (more on a loaded machine); the deadline is 120 s.
SLOW_PARSE = "SELECT * WHERE { FILTER(" + "+".join(["1"] * 20_000) + ") }"

#: Answers at once, except for "c-stuck": it announces the case (a marker file, so the test
#: knows the run is mid-way) and returns the query that will not finish.
MODEL = """
import pathlib

def predict(case):
    if case["id"] == "c-stuck":
        pathlib.Path("stuck.marker").write_text("x")
        return pathlib.Path("stuck.rq").read_text()
    return {honest!r}
"""
#: Well above the time the test allows the session to stop in.
QUERY_TIMEOUT = 120
STOP_WITHIN = 30.0


def _suite(pytester: pytest.Pytester, source: dict[str, Any], stuck_query: str,
           n_before: int = 4, n_after: int = 3) -> list[str]:
    (pytester.path / "graph.nt").write_text(GRAPH, encoding="utf-8")
    (pytester.path / "stuck.rq").write_text(stuck_query, encoding="utf-8")
    pytester.makepyfile(sparql_model=MODEL.format(honest=HONEST))
    pytester.makeconftest(SCORED_CONFTEST)
    pytester.makefile(".yaml", queryeval=dump({
        "datasources": {"graph": {**source, "timeout": QUERY_TIMEOUT}},
        "predictions": {"source": "python", "function": "sparql_model:predict"}}))
    ids = [f"c-{i:02d}" for i in range(n_before)] + ["c-stuck"] + \
          [f"d-{i:02d}" for i in range(n_after)]
    pytester.makefile(".yaml", test_cases=dump({
        "kind": "sparql", "datasource": "graph", "thresholds": {"execution_accuracy": 1.0},
        "cases": [{"id": i, "gold": HONEST} for i in ids]}))
    return ids


def _interrupt(pytester: pytest.Pytester, scored_first: int = 4,
               ) -> tuple[subprocess.CompletedProcess[str], float]:
    """SIGINT once the stuck case has begun and the ``scored_first`` cases before it were
    scored, a second later (the query, or its parse, is under way)."""
    return ctrl_c(pytester, REPORT_ARGS, marker="stuck.marker", scored_first=scored_first,
                  reach_within=180, delay=1.0, stop_within=QUERY_TIMEOUT)


def _check(pytester: pytest.Pytester, ids: list[str]) -> None:
    done, seconds = _interrupt(pytester)
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout[-3000:]
    assert "KeyboardInterrupt" in done.stdout
    # a bound, not a speed: the stuck query would run for QUERY_TIMEOUT s (or minutes more)
    assert seconds < STOP_WITHIN, (seconds, done.stdout[-3000:])
    report = read_report(pytester.path / "report.json")
    assert report["run"]["interrupted"] is True
    finished = [c["id"] for c in report["cases"]]
    assert finished == ids[:4], [(c["id"], c["outcome"], c.get("reason"), c.get("error"))
                                 for c in report["cases"]]
    assert {c["outcome"] for c in report["cases"]} == {"passed"}
    check_all_reports(pytester.path, ids[:4])


def _no_stray_workers(pytester: pytest.Pytester) -> None:
    """No process started by the run is still alive (workers end with their parent)."""
    time.sleep(0.5)
    mine = []
    for pid in os.listdir("/proc"):
        # the test's own process has the suite as its cwd too, and a checkout's path may hold
        # "queryeval" (a clone named pytest-queryeval): it is not a worker the run left
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if cwd == str(pytester.path) and b"queryeval" in cmd:
            mine.append(pid)
    assert not mine, f"worker processes left running: {mine}"


@pytest.mark.parametrize(("engine", "isolation"),
                         [("pyoxigraph", "process"), ("pyoxigraph", "thread"),
                          ("rdflib", "process")])
def test_ctrl_c_during_an_in_process_query(suite: pytest.Pytester, engine: str,
                                           isolation: str) -> None:
    ids = _suite(suite, {"type": "rdf", "path": "graph.nt", "engine": engine,
                         "isolation": isolation}, SLOW_QUERY)
    _check(suite, ids)
    _no_stray_workers(suite)


def test_ctrl_c_during_the_guards_parse(suite: pytest.Pytester) -> None:
    ids = _suite(suite, {"type": "rdf", "path": "graph.nt"}, SLOW_PARSE)
    _check(suite, ids)
    _no_stray_workers(suite)


def test_ctrl_c_while_an_endpoint_trickles(suite: pytest.Pytester) -> None:
    server = TrickleServer(interval=1.0, only_if="?l")  # honest queries are answered at once
    try:
        ids = _suite(suite, {"type": "sparql", "endpoint": server.url, "retries": 0},
                     SLOW_QUERY)
        _check(suite, ids)
    finally:
        server.close()
