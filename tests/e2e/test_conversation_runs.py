"""Conversation cases through every way of running them (issue 42 item 1): one serial run,
``-n 2``, two shards then ``queryeval merge``, and a shard retried with ``--queryeval-resume``
then merged. ``aggregates.by_turn`` and ``aggregates.conversations`` are computed from the
records alone, so each path reports the serial run's values, and its Markdown the same table."""

from __future__ import annotations

import pytest

from tests.conversations.chat_suite import COUNT, COUNT_2024, COUNT_2024_BIG, chat, conversation_suite
from tests.support import Report

from .support import Run, accepted_everywhere, assert_same, run_merge, run_pytest

#: One xdist worker runs the whole module: its module-scoped runs are made once, not
#: once per worker (``tests/together.py``).
pytestmark = pytest.mark.xdist_group("tests.e2e.test_conversation_runs")

SHARDS = 2
CASES = [
    {"id": "invoices-chat", "conversation": chat(p1=COUNT, p2=COUNT, p3=COUNT_2024_BIG)},
    {"id": "right-chat", "conversation": chat(p1=COUNT, p2=COUNT_2024, p3=COUNT_2024_BIG)},
    {"id": "short-chat", "conversation": chat(p1=COUNT)},
    {"id": "late-chat", "conversation": chat(p1=COUNT_2024, p2=COUNT_2024, p3=COUNT_2024_BIG)},
    {"id": "plain", "question": "How many invoices?", "gold": COUNT, "predicted": COUNT},
]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    root = conversation_suite(tmp_path_factory.mktemp("conversations"), CASES)
    out = {"serial": run_pytest(root, "serial", formats=("md",)),
           "xdist": run_pytest(root, "xdist", "-n", "2", formats=("md",))}
    shards = []
    for i in range(1, SHARDS + 1):
        out[f"shard{i}"] = run_pytest(root, f"shard{i}", f"--queryeval-shard={i}/{SHARDS}",
                                      formats=(), junit=False)
        shards.append(out[f"shard{i}"].reports["json"])
    out["merged"] = run_merge(root, "merged", shards, formats=("md",))
    out["retry2"] = run_pytest(root, "retry2", f"--queryeval-shard=2/{SHARDS}",
                               f"--queryeval-resume={shards[1].name}", formats=(), junit=False)
    out["resumed"] = run_merge(root, "resumed", [shards[0], out["retry2"].reports["json"]],
                               formats=("md",))
    return out


def test_the_serial_run_reports_by_turn(runs: dict[str, Run]) -> None:
    serial = runs["serial"]
    assert serial.status == 1, serial.explain()
    agg = serial.json["aggregates"]
    shown = {n: {k: t.get(k) for k in ("turns", "passed", "missing", "turn_accuracy")}
             for n, t in agg["by_turn"].items()}
    assert shown == {
        "1": {"turns": 4, "passed": 3, "missing": None, "turn_accuracy": 0.75},
        "2": {"turns": 4, "passed": 2, "missing": 1, "turn_accuracy": 0.5},
        "3": {"turns": 4, "passed": 3, "missing": 1, "turn_accuracy": 0.75},
    }
    assert agg["conversations"] == {"cases": 4, "interaction_accuracy": 0.25,
                                    "interactions_passed": 1, "turn_accuracy": 8 / 12,
                                    "turns": 12, "passed": 8, "missing": 2}
    assert "| 2 | 4 | 2 | 1 | 50.0 % | 0.500 |" in serial.reports["md"].read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ["xdist", "merged", "resumed"])
def test_each_way_of_running_gives_the_serial_by_turn(runs: dict[str, Run], name: str) -> None:
    run, serial = runs[name], runs["serial"]
    assert run.status == serial.status, run.explain()
    # every score to the bit (the query times of each run aside)
    def scores(report: Report) -> dict[str, dict[str, object]]:
        return {n: {k: v for k, v in t.items() if "seconds" not in k}
                for n, t in report["aggregates"]["by_turn"].items()}

    assert scores(run.json) == scores(serial.json)
    assert run.json["aggregates"]["conversations"] == serial.json["aggregates"]["conversations"]
    assert_same(serial.json, run.json, f"{name} versus the serial run")
    md = run.reports["md"].read_text(encoding="utf-8")
    table = serial.reports["md"].read_text(encoding="utf-8").split("### By turn")[1]
    assert md.split("### By turn")[1].split("###")[0] == table.split("###")[0]


def test_the_retried_shard_carried_its_conversations(runs: dict[str, Run]) -> None:
    def turns(run: Run) -> dict[str, list[tuple[int, str]]]:
        return {c["id"]: [(t["turn"], t["outcome"]) for t in c["details"]["turns"]]
                for c in run.json["cases"] if (c.get("details") or {}).get("turns")}

    retry = runs["retry2"]
    assert all(c.get("carried") for c in retry.json["cases"] if c["outcome"] != "error")
    assert turns(retry) == turns(runs["shard2"])


@pytest.mark.parametrize("name", ["serial", "xdist", "shard1", "shard2", "merged", "resumed"])
def test_every_report_goes_back_into_merge_and_resume(runs: dict[str, Run], name: str) -> None:
    accepted_everywhere(runs[name].reports["json"])
