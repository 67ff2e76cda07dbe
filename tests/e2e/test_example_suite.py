"""example_suite (SQL, SPARQL, JSON and SDMX cases; a judge with pinned answers,
counterexample search, tasks on throwaway copies, a case fanned out over two engines, xfails)
through one serial run, ``-n 2``, three shards then ``queryeval merge``, and a shard retried
with ``--queryeval-resume`` (issue 43 item 8: on the main of the issue the merge refused the
shards). The suite is run from the repository root, as its README runs it; the reports go to a
temporary folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from .support import (
    Run,
    accepted_everywhere,
    assert_same,
    headline_of,
    outcome_word,
    run_merge,
    run_pytest,
)

#: One xdist worker runs the whole module: its module-scoped runs are made once, not
#: once per worker (``tests/together.py``).
pytestmark = pytest.mark.xdist_group("tests.e2e.test_example_suite")

ROOT = Path(__file__).resolve().parents[2]
SHARDS = 3


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    out_dir = tmp_path_factory.mktemp("example")
    cache = f"cache_dir={out_dir / 'cache'}"

    def run(name: str, *args: str, **kw: object) -> Run:
        return run_pytest(ROOT, name, "-o", cache, *args, target="example_suite", out=out_dir,
                          **kw)  # type: ignore[arg-type]

    out: dict[str, Run] = {"serial": run("serial"), "xdist": run("xdist", "-n", "2")}
    shards = []
    for i in range(1, SHARDS + 1):
        out[f"shard{i}"] = run(f"shard{i}", f"--queryeval-shard={i}/{SHARDS}", formats=(),
                               junit=False)
        shards.append(out[f"shard{i}"].reports["json"])
    out["merged"] = run_merge(ROOT, "merged", shards, out=out_dir)
    out["retry1"] = run("retry1", f"--queryeval-shard=1/{SHARDS}",
                        f"--queryeval-resume={shards[0]}", formats=(), junit=False)
    out["resumed"] = run_merge(ROOT, "resumed", [out["retry1"].reports["json"], *shards[1:]],
                               out=out_dir)
    return out


def test_the_serial_run_holds_the_features(runs):
    serial = runs["serial"]
    assert serial.status == 0, serial.explain()
    report = serial.json
    assert report["judge"]["pinned"] >= 1  # the judge answered from its pins
    assert report.get("neighbours") is not None  # the counterexample search ran
    assert any((c.get("details") or {}).get("checks") for c in report["cases"])  # a task
    assert any("[" in c["id"] for c in report["cases"])  # a fanned-out case
    assert any(c["outcome"] == "xfailed" for c in report["cases"])
    # a clarification with a scripted reply: two scored turns, both passing
    clarified = next(c for c in report["cases"] if c["id"] == "biggest-customers-clarified")
    assert [t["outcome"] for t in clarified["details"]["turns"]] == ["passed", "passed"]
    assert report["aggregates"]["clarification"]["clarification_recall"] == 1.0


@pytest.mark.parametrize("name", ["xdist", "merged", "resumed"])
def test_each_way_of_running_gives_the_serial_report(runs, name):
    run, serial = runs[name], runs["serial"]
    assert run.status == serial.status, run.explain()
    assert_same(serial.json, run.json, f"{name} versus the serial run")


def test_the_retried_shard_carried_every_case(runs):
    retry = runs["retry1"]
    assert retry.status == 0, retry.explain()
    cases = retry.json["cases"]
    assert cases and all(c.get("carried") for c in cases if c["outcome"] != "error")


@pytest.mark.parametrize("name", ["serial", "xdist", "shard1", "shard2", "shard3", "merged",
                                  "retry1", "resumed"])
def test_every_report_is_accepted_by_merge_resume_and_durations(runs, name):
    accepted_everywhere(runs[name].reports["json"])


@pytest.mark.parametrize("name", ["serial", "xdist", "merged", "resumed"])
def test_the_last_line_states_the_exit_status(runs, name):
    run = runs[name]
    assert run.last_line.startswith(f"queryeval: {outcome_word(run.status)}"), run.explain()


@pytest.mark.parametrize(("name", "fmt"), [
    pytest.param(name, fmt, id=f"{name}-{fmt}")
    for name in ("serial", "merged") for fmt in ("json", "md", "html", "xlsx")])
def test_every_report_format_states_the_outcome_of_the_last_line(runs, name, fmt):
    run = runs[name]
    text = headline_of(run, fmt)
    assert run.last_line.removeprefix("queryeval: ") in text, (run.last_line, text[:2000])
