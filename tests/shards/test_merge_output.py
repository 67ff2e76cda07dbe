"""``queryeval merge`` writes the same bytes whatever is done to make it faster (issue 30
item 6): the merged JSON report of 10 shards, two of them retried, is compared with the digest
of what the merge wrote before its per-record costs were cut (2026-11-23, commit 1fba65e).

The shards are made here, deterministically, with what a merge must carry through unchanged:
non-ASCII text, a reason longer than the slim record keeps, details the aggregates read back
(GERBIL's counts) and details they do not, errors, skipped and xfailed cases, tags
and dialects, and a case that two shards ran."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
from pathlib import Path

from pytest_queryeval.conclude.merge import run as merge_run
from pytest_queryeval.report.json_report import digest_problem, dumps, write_report
from pytest_queryeval.suite.shard import shard_of

SHARDS, CASES = 10, 400
IDS = [f"case-{n:04d}" for n in range(CASES)]
OUTCOMES = ("passed", "passed", "passed", "failed", "error", "skipped", "xfailed", "passed")
#: sha256 of the merged JSON report written by commit 1fba65e (before the merge was made faster),
#: with the keys renamed by issue 43 item 5 (run.gating, a case's standing)
EXPECTED = "82e734c9583672313852ebcf064a2425159f1a82f252de6643f965999d052a71"


def _record(n: int, attempt: int) -> dict[str, object]:
    outcome = OUTCOMES[n % len(OUTCOMES)]
    ok = outcome == "passed"
    metrics: dict[str, object] = {
        "execution_accuracy": 1.0 if ok else 0.0, "soft_f1": (n % 7) / 7,
        "cell_f1": None if n % 11 == 0 else (n % 3) / 3, "exact_set_match": n % 2 == 0,
        "gold_seconds": 0.001 * (n % 13), "qald_f1": (n % 5) / 5}
    if outcome in ("error", "skipped"):
        metrics = {}
    details: dict[str, object] = {
        "row_counts": {"gold": n % 9, "predicted": n % 4}, "column_mapping": "identity",
        "gerbil": {"tp": n % 3, "fp": n % 2, "fn": n % 5},
        "note": "Zoë’s “table” — 表 " * (n % 3)}
    reason = None
    if outcome == "failed":
        reason = "wrong rows: " + "ä" * (2500 if n % 16 == 3 else 10)
    error = "prediction error: HTTP 503 — überlastet" if outcome == "error" else None
    return {
        "id": IDS[n], "nodeid": f"suite/test_part{n % 5}.yaml::{IDS[n]}",
        "file": f"suite/test_part{n % 5}.yaml", "line": 3 + 4 * n, "kind": "sql",
        "difficulty": ("easy", "medium", "hard", "extra", None)[n % 5],
        "tags": ["smoke", "ü"] if n % 3 == 0 else [], "severity": None,
        "question": f"Wie viele Zeilen hat Tabelle {n}? “{n}”", "datasource": "chinook",
        **({"dialect": ("sqlite", "duckdb")[n % 2]} if n % 6 == 0 else {}),
        "outcome": outcome, "status": None if error else outcome,
        "metrics": metrics, "labels": {"hardness": "easy"} if n % 2 else {},
        "thresholds": {"execution_accuracy": {"min": 1.0}}, "default_thresholds": [],
        "failed_metrics": [] if ok else ["execution_accuracy"],
        "predicted": f"SELECT count(*) FROM t{n} -- attempt {attempt}",
        "gold": f"SELECT COUNT(*) FROM t{n}", "signature": f"{n:016x}",
        "error": error, "reason": reason, "diff": [] if ok else [f"missing rows: ({n},)"],
        "near_miss": None, "details": details, "settings": {"compare": {"order": n % 2 == 0}},
        "baseline_status": None, "standing": None, "identity": f"{n:032x}",
    }


def _shards(folder: Path) -> list[str]:
    parts: dict[int, list[int]] = {i: [] for i in range(1, SHARDS + 1)}
    for n, case_id in enumerate(IDS):
        parts[shard_of(case_id, SHARDS)].append(n)
    parts[2].append(parts[1][0])  # one case ran in two shards
    names = []
    for index, ns in parts.items():
        attempts = [(1, ns[: len(ns) // 3], True), (2, ns, False)] if index in (3, 7) \
            else [(1, ns, False)]
        for attempt, chosen, interrupted in attempts:
            run = {"started": f"2026-11-23T0{attempt}:00:0{index % 10}+00:00",
                   "finished": f"2026-11-23T0{attempt}:30:00+00:00", "duration_s": 12.5 * index,
                   "interrupted": interrupted, "queryeval_version": "0.1.0", "model": "m",
                   "predictions": "preds.jsonl", "gating": "strict",
                   "settings": {"sql": {"compare": {"order": False}}}, "workers": 2,
                   "shard": f"{index}/{SHARDS}", "suite": {"cases": CASES, "digest": "d"},
                   "suite_ids": IDS, "exitstatus": 2 if interrupted else 1}
            gates = [{"name": "ex", "metric": "execution_accuracy", "stat": "mean",
                      "scope": ".", "kind": None, "tag": None, "value": 0.5, "op": ">=",
                      "limit": 0.6, "cases": 0, "allow_empty": False, "reason": None,
                      "passed": True}]
            report = {"version": 1, "run": run,
                      "cases": [_record(n, attempt) for n in chosen],
                      "aggregates": {}, "gates": gates, "flaky": []}
            name = f"shard-{index}.json" if attempt == 1 else f"shard-{index}.try{attempt}.json"
            if index == 5:  # any JSON layout is read, not only the plugin's
                (folder / name).write_text(json.dumps(report, indent=1), encoding="utf-8")
            else:
                write_report(report, folder / name)
            names.append(name)
    return names


def test_the_merged_report_of_ten_shards_is_unchanged(tmp_path: Path, monkeypatch) -> None:
    names = _shards(tmp_path)
    monkeypatch.chdir(tmp_path)
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        status = merge_run([*names, "-o", "merged.json", "--queryeval-markdown", "merged.md"])
    assert status == 1, sink.getvalue()  # the case two shards ran fails the merge
    merged = (tmp_path / "merged.json").read_bytes()
    data = json.loads(merged)
    assert len(data["cases"]) == CASES
    long = [c for c in data["cases"] if len(c.get("reason") or "") > 2000]
    assert long and long[0]["reason"].endswith("ä")  # whole again in the merged report
    # the run's outcome (issue 43 item 3) and each record's digest of its own text (issue 39
    # item 7) came after that commit: the rest is byte for byte
    line = data["run"].pop("outcome_line")
    assert (data["run"].pop("outcome"), data["run"].pop("causes")) == ("failed", line.removeprefix(
        "queryeval: FAILED: ").split("; "))
    assert line.startswith("queryeval: FAILED: 50 failed cases (case-0035, case-0075, case-0115 "
                           "and 47 more); ")
    assert all(digest_problem(c) is None for c in data["cases"])
    bare = re.sub(r', "digest": "[0-9a-f]{32}"}', "}", dumps(data))  # dumps writes them again
    assert hashlib.sha256(bare.encode("utf-8")).hexdigest() == EXPECTED
