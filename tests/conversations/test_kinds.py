"""Issue 42 item 1: conversations of the sparql kind (a real RDF graph, rdflib) and the json
kind (gold objects), each turn scored with its kind's metrics; a gate on
interaction_accuracy over a suite's conversations."""

from __future__ import annotations

import pytest

from tests.conversations.chat_suite import COUNT, COUNT_2024, COUNT_2024_BIG, chat, conversation_suite
from tests.support import dump, run_report, write_suite

TTL = """@prefix ex: <http://example.org/> .
ex:r1 a ex:Room ; ex:floor 1 .
ex:r2 a ex:Room ; ex:floor 1 .
ex:r3 a ex:Room ; ex:floor 2 .
"""
ROOMS = "PREFIX ex: <http://example.org/> SELECT ?r WHERE { ?r a ex:Room }"
FLOOR1 = "PREFIX ex: <http://example.org/> SELECT ?r WHERE { ?r a ex:Room ; ex:floor 1 }"
FLOOR2 = "PREFIX ex: <http://example.org/> SELECT ?r WHERE { ?r a ex:Room ; ex:floor 2 }"


def test_sparql_conversation(pytester: pytest.Pytester) -> None:
    (pytester.path / "rooms.ttl").write_text(TTL)
    write_suite(pytester.path, {"datasources": {"g": {"type": "rdf", "path": "rooms.ttl"}}},
                {"test_chat.yaml": dump({"kind": "sparql", "datasource": "g", "cases": [{
                    "id": "rooms-chat", "conversation": [
                        {"role": "user", "content": "Which rooms are there?", "gold": ROOMS,
                         "predicted": ROOMS},
                        {"role": "user", "content": "Only on floor 1?", "gold": FLOOR1,
                         "predicted": FLOOR2}]}]})})
    _, report = run_report(pytester)
    rec = report.by_id["rooms-chat"]
    assert report.outcomes == {"rooms-chat": "failed"}
    turns = rec["details"]["turns"]
    assert [t["outcome"] for t in turns] == ["passed", "failed"]
    assert turns[0]["metrics"]["execution_accuracy"] == 1.0
    assert turns[1]["metrics"]["execution_accuracy"] == 0.0
    assert rec["metrics"]["turn_accuracy"] == 0.5
    assert rec["metrics"]["execution_accuracy"] == 0.5  # the turns' mean


def test_json_conversation_with_gold_objects(pytester: pytest.Pytester) -> None:
    write_suite(pytester.path, {}, {"test_chat.yaml": dump({"kind": "json", "cases": [{
        "id": "filter-chat", "conversation": [
            {"role": "user", "content": "Show the rooms.", "gold": {"query": {"room": "?r"}},
             "predicted": {"query": {"room": "?r"}}},
            {"role": "user", "content": "Only on floor 2.",
             "gold": {"query": {"room": "?r", "floor": 2}},
             "predicted": '{"query": {"room": "?r", "floor": 2}}'}]}]})})
    _, report = run_report(pytester)
    rec = report.by_id["filter-chat"]
    assert report.outcomes == {"filter-chat": "passed"}
    assert [t["metrics"]["json_similarity"] for t in rec["details"]["turns"]] == [1.0, 1.0]
    assert rec["details"]["turns"][1]["gold"] == {"query": {"room": "?r", "floor": 2}}
    assert rec["metrics"]["interaction_accuracy"] == 1.0


def test_gate_on_interaction_accuracy(pytester: pytest.Pytester) -> None:
    lenient = {"turn_accuracy": 0.0}  # the cases pass: the gate alone judges
    conversation_suite(pytester.path, [
        {"id": "right", "thresholds": lenient, "conversation": chat(
            p1=COUNT, p2=COUNT_2024, p3=COUNT_2024_BIG)},
        {"id": "wrong", "thresholds": lenient, "conversation": chat(
            p1=COUNT, p2=COUNT, p3=COUNT)}],
        {"gates": {"interaction_accuracy": {"mean": 0.8}}})
    result, report = run_report(pytester)
    assert report.outcomes == {"right": "passed", "wrong": "passed"}
    assert report.by_id["right"]["metrics"]["interaction_accuracy"] == 1.0
    assert report.by_id["wrong"]["metrics"]["interaction_accuracy"] == 0.0
    gate = next(g for g in report["gates"] if g.get("metric") == "interaction_accuracy")
    assert gate["passed"] is False and gate["value"] == 0.5
    assert result.ret != 0
