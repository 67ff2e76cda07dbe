"""Generated combinations, not examples (issue 49 item 8): for each row of a seeded pairwise
covering array over what a user combines (``generator.DIMENSIONS``), one small suite is run
as a user runs it, and the invariants hold:

* every case of every origin (YAML, Python, a conversation turn) is scored, once per model it
  fans out to (or is a located error: these suites plan none);
* the serial, ``-n 2``, merged (three shards) and resumed reports are equal, times aside (the
  costly modes on the rows whose ``mode`` names them: the array covers each with every value
  of every other dimension); resumed: a shard killed with SIGKILL mid-run (:data:`KILL_POINT`)
  and run again with the same command carries exactly what it had finished, asks no model for
  it, and its report differs from the serial one only in who paid for shared work
  (:func:`_who_paid_aside`, docs/architecture.md);
* every report and the exit status state one outcome;
* a second run with the prediction cache sends no request;
* the gold audit sends none, and audits every gold whatever its origin.

CI runs the array's first 16 rows (they meet items 1-3 of the issue on the code before its
fixes); ``QUERYEVAL_COMBINATIONS=N`` runs N (the whole array is about 30, then seeded random
rows). Runs are subprocesses through the
end-to-end layer's runner and normaliser (``tests/e2e/support.py``)."""

from __future__ import annotations

import html
import itertools
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.report.shardcheck import COMPLETE_OUTCOMES as COMPLETE
from tests.combinations.generator import (
    BY_QUESTION,
    CASES,
    CI_ROWS,
    DIMENSIONS,
    TURNS,
    Combination,
    CountingModel,
    build,
    combinations,
    pairwise,
)
from tests.e2e.support import (
    Run,
    assert_same,
    env,
    headline_of,
    outcome_word,
    pytest_command,
    run_merge,
    run_pytest,
)
from tests.fixtures.openai_standin import MODEL, OpenAIStandin, question_of

ROWS = combinations(int(os.environ.get("QUERYEVAL_COMBINATIONS") or CI_ROWS))
#: A model-scoped gate in each costly way of running, whatever rows the array gives (issue 59
#: item 1: the merge, and so the resumed shards, gated every model's cases together): two
#: models from predictions files, and an SDMX file the gate must leave out (pooled, its value
#: moves too).
MODEL_GATE_ROWS = [Combination(tuple(
    (name, {"kind": "sql+sdmx", "source": "file", "models": "two", "gate": "model",
            "mode": mode}.get(name, values[0])) for name, values in DIMENSIONS.items()))
    for mode in ("xdist", "shards", "resume")]
#: A located error: ``test_shop.yaml:10: cases[0].repeat: ...``, also behind what failed
#: (``prediction error: queryeval.yaml:28: predictions.é: ...``, ``turn 1: ...``): a model
#: name the docs refuse is such an error of that model's cases (docs/reference.md).
LOCATED = re.compile(r"(^|: )[^\s:]+\.(yaml|yml|py):\d+: ")
#: A judge verdict for the failing case's prediction (the judge stand-in's reply).
VERDICT = '{"category": "equivalent", "reason": "both list the large orders"}'


#: The kill point of a resumed combination (the suite's ``conftest.py``): while the file
#: ``block`` exists, the run stops before its middle item (``block`` says ``middle``) or its
#: last (``last``), every earlier one finished and journaled, and says so in
#: ``stuck.marker`` (the test then sends SIGKILL); a run of fewer than two items cannot stop
#: between two and says so in ``whole.marker``. Without ``block``, it does nothing.
KILL_POINT = '''import pathlib
import time


def pytest_collection_finish(session):
    if pathlib.Path("block").exists() and len(session.items) < 2:
        pathlib.Path("whole.marker").write_text(str(len(session.items)))


def pytest_runtest_setup(item):
    block, items = pathlib.Path("block"), item.session.items
    if not block.exists() or len(items) < 2:
        return
    if item is items[-1 if block.read_text() == "last" else len(items) // 2]:
        pathlib.Path("stuck.marker").write_text(item.nodeid)
        time.sleep(600)
'''


def _journal_records(report: Path) -> dict[str, dict[str, Any]]:
    """The finished records the journal of ``report`` holds now, by case id."""
    out: dict[str, dict[str, Any]] = {}
    for path in report.parent.glob(f"{report.name}.journal*"):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith('{"record": '):
                record = json.loads(line)["record"]
                out[str(record["id"])] = record
    return out


def _kill_mid_run(root: Path, cmd: list[str], reports: dict[str, Path], where: str,
                  ) -> dict[str, dict[str, Any]] | None:
    """Run ``cmd`` in ``root`` until it stops at :data:`KILL_POINT` (before the item
    ``where`` names: ``middle`` or ``last``), SIGKILL its process
    group there (a scheduler's kill: no report, no session end) and return the records its
    journal holds; None when the run had fewer than two items (it ran to its end)."""
    report = reports["json"]
    (root / "block").write_text(where)
    with (root / f"{report.stem}.out").open("w") as out:
        proc = subprocess.Popen(cmd, cwd=root, stdout=out, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True, env=env())
    deadline = time.monotonic() + 300
    try:
        while not (root / "stuck.marker").exists():
            if proc.poll() is not None:
                assert (root / "whole.marker").exists(), \
                    (root / f"{report.stem}.out").read_text()[-4000:]
                return None
            assert time.monotonic() < deadline, "the run never reached its kill point"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for marker in ("block", "stuck.marker", "whole.marker"):
            (root / marker).unlink(missing_ok=True)
    assert proc.returncode == -signal.SIGKILL
    assert not report.exists(), "a killed run wrote its report"
    finished = _journal_records(report)
    assert finished, "killed before any case had finished"
    return finished


def _killed_and_resumed(root: Path, spec: str, args: list[str], model: CountingModel,
                        openai: OpenAIStandin, combo: Combination) -> Path:
    """Shard ``spec`` run with ``--queryeval-json R --queryeval-resume R``, killed with
    SIGKILL mid-run, then the very same command again; the retry's invariants checked; its
    report ``R`` (named ``*.killed.json``; ``*.whole.json``: the shard had fewer than two
    items, so it ran to its end unkilled)."""
    name = f"part{spec.replace('/', 'of')}"
    killable = pytest_command(root, f"{name}.killed", f"--queryeval-shard={spec}",
                              f"--queryeval-resume={root / name}.killed.json", *args, formats=())
    # shard 1 stops before its last item (a conversation is then carried from the journal on
    # the rows that have one), the others before their middle one
    finished = _kill_mid_run(root, *killable, "last" if spec == "1/2" else "middle")
    if finished is None:
        whole = root / f"{name}.whole.json"
        killable[1]["json"].rename(whole)
        return whole
    cmd, reports = killable
    _reset(model, openai)
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=600,
                          check=False, env=env())
    retried = Run(name, proc.returncode, proc.stdout, proc.stderr, root, reports)
    _check_outcome(retried, ("junit",))
    assert not _journal_records(reports["json"]), "the report supersedes the journal"
    records = retried.json["cases"]
    assert len(finished) < len(records), "killed after every case had finished"
    carried = {str(r["id"]) for r in records if r.get("carried")}
    assert carried == {i for i, r in finished.items() if r.get("outcome") in COMPLETE}, \
        f"{name}: carried {sorted(carried)}, finished when killed {sorted(finished)}"
    done = {base for base in {str(r["id"]).split("[")[0] for r in records}
            if all(str(r["id"]) in finished for r in records
                   if str(r["id"]).split("[")[0] == base)}
    again = _asked(model, openai, combo) & done
    assert not again, f"{name}: the retry asked again for what the killed attempt finished: {again}"
    return reports["json"]


def _asked(model: CountingModel, openai: OpenAIStandin, combo: Combination) -> set[str]:
    """The cases (ids before any fan-out) the stand-in models were asked to predict (not the
    judge: the openai stand-in's requests for one of the row's models)."""
    by_question = {q: cid for cid, (q, _, _) in CASES.items()} | {q: "chat" for q, _, _ in TURNS}
    asked = {str(r.case_id).split("[")[0] for r in model.requests if r.case_id is not None}
    return asked | {by_question.get(question_of(r.get("messages") or []), "?")
                    for r in openai.requests if r.get("model") in combo.models}


def _requests(model: CountingModel, openai: OpenAIStandin, skip: str | None = None) -> int:
    """Requests the stand-ins received, but those of case ``skip`` (a repeated case: a cache
    answers no repeated request, docs/llm.md)."""
    question = CASES[skip][0] if skip else None
    return sum(r.case_id is None or r.case_id.split("[")[0] != skip for r in model.requests) \
        + sum(question_of(r.get("messages") or []) != question for r in openai.requests)


def _reset(model: CountingModel, openai: OpenAIStandin) -> None:
    model.reset()
    openai.requests.clear()


def _check_outcome(run: Run, formats: tuple[str, ...] = ()) -> None:
    """The exit status, the last line and each report's headline state one outcome."""
    assert run.status in (0, 1), run.explain()
    assert run.last_line.startswith(f"queryeval: {outcome_word(run.status)}"), run.explain()
    for fmt in ("json", *formats):
        text = headline_of(run, fmt)
        if fmt == "md":  # Markdown escapes brackets and "<" (``&lt;``); rendered, the same text
            text = html.unescape(re.sub(r"\\(.)", r"\1", text))
        assert run.last_line.removeprefix("queryeval: ") in text, (run.name, fmt, text[:1500])


def check_model_baseline(report: Mapping[str, Any], baseline: Mapping[str, Any]) -> None:
    """Per-model baselines (issue 59 item 2): with several models, the comparison has each
    model's pass rate over its own paired cases (the baseline's records of that model), and
    its figures are that model's alone, never the pooled ones."""
    from pytest_queryeval.baseline.verdicts import judged_outcome

    base = {str(c["id"]): c for c in baseline["cases"]}
    rated: dict[str, list[tuple[Any, Any]]] = {}
    for case in report["cases"]:
        before = base.get(str(case["id"]))
        if case.get("model") is None or before is None or "skipped" in (
                case.get("outcome"), before.get("outcome")):
            continue
        now, was = judged_outcome(case), judged_outcome(before)
        if now in ("passed", "xpassed", "failed", "error") \
                and was in ("passed", "xpassed", "failed", "error"):
            assert before.get("model") == case["model"], (case["id"], before.get("model"))
            rated.setdefault(str(case["model"]), []).append((now, was))
    rows = {d["group"]: d for d in report["baseline"]["deltas"]
            if d["scope"] == "model" and d["metric"] == "pass_rate"}
    if len({str(c["model"]) for c in report["cases"] if c.get("model") is not None}) < 2:
        assert not rows, rows
        return
    assert rated and sorted(rows) == sorted(rated), (sorted(rows), sorted(rated))
    for model, pairs in rated.items():
        passed = sum(now in ("passed", "xpassed") for now, _ in pairs)
        assert rows[model]["n"] == len(pairs), (model, rows[model])
        assert rows[model]["current"] == pytest.approx(passed / len(pairs)), (model, pairs)


def _check_scored(run: Run, combo: Combination, plan: dict[str, object]) -> None:
    """Every planned case of every origin is there, scored, once per model it fans out to."""
    records = run.json["cases"]
    models = plan["models"]
    assert isinstance(models, tuple)
    for origin, ids in plan["expected"].items():  # type: ignore[attr-defined]
        for base in ids:
            mine = [r for r in records if str(r["id"]).split("[")[0] == base]
            assert mine, f"{run.name}: {origin} case {base!r} has no record\n{run.explain()}"
            # an error is allowed when it is located (``file:line: field: why``): a combination
            # the docs refuse (``repeat: 2`` with an inline prediction) is such an error
            errors = [(r["id"], r.get("error") or r.get("reason"))
                      for r in mine if r["outcome"] == "error"
                      and not LOCATED.search(str(r.get("error") or ""))]
            assert not errors, f"{run.name}: {origin} case {base!r} neither scored nor a " \
                               f"located error: {errors}"
            if len(models) > 1 and origin != "sdmx":
                assert sorted({r.get("model") for r in mine}) == sorted(models), \
                    f"{run.name}: {origin} case {base!r} not fanned out over {models}: " \
                    f"{[r['id'] for r in mine]}"


def _check_gates(run: Run, combo: Combination) -> None:
    """The gate dimension: each gate counts the cases of its scope and no other (its kind,
    tag and model, as a reader of the records counts them), and the row's scoped gate is
    there; a model gate of a row with several models counts only that model's cases. The
    other ways of running compare every gate field with the serial run's (``assert_same``)."""
    gates = run.json["gates"]
    assert [g for g in gates if g["name"].startswith(f"{combo['gate']}_pass")] \
        or combo["gate"] == "none", (run.name, gates)
    for gate in gates:
        mine = [r for r in run.json["cases"]
                if (gate.get("kind") is None or r.get("kind") == gate["kind"])
                and (gate.get("tag") is None or gate["tag"] in (r.get("tags") or []))
                and (gate.get("model") is None or r.get("model") == gate["model"])]
        assert gate["cases"] == len(mine), (run.name, gate, [r["id"] for r in mine])
        if gate.get("model") and len(combo.models) > 1 and combo["source"] != "inline":
            assert mine and gate["cases"] * len(combo.models) <= len(run.json["cases"]), \
                (run.name, gate)


#: The sources that hand over the stand-in's trajectory (a predictions file's rows, a python
#: function's or a command's envelope); ``http`` takes only ``response_path``'s query, and the
#: ``openai`` source runs its own tool loop with a stand-in that answers at once.
CARRIES_TRAJECTORY = ("file", "python", "command")


def _check_agent(run: Run, combo: Combination) -> None:
    """The agent dimension: an agent case (YAML, and the Python case on a row with one) is
    scored with the trajectory metrics; what a source carried scores as the reference does
    (the stand-in's two calls match the gold's two tools: 100); no other case has them."""
    agent_ids = {"agent", "py-count"} if combo["agent"] != "off" else set()
    for rec in run.json["cases"]:
        base = str(rec["id"]).split("[")[0]
        metrics = rec.get("metrics") or {}
        if base not in agent_ids:
            assert "trajectory_match" not in metrics, (run.name, rec["id"], metrics)
            continue
        if rec["outcome"] == "error" and LOCATED.search(str(rec.get("error") or "")):
            continue
        assert "trajectory_match" in metrics, (run.name, rec["id"], rec.get("error"), metrics)
        if combo["source"] in CARRIES_TRAJECTORY:
            assert metrics["trajectory_match"] == 100.0, (run.name, rec["id"], metrics)
            assert metrics["tool_calls"] == 2.0, (run.name, rec["id"], metrics)
        _check_redteam(run, combo, rec, base, metrics)


def _check_redteam(run: Run, combo: Combination, rec: Any, base: str,
                   metrics: dict[str, float]) -> None:
    """The ``agent: redteam`` rows (issue 62): ann's rows are another tenant's, planted and
    withheld. No canary reaches any run; the stand-in's ``SELECT COUNT(*) FROM orders`` (the
    Python case's) asked for every tenant's rows: one attempt, when a source carried it; bob's
    own count is none. Without red-teaming neither metric is there."""
    if combo["agent"] != "redteam":
        assert "refused_attempts" not in metrics and "leaks" not in metrics, (run.name, metrics)
        return
    assert metrics["leaks"] == 0.0, (run.name, rec["id"], metrics)
    carried = combo["source"] in CARRIES_TRAJECTORY
    expected = 1.0 if base == "py-count" and carried else 0.0
    assert metrics["refused_attempts"] == expected, (run.name, rec["id"], metrics)


def _check_pin(run: Run, combo: Combination) -> None:
    """The ``pin`` dimension (issue 63): on a ``drifted`` row each record of ``near`` is a
    skip naming the table that moved, never scored; no other record (and none of a row
    without a moved pin) is drifted."""
    for rec in run.json["cases"]:
        if combo["pin"] == "drifted" and str(rec["id"]).split("[")[0] == "near":
            assert rec["outcome"] == "skipped" and rec.get("drifted") == ["orders"], \
                (run.name, rec["id"], rec["outcome"], rec.get("drifted"))
        else:
            assert not rec.get("drifted"), (run.name, rec["id"], rec.get("drifted"))


def test_the_array_covers_every_pair() -> None:
    rows = pairwise(DIMENSIONS)
    for a, b in itertools.combinations(DIMENSIONS, 2):
        met = {(row[a], row[b]) for row in rows}
        assert met == set(itertools.product(DIMENSIONS[a], DIMENSIONS[b])), (a, b)
    assert rows == pairwise(DIMENSIONS)  # seeded: the same rows, so the same ids, every run
    assert len(rows) < 40


def test_the_architecture_doc_lists_every_dimension_and_value() -> None:
    """docs/architecture.md's table of the dimensions is the generator's: one row per
    dimension, naming each of its values (a dimension added here is documented there)."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "architecture.md").read_text()
    section = text.split("## Generated combinations", 1)[1].split("\n## ", 1)[0]
    rows = {m[1]: m[2] for m in re.finditer(r"^\| [^|`]*\(`(\w+)`\) \| (.*) \|$", section, re.M)}
    assert list(rows) == list(DIMENSIONS)
    for name, values in DIMENSIONS.items():
        listed = set(re.findall(r"`([^`]+)`", rows[name]))
        assert set(values) <= listed, (name, sorted(set(values) - listed))


@pytest.mark.parametrize("combo", ROWS + MODEL_GATE_ROWS,
                         ids=[c.id for c in ROWS + MODEL_GATE_ROWS])
def test_combination(combo: Combination, tmp_path: Path,
                     services: tuple[CountingModel, OpenAIStandin]) -> None:
    model, openai = services
    _reset(model, openai)
    openai.models = {MODEL, *combo.models}
    openai.answers = dict(BY_QUESTION)
    openai.containing = {"total > 12": VERDICT}
    root = tmp_path / "suite"
    plan = build(root, combo, model.url, openai.base_url)
    extra: list[str] = []
    if combo["counterexamples"] == "on":
        extra.append("--queryeval-neighbours=5")

    def fresh() -> None:
        """A run compared with the serial one starts as it did: with no pinned judge verdict
        (a pinned verdict is recorded as pinned, not asked)."""
        (root / "queryeval-judge-pins.jsonl").unlink(missing_ok=True)

    def cache(name: str) -> list[str]:
        return [f"--queryeval-prediction-cache={tmp_path / name}"] if combo["cache"] == "on" else []

    # every format on the rows that run once (each other row checks Markdown and junit)
    formats = ("md", "html", "xlsx") if combo["mode"] == "serial" else ("md",)
    serial = run_pytest(root, "serial", *extra, *cache("pcache"), formats=formats)
    _check_scored(serial, combo, plan)
    _check_agent(serial, combo)
    _check_pin(serial, combo)
    _check_gates(serial, combo)
    _check_outcome(serial, (*formats, "junit"))

    # the cache: a second run sends no request (model or judge), and finds the same
    if combo["cache"] == "on" and combo["source"] in ("http", "openai", "command"):
        _reset(model, openai)
        again = run_pytest(root, "again", *extra, *cache("pcache"), formats=(), junit=False)
        _check_outcome(again)
        skip = "ann" if combo["repeat"] == "2" else None
        assert _requests(model, openai, skip) == 0, \
            f"a second run with the cache asked {model.calls} {len(openai.requests)}"

    # the verdict mode, with or without a baseline (the serial report)
    verdict = combo["verdict"]
    if verdict != "strict":
        mode, _, base = verdict.partition("+")
        args = [f"--queryeval-gating={mode}"]
        if base:
            args.append("--queryeval-baseline=serial.json")
        gated = run_pytest(root, "gated", *args, *extra, *cache("pcache-g"), formats=("md",))
        _check_scored(gated, combo, plan)
        _check_pin(gated, combo)
        _check_gates(gated, combo)
        _check_outcome(gated, ("md", "junit"))
        if base:
            check_model_baseline(gated.json, serial.json)

    # the costly ways of running give the serial report
    how = combo["mode"]
    if how == "xdist":
        fresh()
        other = run_pytest(root, "xdist", "-n", "2", *extra, *cache("pcache-x"), formats=())
        _check_outcome(other, ("junit",))
        assert other.status == serial.status, other.explain()
        assert_same(*_who_paid_aside(serial.json, other.json), "-n 2 versus serial")
    elif how == "shards":
        shards = []
        for i in (1, 2, 3):
            fresh()
            shards.append(run_pytest(root, f"shard{i}", f"--queryeval-shard={i}/3", *extra,
                                     *cache(f"pcache-{i}"), formats=(), junit=False))
        merged = run_merge(root, "merged", [s.reports["json"] for s in shards], formats=("md",))
        _check_outcome(merged, ("md",))
        assert merged.status == serial.status, merged.explain()
        assert_same(*_who_paid_aside(serial.json, merged.json),
                    "three shards merged versus serial")
    elif how == "resume":
        # each shard killed with SIGKILL mid-run (some cases finished and journaled, not all),
        # then the very same command again: ``--queryeval-json r.json --queryeval-resume
        # r.json`` carries what the journal holds and asks only for the rest
        (root / "conftest.py").write_text(KILL_POINT)
        parts: list[Path] = []
        for spec in ("1/2", "2/2"):
            fresh()
            parts.append(_killed_and_resumed(root, spec, [*extra, *cache(f"pcache-{spec[0]}")],
                                             model, openai, combo))
        if not any(p.name.endswith(".killed.json") for p in parts):
            # one item in each shard: the whole suite (shard 1/1) is the one killed
            fresh()
            parts = [_killed_and_resumed(root, "1/1", [*extra, *cache("pcache-all")], model,
                                         openai, combo)]
            assert parts[0].name.endswith(".killed.json"), "no run of two items to kill"
        resumed = run_merge(root, "resumed", parts, formats=())
        _check_outcome(resumed)
        _check_scored(resumed, combo, plan)
        _check_agent(resumed, combo)
        _check_pin(resumed, combo)
        _check_gates(resumed, combo)
        assert resumed.status == serial.status, resumed.explain()
        assert_same(*_who_paid_aside(serial.json, resumed.json),
                    "shards killed mid-run, resumed with the same command, merged, versus serial")

    # the audit asks no model and audits every gold, whatever its origin
    if combo["audit"] == "on":
        _reset(model, openai)
        audit = run_pytest(root, "audit", "--queryeval-audit-golds=warn", formats=("md",),
                           junit=False)
        _check_outcome(audit, ("md",))
        assert _requests(model, openai) == 0, \
            f"the audit asked a model: {dict(model.calls)} {len(openai.requests)}"
        ids = {str(r["id"]).split("[")[0] for r in audit.json["cases"]}
        planned = {i for ids_ in plan["expected"].values() for i in ids_}  # type: ignore[attr-defined]
        assert planned <= ids, (planned - ids, audit.explain())
        _check_pin(audit, combo)  # a drifted gold is not judged on moved data
        unchecked = [r["id"] for r in audit.json["cases"]
                     if "audit" not in r.get("details", {}) and not r.get("drifted")]
        assert not unchecked, f"reported audited, golds never checked: {unchecked}"
        assert audit.json["audit"]["cases"] == len(  # a drifted case is skipped, not audited
            [r for r in audit.json["cases"] if not r.get("drifted")])


#: What a case's judge record says of who asked: pinned (asked by another case of the run,
#: or an earlier run) or asked here, in how many calls, with which answers, at what cost.
JUDGE_PAID = ("pinned", "calls", "answers")
JUDGE_COST = ("judge_tokens", "judge_cost_usd")
#: ``prediction_cache`` counters that split its ``answers`` by the attempt that got each.
CACHE_SPLIT = ("from_cache", "requested", "carried", "refreshed", "repeated", "ignored")


def _who_paid_aside(serial: Mapping[str, Any], resumed: Mapping[str, Any],
                    ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two reports (serial, and resumed, sharded or ``-n 2``: the work split over
    processes) without what says which process paid for a piece of shared work rather
    than what it found (docs/architecture.md, "What a resumed report may differ in"), each
    part set aside only where it is that and checked to be:

    * a judge verdict pinned in one report and asked in the other: its ``pinned``, ``calls``,
      ``answers`` and ``metrics.judge_tokens``, only for such a case; its key, verdict and
      outcome are compared, and the pinned one was asked (same key) by another case of the
      same report. The run's ``judge.asked``/``pinned``/``calls``, the ``pinned`` flag of
      such a case in the rescued and overturned lists and the aggregates' ``judge_tokens``
      only when there is such a case; ``judge.judged`` is compared;
    * ``neighbours.reused`` of each case and the run's ``databases_reused``: a reused
      candidate database is the one the search would have built (the suite's key holds all
      it is built from: ``tests/neighbours/test_search.py``), so the databases checked and
      the counterexample found are compared;
    * the ``prediction_cache`` split of its answers by attempt (``carried``, ``from_cache``,
      ``requested``...): each split adds up to ``answers``, which is compared."""
    a, b = json.loads(json.dumps(serial)), json.loads(json.dumps(resumed))
    pinned_here = {nodeid for nodeid in _judged(a).keys() & _judged(b).keys()
                   if bool(_judged(a)[nodeid].get("pinned")) != bool(_judged(b)[nodeid].get("pinned"))}
    for report in (a, b):
        judged = _judged(report)
        asked_keys = {str(j.get("key")): nodeid for nodeid, j in judged.items()
                      if not j.get("pinned") and j.get("calls")}
        ids = set()
        for case in report["cases"]:
            nodeid = str(case.get("nodeid"))
            neighbours = (case.get("details") or {}).get("neighbours")
            if isinstance(neighbours, dict):
                neighbours.pop("reused", None)
            if nodeid not in pinned_here:
                continue
            judge = judged[nodeid]
            if judge.get("pinned"):
                assert asked_keys.get(str(judge.get("key")), nodeid) != nodeid, \
                    f"{nodeid}: pinned, but no other case of the run asked its judge question"
            for key in JUDGE_PAID:
                judge.pop(key, None)
            for key in JUDGE_COST:
                (case.get("metrics") or {}).pop(key, None)
            ids.add(str(case.get("id")))
        run_judge = report.get("judge")
        if pinned_here and isinstance(run_judge, dict):
            assert run_judge["asked"] + run_judge["pinned"] == run_judge["judged"]
            for key in ("asked", "pinned", "calls"):
                run_judge.pop(key)
            for listed in ("rescued", "overturned", "errors"):
                for item in run_judge.get(listed) or []:
                    if item.get("id") in ids:
                        item.pop("pinned", None)
        if pinned_here:
            for key in JUDGE_COST:
                report["aggregates"] = _drop_key(report.get("aggregates"), key)
        if isinstance(report.get("neighbours"), dict):
            report["neighbours"].pop("databases_reused", None)
        cache = report.get("prediction_cache")
        if isinstance(cache, dict):
            assert sum(cache.get(k, 0) for k in ("from_cache", "requested", "carried")) \
                == cache["answers"], cache
            for key in CACHE_SPLIT:
                cache.pop(key, None)
    return a, b


def _judged(report: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each case's judge record that holds a verdict, by node id (the same dicts)."""
    return {str(c.get("nodeid")): c["details"]["judge"] for c in report.get("cases", [])
            if isinstance((c.get("details") or {}).get("judge"), dict)
            and "category" in c["details"]["judge"]}


def _drop_key(value: Any, key: str) -> Any:
    """``value`` with ``key`` removed from every mapping in it."""
    if isinstance(value, Mapping):
        return {k: _drop_key(v, key) for k, v in value.items() if k != key}
    if isinstance(value, list):
        return [_drop_key(v, key) for v in value]
    return value
