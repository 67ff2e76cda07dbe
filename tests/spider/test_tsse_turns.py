"""The SParC/CoSQL turn table of the Spider test-suite evaluator, digit for digit.

Oracle: ``tsse/oracle_*_match.txt``, the stdout of taoyds/test-suite-sql-eval ``evaluation.py``
(``--etype match``) run unmodified on its own interaction example (132 interactions, 322 turns)
and on 32 SParC dev interactions whose predictions drop turns, miss a whole session and use a
``value`` placeholder (tests/data/tsse/PROVENANCE.md).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_queryeval.metrics.tsse import (
    ALL,
    TSSE,
    Turn,
    format_levels,
    format_turns,
    read_sessions,
    reference_prediction,
    score_texts,
    turn_column,
    turn_table,
)

SETS = {
    "tsse": ("spider/tsse_gold.txt", "spider/tsse_predict.txt", "tsse/oracle_tsse_match.txt"),
    "sparc": ("tsse/sparc_gold.txt", "tsse/sparc_predict.txt", "tsse/oracle_sparc_match.txt"),
}


def _load(data: Path, name: str) -> tuple[list[list[tuple[str, str]]], list[list[str]], list[str]]:
    gold_path, pred_path, oracle_path = SETS[name]
    gold = [[(t.fields[0], t.fields[1]) for t in s] for s in read_sessions(data / gold_path)]
    pred = [[t.fields[0] for t in s] for s in read_sessions(data / pred_path)]
    return gold, pred, (data / oracle_path).read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module", params=sorted(SETS))
def example(request: pytest.FixtureRequest, shared_data: Path) -> tuple[
        str, list[list[Turn]], list[str], list[list[tuple[str, str]]], list[list[str]]]:
    gold, pred, oracle = _load(shared_data, request.param)
    return request.param, score_texts(gold, pred, shared_data / "spider" / "tables.json"), \
        oracle, gold, pred


def test_tsse_mode_prints_the_reference_tables(example) -> None:
    """``conversation_scoring: tsse``: the turn table (the stdout's last seven lines) and the
    joint_all column of the first table equal the reference's stdout line for line."""
    _, scored, oracle, _, _ = example
    table = turn_table(scored, TSSE)
    assert format_turns(table) == oracle[-7:]
    levels = format_levels(table)
    start = oracle.index(levels[0])
    assert oracle[start:start + 5] == levels


def test_every_mismatch_the_reference_prints(example) -> None:
    """Per turn, not only per column: the reference prints each zipped turn that fails exact
    match (hardness, prediction after its ``value`` rewrite, gold), in order; ours are the same
    turns."""
    _, scored, oracle, gold, pred = example
    text = "\n".join(oracle)
    printed = re.findall(r"^(easy|medium|hard|extra) pred: (.*)\n\1 gold: (.*)$", text, re.M)
    ours = [(t.hardness, reference_prediction(p), g[0])
            for turns, g_session, p_session in zip(scored, gold, pred, strict=True)
            for t, g, p in zip(turns, g_session, p_session, strict=False) if t.exact == 0]
    assert ours == [tuple(m) for m in printed]
    assert len(ours) == {"tsse": 295, "sparc": 5}[example[0]]


def test_default_mode_keeps_missing_turns_in_the_denominators(example) -> None:
    """The honest default differs from the reference exactly by the dropped turns: each counts
    in its column, its hardness and ``all`` with exact match 0, and fails its interaction."""
    name, scored, _, _, _ = example
    tsse, honest = turn_table(scored, TSSE), turn_table(scored, ALL)
    assert honest.dropped == 0
    assert tsse.dropped == honest.missing == {"tsse": 0, "sparc": 6}[name]
    missing_by_column = {c: 0 for c in tsse.turns}
    for turns in scored:
        for n, t in enumerate(turns, 1):
            if t.exact is None:
                missing_by_column[turn_column(n)] += 1
    for col, extra in missing_by_column.items():
        assert honest.turns[col].count == tsse.turns[col].count + extra
        assert honest.turns[col].matched == tsse.turns[col].matched
    assert honest.levels["all"].count == tsse.levels["all"].count + tsse.dropped
    if name == "sparc":
        # three interactions lose joint_all: two shorter sessions and the empty one (all([]))
        assert tsse.levels["joint_all"].matched - honest.levels["joint_all"].matched == 3
        assert format_turns(honest)[-1] == (
            "exact match          0.906                0.906                0.926"
            "                0.846                0.000               ")
    else:
        assert format_turns(honest) == format_turns(tsse)


def test_a_conversation_without_turns_and_bad_modes() -> None:
    table = turn_table([[], [Turn(1.0, "easy"), Turn(None, "hard")]], TSSE)
    assert (table.levels["joint_all"].matched, table.dropped) == (2, 1)
    assert turn_table([[Turn(None, "easy")]]).levels["joint_all"].matched == 0
    assert [turn_column(n) for n in (1, 4, 5, 9)] == ["turn 1", "turn 4", "turn > 4", "turn > 4"]
    with pytest.raises(ValueError, match="conversation_scoring must be one of all, tsse"):
        turn_table([], "zip")
