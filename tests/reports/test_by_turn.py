"""Conversation cases in the reports (issue 42 item 1): ``aggregates.by_turn`` and
``aggregates.conversations`` from the records alone, the by-turn table of every format, the
per-turn baseline flips (``<case-id>#turn<N>``) and a gate on ``interaction_accuracy``.

The records are written here as docs/reports.md ("By turn") describes a conversation record:
``details.turns`` with one entry per scored turn (``turn``, ``outcome``, ``metrics``) and the
case metrics ``turn_accuracy`` and ``interaction_accuracy``. The expected values are counted
by hand from the turns below.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.baseline.compare import compare
from pytest_queryeval.baseline.store import compact_baseline, load_baseline, write_baseline
from pytest_queryeval.conclude import aggregates_of
from pytest_queryeval.conclude.aggregate import evaluate_gates
from pytest_queryeval.figures.by_turn import junit_properties, scored_turns
from pytest_queryeval.report.html import render_html
from pytest_queryeval.report.markdown import render_markdown
from pytest_queryeval.report.stream import slim
from pytest_queryeval.report.terminal import format_comparison, summary_lines
from pytest_queryeval.suite.config import Gate


def _turn(n: int, outcome: str, ex: float | None = None, question: str = "q") -> dict[str, Any]:
    ex = (1.0 if outcome == "passed" else 0.0) if ex is None else ex
    return {"turn": n, "question": f"{question} {n}", "gold": "SELECT 1",
            "predicted": None if outcome == "missing" else "SELECT 1", "outcome": outcome,
            "metrics": {"execution_accuracy": ex, "prediction_seconds": 0.25 * n},
            "reason": None}


def _conversation(case_id: str, *turns: dict[str, Any], line: int = 1) -> dict[str, Any]:
    passed = sum(t["outcome"] == "passed" for t in turns)
    every = passed == len(turns)
    return {
        "id": case_id, "nodeid": f"test_chat.yaml::{case_id}", "file": "test_chat.yaml",
        "line": line, "kind": "sql", "difficulty": "unknown", "tags": [], "question": None,
        "outcome": "passed" if every else "failed", "status": "passed" if every else "failed",
        "metrics": {"turn_accuracy": passed / len(turns),
                    "interaction_accuracy": 1.0 if every else 0.0},
        "thresholds": {}, "failed_metrics": [] if every else ["interaction_accuracy"],
        "details": {"turns": list(turns)}, "settings": {}, "error": None, "reason": None,
        "diff": [],
    }


def _plain(case_id: str, outcome: str, line: int) -> dict[str, Any]:
    return {"id": case_id, "nodeid": f"test_q.yaml::{case_id}", "file": "test_q.yaml",
            "line": line, "kind": "sql", "difficulty": "unknown", "tags": [],
            "question": "How many?", "outcome": outcome, "status": outcome,
            "metrics": {"execution_accuracy": 1.0 if outcome == "passed" else 0.0},
            "thresholds": {}, "failed_metrics": [], "details": {}, "settings": {},
            "error": None, "reason": None, "diff": []}


def _sdmx() -> dict[str, Any]:
    """An SDMX record: its ``details.turns`` are term scores, not a conversation's turns."""
    return {"id": "gdp", "nodeid": "test_s.yaml::gdp", "file": "test_s.yaml", "line": 1,
            "kind": "sdmx", "difficulty": "unknown", "tags": [], "question": "GDP",
            "outcome": "passed", "status": "passed", "metrics": {"macro_f1": 1.0},
            "thresholds": {}, "failed_metrics": [], "settings": {}, "error": None,
            "reason": None, "diff": [],
            "details": {"turns": [{"turn": 1, "content": "GDP", "macro_f1": 1.0}]}}


def _records() -> list[dict[str, Any]]:
    """invoices-chat fails at turn 2, tracks-chat passes both turns, albums-chat's prediction
    stops after turn 1 (turns 2 and 3 missing, scored 0)."""
    return [
        _conversation("invoices-chat", _turn(1, "passed"), _turn(2, "failed", 0.0),
                      _turn(3, "passed"), line=1),
        _conversation("tracks-chat", _turn(1, "passed"), _turn(2, "passed"), line=20),
        _conversation("albums-chat", _turn(1, "passed"), _turn(2, "missing"),
                      _turn(3, "missing"), line=40),
        _plain("count", "passed", 1),
        _sdmx(),
    ]


def _report(records: list[dict[str, Any]], gates: list[dict[str, Any]] | None = None
            ) -> dict[str, Any]:
    return {"version": 1, "run": {"exitstatus": 1}, "cases": records,
            "aggregates": aggregates_of(records), "gates": gates or []}


EXPECTED_BY_TURN = {
    "1": {"turns": 3, "passed": 3, "turn_accuracy": 1.0, "execution_accuracy": 1.0,
          "prediction_seconds": 0.25},
    "2": {"turns": 3, "passed": 1, "missing": 1, "turn_accuracy": 1 / 3,
          "execution_accuracy": 1 / 3, "prediction_seconds": 0.5},
    "3": {"turns": 2, "passed": 1, "missing": 1, "turn_accuracy": 0.5,
          "execution_accuracy": 0.5, "prediction_seconds": 0.75},
}
EXPECTED_CONVERSATIONS = {"cases": 3, "interaction_accuracy": 1 / 3, "interactions_passed": 1,
                          "turn_accuracy": 5 / 8, "turns": 8, "passed": 5, "missing": 2}


def test_by_turn_and_conversations_are_counted_over_every_scored_turn() -> None:
    agg = aggregates_of(_records())
    assert agg["by_turn"] == EXPECTED_BY_TURN  # the same floats: 1 / 3 is fsum([0, 1, 0]) / 3
    assert list(agg["by_turn"]) == ["1", "2", "3"]
    assert agg["conversations"] == pytest.approx(EXPECTED_CONVERSATIONS)
    # the conversation cases are also cases of their kind, as before
    assert agg["by_kind"]["sql"]["count"] == 4
    assert agg["by_kind"]["sql"]["metrics"]["interaction_accuracy"]["mean"] == pytest.approx(1 / 3)


def test_a_run_without_conversations_has_no_by_turn() -> None:
    records = [_plain("count", "passed", 1), _sdmx()]
    agg = aggregates_of(records)
    assert "by_turn" not in agg and "conversations" not in agg
    assert scored_turns(_sdmx()) is None
    report = _report(records)
    assert "By turn" not in render_markdown(report)
    assert 'id="by-turn"' not in render_html(report)
    assert not any(line.startswith(("turn ", "conversations:")) for line in summary_lines(report))
    assert junit_properties(agg) == []


def test_merge_and_resume_compute_what_a_serial_run_does() -> None:
    """``queryeval merge`` aggregates slim records in another order (shards), a resumed run
    the carried records beside the new ones: the same figures, bit for bit."""
    serial = aggregates_of(_records())
    shuffled = _records()
    random.Random(7).shuffle(shuffled)
    merged = aggregates_of([slim(r) for r in shuffled])
    assert merged["by_turn"] == serial["by_turn"]
    assert merged["conversations"] == serial["conversations"]
    kept = slim(_records()[0])["details"]["turns"][1]
    assert kept == {"turn": 2, "outcome": "failed",
                    "metrics": {"execution_accuracy": 0.0, "prediction_seconds": 0.5}}


def test_the_terminal_summary_prints_the_by_turn_table() -> None:
    lines = summary_lines(_report(_records()))
    start = next(i for i, line in enumerate(lines) if line.startswith("turn"))
    table = [" ".join(line.split()) for line in lines[start:start + 7]]
    assert table == [
        "turn turns pass missing EX",
        "---- ----- ------ ------- -----",  # the blank second column, as the dialects' table
        "1 3 100.0% 0 1.000",
        "2 3 33.3% 1 0.333",
        "3 2 50.0% 1 0.500",
        "all 8 62.5% 2 -",
        "conversations: 3 cases, interaction accuracy 33.3% (1 of 3), turn accuracy 62.5% "
        "(5 of 8 scored turns, 2 missing)",
    ]


def test_the_markdown_summary_has_a_by_turn_table() -> None:
    text = render_markdown(_report(_records()))
    section = text[text.index("### By turn"):].split("\n\n")
    assert section[1] == ("conversations: 3 cases, interaction accuracy 33.3% (1 of 3), turn "
                          "accuracy 62.5% (5 of 8 scored turns, 2 missing)")
    assert section[2].splitlines() == [
        "| turn | turns | passed | missing | turn accuracy | execution\\_accuracy |",
        "|---|---:|---:|---:|---:|---:|",
        "| 1 | 3 | 3 | 0 | 100.0 % | 1.000 |",
        "| 2 | 3 | 1 | 1 | 33.3 % | 0.333 |",
        "| 3 | 2 | 1 | 1 | 50.0 % | 0.500 |",
        "| **all** | 8 | 5 | 2 | 62.5 % | – |",
    ]


def test_the_step_summary_carries_the_table(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_queryeval.conclude import Outputs, write_reports

    step = tmp_path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    write_reports(_report(_records()), None, Outputs())
    assert "| 2 | 3 | 1 | 1 | 33.3 % | 0.333 |" in step.read_text(encoding="utf-8")


def test_the_html_report_has_a_by_turn_section() -> None:
    page = render_html(_report(_records()))
    section = page[page.index('<section id="by-turn">'):]
    section = section[:section.index("</section>")]
    assert "<th class=n>execution_accuracy</th><th class=n>prediction_seconds</th>" in section
    assert ('<tr data-turn="2"><td>2</td><td class=n>3</td><td class=n>1</td>'
            "<td class=n>1</td><td class=n>33.3 %</td><td class=n>0.333</td>"
            "<td class=n>0.500</td></tr>") in section
    assert "interaction accuracy 33.3% (1 of 3)" in section


def test_the_excel_report_has_a_by_turn_sheet(tmp_path: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    from pytest_queryeval.report.excel import write_xlsx

    wb = openpyxl.load_workbook(write_xlsx(_report(_records()), tmp_path / "r.xlsx"))
    assert "By turn" in wb.sheetnames
    assert wb.sheetnames.index("By turn") < wb.sheetnames.index("Details")
    rows = list(wb["By turn"].iter_rows(values_only=True))
    assert rows[0][0].startswith("conversations: 3 cases")
    assert rows[2] == ("Turn", "Turns", "Passed", "Missing", "Turn accuracy",
                       "execution_accuracy", "prediction_seconds")
    assert rows[4][:5] == ("2", 3, 1, 1, pytest.approx(1 / 3))
    assert rows[4][5:] == (pytest.approx(1 / 3), pytest.approx(0.5))
    assert rows[6][:5] == ("all", 8, 5, 2, pytest.approx(5 / 8))


def test_junit_properties_carry_the_by_turn_table() -> None:
    props = dict(junit_properties(aggregates_of(_records())))
    assert props["queryeval.turn.2.turns"] == 3
    assert props["queryeval.turn.2.passed"] == 1
    assert props["queryeval.turn.2.missing"] == 1
    assert props["queryeval.turn.2.turn_accuracy"] == 0.333333
    assert props["queryeval.turn.3.mean.execution_accuracy"] == 0.5
    assert props["queryeval.conversations.interaction_accuracy"] == 0.333333
    assert props["queryeval.conversations.turn_accuracy"] == 0.625
    assert "queryeval.turn.1.missing" not in props


def test_a_gate_on_interaction_accuracy(tmp_path: Path) -> None:
    records = _records()
    for rec in records:
        rec["path"] = str(tmp_path / rec["file"])
    gate = Gate("interaction", "interaction_accuracy", "mean", 0.5, tmp_path)
    [result] = evaluate_gates([gate], records)
    assert (result["value"], result["n"], result["passed"]) == (pytest.approx(1 / 3), 3, False)
    kind_gate = Gate("sql chats", "interaction_accuracy", "mean", 0.3, tmp_path, kind="sql")
    assert evaluate_gates([kind_gate], records)[0]["passed"] is True


# ---------------------------------------------------------------------------------------------
# the baseline


def _baseline_records() -> list[dict[str, Any]]:
    """The baseline run: invoices-chat passed every turn, tracks-chat failed at turn 2."""
    records = _records()
    records[0] = _conversation("invoices-chat", _turn(1, "passed"), _turn(2, "passed"),
                               _turn(3, "passed"), line=1)
    records[1] = _conversation("tracks-chat", _turn(1, "passed"), _turn(2, "failed", 0.0),
                               line=20)
    return records


@pytest.mark.parametrize("form", ["report", "compact file"])
def test_a_flip_at_turn_n_is_named_id_turn_n(tmp_path: Path, form: str) -> None:
    base = _report(_baseline_records())
    if form == "compact file":  # what --queryeval-update-baseline writes, read back
        write_baseline(compact_baseline(base), tmp_path / "baseline.json")
        base = load_baseline(tmp_path / "baseline.json")
    cmp = compare(_report(_records()), base)
    assert [c.id for c in cmp.regressions] == ["invoices-chat"]
    assert [c.id for c in cmp.fixes] == ["tracks-chat"]
    assert [(c.id, c.before, c.after) for c in cmp.turn_regressions] == [
        ("invoices-chat#turn2", "passed", "failed")]
    assert [(c.id, c.before, c.after) for c in cmp.turn_fixes] == [
        ("tracks-chat#turn2", "failed", "passed")]
    assert cmp.passed  # no max-drop: reported, not gated
    lines = format_comparison(cmp)
    at = lines.index("turns pass → fail: 1")
    assert lines[at + 1] == "  invoices-chat#turn2 [sql/unknown] passed → failed"
    assert "  tracks-chat#turn2 [sql/unknown] failed → passed" in lines
    text = render_markdown(_report(_records()), cmp)
    assert "**turns pass → fail (1)**: `invoices-chat#turn2` (sql/unknown)" in text
    assert '<ul id="turn-regressions"><li><code>invoices-chat#turn2</code>' in render_html(
        _report(_records()), cmp)
    saved = cmp.to_dict()
    assert [c["id"] for c in saved["turn_regressions"]] == ["invoices-chat#turn2"]


def test_the_baseline_file_keeps_each_turn_s_outcome(tmp_path: Path) -> None:
    path = write_baseline(compact_baseline(_report(_records())), tmp_path / "baseline.json")
    rows = {row["id"]: row for row in json.loads(path.read_text(encoding="utf-8"))["cases"]}
    assert rows["invoices-chat"]["turns"] == {"1": "passed", "2": "failed", "3": "passed"}
    assert rows["albums-chat"]["turns"] == {"1": "passed", "2": "missing", "3": "missing"}
    assert "turns" not in rows["count"] and "turns" not in rows["gdp"]
    loaded = {c["id"]: c for c in load_baseline(path)["cases"]}
    assert loaded["invoices-chat"]["details"]["turns"] == [
        {"turn": 1, "outcome": "passed"}, {"turn": 2, "outcome": "failed"},
        {"turn": 3, "outcome": "passed"}]
    assert "details" not in loaded["count"]


def test_a_malformed_turns_entry_is_a_located_baseline_error(tmp_path: Path) -> None:
    from pytest_queryeval.errors import ConfigError

    data = compact_baseline(_report(_records()))
    data["cases"][0]["turns"] = {"two": "failed"}
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"cases\[0\]\.turns: expected a mapping of turn "):
        load_baseline(path)


def test_no_turn_flip_without_conversations() -> None:
    cur = _report([_plain("count", "failed", 1)])
    cmp = compare(cur, _report([_plain("count", "passed", 1)]))
    assert [c.id for c in cmp.regressions] == ["count"]
    assert "turn_regressions" not in cmp.to_dict()
    assert not any(line.startswith("turns ") for line in format_comparison(cmp))


def test_max_drop_0_fails_on_a_turn_a_fix_elsewhere_in_the_conversation_hides() -> None:
    """The case fails in both runs (so no case flip), and its turn accuracy is unchanged:
    turn 1 was fixed and turn 2 broke. Nothing may get worse: turn 2 fails the comparison."""
    before = _conversation("orders-chat", _turn(1, "failed", 0.0), _turn(2, "passed"))
    after = _conversation("orders-chat", _turn(1, "passed"), _turn(2, "failed", 0.0))
    cmp = compare(_report([after]), _report([before]), 0.0)
    assert cmp.regressions == []
    assert [c.id for c in cmp.zero_drop_regressions] == ["orders-chat#turn2"]
    assert not cmp.passed
    assert "max drop 0: case(s) passed → failed: orders-chat#turn2" in cmp.summary()
    assert compare(_report([after]), _report([before]), 0.05).passed
    # the case's own flip already fails it: its turn is not counted twice
    was_passing = _conversation("orders-chat", _turn(1, "passed"), _turn(2, "passed"))
    cmp = compare(_report([after]), _report([was_passing]), 0.0)
    assert [c.id for c in cmp.zero_drop_regressions] == ["orders-chat"]


def test_a_skipped_or_a_new_turn_is_not_a_flip() -> None:
    before = _conversation("c", _turn(1, "passed"))
    after = _conversation("c", _turn(1, "passed"), _turn(2, "failed"))
    assert compare(_report([after]), _report([before])).turn_regressions == []
    skipped = copy.deepcopy(after)
    skipped["outcome"] = "skipped"
    skipped["details"]["turns"][0]["outcome"] = "failed"
    assert compare(_report([skipped]), _report([before])).turn_regressions == []


def test_a_failing_conversation_shows_each_turn() -> None:
    """The failure views show each scored turn's question, prediction and gold (the case's
    own ``gold`` is none: a conversation has one per turn)."""
    from pytest_queryeval.report.terminal import failure_text

    case = _records()[2]  # albums-chat: turns 2 and 3 missing
    case["gold"], case["predicted"] = None, ["SELECT 1"]
    text = failure_text(case)
    assert "turn 2 (missing): q 2\n  predicted: null\n  gold:      SELECT 1" in text
    assert "gold:      null" not in text
    report = _report(_records()[:3])
    md = render_markdown(report)
    assert "| 2 | failed | q 2 | `SELECT 1` | `SELECT 1` |" in md  # invoices-chat's turn 2
    assert "| 2 | missing | q 2 | – | `SELECT 1` |" in md
    page = render_html(report)
    assert ("<tr><td class=n>2</td><td>missing</td><td>q 2</td><td>–</td>"
            "<td><pre>SELECT 1</pre></td></tr>") in page
