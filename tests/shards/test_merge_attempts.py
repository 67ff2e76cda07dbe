"""``queryeval merge`` of a scheduler's run (issue 30 item 6): 10 shards of a 10,000-case suite,
two of them retried. The latest complete record of each case wins, the superseded attempts are
listed, the inputs are read case by case, and the HTML report stays bounded."""

from __future__ import annotations

import json

from pytest_queryeval.conclude.merge import load_shards, merge_reports
from pytest_queryeval.conclude.merge import run as merge_run
from pytest_queryeval.report.html import MAX_CASE_ROWS
from pytest_queryeval.report.json_report import write_report
from pytest_queryeval.suite.shard import shard_of
from tests.support import read_report

SHARDS, CASES = 10, 10_000
IDS = [f"case-{n:05d}" for n in range(CASES)]


def _record(n: int, attempt: int, outcome: str) -> dict[str, object]:
    case_id = IDS[n]
    ok = outcome == "passed"
    error = "prediction error: HTTP 503 from predictor" if outcome == "error" else None
    return {
        "id": case_id, "nodeid": f"suite/test_part{n % 10}.yaml::{case_id}",
        "file": f"suite/test_part{n % 10}.yaml", "line": 3 + 4 * n, "kind": "sql",
        "difficulty": ("easy", "medium", "hard", "extra")[n % 4], "tags": [],
        "question": f"How many rows in table {n}?", "outcome": outcome,
        "status": None if error else ("passed" if ok else "failed"),
        "metrics": {} if error else {"execution_accuracy": 1.0 if ok else 0.0},
        "thresholds": {"execution_accuracy": {"min": 1.0}},
        "failed_metrics": [] if ok or error else ["execution_accuracy"],
        "predicted": f"SELECT count(*) FROM t{n} -- attempt {attempt}",
        "gold": f"SELECT COUNT(*) FROM t{n}", "error": error, "reason": None,
        "diff": [], "details": {"gold_cached": True}, "settings": {},
    }


def _write(folder, index, attempt, records, *, interrupted=False, compact=False):
    run = {"started": f"2026-11-23T0{attempt}:00:00+00:00", "interrupted": interrupted,
           "queryeval_version": "0.1.0", "model": None, "predictions": None,
           "gating": "strict", "settings": {}, "shard": f"{index}/{SHARDS}",
           "suite": {"cases": CASES, "digest": "d"}, "suite_ids": IDS,
           "exitstatus": 2 if interrupted else 0}
    report = {"version": 1, "run": run, "cases": records, "aggregates": {}, "gates": []}
    name = f"shard-{index}.json" if attempt == 1 else f"shard-{index}.try{attempt}.json"
    if compact:  # any JSON layout is read, not only the plugin's one case per line
        (folder / name).write_text(json.dumps(report))
    else:
        write_report(report, folder / name)
    return name


def _shards(folder):
    """Shard 3's first attempt was interrupted after 100 cases, 20 of them prediction errors;
    shard 7's first attempt finished, its retry erred on 5 cases the first attempt scored."""
    parts: dict[int, list[int]] = {i: [] for i in range(1, SHARDS + 1)}
    for n, case_id in enumerate(IDS):
        parts[shard_of(case_id, SHARDS)].append(n)
    names = []
    for index, ns in parts.items():
        if index == 3:
            first = [_record(n, 1, "error" if k < 20 else "passed") for k, n in enumerate(ns[:100])]
            names.append(_write(folder, 3, 1, first, interrupted=True))
            names.append(_write(folder, 3, 2, [_record(n, 2, "passed") for n in ns]))
        elif index == 7:
            names.append(_write(folder, 7, 1, [_record(n, 1, "passed") for n in ns],
                                compact=True))
            second = [_record(n, 2, "error" if k < 5 else "passed") for k, n in enumerate(ns)]
            names.append(_write(folder, 7, 2, second))
        else:
            names.append(_write(folder, index, 1, [_record(n, 1, "passed") for n in ns]))
    return parts, names


def test_ten_shards_two_retried_merge_into_one_run(tmp_path, monkeypatch, capsys):
    parts, names = _shards(tmp_path)
    monkeypatch.chdir(tmp_path)
    status = merge_run([*reversed(names), "-o", "merged.json", "--queryeval-html=m.html"])
    out = capsys.readouterr().out
    assert status == 0, out  # the interrupted attempt was retried whole: not an interrupt
    merged = read_report(tmp_path / "merged.json")
    ids = [c["id"] for c in merged["cases"]]
    assert len(ids) == CASES and sorted(ids) == IDS  # each case once
    assert ids == [c["id"] for c in sorted(merged["cases"], key=lambda c: (c["file"], c["line"]))]
    by_id = {c["id"]: c for c in merged["cases"]}
    third, seventh = parts[3], parts[7]
    assert all(by_id[IDS[n]]["predicted"].endswith("attempt 2") for n in third)
    # shard 7: the retry's complete records win; where it erred, the first attempt's record
    assert [by_id[IDS[n]]["predicted"][-9:] for n in seventh[:7]] == \
        ["attempt 1"] * 5 + ["attempt 2"] * 2
    assert {c["outcome"] for c in merged["cases"]} == {"passed"}
    attempts = {(a["report"], a["attempt"]): (a["superseded"], a["kept"])
                for a in merged["run"]["attempts"]}
    assert attempts == {("shard-3.json", 1): (100, 0), ("shard-3.try2.json", 2): (0, len(third)),
                        ("shard-7.json", 1): (len(seventh) - 5, 5),
                        ("shard-7.try2.json", 2): (5, len(seventh) - 5)}
    assert "shard 3/10: 2 attempts, the latest complete record of each case kept; superseded: " \
           "shard-3.json (100 of 100 cases)" in out
    assert f"shard 7/10: 2 attempts, the latest complete record of each case kept; superseded: " \
           f"shard-7.json ({len(seventh) - 5:,} of {len(seventh):,} cases), " \
           f"shard-7.try2.json (5 of {len(seventh):,} cases)" in out
    ex = merged["aggregates"]["overall"]["metrics"]["execution_accuracy"]
    assert (ex["n"], ex["mean"], ex["missing"]) == (CASES, 1.0, {})
    # the HTML report holds at most MAX_CASE_ROWS case rows, and says how many it left out
    page = (tmp_path / "m.html").read_text()
    assert page.count('<tr data-i="') == MAX_CASE_ROWS
    assert f"{CASES - MAX_CASE_ROWS:,} of {CASES:,} cases are not shown" in page


def test_the_merge_holds_slim_records_and_writes_them_whole(tmp_path):
    _, names = _shards(tmp_path)
    merged = merge_reports(load_shards([tmp_path / n for n in names]))
    cases = merged.report["cases"]
    assert len(cases) == CASES
    assert "predicted" not in cases[0] and "question" not in cases[0]  # left on disk
    assert cases.full(0)["question"] == "How many rows in table 0?"


def test_a_baseline_written_by_the_merge_keeps_every_case_it_compares(tmp_path, monkeypatch,
                                                                      capsys):
    """The merge's records are read back case by case: its baseline (the compact form of
    issue 24 item 7) still holds every case with what a comparison reads."""
    from pytest_queryeval.baseline.store import load_baseline

    _, names = _shards(tmp_path)
    monkeypatch.chdir(tmp_path)
    merge_run([*names, "-o", "m.json", "--queryeval-baseline=base.json",
               "--queryeval-update-baseline"])
    assert "baseline updated" in capsys.readouterr().out
    base = load_baseline(tmp_path / "base.json")
    merged = read_report(tmp_path / "m.json")

    def compared(cases):
        return [(c["id"], c.get("outcome"), c.get("status"), c.get("metrics") or {})
                for c in cases]

    assert compared(base["cases"]) == compared(merged["cases"])
    assert len(base["cases"]) == len(merged["cases"]) > 0


def test_the_markdown_failures_of_a_merge_show_the_whole_record(tmp_path, monkeypatch):
    failing = _record(1, 1, "failed")
    failing["diff"] = ["missing rows: (3,)"]
    names = [_write(tmp_path, 1, 1, [_record(0, 1, "passed"), failing])]
    monkeypatch.chdir(tmp_path)
    merge_run([*names, "-o", "m.json", "--queryeval-markdown=m.md"])
    text = (tmp_path / "m.md").read_text()
    assert "missing rows: (3,)" in text and "SELECT count(*) FROM t1 -- attempt 1" in text
