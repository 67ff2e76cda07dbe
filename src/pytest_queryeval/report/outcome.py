"""The run's outcome and its causes: what the headline of every report states.

A run that exited 1 on a regression had a green HTML headline saying "baseline OK" and a
Markdown headline of ticks (issue 43 item 3): each report judged the run on its own. Now
:func:`run_outcome` judges it once, when the run concludes (:func:`.conclude`, which
``queryeval merge`` ends in too) and before any report is written; the terminal's last line,
the JSON report's ``run.outcome`` / ``run.causes`` / ``run.outcome_line``, the HTML and
Markdown headlines, the Excel *Outcome* sheet and the junit properties all print that one
:class:`Outcome`. Free of pytest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._util.wording import plural, shortlist
from ..baseline.verdicts import BELOW, KNOWN, NOISE, REGRESSION

if TYPE_CHECKING:
    from ..baseline.compare import Comparison

PASSED, FAILED, INCONCLUSIVE = "passed", "failed", "inconclusive"
#: The line of a session that failed on nothing the report records (a collection error, a
#: plain test): pytest's own summary says what.
OUTSIDE = "queryeval: FAILED outside the cases (see pytest's summary)"


@dataclass(frozen=True, slots=True)
class Outcome:
    """Whether the run passed, why it failed (each cause as the line words it), and the line."""

    passed: bool
    causes: tuple[str, ...] = ()
    line: str = "queryeval: PASSED"
    #: The evidence gate left the run INCONCLUSIVE (``--queryeval-gating=evidence``): not
    #: passed, and not failed either; no report shows it as a failure.
    inconclusive: bool = False

    @property
    def word(self) -> str:
        """``passed``, ``failed`` or ``inconclusive``: the JSON report's ``run.outcome``."""
        if self.inconclusive:
            return INCONCLUSIVE
        return PASSED if self.passed else FAILED

    @property
    def mark(self) -> str:
        """The headline's mark in Markdown: a tick, a cross, or a question mark."""
        return "❔" if self.inconclusive else "✅" if self.passed else "❌"

    def fields(self) -> dict[str, Any]:
        """The keys the JSON report's ``run`` holds."""
        return {"outcome": self.word, "causes": list(self.causes), "outcome_line": self.line}


def _ids(ids: Sequence[str], limit: int = 3) -> str:
    return f" ({shortlist(ids, limit)})"


def regressions(report: Mapping[str, Any], *, xfailed: bool = False) -> list[str]:
    """The cases that passed in the baseline and fail or err now: the gating mode's
    regressions, then the comparison's other pass → fail flips (a ``strict`` run compares
    with a baseline without a standing per case). A flip is a regression in every mode;
    ``xfailed`` picks those ``gates`` mode xfailed (the gates decide), else the others."""
    cases = report.get("cases") or []
    outcomes = {str(c.get("id")): c.get("outcome") for c in cases}
    ids = [str(c.get("id")) for c in cases if c.get("standing") == REGRESSION]
    comparison = report.get("baseline")
    if isinstance(comparison, Mapping):
        seen = set(ids)
        for change in comparison.get("regressions") or []:
            cid = str(change.get("id")) if isinstance(change, Mapping) else str(change)
            if cid not in seen:
                seen.add(cid)
                ids.append(cid)
    return [i for i in ids if (outcomes.get(i) == "xfailed") == xfailed]


def _gate_failure(gate: Mapping[str, Any]) -> str:
    """``gate pass_rate 0.62 < 0.9``: a failed gate as a cause of the run's failure."""
    if gate.get("value") is None:
        return f"gate {gate.get('name')} scored nothing"
    worse = "<" if (gate.get("op") or ">=") == ">=" else ">"
    return f"gate {gate.get('name')} {gate['value']:.4g} {worse} {gate['limit']:g}"


def causes_of(report: Mapping[str, Any], problems: Sequence[str] = (), *,
              interrupted: bool = False) -> list[str]:
    """Why the run fails, in the documented order: regressions, other failed cases, errors,
    failed gates, the baseline comparison's drop, an interruption (``interrupted``: the
    session's exit status says so), the run's own problems."""
    cases = report.get("cases") or []
    causes: list[str] = []
    regressed = regressions(report)
    if regressed:
        causes.append(plural(len(regressed), "regression") + _ids(regressed))
    skip = set(regressed)
    for outcome, word in (("failed", "failed case"), ("error", "error")):
        ids = [str(c.get("id")) for c in cases
               if c.get("outcome") == outcome and str(c.get("id")) not in skip]
        if ids:
            causes.append(plural(len(ids), word) + _ids(ids))
    causes.extend(_gate_failure(g) for g in report.get("gates") or [] if not g.get("passed"))
    evidence = report.get("evidence")
    if isinstance(evidence, Mapping) and (evidence.get("verdict") == "FAIL" or (
            evidence.get("verdict") == "INCONCLUSIVE"
            and evidence.get("on_inconclusive") == "fail")):
        causes.append(str(evidence.get("line") or f"evidence gate {evidence.get('verdict')}"))
    comparison = report.get("baseline")
    if isinstance(comparison, Mapping) and not comparison.get("passed", True):
        text = str(comparison.get("summary") or "baseline FAILED")
        causes.append(text.replace("baseline FAILED: ", "baseline drop: ", 1))
    run = report.get("run") or {}
    if interrupted and run.get("interrupted"):
        reason = run.get("interrupt_reason")
        causes.append(f"interrupted ({reason})" if reason else "interrupted")
    causes.extend(problems)
    return causes


def run_outcome(report: Mapping[str, Any], *, failing: bool, problems: Sequence[str] = (),
                accepted: Sequence[str] = (), baseline_written: str | None = None) -> Outcome:
    """The run's outcome, e.g. ``queryeval: FAILED: 1 regression (count-patients); gate
    pass_rate 0.62 < 0.9``.

    ``failing``: the session's exit status is not 0 (a session that fails for none of the
    report's causes failed on something pytest reports itself); ``problems``: causes the report
    does not record (a baseline that was not updated); ``accepted``: the failing cases a
    baseline refresh records as the accepted state (:func:`.accepted_by_refresh`: the
    run passes); ``baseline_written``: the baseline file the run writes, as shown, which the
    line names (a refresh that failed a gate has still written it).
    """
    if accepted:
        n = len(accepted)
        shown = shortlist(list(accepted), 3)
        return Outcome(True, (), f"queryeval: PASSED as a baseline refresh: "
                                 f"{plural(n, 'case')} below threshold recorded as the accepted "
                                 f"state ({shown}); exit status 0")
    causes = causes_of(report, problems, interrupted=failing)
    written = ""
    if baseline_written:
        same = " all the same" if causes or failing else ""
        written = f" — baseline updated{same}: {baseline_written}"
    if causes:
        return Outcome(False, tuple(causes), "queryeval: FAILED: " + "; ".join(causes) + written)
    if failing:
        return Outcome(False, ("outside the cases (see pytest's summary)",), OUTSIDE + written)
    evidence = report.get("evidence")
    if isinstance(evidence, Mapping) and evidence.get("verdict") == "INCONCLUSIVE" \
            and evidence.get("on_inconclusive") != "pass":
        return Outcome(False, (), "queryeval: INCONCLUSIVE: not enough evidence either way ("
                       + str(evidence.get("line") or "evidence gate") + "); exit status 6"
                       + written, inconclusive=True)
    cases = report.get("cases") or []
    forgiven = [f"{n} {v}" for v in (KNOWN, BELOW, NOISE)
                if (n := sum(c.get("standing") == v for c in cases))]
    regressed = regressions(report, xfailed=True)  # gates mode: counted, the gates decided
    if regressed:
        forgiven.insert(0, plural(len(regressed), "regression") + _ids(regressed))
    return Outcome(True, (), "queryeval: PASSED"
                   + (f" ({', '.join(forgiven)}, xfailed)" if forgiven else "") + written)


def stated(report: Mapping[str, Any], comparison: Comparison | None = None) -> Outcome:
    """The outcome a report states: its ``run`` fields, or for a report written before them
    (or built by hand for :func:`~..report.markdown.render_markdown`), judged from what it
    holds, with ``comparison`` (a :class:`~..baseline.compare.Comparison`) when the report has
    none, and its exit status."""
    run = report.get("run") or {}
    if run.get("outcome") in (PASSED, FAILED, INCONCLUSIVE) \
            and isinstance(run.get("outcome_line"), str):
        return Outcome(run["outcome"] == PASSED,
                       tuple(str(c) for c in run.get("causes") or ()), run["outcome_line"],
                       inconclusive=run["outcome"] == INCONCLUSIVE)
    view = report
    if comparison is not None and not isinstance(report.get("baseline"), Mapping):
        view = {**report, "baseline": comparison.to_dict()}
    status = run.get("exitstatus")
    return run_outcome(view, failing=isinstance(status, int) and not isinstance(status, bool)
                       and status != 0)


def judged(stats: Mapping[str, Any]) -> int:
    """The pass rate's denominator: passed (and xpassed), failed and erred cases, and the
    xfails a gating mode granted (they failed); skipped cases and ``xfail:`` cases are out."""
    return sum(int(stats.get(k) or 0) for k in ("passed", "failed", "errors",
                                                 "xfailed_by_gating"))


def pass_rate_text(stats: Mapping[str, Any], pct: Callable[[Any], str]) -> str:
    """``21 of 51 judged cases passed (41.2 %); 29 xfailed by the gating mode count as
    failed``: the count and the pass rate of one set of cases, never two."""
    passed, granted = int(stats.get("passed") or 0), int(stats.get("xfailed_by_gating") or 0)
    text = (f"{passed} of {plural(judged(stats), 'judged case')} passed "
            f"({pct(stats.get('pass_rate'))})")
    if granted:
        text += f"; {granted} xfailed by the gating mode count as failed"
    return text


def run_facts(run: Mapping[str, Any], text: Callable[[object], str],
              code: Callable[[object], str]) -> list[str]:
    """The headline's facts about the run (its duration, model, predictions and version),
    worded alike in the HTML and Markdown reports; each format escapes them its own way."""
    facts = []
    if run.get("duration_s") is not None:
        facts.append(f"{float(run['duration_s']):.1f} s")
    if run.get("model"):
        facts.append(f"model {code(run['model'])}")
    if run.get("predictions"):
        facts.append(f"predictions {code(run['predictions'])}")
    if run.get("queryeval_version"):
        facts.append(f"pytest-queryeval {text(run['queryeval_version'])}")
    return facts
