"""End to end: ``queryeval import sparc`` -> ``pytest --queryeval-spider-table`` prints the Spider
test-suite evaluator's tables as the evaluator prints them (tests/data/tsse/PROVENANCE.md).

Each turn is scored by the SQL kind against the ``spider-schema`` datasource (exact set match,
no database), each interaction is one conversation case, and the summary's table is read from
their records: the whole path of a user's run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_queryeval.importers.cli import main as cli
from tests.support import Report, read_report

SETS = {
    "tsse": ("spider/tsse_gold.txt", "spider/tsse_predict.txt", "tsse/oracle_tsse_match.txt"),
    "sparc": ("tsse/sparc_gold.txt", "tsse/sparc_predict.txt", "tsse/oracle_sparc_match.txt"),
    "semicolon": ("tsse/sparc_semicolon_gold.txt", "tsse/sparc_semicolon_predict.txt",
                  "tsse/oracle_sparc_semicolon_match.txt"),
}
HEADER = "Spider test-suite turn table (official evaluator layout, conversation_scoring: {})"


def _run(pytester: pytest.Pytester, data: Path, name: str, *extra: str) -> tuple[
        list[str], list[str], Report]:
    gold, pred, oracle = SETS[name]
    assert cli(["sparc", str(data / gold), "--pred", str(data / pred),
                "--tables", str(data / "spider" / "tables.json"),
                "--out", str(pytester.path), *extra]) == 0
    result = pytester.runpytest("-p", "no:cacheprovider", "--queryeval-spider-table",
                                "--queryeval-json=r.json")
    report = read_report(pytester.path / "r.json")
    return result.stdout.lines, (data / oracle).read_text().splitlines(), report


def _table(lines: list[str], mode: str) -> list[str]:
    at = lines.index(HEADER.format(mode) + ":")
    return [line.rstrip() for line in lines[at + 1:at + 13]]


def _expected(oracle: list[str], first: str) -> list[str]:
    start = next(i for i, line in enumerate(oracle) if line.rstrip() == first.rstrip())
    return [line.rstrip() for line in [*oracle[start:start + 5], *oracle[-7:]]]


def test_reference_mode_run_prints_the_reference_table(pytester: pytest.Pytester,
                                                       shared_data: Path) -> None:
    """``--reference`` (``conversation_scoring: tsse``): the digits of the evaluator, the
    dropped turns said and recorded."""
    lines, oracle, report = _run(pytester, shared_data, "sparc", "--reference")
    table = _table(lines, "tsse")
    assert table == _expected(oracle, table[0])
    assert any(line.startswith("conversation_scoring: tsse dropped 6 gold turns") for line in lines)
    cases = report.by_id
    assert cases["sparc-0002"]["details"]["dropped_turns"] == 1
    assert cases["sparc-0015"]["details"]["dropped_turns"] == 4
    assert cases["sparc-0015"]["metrics"]["interaction_accuracy"] == 1.0  # all([]), by name


def test_default_run_counts_missing_turns(pytester: pytest.Pytester, shared_data: Path) -> None:
    """The honest default: the same layout, the six missing turns scored 0 in every count, and
    the ``value`` placeholder taken as written (it does not parse: turn 2 of sparc-0001 fails)."""
    lines, oracle, report = _run(pytester, shared_data, "sparc")
    table = _table(lines, "all")
    assert table[0] == _expected(oracle, table[0])[0]
    assert table[1].split() == ["count", "35", "39", "12", "19", "105", "32"]
    assert table[4].split()[-1] == "0.719"  # joint_all: 23 of 32 interactions
    assert table[8].split() == ["count", "32", "32", "27", "13", "1"]
    assert table[11].split()[2:] == ["0.906", "0.875", "0.926", "0.846", "0.000"]
    assert report["aggregates"]["overall"]["passed"] == 23
    cases = report.by_id
    assert cases["sparc-0015"]["metrics"]["interaction_accuracy"] == 0.0
    assert [t["outcome"] for t in cases["sparc-0002"]["details"]["turns"]] == \
        ["passed", "missing"]


def test_the_reference_example_run(pytester: pytest.Pytester, shared_data: Path) -> None:
    """The evaluator's own example, 132 interactions and 322 turns, none missing."""
    lines, oracle, _ = _run(pytester, shared_data, "tsse")
    table = _table(lines, "all")
    assert table == _expected(oracle, table[0])


def test_conversation_scoring_is_checked_and_set_by_the_suite(pytester: pytest.Pytester,
                                                              shared_data: Path) -> None:
    """A bad value is a located error at collection; ``defaults:`` of queryeval.yaml sets the
    mode for every case, as a file header or a case does."""
    gold, pred, _ = SETS["sparc"]
    assert cli(["sparc", str(shared_data / gold), "--pred", str(shared_data / pred),
                "--tables", str(shared_data / "spider" / "tables.json"),
                "--out", str(pytester.path)]) == 0
    cases = pytester.path / "test_sparc.yaml"
    text = cases.read_text()
    cases.write_text(text.replace("cases:\n- id: sparc-0000\n",
                                  "cases:\n- id: sparc-0000\n  conversation_scoring: zip\n", 1))
    result = pytester.runpytest("-p", "no:cacheprovider", "-k", "sparc-0000")
    result.stdout.fnmatch_lines(["*test_sparc.yaml:12: cases[[]0[]].conversation_scoring: must be one of "
                                 "all, tsse, not 'zip'*"])
    cases.write_text(text)
    config = pytester.path / "queryeval.yaml"
    config.write_text(config.read_text() + "defaults:\n  conversation_scoring: tsse\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--queryeval-json=r.json")
    report = read_report(pytester.path / "r.json")
    assert report.by_id["sparc-0002"]["details"]["dropped_turns"] == 1
    result.stdout.fnmatch_lines(["conversation_scoring: tsse dropped 6 gold turns without a "
                                 "predicted turn from every count (the reference's zip)"])


def test_shards_merge_and_xdist_print_the_same_table(pytester: pytest.Pytester,
                                                     shared_data: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Two shards then ``queryeval merge``, and ``-n 2``: the records carry their turns, so
    every way of running prints the table of a serial run."""
    from pytest_queryeval.conclude.cli import main as queryeval

    lines, oracle, _ = _run(pytester, shared_data, "sparc", "--reference")
    serial = _table(lines, "tsse")
    for index in (1, 2):
        pytester.runpytest("-p", "no:cacheprovider", f"--queryeval-shard={index}/2",
                           f"--queryeval-json=s{index}.json")
    capsys.readouterr()
    queryeval(["merge", str(pytester.path / "s1.json"), str(pytester.path / "s2.json"),
               "--queryeval-spider-table"])
    merged = capsys.readouterr().out.splitlines()
    assert _table(merged, "tsse") == serial
    assert any(line.startswith("conversation_scoring: tsse dropped 6") for line in merged)
    result = pytester.runpytest("-p", "no:cacheprovider", "-n", "2", "--queryeval-spider-table")
    assert _table(result.stdout.lines, "tsse") == serial == _expected(oracle, serial[0])


def test_text_after_a_semicolon_is_scored_as_the_reference_parses_it(
        pytester: pytest.Pytester, shared_data: Path) -> None:
    """Issue 48: SParC's car_1 golds end in ';'. On the schema-only source nothing executes,
    so a turn whose prediction (or gold) has text after its first ';' (prose, a write, a
    second query, a set operation) is scored as the reference's parser reads it: the
    reference's own table, 10 of 11 turns and joint_all 2 of 3."""
    lines, oracle, report = _run(pytester, shared_data, "semicolon")
    table = _table(lines, "all")
    assert table == _expected(oracle, table[0])
    assert table[4].split()[-2:] == ["0.909", "0.667"]
    turns = {cid: [(t["outcome"], t.get("metrics", {}).get("exact_set_match"))
                   for t in case["details"]["turns"]] for cid, case in report.by_id.items()}
    assert turns["sparc-0000"][:2] == [("passed", 1.0), ("failed", 0.0)]  # the first is read
    assert turns["sparc-0001"][:2] == [("passed", 1.0), ("passed", 1.0)]  # prose; a DROP
    assert turns["sparc-0002"][0] == ("passed", 1.0)  # the gold's tail
    assert turns["sparc-0002"][2] == ("passed", 1.0)  # '; EXCEPT ...' is one query there

    # Where the turns are executed (a SQLite file of car_1's schema) the refusal stays.
    schema_dbs = pytester.path / "dbs"
    builder = shared_data / "tsse" / "make_schema_dbs.py"
    subprocess.run([sys.executable, str(builder), str(shared_data / "spider" / "tables.json"),
                    str(schema_dbs)], check=True)
    car_1 = schema_dbs / "car_1" / "car_1.sqlite"
    (pytester.path / "queryeval.yaml").write_text(
        f"datasources:\n  spider:\n    type: sqlite\n    path: {car_1.as_posix()}\n")
    pytester.runpytest("-p", "no:cacheprovider", "--queryeval-json=x.json")
    executed = read_report(pytester.path / "x.json").by_id
    first = executed["sparc-0001"]["details"]["turns"][:2]
    assert [t["outcome"] for t in first] == ["failed", "failed"]
    assert [t["reason"] for t in first] == [
        "refused: multiple statements; only one query is executed",
        "refused: 2 statements (SELECT, DROP); only one query is executed"]
