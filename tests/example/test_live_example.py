"""The example suite's live-model run (example_suite/live), as its README documents it, against
the loopback stand-in for the user's model; and it stays out of the default run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.fixtures.openai_standin import KEY, MODEL
from tests.support import read_report

ROOT = Path(__file__).resolve().parents[2]
LIVE = ROOT / "example_suite" / "live"

pytest.importorskip("openai")


def test_live_run_asks_the_model_for_every_case_and_records_its_cost(openai_standin, tmp_path):
    cases = yaml.safe_load((LIVE / "live_chinook.yaml").read_text())["cases"]
    openai_standin.answers = {c["question"]: f"```sql\n{c['gold']}\n```" for c in cases}
    openai_standin.answers[cases[0]["question"]] = "SELECT count(*) FROM Album"  # one wrong
    openai_standin.models = {MODEL}
    env = {**os.environ, "OPENAI_API_KEY": KEY, "QUERYEVAL_LIVE_BASE_URL": openai_standin.base_url,
           "QUERYEVAL_LIVE_MODEL": MODEL}
    report_path = tmp_path / "live.json"
    # the README's command, pointed at the stand-in
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(LIVE), "-o", "queryeval_files=live_*.yaml", "-q",
         "-p", "no:randomly", "-o", f"cache_dir={tmp_path / 'cache'}",
         f"--queryeval-json={report_path}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    report = read_report(report_path)
    outcomes = {c["id"]: c["outcome"] for c in report["cases"]}
    assert outcomes.pop(cases[0]["id"]) == "failed", proc.stdout[-3000:]
    assert set(outcomes.values()) == {"passed"} and len(outcomes) == len(cases) - 1
    assert proc.returncode == 1, proc.stdout[-3000:]  # the wrong answer fails its case
    assert all(g["passed"] for g in report["gates"])  # the gates allow one miss
    assert len(openai_standin.requests) == len(cases)  # each case asked once
    first = openai_standin.requests[0]
    assert (first["model"], first["seed"], first["temperature"]) == (MODEL, 1, 0)
    assert "CREATE TABLE [Album]" in first["messages"][-1]["content"]
    assert "REFERENCES [Artist] ([ArtistId])" in first["messages"][-1]["content"]
    assert len(first["messages"]) == 6  # system, two few-shot pairs, the case
    spent = report["aggregates"]["overall"]["metrics"]
    assert spent["prompt_tokens"]["total"] > 0 and spent["completion_tokens"]["total"] > 0
    # the stand-in model has no price: tokens are recorded, no cost, and the budget gate allows it
    assert "cost_usd" not in spent
    assert "spent:" in proc.stdout and MODEL in json.dumps(report["cases"][0]["details"])


def test_the_default_run_does_not_collect_the_live_cases(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(ROOT / "example_suite"), "--collect-only", "-q",
         "-o", f"cache_dir={tmp_path / 'cache'}"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert "live-" not in proc.stdout and "artists-count" in proc.stdout
