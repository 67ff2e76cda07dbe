"""A prediction given as a mapping names its text under one key (``cypher``, ``query`` or
``predicted``); two keys holding two different texts are the case's located error, never a
silent choice of one (the thirteenth re-probe's F2: ``{"cypher": A, "query": B}`` was scored
on A, and which of the two a harness meant is unknown)."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.fixtures.bolt_server import GRAPH
from tests.support import run_report, write_suite

pytest.importorskip("ladybug")

TITLES = "MATCH (m:Movie) RETURN m.title ORDER BY m.title"


def test_two_different_texts_in_one_prediction_are_its_error_the_same_text_twice_is_not(
        pytester):
    shutil.copyfile(GRAPH, pytester.path / "movies.cypher")
    cases = [{"id": c, "question": "q", "gold": TITLES} for c in ("two", "same", "one")]
    write_suite(pytester.path,
                {"datasources": {"movies": {"type": "ladybug", "path": "movies.cypher"}},
                 "predictions": {"source": "file", "path": "preds.jsonl"}},
                {"test_movies.yaml": {"kind": "cypher", "datasource": "movies",
                                      "cases": cases}})
    lines = [{"id": "two", "predicted": {"cypher": TITLES, "query": "MATCH (m:Movie) RETURN 'x'"}},
             {"id": "same", "predicted": {"cypher": TITLES, "query": TITLES}},
             {"id": "one", "predicted": {"query": TITLES}}]
    (pytester.path / "preds.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    _, report = run_report(pytester, "--queryeval-no-cache")
    assert report.outcomes == {"two": "error", "same": "passed", "one": "passed"}
    assert "the predicted mapping gives different Cypher texts under 'cypher' and 'query'" \
        in report.by_id["two"]["error"]
