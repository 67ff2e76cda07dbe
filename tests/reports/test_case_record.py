"""The records of a real run conform to :class:`~pytest_queryeval.report.records.CaseRecord`.

Why: the record travels from the engine to every writer, ``queryeval merge`` and
``--queryeval-resume`` as a plain dict; the TypedDict is what mypy checks the readers
against. A key a record maker writes that the type does not declare, a declared required key
a record lacks, or a value of another type (the near-miss list merge once refused) would make
the type a wrong promise: each fails here, on the records of one run with every kind (SQL,
SPARQL, JSON, SDMX), a task, an error case, a file that cannot be read, a repeated case and
a counterexample search.
"""

from __future__ import annotations

import sys
import types
import typing
from pathlib import Path
from typing import Any, NotRequired, Union, get_args, get_origin

import pytest
from tests.support import read_report, write_suite

from pytest_queryeval import model
from pytest_queryeval.report.records import CaseRecord

DATA = Path(__file__).resolve().parents[2] / "example_suite" / "data"


def problems(value: object, tp: object, where: str) -> list[str]:
    """Where ``value`` is not of the type ``tp`` (the forms CaseRecord uses: unions, None,
    the JSON scalars, ``list[X]``, ``dict[str, X]``, ``Any`` and the ``JSONValue`` alias)."""
    if isinstance(tp, typing.ForwardRef):
        tp = tp.__forward_arg__
    if isinstance(tp, str):  # list["JSONValue"]: a name in the model module
        tp = getattr(model, tp)
    if tp is Any:
        return []
    if tp is None or tp is type(None):
        return [] if value is None else [f"{where}: {value!r} is not None"]
    origin = get_origin(tp)
    if origin is Union or origin is types.UnionType:
        found = [problems(value, arm, where) for arm in get_args(tp)]
        return [] if any(not f for f in found) else [f"{where}: {value!r} is none of {tp}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: {type(value).__name__}, not a list"]
        (item,) = get_args(tp)
        return [p for i, v in enumerate(value) for p in problems(v, item, f"{where}[{i}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: {type(value).__name__}, not a dict"]
        key, item = get_args(tp)
        out = [f"{where}: key {k!r} is not a {key}" for k in value if not isinstance(k, key)]
        return out + [p for k, v in value.items() for p in problems(v, item, f"{where}.{k}")]
    if tp is float:  # an int is a float to a type checker (never a bool)
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        assert isinstance(tp, type), f"{where}: a type this check does not know: {tp}"
        ok = isinstance(value, tp)
    return [] if ok else [f"{where}: {value!r} is not a {tp.__name__}"]


def record_problems(record: dict[str, object]) -> list[str]:
    """Every way ``record`` breaks :class:`CaseRecord`: undeclared keys, missing required
    keys, values of another type."""
    hints = typing.get_type_hints(CaseRecord, include_extras=True)
    where = f"case {record.get('id')!r}"
    out = [f"{where}: {k!r} is not a CaseRecord key" for k in record if k not in hints]
    # (``__required_keys__`` is wrong under ``from __future__ import annotations`` before
    # Python 3.12: NotRequired is read from the evaluated hints instead)
    out += [f"{where}: required {k!r} missing" for k, hint in hints.items()
            if get_origin(hint) is not NotRequired and k not in record]
    for key, hint in hints.items():
        if key in record:
            if get_origin(hint) is NotRequired:
                (hint,) = get_args(hint)
            out += problems(record[key], hint, f"{where}.{key}")
    return out


def test_the_check_catches_what_the_type_forbids():
    """The check itself: an undeclared key, a missing required key, a near-miss list of
    numbers and a metric that is text are each found."""
    good = {"id": "c", "nodeid": "t.yaml::c", "file": "t.yaml", "line": 1, "kind": "sql",
            "difficulty": "easy", "tags": [], "question": None, "status": "passed",
            "metrics": {"execution_accuracy": 1.0}, "labels": {}, "thresholds": {},
            "default_thresholds": [], "failed_metrics": [], "predicted": "SELECT 1",
            "gold": {"sqlite": "SELECT 1"}, "signature": None, "error": None, "reason": None,
            "diff": [], "details": {}, "settings": {}, "baseline_status": None,
            "standing": None, "near_miss": ["order"]}
    assert record_problems(good) == []
    bad = {**good, "near_miss": [1], "metrics": {"x": "high"}, "extra": 1}
    del bad["status"]
    assert set(record_problems(bad)) == {
        "case 'c': 'extra' is not a CaseRecord key",
        "case 'c': required 'status' missing",
        "case 'c'.metrics.x: 'high' is none of float | None",
        "case 'c'.near_miss: [1] is none of list[str] | None",
    }


class _Kept:
    """Keeps the report the plugin hands to ``pytest_queryeval_report`` (the records as the
    controller built them, before the JSON writer)."""

    def __init__(self) -> None:
        self.cases: list[dict[str, object]] = []

    def pytest_queryeval_report(self, report: dict[str, Any]) -> None:
        self.cases = [dict(c) for c in report["cases"]]


def _suite(root: Path) -> None:
    write_suite(root, {
        "datasources": {
            "chinook": {"type": "sqlite", "path": str(DATA / "chinook.sqlite")},
            "store": {"type": "sqlite", "path": str(DATA / "chinook.sqlite"),
                      "writable": "sandbox"},
            "soda": {"type": "rdf", "path": str(DATA / "soda_brick.ttl")},
            "imf": {"type": "sdmx-structure", "paths": [str(DATA / "sdmx")]},
        },
        "thresholds": {"execution_accuracy": 1.0, "macro_f1": 1.0, "json_similarity": 0.9},
    }, {
        "test_sql.yaml": {"kind": "sql", "datasource": "chinook", "cases": [
            {"id": "sql-pass", "question": "How many artists?", "difficulty": "easy",
             "tags": ["a"], "severity": "high",
             "gold": "SELECT count(*) FROM Artist", "predicted": "SELECT count(*) FROM Artist"},
            # fails with a near miss (an extra column)
            {"id": "sql-fail", "question": "Artists by name",
             "gold": "SELECT Name FROM Artist ORDER BY Name LIMIT 3",
             "predicted": "SELECT ArtistId, Name FROM Artist ORDER BY Name LIMIT 3"},
            {"id": "sql-error", "gold": "SELECT * FROM NoSuchTable", "predicted": "SELECT 1"},
        ]},
        "test_task.yaml": {"kind": "sql", "datasource": "store", "cases": [
            {"id": "task-dml", "task": "dml",
             "gold": "UPDATE Track SET UnitPrice = UnitPrice + 0.1 WHERE GenreId = 1",
             "predicted": "UPDATE Track SET UnitPrice = UnitPrice + 0.10 WHERE GenreId = 1",
             "checks": [{"query": "SELECT TrackId, UnitPrice FROM Track", "compare": "gold"}]},
        ]},
        "test_sparql.yaml": {"kind": "sparql", "datasource": "soda", "cases": [
            {"id": "sparql-pass", "gold": "SELECT ?s WHERE { ?s ?p ?o } LIMIT 2",
             "predicted": "SELECT ?s WHERE { ?s ?p ?o } LIMIT 2"},
        ]},
        "test_json.yaml": {"kind": "json", "cases": [
            {"id": "json-pass", "gold": {"query": {"a": [1, 2]}},
             "predicted": {"query": {"a": [1, 2]}}},
        ]},
        "test_sdmx.yaml": {"kind": "sdmx", "datasource": "imf", "cases": [
            {"id": "sdmx-pass", "conversation": [{
                "role": "user", "content": "Food prices in Ecuador",
                "target": {"indicator_selection": [{"dataset_id": "IMF.STA:CPI", "dimensions": [
                    {"dimension_name": "COUNTRY", "values": [{"id": "ECU", "name": "Ecuador"}]},
                ]}]},
                "predicted": {"indicator_selection": [{"dataset_id": "IMF.STA:CPI", "dimensions": [
                    {"dimension_name": "COUNTRY", "values": [{"id": "ECU", "name": "Ecuador"}]},
                ]}]}}]},
        ]},
        "test_bad.yaml": "cases: [unclosed\n",
        # a repeated case asks a source (a command here) once per repeat
        "rep/queryeval.yaml": {"predictions": {"source": "command",
                                               "command": [sys.executable, "answer.py"]}},
        "rep/answer.py": 'print(\'{"predicted": "SELECT count(*) FROM Genre"}\')\n',
        "rep/test_rep.yaml": {"kind": "sql", "datasource": "chinook", "cases": [
            {"id": "sql-repeat", "repeat": 2, "gold": "SELECT count(*) FROM Genre"}]},
        "nb/queryeval.yaml": {"neighbours": {"databases": 20, "seconds": 60, "seed": 0}},
        "nb/test_neighbours.yaml": {"kind": "sql", "datasource": "chinook", "cases": [
            {"id": "nb-coincidental", "gold": "SELECT count(*) FROM Artist",
             "predicted": "SELECT count(Name) FROM Artist", "thresholds": {"neighbour_ex": 1}},
        ]},
    })


@pytest.fixture
def run(pytester: pytest.Pytester) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """One run of the suite above: the controller's records and the JSON report's."""
    _suite(pytester.path)
    kept = _Kept()
    result = pytester.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider",
                                plugins=[kept])
    assert (pytester.path / "r.json").is_file(), result.stdout.str()[-3000:]
    return kept.cases, list(read_report(pytester.path / "r.json")["cases"])


def test_every_record_of_a_real_run_is_a_case_record(run):
    kept, written = run
    by_id = {str(c["id"]): c for c in written}
    # every kind of record the run makes is here, as the test means it to be
    assert {by_id[i]["kind"] for i in ("sql-pass", "sparql-pass", "json-pass", "sdmx-pass")} \
        == {"sql", "sparql", "json", "sdmx"}
    assert by_id["sql-fail"]["outcome"] == "failed" and by_id["sql-fail"]["near_miss"]
    assert by_id["sql-error"]["outcome"] == "error" and by_id["sql-error"]["error"]
    assert by_id["task-dml"]["outcome"] == "passed"
    bad = next(c for c in written if c["kind"] == "invalid")
    assert bad["outcome"] == "error" and bad["error"]
    assert len(by_id["sql-repeat"]["details"]["repeat"]["runs"]) == 2
    assert "checked" in by_id["nb-coincidental"]["details"]["neighbours"]
    assert len(kept) == len(written) == 10
    for record in [*kept, *written]:
        assert record_problems(record) == []


def test_the_type_and_the_shard_check_know_the_same_keys():
    """Every CaseRecord key is one ``queryeval merge`` and ``--queryeval-resume`` check or
    carry unread (:mod:`~pytest_queryeval.report.shardcheck`), and every key they know is
    declared: a key added to one and not the other fails here."""
    from pytest_queryeval.report.shardcheck import CASE, CASE_UNCHECKED

    assert set(typing.get_type_hints(CaseRecord)) == set(CASE) | CASE_UNCHECKED
