"""End of session on the controller: aggregate, gate, compare, write every report.

Exit status follows pytest's rules: a failed gate or baseline turns OK into TESTS_FAILED and
never overrides an interrupted, internal-error or usage-error status.
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

import pytest

from . import __version__
from .aggregate import evaluate_gates
from .collect import State
from .conclude import Outputs, aggregates_of, conclude, run_settings, suite_key
from .config import Gate
from .nearmiss import aggregate as near_miss_aggregate
from .paths import display
from .repeats import flaky_cases

SUMMARY = pytest.StashKey[list[str]]()
#: Statuses that gates and baselines may turn into TESTS_FAILED.
_GATEABLE = (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)


def _iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, tz=dt.UTC).isoformat(timespec="seconds")


def _model(state: State, records: list[dict[str, Any]]) -> tuple[str | None, str | None]:
    """The model under test: its label (``--queryeval-model-label``, else ``model:`` of the
    suite configs) and its predictions source (``--queryeval-predictions``, else
    ``predictions:``), so a baseline says which model produced it."""
    from .verdict import describe_predictions

    config = state.config
    configs = [state.finder.for_directory(d) for d in sorted(_case_dirs(records))]
    predictions = config.getoption("queryeval_predictions")
    # model: names the suite's own predictions; --queryeval-predictions brings another model
    label = config.getoption("queryeval_model_label") or (None if predictions else ", ".join(
        sorted({c.model for c in configs if c.model})) or None)
    if predictions and Path(predictions).is_absolute():
        predictions = _relative(Path(predictions), config.rootpath)
    if not predictions:
        predictions = ", ".join(sorted({d for c in configs
                                        if (d := describe_predictions(c.predictions))})) or None
    from .secrets import Scrubber

    # the suites' own secrets too: under xdist the controller's scrubber has seen no case
    scrub = Scrubber(state.session.scrubber.secrets.union(*(c.secrets for c in configs))).text
    return (scrub(label) if label else None), (scrub(predictions) if predictions else None)


def build_report(state: State, records: list[dict[str, Any]], started: float, exitstatus: int,
                 gates: list[dict[str, Any]],
                 model: tuple[str | None, str | None] = (None, None)) -> dict[str, Any]:
    config = state.config
    label, predictions = model
    return {
        "version": 1,
        "run": {
            "started": _iso(started), "finished": _iso(time.time()),
            "duration_s": round(time.time() - started, 3), "exitstatus": exitstatus,
            "interrupted": exitstatus == pytest.ExitCode.INTERRUPTED,
            "queryeval_version": __version__, "model": label, "predictions": predictions,
            "verdict": state.verdict_mode,
            "settings": run_settings(records),
            "workers": getattr(config.option, "numprocesses", None) or 0,
            "shard": _shard(config.getoption("queryeval_shard")),
            **suite_key(state.suite_ids, len(records)),
        },
        "cases": records,
        "aggregates": aggregates_of(records),
        "gates": gates,
        "flaky": flaky_cases(records),
        "near_miss": near_miss_aggregate(records),
    }


def _shard(value: str | None) -> str | None:
    """``--queryeval-shard`` as ``I/N`` (what ``queryeval merge`` checks), or None."""
    if not value:
        return None
    from .shard import parse_shard

    index, total = parse_shard(value)
    return f"{index}/{total}"


def _case_dirs(records: list[dict[str, Any]]) -> set[Path]:
    """The directories of the run's case files (one Path per file, not per record)."""
    return {Path(path).parent for path in {str(r["path"]) for r in records if r.get("path")}}


def _gates(state: State, records: list[dict[str, Any]]) -> list[Gate]:
    seen: dict[str, Gate] = {}
    for directory in sorted(_case_dirs(records)):
        for key, gate in state.finder.for_directory(directory).gates.items():
            seen.setdefault(key, gate)
    return list(seen.values())


def _relative(path: Path, root: Path) -> str:
    return display(path, root)


def _baseline_path(config: pytest.Config, state: State, records: list[dict[str, Any]]) -> Path:
    """The one baseline file compared with and updated (see :func:`verdict.baseline_file`)."""
    from .verdict import baseline_file, suite_dir

    return baseline_file(config.getoption("queryeval_baseline"),
                         str(config.getini("queryeval_baseline")),
                         suite=suite_dir(state.finder, _case_dirs(records), config.rootpath),
                         invocation_dir=config.invocation_params.dir, rootdir=config.rootpath)


def outputs(config: pytest.Config, state: State, records: list[dict[str, Any]]) -> Outputs:
    """The run's report and baseline options."""
    get = config.getoption

    def path(option: str) -> Path | None:
        value = get(option)
        return (config.invocation_params.dir / value).resolve() if value else None

    wants_baseline = bool(get("queryeval_baseline") or get("queryeval_update_baseline"))
    return Outputs(
        json=path("queryeval_json"), xlsx=path("queryeval_xlsx"), html=path("queryeval_html"),
        markdown=path("queryeval_markdown"), step_summary=not get("queryeval_no_step_summary"),
        compare=bool(get("queryeval_baseline")),
        baseline_path=_baseline_path(config, state, records) if wants_baseline else None,
        update_baseline=bool(get("queryeval_update_baseline")),
        force_baseline=bool(get("queryeval_force_baseline")),
        max_drop=list(get("queryeval_max_drop")), tags=bool(get("queryeval_tags")),
        worst=get("queryeval_worst"), spider_table=bool(get("queryeval_spider_table")),
        significance=_significance(config, state, records) if get("queryeval_baseline")
        else None,
        display=lambda p: _relative(p, config.rootpath))


def finish_session(session: pytest.Session, state: State, started: float, exitstatus: int) -> None:
    config = session.config
    if state.crashed:  # after every testnodedown: the workers' case metadata has arrived
        from .report.records import crash_record

        for nodeid, message in state.crashed.items():
            state.records[nodeid] = crash_record(nodeid, message, state.case_meta.get(nodeid))
    records = sorted(state.records.values(),
                     key=lambda r: (str(r.get("file")), int(r.get("line") or 0), str(r.get("id"))))
    if not records:
        if state.audit:
            config.stash[SUMMARY] = ["gold audit: no gold to audit (no case ran)"]
        return
    # an audit scores the golds against themselves: gates and baselines judge models
    gate_defs = [] if state.audit else _gates(state, records)
    gates = evaluate_gates(gate_defs, records)
    for gate in gates:  # reports are committed as baselines: no machine paths in them
        gate["scope"] = _relative(Path(gate["scope"]), config.rootpath)
    public = [{k: v for k, v in r.items() if k != "path"} for r in records]
    report = build_report(state, public, started, exitstatus, gates, _model(state, records))
    if state.audit:
        from .report.audit import audit_report

        report["audit"] = audit_report(public, state.audit)
    config.hook.pytest_queryeval_report(report=report, config=config)
    lines: list[str] = []
    config.stash[SUMMARY] = lines  # shown even if writing a report fails in conclude()
    out = outputs(config, state, records)
    if state.audit:
        from .report.audit import summary_lines as audit_lines

        out.after_gates = ["", *audit_lines(report["audit"])]
        out.skip_compare = "baseline: not compared in a gold audit"
    failed = conclude(report, out, lines,
                      lambda: _update_refusals(session, state, records, exitstatus))
    if failed and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if session.exitstatus in _GATEABLE:  # the last line: the outcome and why
        from .report.terminal import outcome_line

        lines.append(outcome_line(report, failed=session.exitstatus != pytest.ExitCode.OK,
                                  problems=out.problems))
    _add_junit_properties(config, report)


def _significance(config: pytest.Config, state: State,
                  records: list[dict[str, Any]]) -> float | None:
    """``--queryeval-significance``, else ``gates: {significance:}`` of the run's suite configs
    (the smallest alpha when they differ), else ini ``queryeval_significance``; all were
    validated before the run."""
    from .report import baseline as bl

    cli = config.getoption("queryeval_significance")
    if cli is not None:
        return bl.parse_significance(cli, "--queryeval-significance")
    suites = [c.significance for d in sorted(_case_dirs(records))
              if (c := state.finder.for_directory(d)).significance is not None]
    if suites:
        return min(suites)
    return bl.parse_significance(str(config.getini("queryeval_significance") or ""),
                                 "queryeval_significance")


def _update_refusals(session: pytest.Session, state: State, records: list[dict[str, Any]],
                     exitstatus: int) -> list[str]:
    """Why this run must not replace the baseline (see :func:`verdict.update_refusals`)."""
    from .verdict import partial_run, suite_dir, update_refusals

    config = session.config
    opt = config.option
    filters = [f"{flag} {value!r}" for flag, value in
               (("-k", getattr(opt, "keyword", "")), ("-m", getattr(opt, "markexpr", "")))
               if value]
    if getattr(opt, "lf", False):
        filters.append("--lf")
    if getattr(opt, "deselect", None):
        filters.append("--deselect")
    if state.deselected and not filters:
        filters.append(f"{state.deselected} case(s) deselected")
    collected = {Path(str(r["path"])).resolve() for r in records if r.get("path")}
    filters.extend(partial_run(config.args, config.invocation_params.dir,
                               suite_dir(state.finder, _case_dirs(records), config.rootpath),
                               config.getini("queryeval_files"), collected))
    stopped = session.shouldfail or session.shouldstop
    maxfail = int(getattr(opt, "maxfail", 0) or 0)
    if not stopped and maxfail and sum(
            r.get("outcome") in ("failed", "error") for r in records) >= maxfail:
        stopped = f"--maxfail={maxfail}"
    errors = [str(r.get("id")) for r in records if r.get("outcome") == "error"]
    return update_refusals(filters=filters, interrupted=exitstatus == pytest.ExitCode.INTERRUPTED,
                           stopped=str(stopped) if stopped else None, errors=errors)


def _sig(value: float) -> float:
    """Six significant digits: a cost of $0.0000031 per case is not 0 (six decimals were)."""
    return float(f"{value:.6g}")


def _add_junit_properties(config: pytest.Config, report: dict[str, Any]) -> None:
    """Aggregates as <testsuite> properties; works under xdist, unlike record_testsuite_property."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover - private API moved: the JSON report has it all
        return
    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
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
                                 ("prompt_tokens", "total"), ("completion_tokens", "total")):
                if stat in (metrics.get(metric) or {}):
                    xml.add_global_property(f"{prefix}.{stat}.{metric}",
                                            _sig(metrics[metric][stat]))
    for gate in report["gates"]:
        xml.add_global_property(f"queryeval.gate.{gate['name']}",
                                "pass" if gate["passed"] else "fail")
