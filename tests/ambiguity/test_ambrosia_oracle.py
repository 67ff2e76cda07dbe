"""metrics/ambrosia.py against Ambrosia's evaluate_predicted_statements' own outputs.

``tests/data/ambrosia/oracle.json`` was produced by ``make_oracle.py`` with the reference
(saparina/ambrosia @7de80a41, ``src/evaluation/metrics.py`` imported unmodified) on a SQLite
fixture database, once per hash seed and once in first-occurrence order; see that folder's
PROVENANCE.md.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_queryeval.metrics import ambrosia as amb

#: What the reference raised, by name, and what the port raises for it.
RAISES: dict[str, type[Exception]] = {
    "DublicatesError": amb.DublicatesError,
    "GoldQueryExecutionError": amb.GoldQueryExecutionError,
    "ZeroDivisionError": amb.ReferenceCrash,
    "TypeError": amb.ReferenceCrash,
}
HEADLINE = ("recall", "precision", "f1_score", "all_found", "num_queries", "num_unique_queries")


@pytest.fixture(scope="module")
def oracle(shared_data: Path) -> dict[str, object]:
    data = json.loads((shared_data / "ambrosia" / "oracle.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def db(oracle: dict[str, object], tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("ambrosia") / "fixture.sqlite"
    conn = sqlite3.connect(path)
    script = oracle["db"]
    assert isinstance(script, str)
    conn.executescript(script)
    conn.commit()
    conn.close()
    return str(path)


def _fixtures(oracle: dict[str, object]) -> list[dict[str, object]]:
    fixtures = oracle["fixtures"]
    assert isinstance(fixtures, list) and len(fixtures) >= 50
    return fixtures


def _reference_keys(result: amb.AmbrosiaMetrics) -> dict[str, object]:
    """The reference's dictionary (the port adds ``found`` and ``matched``)."""
    return {k: v for k, v in result.items() if k not in ("found", "matched", "statements")}


def _same(ours: object, theirs: object) -> bool:
    """Equal digit for digit: the JSON texts (1 and 1.0, 0 and 0.0 differ there)."""
    return json.dumps(ours, sort_keys=True) == json.dumps(theirs, sort_keys=True)


def _run(db: str, fx: dict[str, object], mode: amb.Mode,
         order: list[str] | None = None) -> amb.AmbrosiaMetrics:
    preds, golds = fx["preds"], fx["golds"]
    assert isinstance(preds, list) and isinstance(golds, list)

    def given(_: Sequence[str]) -> list[str]:
        assert order is not None
        return list(order)

    return amb.evaluate_predicted_statements(
        db, preds, golds, bool(fx["remove_duplicates_predictions"]), mode=mode,
        order=given if order is not None else None)


def test_reference_mode_equals_every_reference_run(oracle: dict[str, object], db: str) -> None:
    """In the reference's mode, given the order ``list(set(...))`` took in each reference
    process, every output (or error) is the reference's, key for key, digit for digit."""
    compared = crashed = 0
    for fx in _fixtures(oracle):
        runs = fx["runs"]
        assert isinstance(runs, dict)
        for label, run in runs.items():
            where = f"{fx['name']} (run {label})"
            if "error" in run:
                with pytest.raises(RAISES[run["error"]]) as info:
                    _run(db, fx, amb.AMBROSIA, run["order"])
                if run["error"] == "DublicatesError":
                    assert str(info.value) == run["message"], where
                if run["error"] in ("TypeError", "ZeroDivisionError"):
                    assert str(info.value).startswith(run["error"] + ": " + run["message"]), where
                crashed += 1
                continue
            ours = _reference_keys(_run(db, fx, amb.AMBROSIA, run["order"]))
            assert _same(ours, run["result"]), where
            compared += 1
    assert compared > 400 and crashed > 100


def test_default_is_deterministic_and_equals_the_reference_where_it_does_not_crash(
        oracle: dict[str, object], db: str) -> None:
    """The default mode: first-occurrence order (the reference's output in that order, run
    "first"), and recall, precision, F1, all_found and the counts of every seed's run; where
    the reference's de-duplication crashes on a failed prediction, ours gives the metrics."""
    rescued = 0
    for fx in _fixtures(oracle):
        runs = fx["runs"]
        assert isinstance(runs, dict)
        first = runs["first"]
        if first.get("error") in ("DublicatesError", "GoldQueryExecutionError",
                                  "ZeroDivisionError"):
            with pytest.raises(RAISES[first["error"]]):
                _run(db, fx, amb.DETERMINISTIC)
            continue
        ours = _reference_keys(_run(db, fx, amb.DETERMINISTIC))
        if "result" in first:
            assert _same(ours, first["result"]), fx["name"]
        else:
            assert first["error"] == "TypeError"
            rescued += 1
        for label, run in runs.items():
            if "result" in run and not fx["remove_duplicates_predictions"]:
                for key in HEADLINE:
                    assert _same(ours[key], run["result"][key]), (fx["name"], label, key)
                errors = sorted(run["result"]["execution_errors"], key=lambda e: e["query"])
                mine = ours["execution_errors"]
                assert isinstance(mine, list)
                assert _same(sorted(mine, key=lambda e: e["query"]), errors)
    assert rescued >= 3


def test_order_and_crashes_are_what_the_default_removes(oracle: dict[str, object]) -> None:
    """The fixtures do reach the reference's hash-order dependence and its crash (else the
    tests above would prove nothing about them)."""
    varying = crashing = 0
    for fx in _fixtures(oracle):
        runs = fx["runs"]
        assert isinstance(runs, dict)
        outcomes = {json.dumps(r.get("result", r.get("error")), sort_keys=True)
                    for r in runs.values()}
        varying += len(outcomes) > 1
        crashing += any(r.get("error") == "TypeError" for r in runs.values())
    assert varying >= 5 and crashing >= 5


def test_dublicates_error_names_the_second_gold(tmp_path: Path) -> None:
    db = tmp_path / "d.sqlite"
    sqlite3.connect(db).close()
    with pytest.raises(amb.DublicatesError) as info:
        amb.evaluate_predicted_statements(str(db), ["SELECT 1"], ["SELECT 2", "SELECT 1",
                                                                  "SELECT 1.0"])
    assert info.value.duplicate_idx == 3
    assert info.value.duplicates == ((1.0,),)
