"""The judge's answer read strictly, its verdicts pinned by content, its prompt within budget
(issue 26 items 2 to 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_queryeval.judge.pins import PinStore, pin_key
from pytest_queryeval.judge.prompt import build_prompt, show_result
from pytest_queryeval.judge.verdict import JudgeError, Verdict, majority, parse_verdict


@pytest.mark.parametrize(("answer", "category", "accepted"), [
    ('{"category": "equivalent", "reason": "same rows"}', "equivalent", True),
    ('Sure! ```json\n{"category": "wrong", "reason": "filters on the wrong year"}\n```',
     "wrong", False),
    ('{"verdict": "accept", "category": "gold_wrong", "reason": "gold ignores ties"}',
     "gold_wrong", True),
    ('{"category": "ambiguous", "reason": ""}', "ambiguous", True),
])
def test_a_well_formed_answer_is_read(answer: str, category: str, accepted: bool) -> None:
    verdict = parse_verdict(answer)
    assert (verdict.category, verdict.accepted) == (category, accepted)


@pytest.mark.parametrize(("answer", "message"), [
    ("", "the judge's answer is empty"),
    ("I think it is fine.", "holds no JSON object: 'I think it is fine.'"),
    ('{"category": "equivalent", "reason": "x",}', "is not valid JSON"),
    ('{"category": "probably", "reason": "x"}', "category 'probably' is none of"),
    ('{"category": "wrong", "reason": 3}', "the judge's reason is a int, not text"),
    ('{"verdict": "accept", "category": "wrong", "reason": "x"}',
     "the judge said accept but the category 'wrong'"),
])
def test_any_other_answer_is_an_error_of_the_judge(answer: str, message: str) -> None:
    with pytest.raises(JudgeError) as info:
        parse_verdict(answer)
    assert message in str(info.value)
    assert info.value.reason().startswith("judge error: ")


def test_votes_take_the_majority_and_a_tie_rejects() -> None:
    yes, no = Verdict("equivalent", "same"), Verdict("wrong", "differs")
    assert majority([yes, no, yes]).accepted
    assert majority([yes, no, yes]).reason == "2 of 3 votes: same"
    assert not majority([yes, no]).accepted


def test_pins_are_keyed_by_content_and_survive_a_round_trip(tmp_path: Path) -> None:
    common = {"model": "smollm2", "template": "T", "gold": "SELECT 1", "predicted": "SELECT 2",
              "gold_digest": "g", "predicted_digest": "p"}
    key = pin_key(**common)
    assert key == pin_key(**common)
    for field in common:
        assert pin_key(**{**common, field: "changed"}) != key
    store = PinStore.load(tmp_path / "judge-pins.jsonl")
    assert store.get(key) is None
    store.put(key, Verdict("equivalent", "same rows"))
    store.put("0" * 64, Verdict("wrong", "no"))
    store.write()
    text = (tmp_path / "judge-pins.jsonl").read_text()
    assert text.splitlines()[0].startswith('{"category": "wrong", "key": "' + "0" * 64)
    again = PinStore.load(tmp_path / "judge-pins.jsonl")
    assert again.get(key) == Verdict("equivalent", "same rows")
    (tmp_path / "bad.jsonl").write_text('{"key": "k", "category": "maybe"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:1: not a pinned verdict"):
        PinStore.load(tmp_path / "bad.jsonl")


def test_the_prompt_shows_both_queries_and_results_within_the_budget() -> None:
    rows = [(i, f"name {i}") for i in range(500)]
    shown = show_result(["id", "name"], rows, budget=10)
    assert shown.shape == "500 rows, 2 columns"
    assert shown.text.splitlines() == ["id | name", "0 | name 0", "1 | name 1", "2 | name 2",
                                       "3 | name 3", "4 | name 4",
                                       "[cut: the first 5 of 500 rows shown]"]
    prompt = build_prompt(question="How many?", gold="SELECT count(*) FROM t",
                          predicted="SELECT count(id) FROM t",
                          gold_result=show_result(["n"], [(3,)]),
                          predicted_result=show_result(["n"], [(None,)]),
                          schema="CREATE TABLE t (id INTEGER)", evidence="t holds the items",
                          near_misses=["rows match ignoring NULLs"])
    for part in ("Question: How many?", "Evidence: t holds the items", "CREATE TABLE t",
                 "SELECT count(*) FROM t", "SELECT count(id) FROM t", "Gold result (1 row, 1 "
                 "column):\nn\n3", "Predicted result (1 row, 1 column):\nn\nNULL",
                 "- rows match ignoring NULLs", '{"category": "equivalent" | "gold_wrong"'):
        assert part in prompt, part


def test_the_pin_file_is_written_with_the_users_umask(tmp_path: Path) -> None:
    """A team commits and publishes the pin file: it is created as any file the user writes
    (umask 022: 0644), not 0600 as a bare temporary file would leave it."""
    import os

    old = os.umask(0o022)
    try:
        store = PinStore.load(tmp_path / "judge-pins.jsonl")
        store.put("0" * 64, Verdict("wrong", "no"))
        store.write()
    finally:
        os.umask(old)
    assert (tmp_path / "judge-pins.jsonl").stat().st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["judge-pins.jsonl"]  # no temporary left


def test_a_pin_file_without_case_labels_is_read_and_keeps_its_labels_when_rewritten(
        tmp_path: Path) -> None:
    """Pin files written before the labels (``{"category", "key", "reason"}``) still load; a
    rewrite labels the pins answered now and keeps every other pin's labels as read."""
    path = tmp_path / "judge-pins.jsonl"
    old, labelled = "a" * 64, "b" * 64
    path.write_text(json.dumps({"category": "equivalent", "key": old, "reason": "same"}) + "\n"
                    + json.dumps({"case": "c2", "category": "wrong", "key": labelled,
                                  "question": "Which?", "reason": "no"}) + "\n")
    store = PinStore.load(path)
    assert store.get(old) == Verdict("equivalent", "same")
    store.put("c" * 64, Verdict("wrong", "counts albums"), case="c3",
              question="How many artists?")
    store.write()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines == [
        {"category": "equivalent", "key": old, "reason": "same"},
        {"case": "c2", "category": "wrong", "key": labelled, "question": "Which?", "reason": "no"},
        {"case": "c3", "category": "wrong", "key": "c" * 64, "question": "How many artists?",
         "reason": "counts albums"}]
