"""The end of a run once its report is built: summary, baseline comparison, report files and
the baseline update, and whether the run fails on them.

Free of pytest: the plugin's session finish (:mod:`pytest_queryeval.plugin.finish`) and
``queryeval merge`` (:mod:`pytest_queryeval.conclude.merge`) both end here, so a merged report is judged
and written exactly as a single run's would be.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from ..errors import QueryEvalError
from ..kindregistry import declares
from ..report.document import Report
from ..report.formats import WORST, ReportFile, report_formats
from ..report.outcome import Outcome, run_outcome
from ..report.terminal import gate_lines, summary_lines
from .aggregate import aggregate, reference_aggregates

if TYPE_CHECKING:
    from ..baseline.compare import Comparison
    from ..model import RecordLike


@dataclass
class Outputs:
    """What to do with a finished report: the plugin's options, or ``queryeval merge``'s."""

    #: The report files asked for, by their name in :data:`..report.formats.REPORT_WRITERS` (in its
    #: order): where each is written.
    files: dict[str, Path] = field(default_factory=dict)
    #: Append the Markdown summary to ``$GITHUB_STEP_SUMMARY`` when it is set.
    step_summary: bool = True
    #: ``--queryeval-baseline`` was given: compare with :attr:`baseline_path`.
    compare: bool = False
    #: The baseline file (compared with, and written by :attr:`update_baseline`).
    baseline_path: Path | None = None
    update_baseline: bool = False
    #: Set by :func:`conclude` when it wrote the baseline.
    baseline_written: bool = False
    force_baseline: bool = False
    max_drop: Sequence[str] = ()
    tags: bool = False
    worst: int = WORST
    spider_table: bool = False
    #: ``--queryeval-significance``: gate a drop only when it is not noise (alpha).
    significance: float | None = None
    #: ``--queryeval-baseline-model``: the baseline model each current model is compared
    #: with (``""``: every model), else each its own (:mod:`..baseline.retarget`).
    baseline_models: dict[str, str] = field(default_factory=dict)
    #: ``--queryeval-gating=evidence``: the evidence gate's alpha (None: no evidence gate),
    #: the repeats' budget it reports, and what an INCONCLUSIVE verdict does
    #: (``--queryeval-inconclusive``: status, fail or pass).
    evidence_alpha: float | None = None
    repeat_budget: float | None = None
    inconclusive: str = "status"
    #: Set by :func:`conclude`: the evidence gate's verdict (PASS, FAIL, INCONCLUSIVE).
    verdict: str | None = None
    #: Lines shown after the gates (the gold audit's findings).
    after_gates: Sequence[str] = ()
    #: Why the baseline is not compared although asked for (a gold audit), or None.
    skip_compare: str | None = None
    #: How a path is shown in the summary (rootdir-relative in the plugin).
    display: Callable[[Path], str] = field(default=str)
    #: Filled in by :func:`conclude`: causes of failure the report does not record (for the
    #: run's outcome, :func:`~pytest_queryeval.report.outcome.run_outcome`).
    problems: list[str] = field(default_factory=list)
    #: Set by :func:`conclude`: the failing cases a baseline refresh recorded as the accepted
    #: state (:func:`accepted_by_refresh`; the session then exits 0).
    accepted: list[str] = field(default_factory=list)
    #: Set by :func:`write_reports`: the report files written (their names in
    #: :data:`..report.formats.REPORT_WRITERS`).
    written: list[str] = field(default_factory=list)
    #: Set by :func:`conclude`: the run's outcome, which every report's headline states and
    #: the summary ends on.
    outcome: Outcome | None = None


def run_settings(records: Sequence[RecordLike]) -> dict[str, dict[str, Any]]:
    """Per kind, the scoring options in force (a list when cases differ): the report's
    ``run.settings``, which a baseline comparison and a merge of shards require equal."""
    seen: dict[str, dict[str, list[str]]] = {}
    for rec in records:
        for key, value in (rec.get("settings") or {}).items():
            enc = json.dumps(value, sort_keys=True)
            bucket = seen.setdefault(str(rec.get("kind")), {}).setdefault(key, [])
            if enc not in bucket:
                bucket.append(enc)
    out: dict[str, dict[str, Any]] = {}
    for kind, options in seen.items():
        out[kind] = {k: json.loads(v[0]) if len(v) == 1 else sorted(v) for k, v in options.items()}
    return out


def suite_key(ids: Sequence[str] | None, ran: int) -> dict[str, Any]:
    """``run.suite`` (how many cases the suite holds, and a digest of their ids: the shards of
    one suite share it) and, when the run ran only part of it, ``run.suite_ids``."""
    if ids is None:
        return {}
    digest = hashlib.sha256("\n".join(sorted(ids)).encode("utf-8", "surrogatepass")).hexdigest()
    out: dict[str, Any] = {"suite": {"cases": len(ids), "digest": digest[:32]}}
    if ran != len(ids):
        out["suite_ids"] = sorted(ids)
    return out


def with_spider(aggregates: dict[str, Any], records: Sequence[RecordLike]) -> dict[str, Any]:
    """The Spider evaluator's own per-hardness table (its averaging rules, not plain means)."""
    items = [r["details"]["spider"] for r in records
             if declares(str(r.get("kind")), "spider_details")
             and isinstance((r.get("details") or {}).get("spider"), dict)]
    if items:
        from ..metrics.spider import aggregate as spider_aggregate

        aggregates["spider"] = spider_aggregate(items)
    aggregates.update(reference_aggregates(records))
    return aggregates


def aggregates_of(records: Sequence[RecordLike]) -> dict[str, Any]:
    """Every aggregate of a report's cases (plain means, groups, the Spider table, how many
    cases each threshold gated)."""
    from ..rules.thresholds import coverage

    aggregates = with_spider(aggregate(records), records)
    aggregates["thresholds"] = coverage(records)
    return aggregates


def conclude(report: dict[str, Any], out: Outputs, lines: list[str],
             refusals: Callable[[], list[str]], *, failing: bool = False) -> bool:
    """Judge and write a built report (``cases``, ``aggregates``, ``gates`` filled in).

    ``lines`` receives the summary as it grows (a caller that shows it even when writing a
    report fails below keeps the same list); ``refusals`` says why the run may not become the
    baseline; ``failing``: the session already fails (a failed case, or something pytest
    reports itself). Returns whether the gates or the baseline fail the run; sets
    ``out.outcome`` (in the report's ``run`` before any report is written, so every headline
    states it) and ``out.accepted``. A report that cannot be written raises QueryEvalError
    after the others are written.
    """
    gates = report.get("gates") or []
    lines.extend(summary_lines(report, tags=out.tags, worst=out.worst,
                               spider_table=out.spider_table, baseline=out.compare))
    lines.extend(gate_lines(gates))
    lines.extend(out.after_gates)
    failed = any(not g["passed"] for g in gates)

    comparison, compared_fails = _compare(report, out, lines)
    failed = failed or compared_fails
    path = out.baseline_path

    # Whether the baseline is written is decided before any report is written: the outcome
    # every report states says so (a refresh that fails a gate has still written it).
    why: list[str] = []
    write = False
    if out.update_baseline and path is not None:
        why = refusals()
        write = not why or out.force_baseline
        if not write:
            out.problems.append("baseline not updated")
            failed = True
    out.accepted = accepted_by_refresh(report, failed, write)
    out.outcome = run_outcome(
        report, failing=(failing or failed) and not out.accepted, problems=out.problems,
        accepted=out.accepted,
        baseline_written=out.display(path) if write and path is not None else None)
    report.setdefault("run", {}).update(out.outcome.fields())
    if inconclusive_status(out) and report["run"].get("exitstatus") == 0:
        report["run"]["exitstatus"] = INCONCLUSIVE_STATUS
    if out.accepted and report["run"].get("exitstatus") == 1:
        # the process exits 0 (the controller turns pytest's "tests failed" into OK): the
        # status every report states is the one the run ends with
        report["run"]["exitstatus"] = 0

    baseline_lines = _write_baseline(report, out, write, why)
    try:
        lines.extend(write_reports(report, comparison, out))
    finally:  # the baseline is written first: a report that cannot be written leaves it so
        lines.extend(baseline_lines)
    return failed


def _compare(report: dict[str, Any], out: Outputs, lines: list[str]
             ) -> tuple[Comparison | None, bool]:
    """The comparison with the baseline (None when none is made), its lines added to
    ``lines``, and whether it fails the run (a drop, or ``--queryeval-max-drop`` without a
    baseline); the comparison goes into the report's ``baseline``."""
    from ..baseline.compare import compare, parse_max_drop
    from ..baseline.store import load_baseline
    from ..report.terminal import format_comparison

    path = out.baseline_path
    if out.compare and out.skip_compare:
        lines.extend(["", out.skip_compare])
    elif out.compare and out.update_baseline and path is not None and not path.exists():
        lines.append("")  # --queryeval-update-baseline creates the file it is asked to compare with
        lines.append(f"baseline: {out.display(path)} does not exist yet: nothing to compare, "
                     "this run writes it")
    elif out.compare and path is not None:
        try:
            max_drop = parse_max_drop(out.max_drop)
        except ValueError as exc:
            raise QueryEvalError(f"--queryeval-max-drop: {exc}") from None
        try:
            base = load_baseline(path)
        except (OSError, ValueError) as exc:
            raise QueryEvalError(f"cannot read baseline {path}: {exc}") from None
        base = _retargeted(report, base, out)
        evidence = out.evidence_alpha is not None  # the evidence gate replaces McNemar
        comparison = compare(report, base, max_drop or None,
                             significance=None if evidence else out.significance)
        report["baseline"] = comparison.to_dict()
        lines.append("")
        lines.extend(format_comparison(comparison, spider_components=out.spider_table))
        return comparison, (not comparison.passed) | _evidence_gate(report, base, out, lines)
    elif out.max_drop:
        lines.append("error: --queryeval-max-drop needs --queryeval-baseline")
        out.problems.append("--queryeval-max-drop without --queryeval-baseline")
        return None, True
    return None, False


def _evidence_gate(report: dict[str, Any], base: dict[str, Any], out: Outputs,
                   lines: list[str]) -> bool:
    """``--queryeval-gating=evidence``: the verdict of :func:`..baseline.evidence.decide`
    into the report's ``evidence`` and the summary; whether it fails the run (FAIL, or
    INCONCLUSIVE under ``--queryeval-inconclusive=fail``)."""
    if out.evidence_alpha is None:
        return False
    from ..baseline.evidence import FAIL, INCONCLUSIVE, decide

    decision = decide(report.get("cases") or [], base.get("cases") or [], out.evidence_alpha,
                      budget=out.repeat_budget)
    report["evidence"] = {**decision.to_dict(), "on_inconclusive": out.inconclusive}
    out.verdict = decision.verdict
    lines.append(decision.line())
    lines.extend("  " + part.line() for part in decision.by_model.values())
    return decision.verdict == FAIL or (decision.verdict == INCONCLUSIVE
                                        and out.inconclusive == "fail")


def _retargeted(report: dict[str, Any], base: dict[str, Any], out: Outputs) -> dict[str, Any]:
    """The baseline as ``--queryeval-baseline-model`` pairs it with this run's models."""
    if not out.baseline_models:
        return base
    from ..baseline.retarget import retarget

    models = {None if c.get("model") is None else str(c.get("model"))
              for c in report.get("cases") or []}
    try:
        return retarget(base, out.baseline_models, models)
    except ValueError as exc:
        raise QueryEvalError(str(exc)) from None


def _write_baseline(report: dict[str, Any], out: Outputs, write: bool, why: list[str]
                    ) -> list[str]:
    """Write the baseline when asked and allowed (``write``; ``why``: the refusals a forced
    write overrode, or why it is not written); the summary's lines about it."""
    from ..baseline.store import compact_baseline, write_baseline

    path = out.baseline_path
    baseline_lines: list[str] = []
    if out.update_baseline and path is not None:
        if write:
            try:
                write_baseline(compact_baseline(report), path)
            except OSError as exc:  # a full disk: named, as a report is (write_reports)
                baseline_lines.append(f"error: baseline NOT updated ({out.display(path)}): "
                                      f"{_os_reason(exc)}")
            else:
                out.baseline_written = True
                forced = f" (forced: {'; '.join(why)})" if why else ""
                baseline_lines.append(f"baseline updated: {path}{forced}")
        else:
            baseline_lines.append(
                f"error: baseline NOT updated ({out.display(path)}): " + "; ".join(why)
                + ". Run the whole suite cleanly, or add --queryeval-force-baseline to write "
                  "it anyway.")
    return baseline_lines


#: The exit status of a run whose evidence gate is INCONCLUSIVE (``--queryeval-inconclusive``
#: status, the default): neither pytest's 0 nor its 1, so CI tells "not enough evidence" from
#: a pass and a failure (pytest's own statuses are 0 to 5).
INCONCLUSIVE_STATUS = 6


def inconclusive_status(out: Outputs) -> bool:
    """Whether the run ends with :data:`INCONCLUSIVE_STATUS` (when nothing else fails it)."""
    return out.verdict == "INCONCLUSIVE" and out.inconclusive == "status"


def exit_status(out: Outputs, status: int) -> int:
    """The session's exit status once the run is concluded: an OK run whose evidence gate is
    INCONCLUSIVE ends with :data:`INCONCLUSIVE_STATUS`."""
    return INCONCLUSIVE_STATUS if inconclusive_status(out) and status == 0 else status


def interrupt_reason(exc: BaseException | None) -> str:
    """Why a session stopped early, as ``run.interrupt_reason`` says it: pytest passes Ctrl-C
    (SIGINT), SIGTERM, ``pytest.exit()`` and "N errors during collection" as one kind of
    exception."""
    if exc is None:
        return "interrupted"
    own = getattr(exc, "queryeval_reason", None)  # SIGTERM (plugin/terminate.py)
    if isinstance(own, str):
        return own
    name = type(exc).__name__
    text = str(getattr(exc, "msg", None) or exc).strip()
    if type(exc) is KeyboardInterrupt:
        return "KeyboardInterrupt: Ctrl-C or SIGINT"
    if name == "Exit":  # pytest.exit(reason)
        return f"pytest.exit: {text}" if text else "pytest.exit"
    if name == "Interrupted":  # pytest's Session.Interrupted: "1 error during collection"
        return text or "interrupted"
    return f"{name}: {text}" if text else name


def interrupted_report(run: dict[str, Any], reason: str) -> dict[str, Any]:
    """The report of a session interrupted before any case finished (during collection, or
    while its only cases were stuck): zero cases, ``run.interrupted`` true and the reason, so
    CI that keeps ``report.json`` always finds one and sees why it is empty. ``run``: the
    run fields of a normal report (times, exit status, model ...)."""
    from ..judge.report import aggregate as judge_aggregate
    from ..rules.nearmiss import aggregate as near_miss_aggregate
    from ..rules.repeats import flaky_cases

    return {"version": 1,
            "run": {**run, "interrupted": True, "interrupt_reason": reason,
                    "settings": run.get("settings") or {}},
            "cases": [], "aggregates": aggregates_of([]), "gates": [], "flaky": flaky_cases([]),
            "near_miss": near_miss_aggregate([]), "judge": judge_aggregate([])}


def conclude_interrupted(report: dict[str, Any], out: Outputs) -> list[str]:
    """Write the reports of :func:`interrupted_report`; the summary lines. No baseline is
    compared with zero cases, nor written from an interrupted run."""
    reason = report["run"].get("interrupt_reason") or "interrupted"
    lines = [f"queryeval: the session was interrupted before any case finished ({reason}): "
             "the reports hold no case"]
    path = out.baseline_path if out.update_baseline else None
    out.outcome = run_outcome(report, failing=True,
                              problems=["baseline not updated"] if path is not None else [])
    report["run"].update(out.outcome.fields())
    lines.extend(write_reports(report, None, out))
    if path is not None:
        lines.append(f"error: baseline NOT updated ({out.display(path)}): "
                     "the run was interrupted before any case finished")
    lines.append(out.outcome.line)
    return lines


def write_reports(report: dict[str, Any], comparison: Comparison | None,
                  out: Outputs) -> list[str]:
    """Every report file asked for, in the order of :data:`..report.formats.REPORT_WRITERS`; the lines
    naming them. The JSON report comes first (the one CI keeps). A file the system refuses (an
    OSError: a full disk, a file too large) is named in an ``error:`` line and the others are
    written; the run's exit status stays the one its cases and gates decide, which the written
    reports state (docs/reports.md). A writer's QueryEvalError (a missing optional dependency)
    is raised after the others are written. The Markdown summary
    is also appended to ``$GITHUB_STEP_SUMMARY`` when that is set, even if no file is asked
    for."""
    written: list[str] = []
    errors: list[str] = []
    whole = getattr(report.get("cases"), "whole", None)  # a merge's slim records
    for name, target in out.files.items():
        entry = report_formats()[name]
        given = Report.of(report)
        own = isinstance(entry.writer, str) and entry.writer.startswith("pytest_queryeval.")
        if whole is not None and not own:
            # a writer of another package reads the full records, as it does after a run,
            # through report["cases"] too (the package's own read the slim ones and each
            # shown row whole: report.document.full_record)
            given = Report({**report, "cases": whole()})
        try:
            load_writer(entry)(given, target, comparison)
        except QueryEvalError as exc:
            errors.append(exc.reason())
            continue
        except OSError as exc:  # a full disk, a file too large, a special file refused
            written.append(f"error: {entry.label} NOT written: {target}: {_os_reason(exc)}")
            continue
        written.append(f"{entry.label}: {target}")
        out.written.append(name)
    step = os.environ.get("GITHUB_STEP_SUMMARY") if out.step_summary else None
    if step:
        from ..report.markdown import markdown_text

        try:
            with open(step, "a", encoding="utf-8") as fh:
                fh.write(markdown_text(report, comparison) + "\n")
        except OSError as exc:
            written.append(f"error: $GITHUB_STEP_SUMMARY NOT appended: {step}: "
                           f"{_os_reason(exc)}")
    if errors:
        raise QueryEvalError("; ".join(errors))
    return written


def _os_reason(exc: OSError) -> str:
    """An OSError in words, without the temporary file's name it may carry."""
    return exc.strerror or str(exc) or type(exc).__name__


class ReportWriter(Protocol):
    """What :attr:`..report.formats.ReportFile.writer` names: a function writing one report file."""

    def __call__(self, report: Report, path: Path, comparison: Comparison | None,
                 /) -> object: ...


def load_writer(entry: ReportFile) -> ReportWriter:
    """The function ``entry.writer`` (``module:function``) names, imported now: the report
    modules and their libraries are loaded only by a run that writes their format."""
    if not isinstance(entry.writer, str):
        return cast(ReportWriter, entry.writer)
    module, _, function = entry.writer.partition(":")
    writer: ReportWriter = getattr(importlib.import_module(module), function)
    return writer


def accepted_by_refresh(report: dict[str, Any], failed: bool, written: bool) -> list[str]:
    """The ids of the cases below their thresholds that a baseline refresh records as the
    accepted state, when they are the run's only failures (issue 24 item 4: like syrupy's
    ``--snapshot-update``, a refresh job on an accepted model at 74 % is green). Empty when it
    does not apply: no baseline written, a gate or the comparison failed, or a case erred
    (errors refuse the write unless forced, and a forced write stays red)."""
    if not written or failed:
        return []
    cases = report.get("cases") or []
    if any(c.get("outcome") == "error" for c in cases):
        return []
    return [str(c.get("id")) for c in cases if c.get("outcome") == "failed"]
