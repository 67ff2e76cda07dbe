"""Which ``details`` entries ``queryeval merge`` holds in memory (report.stream.slim): the heavy,
per-case-view ones are left on disk by name, and any other entry is kept, so a new aggregate
that reads a detail is never silently fed nothing by a merge."""

from __future__ import annotations

from pytest_queryeval.conclude.merge import load_shards, merge_reports
from pytest_queryeval.report.json_report import write_report
from pytest_queryeval.report.stream import HEAVY_DETAILS


def _record(n: int) -> dict[str, object]:
    return {
        "id": f"case-{n}", "nodeid": f"suite/test_a.yaml::case-{n}", "file": "suite/test_a.yaml",
        "line": 3 + 4 * n, "kind": "sql", "difficulty": "easy", "tags": [],
        "question": "How many?", "outcome": "passed", "status": "passed",
        "metrics": {"execution_accuracy": 1.0}, "thresholds": {"execution_accuracy": {"min": 1.0}},
        "failed_metrics": [], "predicted": "SELECT 1", "gold": "SELECT 1", "error": None,
        "reason": None, "diff": [], "settings": {},
        "details": {"a_future_aggregate_input": {"n": n}, "gold_cached": True,
                    "prediction": {"reply": "x" * 5000}, "sdmx_details": "y" * 5000}}


def test_a_detail_no_list_names_survives_a_merge_and_heavy_ones_stay_on_disk(tmp_path):
    for index in (1, 2):
        run = {"started": "2026-11-23T00:00:00+00:00", "interrupted": False,
               "queryeval_version": "0.1.0", "model": None, "predictions": None,
               "gating": "strict", "settings": {}, "shard": f"{index}/2",
               "suite": {"cases": 2, "digest": "d"}, "suite_ids": ["case-0", "case-1"],
               "exitstatus": 0}
        write_report({"version": 1, "run": run, "cases": [_record(index - 1)],
                      "aggregates": {}, "gates": []}, tmp_path / f"shard-{index}.json")
    merged = merge_reports(load_shards([tmp_path / "shard-1.json", tmp_path / "shard-2.json"]))
    cases = merged.report["cases"]
    details = sorted((c["id"], c["details"]) for c in cases)
    assert details == [
        ("case-0", {"a_future_aggregate_input": {"n": 0}, "gold_cached": True}),
        ("case-1", {"a_future_aggregate_input": {"n": 1}, "gold_cached": True})]
    assert {"prediction", "sdmx_details"} <= set(HEAVY_DETAILS)
    assert cases.full(0)["details"]["prediction"] == {"reply": "x" * 5000}  # on disk, whole
