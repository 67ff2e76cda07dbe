"""``interpretations:`` SQL cases end to end on a real SQLite database: the metrics in the JSON
report, every prediction form, the reference's mode, and each located error."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest
from tests.support import run_report, write_suite

from pytest_queryeval.errors import PredictionError
from pytest_queryeval.kinds.sql.interpretations import predicted_queries

X = "SELECT id FROM t WHERE grp = 'x'"
Y = "SELECT id FROM t WHERE grp = 'y'"
READINGS = [{"gold": X, "label": "group x"}, {"gold": Y, "label": "group y"}]
CONFIG = {"datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
          "thresholds": {"execution_accuracy": 1.0}}


def _db(pytester: pytest.Pytester) -> None:
    with sqlite3.connect(pytester.path / "db.sqlite") as con:
        con.execute("CREATE TABLE t (id INTEGER, grp TEXT)")
        con.executemany("INSERT INTO t VALUES (?, ?)", [(1, "x"), (2, "x"), (3, "y")])
    con.close()


def _suite(pytester: pytest.Pytester, cases: list[dict[str, object]],
           config: dict[str, object] | None = None) -> pytest.Pytester:
    write_suite(pytester.path, config or CONFIG, {"test_q.yaml": {
        "kind": "sql", "datasource": "db", "cases": cases}})
    _db(pytester)
    return pytester


def _case(case_id: str, predicted: object, **extra: object) -> dict[str, object]:
    return {"id": case_id, "question": "Which ids are in the group?",
            "interpretations": READINGS, "predicted": predicted, **extra}


def test_metrics_outcomes_and_details(pytester: pytest.Pytester) -> None:
    """Both readings (pass), one of two (recall 0.5, fails all_found), one right and one
    wrong, a failing query among right ones, a fenced pair and a JSON list as text."""
    _suite(pytester, [
        _case("both", [Y, X]),
        _case("one", X),
        _case("half", [X, "SELECT 99"]),
        _case("failing", [X, Y, "SELECT nope FROM t"]),
        _case("fenced", f"Two readings:\n```sql\n{X}\n```\nor\n```sql\n{Y}\n```\n"),
        _case("json-text", json.dumps([X, Y, X])),
        _case("gated-on-recall", X, thresholds={"interpretation_recall": 0.5}),
    ])
    _, report = run_report(pytester)
    assert report.outcomes == {"both": "passed", "one": "failed", "half": "failed",
                               "failing": "passed", "fenced": "passed", "json-text": "passed",
                               "gated-on-recall": "passed"}
    cases = report.by_id
    assert cases["both"]["metrics"] == {"interpretation_recall": 1.0,
                                        "interpretation_precision": 1.0,
                                        "interpretation_f1": 1.0, "all_found": 1.0}
    assert cases["both"]["thresholds"] == {"all_found": {"min": 1.0}}  # not the suite's EX
    assert cases["one"]["metrics"]["interpretation_recall"] == 0.5
    assert cases["one"]["metrics"]["all_found"] == 0.0
    assert cases["half"]["metrics"]["interpretation_precision"] == 0.5
    assert cases["half"]["metrics"]["interpretation_f1"] == pytest.approx(0.5)
    failing = cases["failing"]["metrics"]
    assert failing["interpretation_precision"] == pytest.approx(2 / 3)
    assert failing["interpretation_f1"] == pytest.approx(0.8)
    details = cases["failing"]["details"]["interpretations"]
    assert [r["found"] for r in details["readings"]] == [True, True]
    assert details["predictions"][2]["matched"] is False
    assert "no such column: nope" in details["predictions"][2]["error"]
    assert cases["json-text"]["details"]["interpretations"]["num_queries"] == 3
    assert cases["json-text"]["details"]["interpretations"]["num_unique_queries"] == 2
    assert cases["gated-on-recall"]["thresholds"] == {"interpretation_recall": {"min": 0.5}}


def test_a_query_that_writes_is_refused_not_run(pytester: pytest.Pytester) -> None:
    _suite(pytester, [_case("writes", [X, Y, "DELETE FROM t"])])
    _, report = run_report(pytester)
    assert report.outcomes == {"writes": "passed"}
    prediction = report.by_id["writes"]["details"]["interpretations"]["predictions"][2]
    assert prediction["error"].startswith("refused")
    with sqlite3.connect(pytester.path / "db.sqlite") as con:
        assert con.execute("SELECT count(*) FROM t").fetchone() == (3,)
    con.close()


def test_two_golds_with_one_result_are_a_gold_error_naming_both(pytester: pytest.Pytester) -> None:
    _suite(pytester, [{"id": "same", "interpretations": [
        X, {"gold": "SELECT id FROM t WHERE id < 3", "label": "small ids"}], "predicted": X}])
    _, report = run_report(pytester)
    assert report.outcomes == {"same": "error"}
    error = report.by_id["same"]["error"]
    assert "interpretations[0] (reading 1) and interpretations[1] (small ids) return the " \
           "same result" in error
    assert "DublicatesError" in error


def _set_order(seed: str, texts: list[str]) -> list[str]:
    """``list(set(texts))`` in a process with ``PYTHONHASHSEED=seed``."""
    out = subprocess.run([sys.executable, "-c", "import json, sys; "
                          "print(json.dumps(list(set(json.loads(sys.argv[1])))))",
                          json.dumps(texts)], env={**os.environ, "PYTHONHASHSEED": seed},
                         capture_output=True, text=True, check=True)
    return list(json.loads(out.stdout))


def test_reference_mode_crashes_where_the_reference_does(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference's ``remove_duplicate_results`` raises TypeError when a failed query comes
    after a working one in ``list(set(...))`` order: under ``interpretation_scoring:
    ambrosia`` the case is an error in a process whose hash seed puts it there and scored
    in one that does not; the default scores it the same in both."""
    bad = "SELECT nope FROM t"
    _suite(pytester, [_case("reference", [X, bad], interpretation_scoring="ambrosia"),
                      _case("default", [X, bad])])
    seeds = {tuple(_set_order(str(seed), [X, bad])): str(seed) for seed in range(40)}
    assert len(seeds) == 2
    for order, seed in seeds.items():
        monkeypatch.setenv("PYTHONHASHSEED", seed)
        _, report = run_report(pytester, subprocess=True, fresh=True)
        crashes = order == (X, bad)
        assert report.outcomes == {"reference": "error" if crashes else "failed",
                                   "default": "failed"}
        if crashes:
            assert "TypeError" in report.by_id["reference"]["error"]
        else:
            assert report.by_id["reference"]["metrics"]["interpretation_recall"] == 0.5
        assert report.by_id["default"]["metrics"]["interpretation_precision"] == 0.5


def test_reference_mode_records_each_prediction_and_its_error(
        pytester: pytest.Pytester) -> None:
    """Issue 48 item 5: under ``interpretation_scoring: ambrosia`` the record lists each
    distinct prediction, whether it found a reading and the error of one that failed, as the
    default does (first occurrences: a record the same in every process). Neither case has a
    failed query after a working one, so the reference does not crash in any hash order."""
    mode = {"interpretation_scoring": "ambrosia"}
    working = [Y, X, "SELECT 99", X]
    failing = ["SELECT nope FROM t", "SELECT nix FROM t"]
    _suite(pytester, [_case("ref-working", working, **mode), _case("working", working),
                      _case("ref-failing", failing, **mode), _case("failing", failing)])
    _, report = run_report(pytester)
    cases = report.by_id
    listed = cases["ref-working"]["details"]["interpretations"]["predictions"]
    assert listed == [{"sql": Y, "matched": True}, {"sql": X, "matched": True},
                      {"sql": "SELECT 99", "matched": False}]
    assert listed == cases["working"]["details"]["interpretations"]["predictions"]
    failed = cases["ref-failing"]["details"]["interpretations"]["predictions"]
    assert [(p["sql"], p["matched"]) for p in failed] == [(q, False) for q in failing]
    assert "no such column: nope" in failed[0]["error"]
    assert "no such column: nix" in failed[1]["error"]
    assert failed == cases["failing"]["details"]["interpretations"]["predictions"]


@pytest.mark.parametrize(("case", "message"), [
    ({"interpretations": []}, "cases?0?.interpretations: a list of gold queries*"),
    ({"interpretations": "SELECT 1"}, "cases?0?.interpretations: a list of gold queries*"),
    ({"interpretations": [X, 5]}, "cases?0?.interpretations?1?: must be an SQL string"),
    ({"interpretations": [X, X]}, "cases?0?.interpretations?1?: the same query as "
                                  "interpretations?0?*"),
    ({"interpretations": [X, {"gold": Y, "lable": "y"}]},
     "cases?0?.interpretations?1?.lable: unknown key*"),
    ({"interpretations": [X, {"label": "y"}]}, "cases?0?.interpretations?1?.gold: must be an SQL*"),
    ({"interpretations": [{"gold": X, "label": "a"}, {"gold": Y, "label": "a"}]},
     "cases?0?.interpretations?1?.label: the same label as interpretations?0?"),
    ({"interpretations": READINGS, "gold": X}, "cases?0?.gold: an interpretations case has no gold*"),
    ({"interpretations": READINGS, "interpretation_scoring": "hash"},
     "cases?0?.interpretation_scoring: must be one of deterministic, ambrosia, not 'hash'"),
    ({"interpretations": READINGS, "timeout": "soon"}, "cases?0?.timeout: *"),
    ({"interpretations": READINGS, "predicted": [X, 3]}, "cases?0?.predicted?1?: expected SQL text, got int"),
])
def test_bad_shapes_are_located_errors(pytester: pytest.Pytester, case: dict[str, object],
                                       message: str) -> None:
    _suite(pytester, [{"id": "a", "predicted": X, **case}])
    result, report = run_report(pytester)
    assert report.outcomes == {"a": "error"}
    result.stdout.fnmatch_lines([f"*test_q.yaml:*: {message}"])


def test_predictions_from_a_file_may_be_lists(pytester: pytest.Pytester) -> None:
    config = {**CONFIG, "predictions": {"source": "file", "path": "preds.jsonl"}}
    write_suite(pytester.path, config, {"test_q.yaml": {"kind": "sql", "datasource": "db", "cases": [
        {"id": "listed", "interpretations": READINGS},
        {"id": "one", "interpretations": READINGS}]}})
    _db(pytester)
    (pytester.path / "preds.jsonl").write_text(
        json.dumps({"id": "listed", "predicted": [X, Y]}) + "\n"
        + json.dumps({"id": "one", "predicted": Y}) + "\n", encoding="utf-8")
    _, report = run_report(pytester)
    assert report.outcomes == {"listed": "passed", "one": "failed"}
    assert report.by_id["one"]["metrics"]["interpretation_recall"] == 0.5


@pytest.mark.parametrize(("prediction", "queries"), [
    ([X, Y], [X, Y]),
    (X, [X]),
    (f"```sql\n{X}\n```", [X]),
    (f"```sql\n{X}\n```\n\n```sql\n{Y}\n```", [X, Y]),
    (f"Reading one:\n```\n{X}\n```\nReading two:\n~~~sql\n{Y}\n~~~", [X, Y]),
    (json.dumps([X, Y]), [X, Y]),
    (f"```json\n{json.dumps([X, Y])}\n```", [X, Y]),
    ("[not json", ["[not json"]),
    ({"queries": [X, Y]}, [X, Y]),
    ({"sql": X}, [X]),
    ([], []),
])
def test_prediction_forms(prediction: object, queries: list[str]) -> None:
    assert predicted_queries(prediction) == queries


@pytest.mark.parametrize("prediction", [5, [X, None], {"answer": X}])
def test_prediction_forms_that_are_errors(prediction: object) -> None:
    with pytest.raises(PredictionError):
        predicted_queries(prediction)


def test_openai_replies_with_several_blocks_or_a_json_list(
        pytester: pytest.Pytester, openai_standin, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``openai`` source keeps the whole reply of an interpretations case (its usual
    extraction keeps one block): each fenced block, or a JSON list, is a reading's query."""
    pytest.importorskip("openai")
    from tests.fixtures.openai_standin import KEY, MODEL

    openai_standin.answers = {
        "blocks?": f"It is ambiguous. Group x:\n```sql\n{X}\n```\nGroup y:\n```sql\n{Y}\n```",
        "json?": f"```json\n{json.dumps([X])}\n```",
    }
    config = {**CONFIG, "predictions": {
        "source": "openai", "model": MODEL, "base_url": openai_standin.base_url,
        "api_key": "${QE_TEST_KEY}", "retries": 1, "backoff": 0.01}}
    write_suite(pytester.path, config, {"test_q.yaml": {"kind": "sql", "datasource": "db", "cases": [
        {"id": "blocks", "question": "blocks?", "interpretations": READINGS},
        {"id": "json", "question": "json?", "interpretations": READINGS}]}})
    _db(pytester)
    monkeypatch.setenv("QE_TEST_KEY", KEY)
    _, report = run_report(pytester)
    assert report.outcomes == {"blocks": "passed", "json": "failed"}
    assert report.by_id["json"]["metrics"]["interpretation_recall"] == 0.5
    assert report.by_id["blocks"]["details"]["prediction"]["extraction"] == \
        "whole reply: a query per reading"
