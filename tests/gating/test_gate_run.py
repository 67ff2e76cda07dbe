"""``--queryeval-gating=evidence`` end to end (issue 59 item 3): the workload's sampled model
(a seeded ``source: python`` predictor, tests/gating/workload.py) gated against a baseline of
20 runs per case; PASS, FAIL and INCONCLUSIVE each in the terminal, the JSON report, Markdown,
HTML and junit, INCONCLUSIVE with its own exit status; the adaptive repeats ask again only a
case whose failure is evidence, within the budget."""

from __future__ import annotations

import json
import os

import pytest

from tests.gating.workload import REGRESSED, UNCHANGED, set_model, write_workload

GATE = ("--queryeval-gating=evidence", "--queryeval-baseline=base.json")


def _run(pytester: pytest.Pytester, seed: int, *args: str) -> tuple[pytest.RunResult, dict]:
    os.environ["QE_SAMPLED_SEED"] = str(seed)  # pytester's subprocess inherits it
    try:
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider",
                                               "--queryeval-json=r.json", *args)
    finally:
        del os.environ["QE_SAMPLED_SEED"]
    return result, json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))


def _calls(report: dict) -> int:
    return sum(((c.get("details") or {}).get("repeat") or {}).get("n") or 1
               for c in report["cases"])


@pytest.fixture
def workload(pytester: pytest.Pytester) -> pytest.Pytester:
    write_workload(pytester.path, UNCHANGED)
    result, report = _run(pytester, 0, "--queryeval-repeat=20", "--queryeval-update-baseline",
                          "--queryeval-baseline=base.json")
    assert result.ret == 0, result.stdout.str()
    assert _calls(report) == 1200
    return pytester


def test_unchanged_passes_and_regressed_fails(workload):
    base = json.loads((workload.path / "base.json").read_text())
    histories = [c["history"] for c in base["cases"]]
    assert [h[0] for h in histories] == [20] * 60 and histories[:36] == [[20, 20]] * 36
    result, report = _run(workload, 1, *GATE, "--queryeval-markdown=r.md",
                          "--queryeval-html=r.html", "--junitxml=j.xml")
    assert result.ret == 0, result.stdout.str()
    evidence = report["evidence"]
    assert evidence["verdict"] == "PASS" and evidence["likelihood_ratio"] <= 0.05 / 0.95
    assert evidence["min_detectable_cases"] == 1 and evidence["calls"] == _calls(report)
    assert 60 <= evidence["calls"] <= 90  # within the budget of 1.5 calls per case
    assert report["run"]["outcome"] == "passed"
    result.stdout.re_match_lines([r"evidence gate: PASS \(likelihood ratio .* <= 0\.0526; "
                                  r"alpha 0\.05; 60 cases, \d+ model calls; minimum "
                                  r"detectable drop 1\.7 points"])
    flaky = [c for c in report["cases"] if c["outcome"] == "xfailed"]
    assert flaky and {c["standing"] for c in flaky} == {"within its baseline history"}
    assert "evidence gate: PASS" in (workload.path / "r.md").read_text()
    assert 'id="verdict-evidence">evidence gate: PASS' in (workload.path / "r.html").read_text()
    assert 'name="queryeval.verdict" value="PASS"' in (workload.path / "j.xml").read_text()

    set_model(workload.path, REGRESSED)
    result, report = _run(workload, 2, *GATE)
    assert result.ret == 1
    assert report["evidence"]["verdict"] == "FAIL"
    assert report["run"]["outcome"] == "failed"
    assert report["run"]["causes"][-1].startswith("evidence gate: FAIL (likelihood ratio")
    # the reliable cases that failed were asked again; no other case was
    again = {c["id"] for c in report["cases"] if (c.get("details") or {}).get("repeat")}
    assert again and again <= {f"c{i}" for i in range(8)} | {f"c{i}" for i in range(36, 60)}
    assert _calls(report) <= 90


def test_inconclusive_has_its_own_exit_status(pytester):
    """Five always-right cases against a baseline of one run each: one run now cannot tell a
    drop from none at alpha 0.05 (each pass weighs 0.875)."""
    write_workload(pytester.path, [1.0] * 5)
    result, _ = _run(pytester, 0, "--queryeval-update-baseline", "--queryeval-baseline=base.json")
    assert result.ret == 0
    result, report = _run(pytester, 1, *GATE, "--queryeval-markdown=r.md")
    assert result.ret == 6
    assert report["evidence"]["verdict"] == "INCONCLUSIVE"
    assert report["run"]["outcome"] == "inconclusive" and report["run"]["exitstatus"] == 6
    assert report["run"]["outcome_line"].startswith(
        "queryeval: INCONCLUSIVE: not enough evidence either way (evidence gate: INCONCLUSIVE")
    assert (pytester.path / "r.md").read_text().startswith("## ❔ queryeval: INCONCLUSIVE")
    result.stdout.fnmatch_lines(["queryeval: INCONCLUSIVE: *exit status 6"])
    from pytest_queryeval.report.view import write_view

    view = write_view([pytester.path / "r.json"], pytester.path / "view.html")
    assert view["runs"][0]["outcome"] == "inconclusive"  # never shown as a failure
    result, report = _run(pytester, 1, *GATE, "--queryeval-inconclusive=fail")
    assert result.ret == 1 and report["run"]["outcome"] == "failed"
    result, report = _run(pytester, 1, *GATE, "--queryeval-inconclusive=pass")
    assert result.ret == 0 and report["run"]["outcome"] == "passed"


def test_evidence_gating_needs_a_baseline(pytester):
    write_workload(pytester.path, [1.0] * 2)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider",
                                           "--queryeval-gating=evidence")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--queryeval-gating=evidence needs --queryeval-baseline*"])


def test_shards_and_merge_conclude_the_evidence_gate_as_the_serial_run(workload):
    """serial = 2 shards + ``queryeval merge`` for the evidence gate: the same verdict, the
    same exit status (the merge once left the gate out and exited 0 on a regressed model)."""
    from pytest_queryeval.conclude.merge import run as merge

    set_model(workload.path, REGRESSED)
    serial, whole = _run(workload, 2, *GATE)
    assert serial.ret == 1 and whole["evidence"]["verdict"] == "FAIL"
    shards = []
    for i in (1, 2):
        _run(workload, 2, *GATE, f"--queryeval-shard={i}/2")
        target = workload.path / f"shard{i}.json"
        (workload.path / "r.json").rename(target)
        shards.append(str(target))
    cwd = os.getcwd()
    os.chdir(workload.path)
    try:
        status = merge([*shards, "-o", "merged.json", "--queryeval-baseline=base.json"])
    finally:
        os.chdir(cwd)
    merged = json.loads((workload.path / "merged.json").read_text(encoding="utf-8"))
    assert status == 1
    assert merged["evidence"]["verdict"] == "FAIL"
    assert merged["run"]["outcome"] == "failed"
    # the gate reads every shard's cases and runs (the adaptive repeats differ by process,
    # each shard asking within its share of the budget: the ratio is the union's, not serial's)
    assert merged["evidence"]["calls"] == _calls(merged)
    assert len(merged["cases"]) == len(whole["cases"]) == 60


def test_the_suites_significance_is_the_evidence_gates_alpha_serial_and_merged(pytester):
    """``gates: {significance:}`` in the suite config is the evidence gate's alpha in the serial
    run too, as in the merge (which reads what the shards recorded): the serial run once
    concluded at 0.05 (INCONCLUSIVE, exit 6) and the merge of the same run at the suite's 0.4
    (PASS, exit 0). Five passes against one run each: a ratio of 0.875^5 = 0.51, PASS at or
    below 0.4 / 0.6 = 0.67, not at or below 0.05 / 0.95."""
    from pytest_queryeval.conclude.merge import run as merge

    write_workload(pytester.path, [1.0] * 5)
    config = json.loads((pytester.path / "queryeval.yaml").read_text())
    config["gates"] = {"significance": 0.4}
    (pytester.path / "queryeval.yaml").write_text(json.dumps(config))
    result, _ = _run(pytester, 0, "--queryeval-update-baseline", "--queryeval-baseline=base.json")
    assert result.ret == 0
    serial, report = _run(pytester, 1, *GATE)
    assert (report["evidence"]["verdict"], report["evidence"]["alpha"]) == ("PASS", 0.4)
    assert serial.ret == 0, serial.stdout.str()
    shards = []
    for i in (1, 2):
        _run(pytester, 1, *GATE, f"--queryeval-shard={i}/2")
        target = pytester.path / f"shard{i}.json"
        (pytester.path / "r.json").rename(target)
        shards.append(str(target))
    cwd = os.getcwd()
    os.chdir(pytester.path)
    try:
        status = merge([*shards, "-o", "merged.json", "--queryeval-baseline=base.json"])
    finally:
        os.chdir(cwd)
    merged = json.loads((pytester.path / "merged.json").read_text(encoding="utf-8"))
    assert (merged["evidence"]["verdict"], merged["evidence"]["alpha"], status) == (
        "PASS", 0.4, 0)
