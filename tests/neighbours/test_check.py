"""The case's side of the counterexample search (:mod:`pytest_queryeval.neighbours.check`), on
the real Chinook file: the case's tie-aware rule holds on every candidate (a prediction that
breaks a tie differently is never a counterexample), and the settings are read strictly."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_queryeval.metrics.table import CompareOptions
from pytest_queryeval.neighbours.check import (
    counterexample_lines,
    parse_databases,
    parse_suite,
    search_call,
)

CHINOOK = Path(__file__).resolve().parents[2] / "example_suite" / "data" / "chinook.sqlite"
LONGEST = "SELECT Name, Milliseconds FROM Track ORDER BY Milliseconds DESC LIMIT 1"
#: The same question, its tie broken by the key: correct under the tie-aware rule.
TIE_BROKEN = "SELECT Name, Milliseconds FROM Track ORDER BY Milliseconds DESC, TrackId DESC LIMIT 1"


def test_a_tie_broken_otherwise_is_no_counterexample_under_the_tie_aware_rule() -> None:
    aware = search_call(str(CHINOOK), "sqlite", LONGEST, TIE_BROKEN, True, CompareOptions(),
                        True, 60, 600.0, 0)
    assert aware["counterexample"] is None
    assert aware["checked"] == 60
    # the strict rule (tie_aware: false) does see the candidates with a tie as differences
    strict = search_call(str(CHINOOK), "sqlite", LONGEST, TIE_BROKEN, True, CompareOptions(),
                         False, 60, 600.0, 0)
    found = strict["counterexample"]
    assert found is not None
    assert found["gold"][1][0][1] == found["predicted"][1][0][1]  # the same length: a tie


def test_the_failure_output_shows_both_results_and_the_rows() -> None:
    lines = counterexample_lines("chinook.sqlite", {
        "rows": 3, "origin": "database 4 of the gold's suite", "file": "out/x.sqlite",
        "gold": [["n"], [[2]]], "predicted": [["n"], [[3]]],
        "inserts": ['INSERT INTO "t" VALUES (1);']})
    assert lines == [
        "neighbour_ex: 0: passes on chinook.sqlite, but on this 3-row database the gold "
        "returns (2,) and the prediction (3,)",
        "  counterexample (database 4 of the gold's suite): out/x.sqlite",
        '    INSERT INTO "t" VALUES (1);']


@pytest.mark.parametrize(("value", "expected"), [
    (True, {"databases": 200}), (50, {"databases": 50}), (False, None), ("off", None),
    ({"databases": 10, "seconds": 2.5, "seed": 4}, {"databases": 10, "seconds": 2.5, "seed": 4}),
])
def test_the_suite_key(value: object, expected: object) -> None:
    assert parse_suite(value, "queryeval.yaml:3: neighbours") == (expected, [])


def test_the_suite_key_names_each_problem() -> None:
    _, problems = parse_suite({"databases": -1, "seconds": "soon", "budget": 3},
                              "queryeval.yaml:3: neighbours")
    assert problems == [
        "queryeval.yaml:3: neighbours.databases: -1 is not a number of databases (a positive "
        "integer, default 200)",
        "queryeval.yaml:3: neighbours.seconds: 'soon' is not a number of seconds (positive, "
        "default 10)",
        "queryeval.yaml:3: neighbours.budget: unknown key (known: databases, seconds, seed)"]


def test_a_budget_is_a_positive_whole_number() -> None:
    assert parse_databases("default", "x") == 200
    assert parse_databases("", "x") is None
    for bad in ("0", "1.5", 2.0, "many"):
        with pytest.raises(ValueError, match="is not a number of databases"):
            parse_databases(bad, "x")


def test_the_tie_rule_on_a_candidate_reads_the_probe_as_the_case_does() -> None:
    """The counterexample search's tie rule reads the keyed gold as the case's own tie
    analysis does (:func:`pytest_queryeval.kinds.sql.ties.probed_rows`): the window and one row past it
    when that row starts another key, the whole keyed result only when it ties; the verdicts
    are those of the whole result."""
    import sqlite3

    from pytest_queryeval.kinds.sql.ties import keyed_query
    from pytest_queryeval.neighbours.check import _tied
    from pytest_queryeval.results import ResultTable

    con = sqlite3.connect(f"file:{CHINOOK}?mode=ro", uri=True)
    ran: list[str] = []

    def run(sql: str) -> ResultTable:
        ran.append(sql)
        cur = con.execute(sql)
        return ResultTable([d[0] for d in cur.description], cur.fetchall())

    # genres 13 and 16 tie (28 tracks) at rows 17-18, inside LIMIT 18; the 19th has 26
    gold = "SELECT GenreId FROM Track GROUP BY GenreId ORDER BY count(*) DESC LIMIT 18"
    swapped = gold.replace("DESC LIMIT", "DESC, GenreId DESC LIMIT")
    query = keyed_query(gold, "sqlite")
    assert not isinstance(query, str)
    tied = _tied(gold, "sqlite", CompareOptions())
    assert tied(run(gold), run(swapped), run) is True
    assert ran[2:] == [query.probe]
    # at the cut (LIMIT 17) the row past the window ties: the whole keyed result is read
    gold17 = gold.replace("LIMIT 18", "LIMIT 17")
    query17 = keyed_query(gold17, "sqlite")
    assert not isinstance(query17, str)
    ran.clear()
    assert _tied(gold17, "sqlite", CompareOptions())(
        run(gold17), run(swapped.replace("LIMIT 18", "LIMIT 17")), run) is True
    assert ran[2:] == [query17.probe, query17.sql]
