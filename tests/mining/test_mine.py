"""Production traces become regression cases (issue 63 items 1, 3, 4 and 5): ``queryeval mine``
reads OpenInference spans, writes unreviewed cases whose gold is the query production ran,
one case per question and result, nothing secret, nothing overwritten; the mined suite runs
on the real Chinook file and replays every observed query to the same rows."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from pytest_queryeval.conclude.cli import main as queryeval
from tests.mining.spans import otlp, trace_spans
from tests.support import dump, run_report

ROOT = Path(__file__).resolve().parents[2]
CHINOOK = ROOT / "example_suite" / "data" / "chinook.sqlite"
TOP_GENRE = ("SELECT g.Name FROM Track t JOIN Genre g ON g.GenreId = t.GenreId "
             "GROUP BY g.GenreId ORDER BY count(*) DESC LIMIT 1")
ACDC = ("SELECT count(*) FROM Track t JOIN Album a ON a.AlbumId = t.AlbumId "
        "WHERE a.ArtistId = 1 AND t.Milliseconds > 300000")
SECRET = "sk-proj-Zq8x7Vb1Nc2Mm3Ll4Kk5Jj6"


def _spans(db: Path) -> list[dict]:
    spans = []
    # the same question asked twice with the same result: one case
    for n, question in enumerate(["Which genre has the most tracks?",
                                  "which genre has the most tracks"]):
        spans += trace_spans(f"a{n}0000000000000000", question, [
            ("get_schema", {}), ("run_query", {"query": TOP_GENRE})], "Rock.", db,
            tags=["prod", "music"])
    spans += trace_spans("b00000000000000000", "How many AC/DC tracks run over five minutes?",
                         [("run_query", {"query": "SELECT nope FROM Track"}),
                          ("run_query", {"query": ACDC})], "6 tracks.", db)
    # a secret pasted into the question; a trace whose only query failed
    spans += trace_spans("c00000000000000000", f"my key is {SECRET}, list the albums",
                         [("run_query", {"query": "SELECT Title FROM Album LIMIT 3"})],
                         "Three albums.", db)
    spans += trace_spans("d00000000000000000", "What is the average salary?",
                         [("run_query", {"query": "SELECT avg(Salary) FROM Employee"})],
                         "I could not find salaries.", db)
    return spans


@pytest.fixture
def mined(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, dict, str]:
    db = tmp_path / "chinook.sqlite"
    shutil.copy(CHINOOK, db)
    spans = _spans(db)
    (tmp_path / "a.json").write_text(json.dumps(otlp(spans[:6])), encoding="utf-8")
    (tmp_path / "b.jsonl").write_text("".join(json.dumps(s) + "\n" for s in spans[6:]),
                                      encoding="utf-8")
    out = tmp_path / "suite"
    code = queryeval(["mine", str(tmp_path / "a.json"), str(tmp_path / "b.jsonl"),
                      "--datasource", "music", "--out", str(out), "--trajectory"])
    assert code == 0
    return out, yaml.safe_load((out / "test_mined.yaml").read_text()), capsys.readouterr().out


def test_each_trace_becomes_an_unreviewed_case_with_its_provenance(mined) -> None:
    _, data, printed = mined
    assert data["kind"] == "sql" and data["datasource"] == "music"
    cases = {c["id"]: c for c in data["cases"]}
    assert list(cases) == ["mined-a000000000000000", "mined-b000000000000000",
                           "mined-c000000000000000", "mined-d000000000000000"]
    top = cases["mined-a000000000000000"]
    assert top["gold"] == TOP_GENRE and top["reviewed"] is False
    assert top["question"] == "Which genre has the most tracks?"
    assert top["agent"] == {"trajectory": ["get_schema", "run_query"]}
    assert top["tags"] == ["prod", "music"]
    assert top["provenance"] == {"trace": "a00000000000000000", "source": "a.json", "traces": 2}
    # the last query that worked is the gold, not the one that failed before it
    assert cases["mined-b000000000000000"]["gold"] == ACDC
    # production ran no query that worked: an abstention candidate, no gold
    failed = cases["mined-d000000000000000"]
    assert failed["expect"] == "abstain" and "gold" not in failed
    assert "mined-error" in failed["tags"]
    assert "5 traces, 5 with a question, 4 cases" in printed and "1.25x" in printed


def test_no_secret_reaches_a_case_file_and_what_was_masked_is_listed(mined) -> None:
    out, data, printed = mined
    text = (out / "test_mined.yaml").read_text() + (out / "mined.json").read_text()
    assert SECRET not in text and SECRET not in printed
    assert data["cases"][2]["question"] == "my key is ***, list the albums"
    summary = json.loads((out / "mined.json").read_text())
    assert summary["masked"] == ["mined-c000000000000000.question: api key"]
    assert summary["deduplication_ratio"] == 1.25


def test_mine_never_overwrites(mined, tmp_path: Path, capsys) -> None:
    out, _, _ = mined
    before = (out / "test_mined.yaml").read_bytes()
    assert queryeval(["mine", str(tmp_path / "a.json"), "--datasource", "music",
                      "--out", str(out)]) == 2
    assert "exists: nothing written" in capsys.readouterr().err
    assert (out / "test_mined.yaml").read_bytes() == before


def test_a_broken_span_file_is_named_with_its_line(tmp_path: Path, capsys) -> None:
    (tmp_path / "x.jsonl").write_text('{"traceId": "t"}\n{not json\n', encoding="utf-8")
    assert queryeval(["mine", str(tmp_path / "x.jsonl"), "--datasource", "d",
                      "--out", str(tmp_path / "o")]) == 2
    assert "x.jsonl:2: not JSON" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_the_mined_suite_replays_and_reports_its_unreviewed_cases_apart(
        mined, pytester: pytest.Pytester) -> None:
    out, data, _ = mined
    shutil.copy(out / "test_mined.yaml", pytester.path / "test_mined.yaml")
    shutil.copy(CHINOOK, pytester.path / "chinook.sqlite")
    # the model now answers as production did: each observed query again
    answers = [{"id": c["id"], "predicted": c["gold"]} for c in data["cases"] if "gold" in c]
    answers.append({"id": "mined-d000000000000000", "predicted": {"abstain": True}})
    (pytester.path / "p.jsonl").write_text("".join(json.dumps(a) + "\n" for a in answers))
    pytester.makefile(".yaml", queryeval=dump({
        "datasources": {"music": {"type": "sqlite", "path": "chinook.sqlite"}},
        "predictions": {"source": "file", "path": "p.jsonl"},
        "thresholds": {"execution_accuracy": 1.0}}))
    result, report = run_report(pytester, "-p", "no:cacheprovider")
    assert {c["id"]: c["outcome"] for c in report["cases"]} == {
        c["id"]: "passed" for c in data["cases"]}
    assert all(c.get("reviewed") is False for c in report["cases"])
    result.stdout.fnmatch_lines(["unreviewed: 4 cases mined by queryeval mine*"])
    # -m "not unreviewed" leaves them out
    again = pytester.runpytest("-p", "no:cacheprovider", "-m", "not unreviewed")
    again.assert_outcomes(passed=0, deselected=4)


@pytest.mark.parametrize(("content", "said"), [
    (b'{"traceId": "t"}\n' + b"[" * 100_000 + b"]" * 100_000 + b"\n",
     "x.jsonl:2: nested deeper than"),
    (b'{"traceId": "t"}\n{"traceId": "\xff"}\n', "x.jsonl:2: not UTF-8 text: byte 0xff"),
])
def test_a_hostile_span_file_is_a_located_error(tmp_path: Path, capsys, content: bytes,
                                                said: str) -> None:
    """Read as the predictions file is read: bounded, decoded with the bad byte's line, its
    nesting bounded (a deep export ended the decoder's stack in a traceback)."""
    (tmp_path / "x.jsonl").write_bytes(content)
    assert queryeval(["mine", str(tmp_path / "x.jsonl"), "--datasource", "d",
                      "--out", str(tmp_path / "o")]) == 2
    assert said in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_a_fifo_given_as_spans_is_refused_not_read_forever(tmp_path: Path, capsys) -> None:
    import os

    os.mkfifo(tmp_path / "spans.jsonl")
    assert queryeval(["mine", str(tmp_path / "spans.jsonl"), "--datasource", "d",
                      "--out", str(tmp_path / "o")]) == 2
    assert "spans.jsonl: cannot read:" in capsys.readouterr().err


def test_asking_back_and_declining_become_candidates_and_replay(
        tmp_path: Path, pytester: pytest.Pytester, capsys) -> None:
    """Item 3: a trace whose last tool asked the user back is a clarification candidate
    (``expect: clarify``), one whose last tool declined an abstention candidate, even after a
    query that ran; both are ordinary cases that a model answering as production did passes.
    Fails before: the first was mined with its query as the gold, the second too."""
    db = tmp_path / "chinook.sqlite"
    shutil.copy(CHINOOK, db)
    spans = trace_spans("e00000000000000000", "Show the sales of last quarter",
                        [("run_query", {"query": "SELECT count(*) FROM Invoice"}),
                         ("ask_user", {"question": "Which year's last quarter?"})],
                        "Which year's last quarter?", db)
    spans += trace_spans("f00000000000000000", "What is the home address of employee 2?",
                         [("run_query", {"query": "SELECT count(*) FROM Employee"}),
                          ("abstain", {"reason": "personal data"})], "I cannot share that.", db)
    (tmp_path / "s.json").write_text(json.dumps(otlp(spans)), encoding="utf-8")
    out = tmp_path / "suite"
    assert queryeval(["mine", str(tmp_path / "s.json"), "--datasource", "music",
                      "--out", str(out)]) == 0
    cases = {c["id"]: c for c in yaml.safe_load((out / "test_mined.yaml").read_text())["cases"]}
    ask, decline = cases["mined-e000000000000000"], cases["mined-f000000000000000"]
    assert ask["expect"] == "clarify" and "gold" not in ask and "mined-clarify" in ask["tags"]
    assert decline["expect"] == "abstain" and "gold" not in decline
    assert "mined-refusal" in decline["tags"]
    shutil.copy(out / "test_mined.yaml", pytester.path / "test_mined.yaml")
    shutil.copy(CHINOOK, pytester.path / "chinook.sqlite")
    (pytester.path / "p.jsonl").write_text(
        json.dumps({"id": "mined-e000000000000000",
                    "predicted": {"clarify": "Which year do you mean?"}}) + "\n"
        + json.dumps({"id": "mined-f000000000000000", "predicted": {"abstain": True}}) + "\n")
    pytester.makefile(".yaml", queryeval=dump({
        "datasources": {"music": {"type": "sqlite", "path": "chinook.sqlite"}},
        "predictions": {"source": "file", "path": "p.jsonl"}}))
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    assert {c["id"]: c["outcome"] for c in report["cases"]} == {
        "mined-e000000000000000": "passed", "mined-f000000000000000": "passed"}


def test_a_stratified_sample_keeps_every_kind_of_trace_before_any_twice(
        tmp_path: Path, capsys) -> None:
    """Item 3's ``--sample N``: strata by tool pattern, error and latency; with as many places
    as strata, one case of each (a plain random sample of 3 from 8 same-pattern traces and 2
    others would usually miss the others); the same seed draws the same cases."""
    db = tmp_path / "chinook.sqlite"
    shutil.copy(CHINOOK, db)
    spans = []
    for n in range(8):  # one pattern, fast: eight distinct questions
        spans += trace_spans(f"a{n}0000000000000000", f"How many tracks in album {n + 1}?",
                             [("run_query", {"query": f"SELECT count(*) FROM Track WHERE "
                                                      f"AlbumId = {n + 1}"})], "n.", db)
    spans += trace_spans("b00000000000000000", "Which genres are there?",
                         [("get_schema", {}), ("run_query", {"query": "SELECT Name FROM Genre"})],
                         "Many.", db)
    spans += trace_spans("c00000000000000000", "What is the average salary?",
                         [("run_query", {"query": "SELECT avg(Salary) FROM Employee"})],
                         "", db)
    (tmp_path / "s.json").write_text(json.dumps(otlp(spans)), encoding="utf-8")

    def sample(out: str, seed: str) -> list[str]:
        assert queryeval(["mine", str(tmp_path / "s.json"), "--datasource", "music",
                          "--out", str(tmp_path / out), "--sample", "3", "--seed", seed]) == 0
        data = yaml.safe_load((tmp_path / out / "test_mined.yaml").read_text())
        return [c["id"] for c in data["cases"]]

    first = sample("one", "7")
    assert len(first) == 3
    assert "mined-b000000000000000" in first and "mined-c000000000000000" in first
    assert sample("two", "7") == first
