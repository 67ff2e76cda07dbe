"""The by-turn reports of a real run (issue 42 item 1): a three-turn SQL conversation on a small
SQLite file whose turn 2 fails, through the JSON report's ``aggregates.by_turn``, the Markdown
table, junit, and a baseline flip named ``invoices-chat#turn2``."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from tests.conversations.chat_suite import COUNT, COUNT_2024, COUNT_2024_BIG, chat, conversation_suite
from tests.support import dump, run_report


def _cases(turn2: str) -> list[dict[str, object]]:
    return [
        {"id": "invoices-chat", "conversation": chat(p1=COUNT, p2=turn2, p3=COUNT_2024_BIG)},
        {"id": "short-chat", "conversation": chat(p1=COUNT)},  # turns 2 and 3 never answered
        {"id": "plain", "question": "How many invoices?", "gold": COUNT, "predicted": COUNT},
    ]


def test_a_run_reports_by_turn_and_flips_per_turn(pytester: pytest.Pytester) -> None:
    root = conversation_suite(pytester.path, _cases(turn2=COUNT_2024))
    # the baseline run: invoices-chat passes every turn
    result, report = run_report(pytester, "-p", "no:cacheprovider",
                                "--queryeval-update-baseline")
    assert report.outcomes == {"invoices-chat": "passed", "short-chat": "failed",
                               "plain": "passed"}, result.stdout.str()
    saved = json.loads((root / "queryeval-baseline.json").read_text(encoding="utf-8"))
    rows = {row["id"]: row for row in saved["cases"]}
    assert rows["invoices-chat"]["turns"] == {"1": "passed", "2": "passed", "3": "passed"}
    assert rows["short-chat"]["turns"] == {"1": "passed", "2": "missing", "3": "missing"}
    assert "turns" not in rows["plain"]

    # turn 2 now forgets the year
    (root / "test_chat.yaml").write_text(dump({"kind": "sql", "datasource": "store",
                                               "cases": _cases(turn2=COUNT)}), encoding="utf-8")
    result, report = run_report(pytester, "-p", "no:cacheprovider",
                                "--queryeval-baseline=queryeval-baseline.json",
                                "--queryeval-markdown=r.md", "--junitxml=junit.xml")
    assert report.outcomes == {"invoices-chat": "failed", "short-chat": "failed",
                               "plain": "passed"}
    agg = report["aggregates"]
    counted = ("turns", "passed", "missing", "turn_accuracy", "execution_accuracy")
    assert {n: {k: v for k, v in t.items() if k in counted}
            for n, t in agg["by_turn"].items()} == {
        "1": {"turns": 2, "passed": 2, "turn_accuracy": 1.0, "execution_accuracy": 1.0},
        "2": {"turns": 2, "passed": 0, "missing": 1, "turn_accuracy": 0.0,
              "execution_accuracy": 0.0},
        "3": {"turns": 2, "passed": 1, "missing": 1, "turn_accuracy": 0.5,
              "execution_accuracy": 0.5},
    }
    assert agg["conversations"] == {"cases": 2, "interaction_accuracy": 0.0,
                                    "interactions_passed": 0, "turn_accuracy": 0.5, "turns": 6,
                                    "passed": 3, "missing": 2}

    md = (root / "r.md").read_text(encoding="utf-8")
    table = md[md.index("### By turn"):].split("\n\n")[2].splitlines()
    assert table == [
        "| turn | turns | passed | missing | turn accuracy | execution\\_accuracy |",
        "|---|---:|---:|---:|---:|---:|",
        "| 1 | 2 | 2 | 0 | 100.0 % | 1.000 |",
        "| 2 | 2 | 0 | 1 | 0.0 % | 0.000 |",
        "| 3 | 2 | 1 | 1 | 50.0 % | 0.500 |",
        "| **all** | 6 | 3 | 2 | 50.0 % | – |",
    ]
    assert "**turns pass → fail (1)**: `invoices-chat#turn2` (sql/medium)" in md

    flips = report["baseline"]["turn_regressions"]
    assert [(f["id"], f["before"], f["after"]) for f in flips] == [
        ("invoices-chat#turn2", "passed", "failed")]
    assert [c["id"] for c in report["baseline"]["regressions"]] == ["invoices-chat"]
    out = result.stdout.str()
    assert "turns pass → fail: 1" in out
    assert "  invoices-chat#turn2 [sql/medium] passed → failed" in out
    assert ("conversations: 2 cases, interaction accuracy 0.0% (0 of 2), turn accuracy 50.0% "
            "(3 of 6 scored turns, 2 missing)") in out

    props = {p.get("name"): p.get("value")
             for p in ET.parse(root / "junit.xml").getroot().iter("property")}
    assert props["queryeval.turn.2.turn_accuracy"] == "0.0"
    assert props["queryeval.turn.3.missing"] == "1"
    assert props["queryeval.conversations.turn_accuracy"] == "0.5"


def test_a_gate_on_interaction_accuracy_fails_the_run(pytester: pytest.Pytester) -> None:
    conversation_suite(pytester.path, _cases(turn2=COUNT_2024),
                       {"gates": {"interaction_accuracy": 0.8}})
    result, report = run_report(pytester, "-p", "no:cacheprovider")
    [gate] = report["gates"]
    assert (gate["metric"], gate["value"], gate["n"], gate["passed"]) == (
        "interaction_accuracy", 0.5, 2, False)
    assert result.ret == 1
    assert "gate FAIL: mean interaction_accuracy = 0.5000 (required >= 0.8, 2 of 3 cases " \
           "scored)" in result.stdout.str()
