"""The turn table ``--queryeval-spider-table`` prints for conversation records, against the
Spider test-suite evaluator's own stdout (tests/data/tsse/PROVENANCE.md).

The records are shaped as the engine writes them (docs: conversations; ``details.turns[*]``
with the turn's metrics and outcome, ``details.dropped_turns`` in the ``tsse`` mode); their
exact match comes from the plugin's Spider port, so the whole path from per-turn scores to the
printed digits is the plugin's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.figures.turn_table import turn_table_lines
from pytest_queryeval.metrics.tsse import read_sessions, score_texts
from pytest_queryeval.report.terminal import summary_lines


def _records(data: Path, gold_name: str, pred_name: str, *, tsse: bool) -> list[dict[str, Any]]:
    gold = [[(t.fields[0], t.fields[1]) for t in s] for s in read_sessions(data / gold_name)]
    pred = [[t.fields[0] for t in s] for s in read_sessions(data / pred_name)]
    scored = score_texts(gold, pred, data / "spider" / "tables.json")
    records = []
    for i, (turns, g_session, p_session) in enumerate(zip(scored, gold, pred, strict=True)):
        entries = []
        for n, (turn, (g_sql, _)) in enumerate(zip(turns, g_session, strict=True), 1):
            missing = turn.exact is None
            outcome = "missing" if missing else "passed" if turn.exact == 1 else "failed"
            entries.append({"turn": n, "question": f"turn {n}", "gold": g_sql,
                            "predicted": None if missing else p_session[n - 1],
                            "outcome": outcome, "reason": None,
                            "metrics": {"exact_set_match": 0.0 if missing else turn.exact,
                                        "execution_accuracy": 0.0}})
        details: dict[str, Any] = {"turns": entries}
        if tsse:
            details["dropped_turns"] = sum(t.exact is None for t in turns)
        records.append({"id": f"sparc-{i:04d}", "kind": "sql", "details": details})
    return records


@pytest.mark.parametrize("tsse", [True, False], ids=["tsse", "all"])
def test_sparc_records_print_the_reference_table(shared_data: Path, tsse: bool) -> None:
    oracle = (shared_data / "tsse" / "oracle_sparc_match.txt").read_text().splitlines()
    records = _records(shared_data, "tsse/sparc_gold.txt", "tsse/sparc_predict.txt", tsse=tsse)
    lines = turn_table_lines(records, full=True)
    mode = "tsse" if tsse else "all"
    assert lines[0] == ("Spider test-suite turn table (official evaluator layout, "
                        f"conversation_scoring: {mode}):")
    start = oracle.index(lines[1])
    if tsse:
        assert lines[1:6] == oracle[start:start + 5]
        assert lines[6:13] == oracle[-7:]
        assert lines[14:] == ["conversation_scoring: tsse dropped 6 gold turns without a "
                              "predicted turn from every count (the reference's zip)", ""]
    else:  # the same layout, the six missing turns counted 0
        assert lines[1] == oracle[start]
        assert lines[2] == ("count                35                   39                   12"
                            "                   19                   105                  32"
                            "                  ")
        assert lines[9] == ("count                32                   32                   27"
                            "                   13                   1                   ")
        assert lines[14:] == ["6 gold turns without a predicted turn scored 0 "
                              "(conversation_scoring: tsse would drop them, as the reference "
                              "does)", ""]
    # without the option only the dropped turns are said
    assert turn_table_lines(records, full=False) == (lines[14:] if tsse else [])


def test_tsse_example_records_in_the_summary(shared_data: Path) -> None:
    """Through the terminal summary, as the plugin prints it at the end of a run."""
    oracle = (shared_data / "tsse" / "oracle_tsse_match.txt").read_text().splitlines()
    records = _records(shared_data, "spider/tsse_gold.txt", "spider/tsse_predict.txt",
                       tsse=False)
    overall = {"count": 132, "passed": 0, "failed": 132, "errors": 0, "xfailed": 0,
               "skipped": 0, "pass_rate": 0.0}
    report = {"cases": records, "aggregates": {"by_kind_difficulty": {}, "by_kind": {},
                                               "by_dialect": {}, "by_tag": {},
                                               "overall": overall}}
    lines = summary_lines(report, spider_table=True, worst=0, baseline=False)
    at = lines.index("Spider test-suite turn table (official evaluator layout, "
                     "conversation_scoring: all):")
    start = oracle.index(lines[at + 1])
    assert lines[at + 1:at + 6] == oracle[start:start + 5]
    assert lines[at + 6:at + 13] == oracle[-7:]
    plain = summary_lines(report, spider_table=False, worst=0, baseline=False)
    assert not any("turn table" in line for line in plain)


def test_records_without_turn_exact_match_print_nothing() -> None:
    assert turn_table_lines([{"id": "a", "kind": "sql", "details": {}}], full=True) == []
    chat = {"id": "b", "kind": "sql", "details": {"turns": [
        {"turn": 1, "gold": "SELECT 1", "outcome": "passed",
         "metrics": {"execution_accuracy": 1.0}}]}}
    assert turn_table_lines([chat], full=True) == []
