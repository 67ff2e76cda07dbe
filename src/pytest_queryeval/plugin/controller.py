"""The end of the run, in the one process that sees every case's record: a serial run, or the
xdist controller (its workers send each record with the case's report).

:class:`Controller` gathers the records as reports arrive, and when the session finishes
builds the JSON report (:mod:`.finish`), evaluates the gates and hands it to the pure
:func:`~..conclude.conclude`, which ``queryeval merge`` ends in too; the lines it prints, and the
errors and notes met on the way, stay on the object until ``pytest_terminal_summary``.

Exit status follows pytest's rules: a failed gate or baseline turns OK into TESTS_FAILED and
never overrides an interrupted, internal-error or usage-error status.

Why one module of this size: :class:`Controller` is the end of the session in the one process
that has every record (a serial run or the xdist controller): the records as they arrive, the
gates, the baseline, the evidence gate's outputs, the reports and the terminal summary share
its state, as ``LogXML``'s hooks share theirs; what needs none of it is in ``finish``,
``failure_section`` and ``conclude``.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .._util.paths import display
from ..conclude import Outputs, conclude, exit_status
from ..conclude.aggregate import evaluate_gates
from ..errors import QueryEvalError
from ..suite.config import Gate
from . import unmatched
from .declare import CONFIG_NAME, matches_files
from .finish import add_junit_properties, build_report, case_dirs
from .options import RunOptions
from .runahead import ProgressLine
from .runner import Runner

if TYPE_CHECKING:
    from ..model import CaseRecord
    from .journal import Journal

#: The ``when`` of the report xdist makes for a case whose worker crashed while running it.
XDIST_CRASH = "???"


def _dirs(files: set[str]) -> set[Path]:
    """The directories of the run's case files."""
    return {Path(path).parent for path in files}


class Controller:
    """Records, the end of the session and the terminal summary (see the module docstring)."""

    def __init__(self, config: pytest.Config, options: RunOptions, runner: Runner,
                 started: float | None = None) -> None:
        self.config = config
        self.options = options
        #: This process's runner: the suite (configs, ids) of a serial run, the evaluator.
        self.runner = runner
        #: When the session was configured (the plugin wakes up when it finds a case file).
        self.started = time.time() if started is None else started
        #: Every case's record, by node id.
        self.records: dict[str, CaseRecord] = {}
        #: xdist: each case's :func:`~..report.records.case_meta`, by node id, from the workers
        #: (the record of a case whose worker crashed is completed from it).
        self.case_meta: dict[str, Any] = {}
        #: xdist: the cases whose worker crashed while running them (node id: what xdist
        #: said); their records are made when the session ends.
        self.crashed: dict[str, str] = {}
        #: The predictions progress line (a serial run's pool, else the workers' counts).
        self.progress = ProgressLine(config, lambda: runner.evaluator.pool)
        #: What the terminal summary shows: the summary lines (None: no report was built),
        #: then the errors met while finishing, and the notes (warnings) before them.
        self.summary: list[str] | None = None
        self.errors: list[str] = []
        self.notes: list[str] = []
        #: Why the session was interrupted (:func:`~..conclude.interrupt_reason`), or None.
        self.interrupted: str | None = None
        #: ``--queryeval-json``: the journal of finished records beside it (:mod:`.journal`).
        self.journal: Journal | None = runner.journal
        #: xdist: why a worker could not write its journal of answers (each names its file).
        self.worker_journal_problems: list[str] = []
        #: The report and baseline options of the end of the run, once made (which report
        #: files were written).
        self.outputs: Outputs | None = None

    # -- as the run goes -----------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """The usage error an xdist worker found in the suite configuration."""
        message = getattr(report, "queryeval_usage", None)
        if message:  # before any worker is given a case: the session ends with exit status 4
            raise pytest.UsageError(message)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = getattr(report, "queryeval", None)
        if record is not None:
            self.records[report.nodeid] = record
            if self.journal is not None and not record.get("carried"):  # carried: in it
                self.journal.record(record)
            for more in getattr(report, "queryeval_more", None) or ():  # other sources'
                self.records[str(more.get("nodeid"))] = more
                if self.journal is not None and not more.get("carried"):
                    self.journal.record(more)
            self.progress.from_report(report)
        elif str(report.when) == XDIST_CRASH and report.failed and matches_files(
                Path(report.nodeid.split("::", 1)[0]), self.options.files):
            # xdist: the worker running this case crashed, and sent no record (its record is
            # made when the session ends, with what the other workers sent of the case)
            self.crashed[report.nodeid] = (
                f"{report.longrepr}: the worker process died (a crash in native code, "
                "os._exit, the out-of-memory killer); the case has no result")

    @pytest.hookimpl(trylast=True)  # after the terminal wrote the case's result
    def pytest_runtest_logfinish(self) -> None:
        self.progress.update()  # the predictions progress line, when one is due

    # -- the end -------------------------------------------------------------------------
    def finish(self, session: pytest.Session, exitstatus: int) -> None:
        """Aggregate, gate, compare and write reports (before junit is written)."""
        notes, errors = unmatched.warn(self.runner.unmatched)
        self.notes = [*(self.options.resume.notes if self.options.resume else ()), *notes]
        if errors:
            self.errors.extend(errors)
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        try:
            self.runner.gc.before_finish()
            self._finish(session, int(exitstatus))
        except QueryEvalError as exc:
            self.errors.append(exc.reason())
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        else:
            self._end_journal(int(exitstatus))
        if self.terminated:  # after the reports: every one of them is written as before
            from .terminate import EXIT_STATUS

            session.exitstatus = EXIT_STATUS
        if self.journal is not None and self.journal.problem:
            self.notes.append(f"queryeval: {self.journal.problem}: a killed run would lose "
                              "what it finished")
        self.notes.extend(f"queryeval: {problem}: a killed run would lose the live answers "
                          "this xdist worker received" for problem in self.worker_journal_problems)

    @property
    def terminated(self) -> bool:
        """The session was interrupted by SIGTERM (:mod:`.terminate`)."""
        return self.runner.term.received and self.interrupted is not None

    def _end_journal(self, exitstatus: int) -> None:
        """The JSON report this run wrote supersedes its journal, unless the run was
        interrupted: the answers of cases not scored yet are only in the journal."""
        journal = self.journal
        report = self.options.report.path("json")
        if journal is None or report is None:
            return
        journal.close()
        written = self.outputs is not None and "json" in self.outputs.written
        if written and self.interrupted is None and exitstatus != pytest.ExitCode.INTERRUPTED:
            from .journal import remove

            remove(report)

    def _finish(self, session: pytest.Session, exitstatus: int) -> None:
        judge_audit = self._audit_judge(session) if self.options.audit_judge else None
        records = self._sorted_records()
        interrupted = self.interrupted or (
            "interrupted" if exitstatus == pytest.ExitCode.INTERRUPTED else None)
        if not records:
            self._finish_empty(session, exitstatus, interrupted)
            return
        report, files = self._full_report(records, exitstatus, interrupted, judge_audit)
        self.config.hook.pytest_queryeval_report(report=report, config=self.config)
        self._conclude(session, report, records, files, exitstatus)
        add_junit_properties(self.config, report)

    def _sorted_records(self) -> list[CaseRecord]:
        """Every case's record in the suite's order, a crashed worker's cases among them."""
        if self.crashed:  # after every testnodedown: the workers' case metadata has arrived
            from ..report.records import crash_record

            for nodeid, message in self.crashed.items():
                self.records[nodeid] = crash_record(nodeid, message, self.case_meta.get(nodeid))
        return sorted(self.records.values(), key=lambda r: (
            str(r.get("file")), int(r.get("line") or 0), str(r.get("id"))))

    def _finish_empty(self, session: pytest.Session, exitstatus: int,
                      interrupted: str | None) -> None:
        """No case has a record: an interrupted run and an empty shard still write their
        reports (a scheduler counts on them); otherwise there is nothing to write."""
        audit = self.options.audit
        if interrupted and (self._asked() or audit or self.runner.evaluator.cases):
            # a report all the same: zero cases, and why (not in a project without a suite
            # that was only run under xdist, whose controller is always awake)
            from ..conclude import conclude_interrupted, interrupted_report

            run = self._report([], [], exitstatus, set())["run"]
            self._terminated_status(run)
            self.summary = conclude_interrupted(interrupted_report(run, interrupted),
                                                self._outputs(set()))
            return
        if self.options.shard is not None and self.runner.suite_ids:
            self._empty_shard(session, exitstatus)
            return
        if audit:
            self.summary = ["gold audit: no gold to audit (no case ran)"]
        self.notes.extend(self._nothing_written())

    def _full_report(self, records: list[CaseRecord], exitstatus: int, interrupted: str | None,
                     judge_audit: dict[str, Any] | None) -> tuple[dict[str, Any], set[str]]:
        """The JSON report of the run's records, and the run's case files (the records lose
        their ``path`` on the way: reports are committed as baselines)."""
        audit = self.options.audit
        # an audit scores the golds against themselves: gates and baselines judge models
        gates = evaluate_gates([] if audit else self._gates(records), records)
        for gate in gates:  # reports are committed as baselines: no machine paths in them
            gate["scope"] = display(Path(gate["scope"]), self.config.rootpath)
        transpiled = None
        if audit and self.options.write_transpiled:  # needs each record's case file path
            from ..audit.writeback import write_transpiled

            transpiled = write_transpiled(records)
        # the records become the report's cases without "path" (internal: gate scopes, the
        # suite's folders, the write-back above), dropped in place: a copy of every record was
        # held at the peak
        files = {str(path) for r in records if (path := r.pop("path", None))}
        public = records
        report = self._report(public, gates, exitstatus, files)
        if judge_audit is not None:
            report["judge_audit"] = judge_audit
        if interrupted:  # pytest.exit(returncode=...) too
            report["run"].update(interrupted=True, interrupt_reason=interrupted)
            self._terminated_status(report["run"])
        if audit:
            from ..report.audit import audit_report

            report["audit"] = audit_report(public, audit)
            if transpiled is not None:
                report["audit"]["transpiled"] = transpiled
        return report, files

    def _conclude(self, session: pytest.Session, report: dict[str, Any],
                  records: list[CaseRecord], files: set[str], exitstatus: int) -> None:
        """Hand the report to :func:`~..conclude.conclude` and turn its verdict into the
        session's exit status, which only an OK or a failed run may change."""
        audit = self.options.audit
        lines: list[str] = []
        self.summary = lines  # shown even if writing a report fails in conclude()
        out = self._outputs(files)
        if audit:
            from ..report.audit import summary_lines as audit_lines

            out.after_gates = ["", *audit_lines(report["audit"])]
            if "transpiled" in report["audit"]:
                from ..audit.writeback import summary_lines as written_lines

                out.after_gates += written_lines(report["audit"]["transpiled"])
            out.skip_compare = "baseline: not compared in a gold audit"
        failed = conclude(report, out, lines,
                          lambda: self._update_refusals(session, records, files, exitstatus),
                          failing=session.exitstatus != pytest.ExitCode.OK)
        if failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if out.accepted and session.exitstatus == pytest.ExitCode.TESTS_FAILED:
            session.exitstatus = pytest.ExitCode.OK  # a refresh records its failures as accepted
        session.exitstatus = exit_status(out, session.exitstatus)  # INCONCLUSIVE: its own
        if out.outcome is not None:  # the last line: the outcome and why, as every report says
            lines.append(out.outcome.line)

    def _terminated_status(self, run: dict[str, Any]) -> None:
        """A session SIGTERM interrupted exits with :data:`.terminate.EXIT_STATUS`: its
        reports say so."""
        if self.terminated:
            from .terminate import EXIT_STATUS

            run["exitstatus"] = EXIT_STATUS

    def _empty_shard(self, session: pytest.Session, exitstatus: int) -> None:
        """``--queryeval-shard I/N`` that selected none of the suite's cases (more shards than
        cases, or a hash that gave this one none): the reports are written all the same, with
        zero cases and the suite they are a shard of, and the run passes, so a CI matrix or a
        scheduler array whose every task must succeed, and ``queryeval merge`` that counts
        every shard, take it as the share it is. pytest's "no tests ran" status is kept for a
        run without the shard option."""
        from ..conclude import write_reports

        assert self.options.shard is not None
        assert self.runner.suite_ids is not None
        index, total = self.options.shard
        count = len(self.runner.suite_ids)
        if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            exitstatus = pytest.ExitCode.OK
            session.exitstatus = pytest.ExitCode.OK
        report = self._report([], [], exitstatus, set())
        out = self._outputs(set())
        lines = [f"queryeval: shard {index}/{total} selected none of the suite's {count} "
                 f"case{'s' if count != 1 else ''}: its reports hold no case "
                 "(queryeval merge counts it)"]
        self.summary = lines
        lines.extend(write_reports(report, None, out))
        if out.update_baseline and out.baseline_path is not None:
            lines.append(f"error: baseline NOT updated ({out.display(out.baseline_path)}): "
                         f"shard {index}/{total} ran no case")
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _asked(self) -> list[str]:
        """The report and baseline options this run was given."""
        report = self.options.report
        asked = [f"--queryeval-{name}" for name, value in report.files.items() if value]
        return asked + [flag for flag, given in (("--queryeval-baseline", report.baseline),
                                                 ("--queryeval-update-baseline",
                                                  report.update_baseline)) if given]

    def _nothing_written(self) -> list[str]:
        """A run given report or baseline options in which no case ran writes nothing and
        says so (it does not fail: ``pytest tests/unit --queryeval-json r.json`` in a CI job
        that always passes the option is a run without cases)."""
        asked = self._asked()
        if not asked:
            return []
        why = "" if self.runner.evaluator.cases or self.runner.suite_ids else (
            f": no case file was collected (a file matching {' '.join(self.options.files)} is "
            f"a case file where a {CONFIG_NAME} lies in its folder or above it, or when the "
            "ini sets queryeval_files)")
        return [f"queryeval: no case ran, so nothing was written or compared "
                f"({', '.join(asked)}){why}"]
    def _audit_judge(self, session: pytest.Session) -> dict[str, Any] | None:
        """``--queryeval-audit-judge``: the judge's agreement with the labels (see
        :mod:`..judge.audit`), shown first in the summary and kept in the cache for
        ``min_kappa``; a labels file that cannot be read fails the run with its line."""
        from ..judge.audit import LabelledPair, LabelsError, audit, cache_key, load_labels
        from ..judge.config import resolve
        from ..judge.run import ask_labelled

        given = Path(str(self.options.audit_judge))
        path = given if given.is_absolute() else self.config.invocation_params.dir / given
        shown = display(path, self.config.rootpath)
        merged = self.runner.finder.for_directory(self.config.rootpath).judge
        spec = resolve(merged, "queryeval.yaml")[0] if merged else None
        try:
            pairs = load_labels(path, shown)
            ask = None
            if spec is not None:
                session_ = self.runner.evaluator.judge_session()
                evaluator = self.runner.evaluator

                def ask(pair: LabelledPair) -> bool:
                    return ask_labelled(spec, pair.data, evaluator, session_).accepted
            result = audit(pairs, shown, ask, spec.model if spec else None)
        except LabelsError as exc:
            self.errors.append(f"error: --queryeval-audit-judge: {exc}")
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
            return None
        cache = getattr(self.config, "cache", None)
        if cache is not None:
            cache.set(cache_key(path, spec.model if spec else None), result.to_json())
        self.notes.extend(result.lines())
        return result.to_json()

    def _suite_dir(self, files: set[str]) -> Path:
        from ..suite.config import suite_dir

        return suite_dir(self.runner.finder, _dirs(files), self.config.rootpath)

    def _gates(self, records: list[CaseRecord]) -> list[Gate]:
        seen: dict[str, Gate] = {}
        for directory in sorted(case_dirs(records)):
            for key, gate in self.runner.finder.for_directory(directory).gates.items():
                seen.setdefault(key, gate)
        return list(seen.values())

    def _report(self, public: list[CaseRecord], gates: list[dict[str, Any]],
                exitstatus: int, files: set[str]) -> dict[str, Any]:
        return build_report(
            public, started=self.started, exitstatus=exitstatus, gates=gates,
            model=self._model(files),
            gating=self.options.gating, suite_ids=self.runner.suite_ids,
            shard=self.options.shard,
            workers=getattr(self.config.option, "numprocesses", None) or 0,
            significance=self._significance(files, cli=False))

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        from ..conclude import interrupt_reason  # Ctrl-C, pytest.exit(), collection errors

        self.interrupted = interrupt_reason(excinfo.value)
        if self.runner.term.received and type(excinfo.value) is KeyboardInterrupt:
            # xdist: a worker stopped by the same SIGTERM ("gw0 received keyboard-interrupt")
            from .terminate import Terminated

            self.interrupted = Terminated.queryeval_reason

    def _model(self, files: set[str]) -> tuple[str | None, str | None]:
        """The model under test: its label (``--queryeval-model-label``, else ``model:`` of the
        suite configs) and its predictions source (``--queryeval-predictions``, else
        ``predictions:``), so a baseline says which model produced it."""
        from .._util.secrets import Scrubber
        from ..predict import describe_predictions
        from ..suite.models import describe_models

        configs = [self.runner.finder.for_directory(d) for d in sorted(_dirs(files))]
        predictions = self.options.predictions
        # model: names the suite's own predictions; --queryeval-predictions brings another model
        label = self.options.model_label or (None if predictions else ", ".join(
            sorted({c.model for c in configs if c.model})) or None)
        if predictions and Path(predictions).is_absolute():
            predictions = display(Path(predictions), self.config.rootpath)
        if not predictions:
            predictions = ", ".join(sorted({d for c in configs
                                            if (d := describe_predictions(c.predictions))
                                            and not self.options.cli_models}
                                           | set(describe_models(configs, self.options.cli_models,
                                                                 self.config.rootpath)))) or None
        # the suites' own secrets too: under xdist the controller's scrubber has seen no case
        scrub = Scrubber(self.runner.evaluator.scrubber.secrets.union(
            *(c.secrets for c in configs))).text
        return (scrub(label) if label else None), (scrub(predictions) if predictions else None)

    def _outputs(self, files: set[str]) -> Outputs:
        """The run's report and baseline options. The baseline file is the one the run's
        processes resolved after collection (:attr:`Runner.baseline`); only when no process
        that collected told it (every xdist worker crashed) is it resolved from the records."""
        baseline = None
        if self.options.wants_baseline:
            baseline = self.runner.baseline or self.options.baseline_path(
                self._suite_dir(files))
        out = self.options.report.outputs(
            baseline_path=baseline,
            significance=self._significance(files) if self.options.report.baseline
            else None,
            display=lambda p: display(p, self.config.rootpath))
        self.runner.evidence_outputs(out)  # --queryeval-gating=evidence
        self.outputs = out  # what was written, once conclude() wrote it
        return out

    def _significance(self, files: set[str], cli: bool = True) -> float | None:
        """``--queryeval-significance`` (if ``cli``), else ``gates: {significance:}`` of the run's
        suite configs (the smallest alpha when they differ), else ini ``queryeval_significance``;
        all validated before the run. Without the option it is ``run.significance``: ``queryeval
        merge`` reads neither file, and compares the union as this run compares."""
        from ..baseline.significance import resolve_significance

        return resolve_significance(
            self.options.report.significance if cli else None,
            (self.runner.finder.for_directory(d).significance for d in sorted(_dirs(files))),
            self.options.significance_ini)

    def _update_refusals(self, session: pytest.Session, records: list[CaseRecord],
                         files: set[str], exitstatus: int) -> list[str]:
        """Why this run must not replace the baseline (see :func:`baseline.refusals.update_refusals`)."""
        from ..baseline.refusals import partial_run, update_refusals

        config = self.config
        opt = config.option
        filters = [f"{flag} {value!r}" for flag, value in
                   (("-k", getattr(opt, "keyword", "")), ("-m", getattr(opt, "markexpr", "")))
                   if value]
        if getattr(opt, "lf", False):
            filters.append("--lf")
        if getattr(opt, "deselect", None):
            filters.append("--deselect")
        if self.runner.deselected and not filters:
            filters.append(f"{self.runner.deselected} case(s) deselected")
        collected = {Path(path).resolve() for path in files}
        filters.extend(partial_run(config.args, config.invocation_params.dir,
                                   self._suite_dir(files), self.options.files, collected))
        stopped = session.shouldfail or session.shouldstop
        maxfail = int(getattr(opt, "maxfail", 0) or 0)
        if not stopped and maxfail and sum(
                r.get("outcome") in ("failed", "error") for r in records) >= maxfail:
            stopped = f"--maxfail={maxfail}"
        errors = [str(r.get("id")) for r in records if r.get("outcome") == "error"]
        return update_refusals(filters=filters,
                               interrupted=exitstatus == pytest.ExitCode.INTERRUPTED,
                               stopped=str(stopped) if stopped else None, errors=errors)

    @pytest.hookimpl(wrapper=True, tryfirst=True)  # around pytest's own summary sections
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter,
                                ) -> Generator[None, Any, Any]:
        """pytest's FAILURES section stays linear in the cases and names every failing case
        (:mod:`.failure_section`): done before pytest writes it, after every report came."""
        from .failure_section import compact_failures, prune_passed_phases

        stats = terminalreporter.stats
        prune_passed_phases(stats, self.records.__contains__)
        if self.config.option.tbstyle != "no":
            compact_failures(stats.get("failed", ()), self.options.max_failure_details)
        return (yield)

    def terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        self.progress.close()
        lines, errors, notes = self.summary, self.errors, self.notes
        if not lines and not errors and not notes:
            return
        terminalreporter.write_sep("=", "queryeval")
        for line in notes:
            terminalreporter.write_line(line, yellow=True)
        for line in lines or []:
            red = line.startswith(("gate FAIL", "REGRESSION", "error:", "queryeval: FAILED"))
            green = line.startswith(("gate PASS", "OK:", "queryeval: PASSED"))
            terminalreporter.write_line(line, red=red, green=green and not red)
        for line in errors:  # already prefixed: "error: ...", "missing dependency: ..."
            terminalreporter.write_line(line, red=True)
