"""What a case's outcome means against the baseline: the ``--queryeval-gating`` modes.

``strict`` fails every case below its thresholds; ``baseline`` turns cases that already failed
in the baseline into xfails; ``gates`` leaves the decision to the run's gates; ``evidence``
leaves it to the evidence gate (:mod:`.evidence`: PASS, FAIL or INCONCLUSIVE from each case's
baseline history), and a failed case is a regression only when its own runs are strong
evidence of a drop (a case that passed 10 of 10 baseline runs and fails every run now), else
``within its baseline history``. In every mode a
case that passed in the baseline and fails now is a regression, and counted as one (issue 43:
``gates`` mode called it "below threshold" beside a listed pass → fail flip); in ``gates`` mode
one below its thresholds is xfailed all the same, since the gates decide. Pass rates and
baseline comparisons count a granted xfail as the failure it is (:func:`judged_outcome`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..model import RecordLike

MODES = ("strict", "baseline", "gates", "evidence")
#: A case's standing under the gating mode (the record's ``standing``).
KNOWN = "failing since baseline"  #: failed in the baseline too: xfailed in ``baseline`` mode
BELOW = "below threshold"  #: xfailed in ``gates`` mode (a regression when it passed in the baseline)
REGRESSION = "regression"  #: passed in the baseline, fails or errors now (xfailed in ``gates``
#: mode when below threshold)
FIXED = "fixed"  #: failed or errored in the baseline, passes now
#: ``evidence`` mode: failed now, but no more often than its baseline history lets a sampled
#: model fail (xfailed: the run's evidence gate decides, :mod:`.evidence`)
NOISE = "within its baseline history"


def parse_mode(cli: str | None, ini: str | None, has_baseline: bool,
               ini_name: str = "queryeval_gating") -> str:
    """The gating mode; a usage problem is a ValueError naming the option."""
    mode = (cli or ini or "strict").strip()
    where = "--queryeval-gating" if cli else f"ini {ini_name}"
    if mode not in MODES:
        raise ValueError(f"{where}: {mode!r} is not one of {', '.join(MODES)}")
    if mode in ("baseline", "evidence") and not has_baseline:
        raise ValueError(f"{where}={mode} needs --queryeval-baseline PATH: the report whose "
                         f"failing cases are the known ones")
    return mode


def judged_outcome(record: RecordLike) -> Any:
    """The outcome pass rates and baseline comparisons count: a case the gating mode turned
    into an xfail still failed (a 70% model must not show a 100% pass rate). A baseline
    written before the rename holds the standing as ``verdict``."""
    outcome = record.get("outcome")
    if outcome == "xfailed" and standing_of(record) in (KNOWN, BELOW, REGRESSION, NOISE):
        return "failed"
    return outcome


def standing_of(record: RecordLike) -> Any:
    """A record's ``standing`` (``verdict`` in reports written before the rename)."""
    return record["standing"] if "standing" in record else record.get("verdict")


def case_state(record: RecordLike) -> str | None:
    """passed / failed / error as the case was judged on its own, before any gating mode
    (``status``): an xfail the mode granted in the baseline run still counts as failed."""
    status = record.get("status")
    if status in ("passed", "failed", "error"):
        return str(status)
    return "error" if record.get("outcome") == "error" else None


def _why(record: RecordLike) -> str:
    if record.get("reason"):
        text = str(record["reason"])
    else:
        metrics = record.get("metrics") or {}
        thresholds = record.get("thresholds") or {}
        parts = []
        for metric in record.get("failed_metrics") or []:
            value = metrics.get(metric)
            bound = " and ".join(f"{k} {v:g}" for k, v in (thresholds.get(metric) or {}).items())
            shown = "n/a" if value is None else f"{value:.3f}"
            parts.append(f"{metric}={shown}" + (f" ({bound})" if bound else ""))
        text = ", ".join(parts) or "failed"
    text = " ".join(text.split())
    return text if len(text) <= 160 else text[:159] + "…"


class Verdicts:
    """The per-case standing under a non-strict gating mode, from the baseline's case states. Pairs cases
    by id, or by node id when ids repeat (as the baseline comparison does)."""

    def __init__(self, mode: str, baseline: Mapping[str, Any] | None,
                 alpha: float = 0.05) -> None:
        from .evidence import History, history_of

        self.mode = mode
        self.alpha = alpha
        cases = [c for c in (baseline or {}).get("cases") or [] if isinstance(c, Mapping)]
        ids = [str(c.get("id")) for c in cases]
        self.by_id: dict[str, str | None] = {}
        self.by_nodeid: dict[str, str | None] = {}
        #: each baseline case's history (``evidence`` mode), by the key of :meth:`key`
        self.histories: dict[str, History] = {}
        self.unique = len(set(ids)) == len(ids)
        if self.unique:
            self.by_id = {i: case_state(c) for i, c in zip(ids, cases, strict=True)}
        else:
            self.by_nodeid = {str(c.get("nodeid")): case_state(c) for c in cases}
        for case in cases:
            history = history_of(case)
            if history is not None:
                self.histories[self.key(case)] = history

    def key(self, record: RecordLike) -> str:
        """How a case is paired with its baseline record: its id, or its node id when ids
        repeat across the baseline's folders."""
        return str(record.get("id")) if self.unique else str(record.get("nodeid"))

    def before(self, record: RecordLike) -> str | None:
        if self.by_id:
            return self.by_id.get(str(record.get("id")))
        return self.by_nodeid.get(str(record.get("nodeid")))

    def decide(self, record: RecordLike) -> tuple[str | None, str | None, str | None]:
        """(baseline state, standing, xfail reason): the reason is set when the case is to be
        reported as xfailed. Infrastructure errors are never forgiven; a query error or a
        refusal is forgiven only where a below-threshold score would be, with its reason."""
        before = self.before(record)
        status = record.get("status")
        if status == "passed":
            if self.mode == "evidence":  # fixed: it never passed in its history
                history = self.histories.get(self.key(record))
                return before, (FIXED if history is not None and not history.passes
                                else None), None
            return before, (FIXED if before in ("failed", "error") else None), None
        if status != "failed":  # error: the case was not evaluated, the model is unknown
            return before, (REGRESSION if before == "passed" else None), None
        why = _why(record)
        if self.mode == "evidence":
            return before, *self._evidence(record, why)
        if before == "passed":  # a pass -> fail flip is a regression in every mode (issue 43)
            if self.mode == "gates" and not record.get("reason"):  # the gates decide
                return before, REGRESSION, f"{REGRESSION}: {BELOW}: {why} (passed in the baseline)"
            return before, REGRESSION, None
        if self.mode == "gates":
            return before, BELOW, f"{BELOW}: {why}"
        if before == "failed":
            return before, KNOWN, f"{KNOWN}: {why}"
        return before, None, None  # new, skipped or an error in the baseline: strict

    def _evidence(self, record: RecordLike, why: str) -> tuple[str, str]:
        """A failed case under ``evidence``: a regression when its runs alone reach the
        evidence gate's FAIL boundary against its history, else within its history; xfailed
        either way (the run's verdict decides)."""
        from .evidence import bounds, case_factor, runs_of

        history = self.histories.get(self.key(record))
        now = runs_of(record)
        if history is None or now is None:
            return BELOW, f"{BELOW}: {why} (no baseline history)"
        seen = f"{now.passes} of {now.runs} runs passed, {history.passes} of {history.runs} " \
               "in the baseline"
        if case_factor(history, now.passes, now.runs - now.passes) >= bounds(self.alpha)[1]:
            return REGRESSION, f"{REGRESSION}: {why} ({seen})"
        return NOISE, f"{NOISE}: {why} ({seen})"
