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
from ..judge.report import aggregate as judge_aggregate
from ..rules.nearmiss import aggregate as near_miss_aggregate
from ..rules.repeats import flaky_cases

if TYPE_CHECKING:
    from ..model import CaseRecord


def _iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, tz=dt.UTC).isoformat(timespec="seconds")


def build_report(records: list[CaseRecord], *, started: float, exitstatus: int,
                 gates: list[dict[str, Any]], model: tuple[str | None, str | None],
                 gating: str, suite_ids: list[str] | None,
                 shard: tuple[int, int] | None, workers: int,
                 significance: float | None = None) -> dict[str, Any]:
    """The JSON report of a run (``shard``: ``--queryeval-shard``, recorded as ``I/N``, what
    ``queryeval merge`` checks; ``significance``: the suite's alpha for the baseline
    comparison, recorded only when it sets one)."""
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
            **({"significance": significance} if significance is not None else {}),
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


def add_junit_properties(config: pytest.Config, report: dict[str, Any]) -> None:
    """Aggregates as <testsuite> properties; works under xdist, unlike record_testsuite_property."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover - private API moved: the JSON report has it all
        return
    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    from ..report.junit import properties  # one list: queryeval merge --junitxml's too

    for name, value in properties(report):
        xml.add_global_property(name, value)
