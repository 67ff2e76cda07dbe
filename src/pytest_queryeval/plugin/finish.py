"""The run's JSON report, built from its records, and its aggregates as junit properties.

Used by :class:`~.controller.Controller` when the session finishes; the report's judging and
writing is :func:`~..conclude.conclude`'s, shared with ``queryeval merge``.
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .. import __version__
from ..conclude import aggregates_of, run_settings, suite_key
from ..engine.nearmiss import aggregate as near_miss_aggregate
from ..engine.repeats import flaky_cases
from ..judge.report import aggregate as judge_aggregate

if TYPE_CHECKING:
    from ..model import CaseRecord


def _iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, tz=dt.UTC).isoformat(timespec="seconds")


def build_report(records: list[CaseRecord], *, started: float, exitstatus: int,
                 gates: list[dict[str, Any]], model: tuple[str | None, str | None],
                 gating: str, suite_ids: list[str] | None,
                 shard: tuple[int, int] | None, workers: int) -> dict[str, Any]:
    """The JSON report of a run (``shard``: ``--queryeval-shard``, recorded as ``I/N``, what
    ``queryeval merge`` checks)."""
    label, predictions = model
    from ..neighbours.check import summary as neighbour_summary

    neighbours = neighbour_summary(records)
    report: dict[str, Any] = {
        "version": 1,
        "run": {
            "started": _iso(started), "finished": _iso(time.time()),
            "duration_s": round(time.time() - started, 3), "exitstatus": exitstatus,
            "interrupted": exitstatus == pytest.ExitCode.INTERRUPTED,
            "queryeval_version": __version__, "model": label, "predictions": predictions,
            "gating": gating,
            "settings": run_settings(records),
            "workers": workers,
            "shard": f"{shard[0]}/{shard[1]}" if shard else None,
            **suite_key(suite_ids, len(records)),
        },
        "cases": records,
        "aggregates": aggregates_of(records),
        "gates": gates,
        "flaky": flaky_cases(records),
        "near_miss": near_miss_aggregate(records),
        "judge": judge_aggregate(records),
    }
    if neighbours is not None:  # --queryeval-neighbours: the budget spent, passes checked
        report["neighbours"] = neighbours
    from ..predict.cache import summary as cache_summary

    if (cached := cache_summary(records)) is not None:  # answers kept between runs
        report["prediction_cache"] = cached
    return report


def case_dirs(records: list[CaseRecord]) -> set[Path]:
    """The directories of the run's case files (one Path per file, not per record)."""
    return {Path(path).parent for path in {str(r["path"]) for r in records if r.get("path")}}


def _sig(value: float) -> float:
    """Six significant digits: a cost of $0.0000031 per case is not 0 (six decimals were)."""
    return float(f"{value:.6g}")


def add_junit_properties(config: pytest.Config, report: dict[str, Any]) -> None:
    """Aggregates as <testsuite> properties; works under xdist, unlike record_testsuite_property."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover - private API moved: the JSON report has it all
        return
    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    run = report.get("run") or {}
    if run.get("outcome"):  # the run's outcome first, in the words of the summary's last line
        xml.add_global_property("queryeval.outcome", str(run["outcome"]))
        xml.add_global_property("queryeval.outcome_line", str(run.get("outcome_line") or ""))
        for cause in run.get("causes") or []:
            xml.add_global_property("queryeval.cause", str(cause))
    overall = report["aggregates"]["overall"]
    xml.add_global_property("queryeval.cases", overall["count"])
    if overall["pass_rate"] is not None:
        xml.add_global_property("queryeval.pass_rate", round(overall["pass_rate"], 6))
    for metric, stats in overall["metrics"].items():
        xml.add_global_property(f"queryeval.mean.{metric}", _sig(stats["mean"]))
        if "total" in stats:
            xml.add_global_property(f"queryeval.total.{metric}", _sig(stats["total"]))
    for kind, stats in report["aggregates"]["by_kind"].items():
        for metric, m in stats["metrics"].items():
            xml.add_global_property(f"queryeval.{kind}.mean.{metric}", _sig(m["mean"]))
            if "total" in m:
                xml.add_global_property(f"queryeval.{kind}.total.{metric}", _sig(m["total"]))
    # accuracy next to latency and cost, per kind and difficulty
    for kind, per_diff in report["aggregates"].get("by_kind_difficulty", {}).items():
        for diff, stats in per_diff.items():
            prefix = f"queryeval.{kind}.{diff}"
            if stats.get("pass_rate") is not None:
                xml.add_global_property(f"{prefix}.pass_rate", _sig(stats["pass_rate"]))
            metrics = stats.get("metrics") or {}
            for metric, stat in (("prediction_seconds", "mean"), ("cost_usd", "total"),
                                 ("prompt_tokens", "total"), ("completion_tokens", "total"),
                                 ("judge_ex", "mean"), ("judge_cost_usd", "total")):
                if stat in (metrics.get(metric) or {}):
                    xml.add_global_property(f"{prefix}.{stat}.{metric}",
                                            _sig(metrics[metric][stat]))
    from ..report.by_turn import junit_properties  # conversation cases: the by-turn table

    for name, value in junit_properties(report["aggregates"]):
        xml.add_global_property(name, value)
    judge = report.get("judge") or {}
    if judge.get("judged") or judge.get("errors"):
        for key in ("judged", "asked", "pinned", "calls"):
            xml.add_global_property(f"queryeval.judge.{key}", int(judge.get(key) or 0))
        for key in ("rescued", "overturned", "errors"):
            xml.add_global_property(f"queryeval.judge.{key}", len(judge.get(key) or []))
    for gate in report["gates"]:
        xml.add_global_property(f"queryeval.gate.{gate['name']}",
                                "pass" if gate["passed"] else "fail")
