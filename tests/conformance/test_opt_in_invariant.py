"""A capability is opt-in (issue 48 item 6): adding a file that uses one (abstention,
clarification, an agent case (inline, or an outside agent's runs from a predictions file), a conversation, several models, a judge, counterexamples, a
task, repeats) to a suite changes no record of the suite's other files, times and run bookkeeping aside. The suites are
generated (:mod:`.optin`): ``QUERYEVAL_COMBINATIONS`` of them, every capability once in the
default count, each base drawn from a seed with right, empty, wrong and unparsable answers.

Comparing the base with and without the added file is not enough on its own: a capability that
has leaked into every run (an empty answer recorded as an abstention whether or not the suite
has an ``expect: abstain`` case, item 1 of the issue) gives the same records both ways. So the
base's own run is held to the other half of "opt-in": a run that uses no capability records
nothing of any (no ``abstained`` metric, no ``abstention`` detail, no abstention aggregate...),
and its empty answer is scored as the other prediction that does not run, the unparsable one:
the same metrics, each 0, as the references score an empty answer. That half fails on the code
of issue 48's main, where the empty answer is ``abstained (empty answer)`` with every reference
metric missing."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_queryeval.metricnames import AGENT_METRICS
from tests.e2e.support import Run, differences, normalise, run_pytest
from tests.fixtures.openai_standin import KEY, OpenAIStandin

from .optin import CAPABILITIES, JUDGED, VERDICT, Combination, combinations, write

#: Each combination's tests on one xdist worker, so its runs are made once, not once per
#: worker (``tests/together.py`` splits the group by the module fixture's parameter).
pytestmark = pytest.mark.xdist_group("tests.conformance.test_opt_in_invariant")

#: Combinations run: every capability once by default; more with QUERYEVAL_COMBINATIONS.
COUNT = int(os.environ.get("QUERYEVAL_COMBINATIONS", len(CAPABILITIES)))
COMBINATIONS = combinations(COUNT)

#: What only an opt-in capability writes into a record or a report.
CAPABILITY_METRICS = frozenset({"abstained", "clarified", "consistency", "pass_at_k",
                                "pass_all_k", "neighbour_ex", "judge_ex", "checks_passed",
                                *AGENT_METRICS})
CAPABILITY_DETAILS = frozenset({"abstention", "clarification", "repeat", "neighbours", "judge",
                                "task", "checks", "turns", "agent"})
CAPABILITY_AGGREGATES = frozenset({"abstention", "clarification", "models", "judge",
                                   "neighbours", "pass_k"})


@pytest.fixture(scope="module", params=COMBINATIONS, ids=[c.id for c in COMBINATIONS])
def combo(request: pytest.FixtureRequest) -> Combination:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def judge() -> Iterator[OpenAIStandin]:
    """The judge the ``judge`` capability asks: a loopback stand-in (no model runs here) that
    accepts the labelled count."""
    server = OpenAIStandin()
    server.containing = {JUDGED: VERDICT}
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def runs(combo: Combination, judge: OpenAIStandin,
         tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """The base alone and the base with the added capability, each run once."""
    out = {}
    with pytest.MonkeyPatch.context() as env:
        env.setenv("QE_JUDGE_KEY", KEY)  # the runs' environment: run_pytest passes it on
        for name, added in (("base", False), ("added", True)):
            folder = write(tmp_path_factory.mktemp(f"{combo.id}-{name}"), combo, added=added,
                           judge_url=judge.base_url)
            out[name] = run_pytest(folder, name, formats=(), junit=False)
            assert out[name].reports["json"].is_file(), out[name].explain()
    return out


def _base_records(run: Run, nodeids: set[str] | None = None) -> dict[str, Any]:
    cases = normalise(run.json)["cases"]
    return {k: v for k, v in cases.items() if nodeids is None or k in nodeids}


def test_the_added_file_changes_no_record_of_the_others(combo: Combination,
                                                         runs: dict[str, Run]) -> None:
    base = _base_records(runs["base"])
    added = _base_records(runs["added"], set(base))
    assert set(added) == set(base), runs["added"].explain()
    diff = differences(base, added)
    assert not diff, f"{combo}: adding {combo.capability} changed:\n  " + "\n  ".join(diff)


def test_a_run_without_the_capability_records_none(combo: Combination,
                                                    runs: dict[str, Run]) -> None:
    report = runs["base"].json
    marks = {}
    for case in report["cases"]:
        found = (CAPABILITY_METRICS & set(case["metrics"])) | (
            CAPABILITY_DETAILS & set(case.get("details") or {}))
        if found:
            marks[case["id"]] = sorted(found)
    found_aggregates = CAPABILITY_AGGREGATES & set(report["aggregates"])
    assert not marks and not found_aggregates, (
        f"{combo.base}: records of a run that uses no opt-in capability: {marks}; "
        f"aggregates: {sorted(found_aggregates)}")


def test_an_empty_answer_is_scored_as_an_answer_that_does_not_run(
        combo: Combination, runs: dict[str, Run]) -> None:
    by_id = runs["base"].json.by_id
    index = combo.base.answers
    empty = by_id[f"base-{_qid(index.index('empty'))}"]
    unparsable = by_id[f"base-{_qid(index.index('unparsable'))}"]
    assert set(empty["metrics"]) == set(unparsable["metrics"]), (
        sorted(set(empty["metrics"]) ^ set(unparsable["metrics"])))
    assert {m: v for m, v in empty["metrics"].items() if not m.endswith("_seconds")} == {
        m: v for m, v in unparsable["metrics"].items() if not m.endswith("_seconds")}
    if combo.base.sparql:  # the references' empty answer: every set metric 0
        sparql = by_id["sparql-empty"]["metrics"]
        assert (sparql.get("set_f1"), sparql.get("qald_f1")) == (0.0, 0.0), sparql


def _qid(position: int) -> str:
    from .optin import QUESTIONS

    return QUESTIONS[position][0]


def test_every_capability_is_generated() -> None:
    assert {c.capability for c in combinations(len(CAPABILITIES))} == set(CAPABILITIES)
    assert all("empty" in c.base.answers and "unparsable" in c.base.answers
               for c in COMBINATIONS)


#: What each capability's added case records when it is used (its own metric or detail).
USED = {"abstention": ("metrics", "abstained"), "clarification": ("metrics", "clarified"),
        "conversation": ("details", "turns"), "models": ("aggregates", "models"),
        "repeats": ("metrics", "consistency"), "task": ("metrics", "checks_passed"),
        "judge": ("metrics", "judge_ex"), "counterexamples": ("metrics", "neighbour_ex"),
        "agent": ("metrics", "write_attempts"), "agent-file": ("metrics", "trajectory_match")}


def test_the_added_file_uses_its_capability(combo: Combination, runs: dict[str, Run]) -> None:
    """The comparison is of a run that really uses the capability: its added case records
    the capability's own metric, detail or aggregate."""
    report = runs["added"].json
    where, name = USED[combo.capability]
    if where == "aggregates":
        assert name in report["aggregates"], runs["added"].explain()
        return
    added = [c for c in report["cases"] if c["id"].startswith("cap-")]
    assert added and all(name in (c.get(where) or {}) for c in added), (
        [(c["id"], c.get("reason"), sorted(c.get(where) or {})) for c in added])
