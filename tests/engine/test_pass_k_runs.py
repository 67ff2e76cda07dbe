"""pass@k and pass^k for every k, end to end: a suite built from tau-bench's stored gpt-4o
airline trajectories (50 tasks x 4 trials, ``tests/data/passk/airline.json``) runs with
``repeat: 4`` against a stand-in model behind ``source: python`` that passes or fails each
request as the trial's reward says; the JSON report must give the pass^k tau-bench printed.

The stand-in counts the requests of each case and answers the n-th as trial n scored: the
order in which the prediction pool asks does not change how many runs of a case pass, which is
all pass@k and pass^k read.
"""

from __future__ import annotations

import json
import math
import sys

import pytest

from tests.sdmx_cases import GDP, MEX, sdmx_case, selection
from tests.support import dump, read_report, run_report, write_suite

TAU_PRINTED = {"1": 0.42, "2": 0.2733333333333333, "3": 0.22, "4": 0.2}

MODEL = f"""
import json
import threading
from pathlib import Path

TRIALS = json.loads(Path(__file__).with_name("trials.json").read_text())
_LOCK = threading.Lock()
_CALLS = {{}}
RIGHT = {json.dumps(selection(GDP))}
WRONG = {json.dumps(selection(MEX))}


def predict(case):
    task = case["id"].split("[")[0]
    if Path(__file__).with_name("down-" + task).exists():
        raise RuntimeError("model unreachable")
    with _LOCK:
        n = _CALLS.get(task, 0)
        _CALLS[task] = n + 1
    reward = TRIALS[task][n % len(TRIALS[task])]
    return RIGHT if 1 - 1e-6 <= reward <= 1 + 1e-6 else WRONG


def always_right(case):
    return RIGHT
"""


def _trials(shared_data):
    """``{"task-07": [reward of trial 0, 1, 2, 3]}`` from the airline records."""
    airline = json.loads((shared_data / "passk" / "airline.json").read_text(encoding="utf-8"))
    trials: dict[str, list[float]] = {}
    for task, trial, reward in sorted(airline["records"], key=lambda r: (r[0], r[1])):
        assert len(trials.setdefault(f"task-{task:02d}", [])) == trial
        trials[f"task-{task:02d}"].append(reward)
    return trials


def _airline_suite(root, shared_data, config=None, repeat=4):
    trials = _trials(shared_data)
    # repeat_rule: any (a case passes when some run does) changes outcomes, not the figures
    cases = {"kind": "sdmx", "repeat": repeat, "repeat_rule": "any",
             "thresholds": {"macro_precision": 1.0},
             "cases": [sdmx_case(task, selection(GDP)) for task in trials]}
    write_suite(root, {"predictions": {"source": "python", "function": "stand_in:predict"},
                       **(config or {})},
                {"test_airline.yaml": cases, "trials.json": trials, "stand_in.py": MODEL})
    return trials


@pytest.fixture
def airline(pytester, shared_data):
    _airline_suite(pytester.path, shared_data)
    return pytester


def test_the_json_report_gives_tau_benchs_pass_hat_k_for_every_k(airline):
    result, report = run_report(airline, "--queryeval-markdown=r.md", "--queryeval-html=r.html",
                                "--queryeval-xlsx=r.xlsx")
    pass_k = report["aggregates"]["pass_k"]
    assert pass_k["pass_hat_k"] == TAU_PRINTED  # == on floats: what display_metrics printed
    assert (pass_k["cases"], pass_k["n"], pass_k["runs"]) == (50, 4, {"4": 50})
    # pass@1 is the mean success rate; pass@4 the share of tasks some trial solved
    assert pass_k["pass_at_k"]["1"] == 0.42
    some = sum(any(r == 1.0 for r in rs) for rs in _trials_of(airline).values())
    assert pass_k["pass_at_k"]["4"] == some / 50
    passed = [sum(r == 1.0 for r in rs) for rs in _trials_of(airline).values()]
    assert pass_k["pass_at_k"]["2"] == pytest.approx(sum(1 - math.comb(4 - c, 2) / 6
                                                         for c in passed) / 50)
    # the old names are k = N: their means over the cases are pass@4 and pass^4
    metrics = report["aggregates"]["overall"]["metrics"]
    assert metrics["pass_all_k"]["mean"] == pass_k["pass_hat_k"]["4"] == 0.2
    assert metrics["pass_at_k"]["mean"] == pass_k["pass_at_k"]["4"]
    # a case's own runs: pass_all_k is pass^N of the case
    for rec in report["cases"]:
        info = rec["details"]["repeat"]
        assert rec["metrics"]["pass_all_k"] == (1.0 if info["passed"] == 4 else 0.0)
    result.stdout.fnmatch_lines([
        "pass@k (HumanEval estimate_pass_at_k) and pass^k (tau-bench display_metrics), 4 runs "
        "each, 50 questions: pass@1=0.420, pass@2=0.567, pass@3=0.660, pass@4=0.720, pass^1=0.420, "
        "pass^2=0.273, pass^3=0.220, pass^4=0.200"])
    markdown = (airline.path / "r.md").read_text(encoding="utf-8")
    assert "| `pass^2` | Pass^k k=2 | 0.2733 |" in markdown
    assert "Pass^k k=4" in (airline.path / "r.html").read_text(encoding="utf-8")
    from openpyxl import load_workbook

    rows = list(load_workbook(airline.path / "r.xlsx")["Reference aggregates"].values)
    assert any(row[2] == "pass^2" and row[4] == 0.2733333333333333 for row in rows)


def _trials_of(pytester):
    return json.loads((pytester.path / "trials.json").read_text(encoding="utf-8"))


def test_gates_on_any_k_pass_and_fail(airline):
    (airline.path / "queryeval.yaml").write_text(dump({
        "predictions": {"source": "python", "function": "stand_in:predict"},
        "gates": {"pass_hat_k": {"k": 2, "mean": 0.27},
                  "pass_hat_3": {"metric": "pass_hat_k", "k": 3, "mean": 0.25},
                  "pass_at_k": {"k": 1, "mean": 0.4},
                  "pass_all_k": {"mean": 0.2}}}), encoding="utf-8")
    result, report = run_report(airline)
    gates = {g["name"]: (g.get("k"), g["value"], g["n"], g["passed"]) for g in report["gates"]}
    assert gates == {"pass_hat_k": (2, 0.2733333333333333, 50, True),
                     "pass_hat_3": (3, 0.22, 50, False),
                     "pass_at_k": (1, 0.42, 50, True),
                     "pass_all_k": (None, 0.2, 50, True)}
    assert result.ret == 1
    result.stdout.fnmatch_lines([
        "gate PASS: pass^2 (pass_hat_k) = 0.2733 (required >= 0.27, 50 cases)",
        "gate FAIL: pass^3 (pass_hat_k) = 0.2200 (required >= 0.25, 50 cases)"])


@pytest.mark.parametrize(("gate", "message"), [
    ({"pass_hat_k": {"k": 5, "mean": 0.1}},
     "*queryeval.yaml:*: gates.pass_hat_k.k: 5 is out of 1..4: its cases run 4 times (repeat: 4)*"),
    ({"pass_hat_k": {"mean": 0.1}}, "*queryeval.yaml:*: gates.pass_hat_k: a pass_hat_k gate needs k:*"),
    ({"pass_at_k": {"k": 0, "mean": 0.1}},
     "*queryeval.yaml:*: gates.pass_at_k.k: must be a whole number of runs from 1*, not 0"),
    ({"ex": {"metric": "macro_precision", "k": 2, "mean": 0.1}},
     "*queryeval.yaml:*: gates.ex.k: only a pass_at_k or pass_hat_k gate takes k:*"),
    ({"pass_at_k": {"k": 2, "total_max": 3}},
     "*queryeval.yaml:*: gates.pass_at_k.total_max: a pass_at_k gate with k: bounds the mean*"),
])
def test_a_wrong_k_is_a_located_error_before_any_case_runs(airline, gate, message):
    (airline.path / "queryeval.yaml").write_text(dump({
        "predictions": {"source": "python", "function": "stand_in:predict"},
        "gates": gate}), encoding="utf-8")
    result = airline.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "passed" not in result.stdout.str()


def test_k_beyond_the_fewest_runs_of_uneven_cases_names_them(pytester, shared_data):
    _airline_suite(pytester.path, shared_data, {"gates": {"pass_at_k": {"k": 3, "mean": 0.1}}})
    cases = json.loads((pytester.path / "test_airline.yaml").read_text(encoding="utf-8"))
    cases["cases"][0]["repeat"] = 2
    (pytester.path / "test_airline.yaml").write_text(dump(cases), encoding="utf-8")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*gates.pass_at_k.k: 3 is out of 1..2: the case it gates that "
                                 "runs fewest times runs 2 times*"])


def test_uneven_runs_report_k_up_to_the_fewest(pytester, shared_data):
    _airline_suite(pytester.path, shared_data)
    cases = json.loads((pytester.path / "test_airline.yaml").read_text(encoding="utf-8"))
    cases["cases"][0]["repeat"] = 2
    (pytester.path / "test_airline.yaml").write_text(dump(cases), encoding="utf-8")
    _, report = run_report(pytester)
    pass_k = report["aggregates"]["pass_k"]
    assert (pass_k["n"], pass_k["runs"]) == (2, {"2": 1, "4": 49})
    assert list(pass_k["pass_at_k"]) == list(pass_k["pass_hat_k"]) == ["1", "2"]


def test_a_run_without_repeats_reports_no_pass_k(pytester, shared_data):
    _airline_suite(pytester.path, shared_data, repeat=1)
    _, report = run_report(pytester)
    assert "pass_k" not in report["aggregates"]
    assert "pass_at_k" not in report["aggregates"]["overall"]["metrics"]


def _merge(pytester, *args):
    return pytester.run(sys.executable, "-m", "pytest_queryeval.conclude.cli", "merge", *args)


def test_three_shards_merged_give_the_serial_figures_and_gates(pytester, shared_data):
    config = {"gates": {"pass_hat_k": {"k": 2, "mean": 0.27}, "pass_at_3": {
        "metric": "pass_at_k", "k": 3, "mean": 0.99}}}
    _airline_suite(pytester.path, shared_data, config)
    _, serial = run_report(pytester, name="serial.json")
    for index in (1, 2, 3):
        pytester.runpytest(f"--queryeval-shard={index}/3", f"--queryeval-json=shard-{index}.json")
    shards = [read_report(pytester.path / f"shard-{i}.json") for i in (1, 2, 3)]
    # no shard alone gives the run's figures: the merge recomputes them from the records
    assert all(s["aggregates"]["pass_k"]["pass_hat_k"] != TAU_PRINTED for s in shards)
    merged = _merge(pytester, *(f"shard-{i}.json" for i in (1, 2, 3)), "-o", "merged.json")
    assert merged.ret == 1  # the pass@3 gate fails, as in the serial run
    report = read_report(pytester.path / "merged.json")
    assert report["aggregates"]["pass_k"] == serial["aggregates"]["pass_k"]
    assert report["aggregates"]["pass_k"]["pass_hat_k"] == TAU_PRINTED
    assert [(g["name"], g["k"], g["value"], g["passed"]) for g in report["gates"]] == \
        [(g["name"], g["k"], g["value"], g["passed"]) for g in serial["gates"]]
    merged.stdout.fnmatch_lines(["gate PASS: pass^2 (pass_hat_k) = 0.2733*"])


def test_a_resumed_run_recomputes_the_figures_from_carried_and_new_records(pytester, shared_data):
    trials = _airline_suite(pytester.path, shared_data)
    down = [task for task in trials if task >= "task-40"]
    for task in down:
        (pytester.path / f"down-{task}").write_text("")
    _, first = run_report(pytester, name="attempt-1.json")
    assert sum(r["outcome"] == "error" for r in first["cases"]) == 10
    # a case whose every run erred counts as never passing
    assert first["aggregates"]["pass_k"]["cases"] == 50
    assert first["aggregates"]["pass_k"]["pass_hat_k"] != TAU_PRINTED
    for task in down:
        (pytester.path / f"down-{task}").unlink()
    _, retry = run_report(pytester, "--queryeval-resume=attempt-1.json", name="attempt-2.json")
    assert sum(bool(r.get("carried")) for r in retry["cases"]) == 40
    assert retry["aggregates"]["pass_k"]["pass_hat_k"] == TAU_PRINTED


def test_each_model_has_its_own_figures_and_gates(pytester, shared_data):
    _airline_suite(pytester.path, shared_data, {
        "predictions": {"airline": {"source": "python", "function": "stand_in:predict"},
                        "perfect": {"source": "python", "function": "stand_in:always_right"}},
        "gates": {"hat2_airline": {"metric": "pass_hat_k", "k": 2, "mean": 0.5,
                                   "model": "airline"},
                  "hat4_perfect": {"metric": "pass_hat_k", "k": 4, "mean": 1.0,
                                   "model": "perfect"}}})
    _, report = run_report(pytester)
    models = report["aggregates"]["pass_k"]["models"]
    assert models["airline"]["pass_hat_k"] == TAU_PRINTED
    assert models["perfect"]["pass_hat_k"] == dict.fromkeys(("1", "2", "3", "4"), 1.0)
    assert models["perfect"]["pass_at_k"] == dict.fromkeys(("1", "2", "3", "4"), 1.0)
    gates = {g["name"]: (g["value"], g["n"], g["passed"]) for g in report["gates"]}
    assert gates == {"hat2_airline[model=airline]": (0.2733333333333333, 50, False),
                     "hat4_perfect[model=perfect]": (1.0, 50, True)}
