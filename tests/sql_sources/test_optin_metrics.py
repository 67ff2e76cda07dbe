"""The opt-in metrics of issue 30 item 7 on the real Chinook SQLite database: the schema
hallucination of a prediction, and ``relaxed_ex`` beside a strict score that never changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.engine import Evaluator, run_case
from pytest_queryeval.kinds import get_kind
from pytest_queryeval.model import Threshold

from .conftest import make_case

EX = {"execution_accuracy": Threshold("execution_accuracy", min=1.0)}


@pytest.fixture
def spec(chinook_sqlite: Path) -> dict[str, Any]:
    return {"type": "sqlite", "path": str(chinook_sqlite)}


def test_an_invented_column_is_measured_even_when_the_query_fails(spec, session: Evaluator):
    case = make_case("SELECT Name FROM Artist", spec=spec, thresholds=EX,
                     predicted="SELECT a.Name, a.Email FROM Artist a JOIN Labels l ON 1",
                     options={"hallucination": True})
    out = run_case(case, session)
    assert out.reason and "no such table" in out.reason
    # Artist, Artist.Name known; Artist.Email and the table Labels invented
    assert out.metrics["schema_hallucination"] == 0.5
    assert out.details["schema_hallucination"] == {"referenced": 4,
                                                   "unknown": ["artist.email", "labels"]}
    assert any(line.startswith("schema_hallucination: 0.500: not in the datasource: "
                               "artist.email, labels") for line in out.diff)


def test_a_threshold_asks_for_it_and_gates_on_it(spec, session: Evaluator):
    limit = {"schema_hallucination": Threshold("schema_hallucination", max=0.0)}
    clean = run_case(make_case("SELECT Name FROM Artist", spec=spec, thresholds=limit,
                               predicted="SELECT Name FROM Artist WHERE ArtistId > 0"), session)
    assert clean.status == "passed" and clean.metrics["schema_hallucination"] == 0.0
    unasked = run_case(make_case("SELECT Name FROM Artist", spec=spec, thresholds=EX,
                                 predicted="SELECT Name FROM Artist"), session)
    assert "schema_hallucination" not in unasked.metrics  # costs nothing unless asked


@pytest.mark.parametrize(("chosen", "relaxed", "why"), [
    (["column_subset"], 1.0, "column_subset"),
    (["row_order", "distinct"], 0.0, None),
])
def test_relaxed_ex_beside_an_unchanged_strict_score(spec, session: Evaluator, chosen, relaxed,
                                                     why):
    gold = "SELECT Name FROM Artist WHERE ArtistId < 5"
    pred = "SELECT ArtistId, Name FROM Artist WHERE ArtistId < 5"
    strict = run_case(make_case(gold, spec=spec, predicted=pred, thresholds=EX), session)
    out = run_case(make_case(gold, spec=spec, predicted=pred, thresholds=EX,
                             options={"relaxed_ex": chosen}), session)
    assert out.metrics["relaxed_ex"] == relaxed
    assert out.details.get("relaxed_ex") == why
    assert out.status == strict.status == "failed"  # gated on execution_accuracy: unchanged
    assert {k: v for k, v in out.metrics.items() if k not in ("relaxed_ex",) and
            not k.endswith("_seconds")} == \
        {k: v for k, v in strict.metrics.items() if not k.endswith("_seconds")}


def test_relaxed_ex_is_one_on_a_strict_pass_and_can_gate(spec, session: Evaluator):
    gate = {"relaxed_ex": Threshold("relaxed_ex", min=1.0)}
    out = run_case(make_case("SELECT Name FROM Genre ORDER BY Name", spec=spec, thresholds=gate,
                             predicted="SELECT Name FROM Genre ORDER BY Name DESC",
                             options={"relaxed_ex": ["row_order"]}), session)
    assert out.metrics["execution_accuracy"] == 0.0
    assert out.metrics["relaxed_ex"] == 1.0 and out.status == "passed"
    same = run_case(make_case("SELECT 1", spec=spec, predicted="SELECT 1", thresholds=gate,
                              options={"relaxed_ex": ["row_order"]}), session)
    assert same.metrics["relaxed_ex"] == 1.0 and "relaxed_ex" not in same.details


@pytest.mark.parametrize(("options", "key", "message"), [
    ({"relaxed_ex": ["row_ordr"]}, "relaxed_ex[0]",
     "unknown relaxation 'row_ordr' (did you mean 'row_order'?)"),
    ({"relaxed_ex": "row_order"}, "relaxed_ex", "must be a list of near-miss relaxations"),
    ({"hallucination": "yes"}, "hallucination", "must be true or false"),
])
def test_bad_options_name_their_key(spec, options, key, message):
    case = make_case("SELECT 1", spec=spec, options=options)
    problems = dict(get_kind("sql").validate(case))
    assert problems[key].startswith(message)


def test_a_kind_derived_from_sql_under_another_name_is_checked_as_sql(spec, session: Evaluator):
    """The hallucination check asks the kind its ``query_syntax``, not its name: a kind a
    plugin derives from the SQL kind (``sqlx``) gets the schema check (its name was looked up
    in a table keyed by kind names: a KeyError)."""
    import dataclasses

    from pytest_queryeval.kinds import register, unregister
    from pytest_queryeval.kinds.sql import SqlKind

    class SqlxKind(SqlKind):
        name = "sqlx"

    register("sqlx", SqlxKind)
    try:
        case = dataclasses.replace(
            make_case("SELECT Name FROM Artist", spec=spec, thresholds=EX,
                      predicted="SELECT Name, Email FROM Artist",
                      options={"hallucination": True}), kind="sqlx")
        out = run_case(case, session)
    finally:
        unregister("sqlx")
    assert out.error is None, out.error
    # Artist, Artist.Name known, Artist.Email invented: one of three names
    assert out.details["schema_hallucination"] == {"referenced": 3, "unknown": ["artist.email"]}
    assert out.metrics["schema_hallucination"] == pytest.approx(1 / 3)
