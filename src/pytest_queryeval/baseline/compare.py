"""Baseline comparison: a committed JSON report against the current run.

Pure functions over the JSON report dict (``--queryeval-json`` schema, version 1), so the same
code serves the terminal, Markdown and HTML reports and can be tested without pytest.

Rules (documented in docs/reports.md):

* Cases are paired by ``id``. Cases present in only one run are listed as new or removed and
  never count as regressions; every aggregate delta is computed over the paired cases only, so
  adding or deleting cases cannot move the gate.
* Skipped cases (in either run) are left out of the deltas.
* A paired case that is ``failed``/``error`` and has no value for a metric the other run scored
  counts as 0 for it: turning a scored failure into an unscored error must not raise a mean.
* ``pass_rate`` is compared like a metric (passed / (passed + failed + errors)).
* Timing metrics (``*_seconds``) are lower-is-better and informational: a global max-drop
  does not apply to them, an explicit ``prediction_seconds=0.5`` bounds their increase.
* Runs whose ``run.settings`` differ for a kind present in both are refused as not comparable.
* A max-drop of 0 (without a significance level) means nothing may get worse: a case that went
  pass → fail while its pass/fail or one of those metrics dropped fails the comparison by
  itself, since a fix elsewhere would keep the mean where it was (issue 43 item 4).
* A conversation case's turns are paired by turn number: a turn that passed in one run and not
  in the other is a flip named ``<case-id>#turn<N>``; under a max-drop of 0 a turn that stopped
  passing fails the comparison by itself, as a case does (issue 42 item 1).

Why one module of this size: the pairing, the deltas per scope, the flips and their gates are
one comparison; the significance tests and the report columns live in their own modules.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..figures.by_turn import PASSED as TURN_PASSED
from ..figures.by_turn import flip_id, turn_outcomes
from ..figures.columns import (
    difficulty_of,
    group_keys,
    is_spider_component,
    ordered_difficulties,
    ordered_metrics,
)
from ..figures.numbers import signed as _signed
from ..metricnames import FAILED_OUTCOMES as _FAIL
from ..metricnames import PASS_RATE, lower_is_better
from ..metricnames import PASSED_OUTCOMES as _PASS
from ..metricnames import SCORED_OUTCOMES as _SCORED_OUTCOMES
from .verdicts import judged_outcome

if TYPE_CHECKING:
    from ..model import RecordLike

#: Key of the global entry in a max-drop mapping (applies to every non-timing metric).
GLOBAL = "*"
#: Differences smaller than this are float noise, neither a drop nor a gain. Embedding-based
#: scores differ by up to ~2e-7 between batchings and machines (docs/metrics-json.md), so a
#: baseline committed on one machine must not fail ``--queryeval-max-drop 0`` on another.
EPSILON = 1e-6
#: Drops named in the one-line summary (the table lists them all).
VERDICT_ITEMS = 3
#: A case's record in the current run and in the baseline.
_Pair = tuple[Mapping[str, Any], Mapping[str, Any]]


# --------------------------------------------------------------------------------------------
# max-drop option


def parse_max_drop(values: Iterable[str]) -> dict[str, float]:
    """Parse repeatable ``--queryeval-max-drop`` values into ``{metric | "*": drop}``.

    Each value is a global drop (``0.02``) or comma-separated ``metric=drop`` entries. Drops are
    absolute, in the metric's own units (metrics are fractions, so 0.02 = two points).
    """
    out: dict[str, float] = {}
    for raw in values:
        for part in str(raw).split(","):
            item = part.strip()
            if not item:
                raise ValueError(f"--queryeval-max-drop={raw!r}: empty entry")
            if "=" in item:
                name, _, num = item.partition("=")
                name, num = name.strip(), num.strip()
                if not name:
                    raise ValueError(f"--queryeval-max-drop={raw!r}: missing metric name in "
                                     f"{item!r} (expected metric=drop)")
            else:
                name, num = GLOBAL, item
            drop = _parse_drop(raw, num)
            if name in out:
                what = "the global max-drop" if name == GLOBAL else f"metric {name!r}"
                raise ValueError(f"--queryeval-max-drop={raw!r}: {what} is given more than once")
            out[name] = drop
    return out


def _parse_drop(raw: str, num: str) -> float:
    if num.endswith("%"):
        raise ValueError(f"--queryeval-max-drop={raw!r}: give an absolute drop in the metric's "
                         f"units (0.02, not 2%)")
    try:
        value = float(num)
    except ValueError:
        raise ValueError(f"--queryeval-max-drop={raw!r}: {num!r} is not a number "
                         f"(expected 0.02 or metric=0.02)") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"--queryeval-max-drop={raw!r}: the drop must be a finite number >= 0")
    return value


def _normalise_max_drop(max_drop: Mapping[str, float] | float | None) -> dict[str, float]:
    if max_drop is None:
        return {}
    if isinstance(max_drop, (int, float)):
        return {GLOBAL: float(max_drop)}
    return {str(k): float(v) for k, v in max_drop.items()}


# --------------------------------------------------------------------------------------------
# comparison


@dataclass(frozen=True, slots=True)
class MetricDelta:
    """One metric in one group, over the cases present in both runs."""

    metric: str
    scope: str  #: "overall" | "model" | "kind" | "difficulty" | "tag"
    group: str  #: "" for overall, else the kind / difficulty / tag
    baseline: float | None
    current: float | None
    n: int  #: paired cases that entered the figure
    limit: float | None = None  #: the max-drop that applies, if any
    failed: bool = False
    #: ``--queryeval-significance``: the exact McNemar p-value of the pass/fail flips
    #: (``pass_rate``), and the paired bootstrap interval of the mean difference (metrics)
    p_value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    #: whether the worsening is significant at ``alpha`` (None: not tested)
    significant: bool | None = None

    @property
    def delta(self) -> float | None:
        if self.baseline is None or self.current is None:
            return None
        return self.current - self.baseline

    @property
    def worsening(self) -> float:
        """How much worse (>0) or better (<0) the current run is; timing is lower-is-better."""
        d = self.delta
        if d is None:
            return 0.0
        return d if lower_is_better(self.metric) else -d

    @property
    def label(self) -> str:
        return "overall" if self.scope == "overall" else f"{self.scope} {self.group}"


@dataclass(frozen=True, slots=True)
class OutcomeChange:
    """A paired case whose outcome changed."""

    id: str
    kind: str
    difficulty: str
    before: str
    after: str
    failed_metrics: tuple[str, ...] = ()
    error: str | None = None


@dataclass(slots=True)
class Comparison:
    """Result of :func:`compare`; ``passed`` is what the session's exit status should use."""

    comparable: bool
    reason: str | None = None
    deltas: list[MetricDelta] = field(default_factory=list)
    regressions: list[OutcomeChange] = field(default_factory=list)  #: passed -> failed/error
    fixes: list[OutcomeChange] = field(default_factory=list)  #: failed/error -> passed
    other_changes: list[OutcomeChange] = field(default_factory=list)
    new_cases: list[str] = field(default_factory=list)
    removed_cases: list[str] = field(default_factory=list)
    common: int = 0
    max_drop: dict[str, float] = field(default_factory=dict)
    gated_scopes: tuple[str, ...] = ("overall",)
    warnings: list[str] = field(default_factory=list)
    baseline_run: dict[str, Any] = field(default_factory=dict)
    #: which model produced each run: ``{"baseline": ..., "current": ...}`` (see model_of)
    models: dict[str, str | None] = field(default_factory=dict)
    #: ``--queryeval-significance`` (None: drops gate on their size alone)
    significance: float | None = None
    #: the bootstrap behind the intervals: resamples, seed, confidence, draws
    bootstrap: dict[str, Any] = field(default_factory=dict)
    #: pass → fail flips of ``severity: critical`` cases: each fails the gate by itself
    critical_regressions: list[OutcomeChange] = field(default_factory=list)
    #: pass → fail flips under a max-drop of 0 (no significance): "nothing may get worse" is
    #: not met by a fix elsewhere that keeps the mean where it was, so each fails the gate
    zero_drop_regressions: list[OutcomeChange] = field(default_factory=list)
    #: conversation cases: the turns that went passed → failed/missing/error, and back, each
    #: named ``<case-id>#turn<N>`` (a case's flip says that it changed, these say where)
    turn_regressions: list[OutcomeChange] = field(default_factory=list)
    turn_fixes: list[OutcomeChange] = field(default_factory=list)

    @property
    def failures(self) -> list[MetricDelta]:
        return [d for d in self.deltas if d.failed]

    @property
    def passed(self) -> bool:
        """False when refused as not comparable, when a drop exceeds its max-drop (and, with
        ``significance``, is significant) or when a critical case flipped pass → fail."""
        return self.comparable and not self.failures and not self.critical_regressions \
            and not self.zero_drop_regressions

    def overall(self) -> list[MetricDelta]:
        return [d for d in self.deltas if d.scope == "overall"]

    def extra_rows(self) -> list[MetricDelta]:
        """The rows every report shows after the overall ones: each model's pass rate in a
        run with several models (the pooled figure must not hide one model's drop), and
        every other failed group."""
        return [d for d in self.deltas if d.scope != "overall" and (
            d.failed or (d.scope == "model" and d.metric == PASS_RATE))]

    def summary(self) -> str:
        """The comparison in one line (the JSON report's ``baseline.summary``)."""
        if not self.comparable:
            return f"baseline not comparable: {self.reason}"
        if self.failures or self.critical_regressions or self.zero_drop_regressions:
            shown = self.failures[:VERDICT_ITEMS]
            items = [f"{d.metric} {_signed(d.delta)} > max drop {d.limit:g} ({d.label}"
                     + (f", {_evidence(d)}" if self.significance is not None else "") + ")"
                     for d in shown if d.limit is not None]
            if self.critical_regressions:
                ids = ", ".join(ch.id for ch in self.critical_regressions[:VERDICT_ITEMS])
                items.append(f"critical case(s) passed → failed: {ids}")
            if self.zero_drop_regressions:
                shown_ids = [ch.id for ch in self.zero_drop_regressions[:VERDICT_ITEMS]]
                more_ids = len(self.zero_drop_regressions) - len(shown_ids)
                items.append("max drop 0: case(s) passed → failed: " + ", ".join(shown_ids)
                             + (f" and {more_ids} more" if more_ids else "")
                             + " (a fix elsewhere does not cancel them)")
            more = len(self.failures) - len(shown)
            return f"baseline FAILED: {', '.join(items)}" + (f" and {more} more" if more else "")
        if self.significance is not None:
            return (f"baseline OK: no significant drop (alpha {self.significance:g})"
                    + (" beyond the max-drop" if self.max_drop else ""))
        if not self.max_drop:
            return "baseline compared (no max-drop set)"
        return "baseline OK: no drop beyond the max-drop"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (for the JSON report or CI tooling)."""
        out = asdict(self)
        out["deltas"] = [dict(asdict(d), delta=d.delta) for d in self.deltas]
        out["passed"] = self.passed
        out["summary"] = self.summary()
        if not self.turn_regressions and not self.turn_fixes:
            del out["turn_regressions"], out["turn_fixes"]  # a run without conversations
        return out


def compare(current: Mapping[str, Any], baseline: Mapping[str, Any],
            max_drop: Mapping[str, float] | float | None = None, *,
            gate_scopes: Iterable[str] = ("overall",),
            significance: float | None = None) -> Comparison:
    """Compare two JSON reports; drops beyond ``max_drop`` in ``gate_scopes`` fail.

    ``gate_scopes`` defaults to the overall figures: per-kind/difficulty/tag deltas are reported
    but small groups are too noisy to gate on unless asked (``("overall", "kind")``...).

    ``significance`` (alpha): a drop beyond its max-drop (0 for every non-timing metric when no
    max-drop is given) fails only when it is also significant: for ``pass_rate``, more
    pass → fail than fail → pass flips with an exact McNemar p-value below alpha; for a
    metric, a paired bootstrap ``1 - alpha`` interval of the mean difference entirely on the
    worse side of 0 (:mod:`pytest_queryeval.baseline.significance`). With ``significance`` or a max-drop,
    a ``severity: critical`` case that went pass → fail fails the comparison by itself.
    """
    limits = _normalise_max_drop(max_drop)
    if significance is not None and not limits:
        limits = {GLOBAL: 0.0}
    scopes = tuple(gate_scopes)
    if "overall" in scopes and "model" not in scopes:  # each model is gated as a run is
        scopes = (*scopes, "model")
    cmp = Comparison(comparable=True, max_drop=_normalise_max_drop(max_drop), gated_scopes=scopes,
                     baseline_run=dict(baseline.get("run") or {}),
                     models={"baseline": model_of(baseline), "current": model_of(current)},
                     significance=significance)
    reason = _incomparable(current, baseline)
    if reason is not None:
        cmp.comparable = False
        cmp.reason = reason
        return cmp

    cur_cases = _index(current.get("cases") or [])
    base_cases = _index(baseline.get("cases") or [])
    cmp.new_cases = [k for k in cur_cases if k not in base_cases]
    cmp.removed_cases = [k for k in base_cases if k not in cur_cases]
    pairs = [(cur_cases[k], base_cases[k]) for k in cur_cases if k in base_cases]
    cmp.common = len(pairs)
    _sort_changes(cmp, pairs, limits, significance)
    _warn_partial(cmp, current, baseline, pairs)
    _add_deltas(cmp, _scope_groups(pairs), limits, scopes, significance)
    return cmp


def _sort_changes(cmp: Comparison, pairs: list[_Pair], limits: dict[str, float],
                  significance: float | None) -> None:
    """Each paired case's outcome change goes to the list the gate reads it from: a critical
    or max-drop-0 regression fails the comparison by itself, the rest are only reported."""
    for cur, base in pairs:
        change = _change(cur, base)
        _turn_flips(cmp, cur, base, change, limits, significance)
        if change is None:
            continue
        if change.before in _PASS and change.after in _FAIL:
            cmp.regressions.append(change)
            if (limits or significance is not None) and (_critical(cur) or _critical(base)):
                cmp.critical_regressions.append(change)
            elif significance is None and _breaks_zero_drop(cur, base, limits):
                cmp.zero_drop_regressions.append(change)
        elif change.before in _FAIL and change.after in _PASS:
            cmp.fixes.append(change)
        else:
            cmp.other_changes.append(change)


def _warn_partial(cmp: Comparison, current: Mapping[str, Any], baseline: Mapping[str, Any],
                  pairs: list[_Pair]) -> None:
    """A comparison over no case, or over an interrupted run, still passes: say so."""
    if not pairs:
        cmp.warnings.append("no case is in both runs: nothing to compare")
    if current.get("run", {}).get("interrupted"):
        cmp.warnings.append("the current run was interrupted: the comparison is partial")
    if baseline.get("run", {}).get("interrupted"):
        cmp.warnings.append("the baseline run was interrupted")


def _scope_groups(pairs: list[_Pair]) -> list[tuple[str, str, list[_Pair]]]:
    """The overall group, then each model (a run with several), kind, difficulty and tag in
    the reports' order."""
    groups: list[tuple[str, str, list[_Pair]]] = [("overall", "", pairs)]
    by_model: dict[str, list[_Pair]] = {}
    for cur, base in pairs:
        model = cur.get("model") or base.get("model")
        if model is not None:
            by_model.setdefault(str(model), []).append((cur, base))
    if len(by_model) > 1:
        groups.extend(("model", m, by_model[m]) for m in sorted(by_model))
    for scope in ("kind", "difficulty", "tag"):
        grouped: dict[str, list[_Pair]] = {}
        for cur, base in pairs:
            for k in group_keys(cur, scope):
                grouped.setdefault(k, []).append((cur, base))
        order = ordered_difficulties(grouped) if scope == "difficulty" else sorted(grouped)
        groups.extend((scope, k, grouped[k]) for k in order)
    return groups


def _add_deltas(cmp: Comparison, groups: list[tuple[str, str, list[_Pair]]],
                limits: dict[str, float], scopes: tuple[str, ...],
                significance: float | None) -> None:
    """Every group's metric deltas, and a warning for a max-drop whose metric no paired case
    has (a misspelt name would otherwise gate nothing, silently)."""
    seen_metrics: set[str] = set()
    for scope, group, members in groups:
        for d in _group_deltas(scope, group, members, limits, scope in scopes, significance,
                               cmp):
            seen_metrics.add(d.metric)
            cmp.deltas.append(d)
    for name in limits:
        if name != GLOBAL and name not in seen_metrics:
            cmp.warnings.append(f"max-drop for {name!r}: no paired case has this metric")


def model_of(report: Mapping[str, Any]) -> str | None:
    """``label (predictions source)`` of the model that produced a report, when recorded."""
    run = report.get("run") or {}
    label, predictions = run.get("model"), run.get("predictions")
    if label and predictions:
        return f"{label} (predictions {predictions})"
    if label or predictions:
        return str(label) if label else f"predictions {predictions}"
    return None


def incomparable(current: Mapping[str, Any], baseline: Mapping[str, Any]) -> str | None:
    """Why two reports cannot be compared (another report version, another scoring setting
    of a kind both hold), or None: the comparability key a baseline and a merge check."""
    return _incomparable(current, baseline)


def _incomparable(current: Mapping[str, Any], baseline: Mapping[str, Any]) -> str | None:
    cv, bv = current.get("version"), baseline.get("version")
    if cv != bv:
        return f"report version {bv!r} (baseline) vs {cv!r} (current)"
    cs = (current.get("run") or {}).get("settings") or {}
    bs = (baseline.get("run") or {}).get("settings") or {}
    diffs: list[str] = []
    for kind in sorted(set(cs) & set(bs)):
        a, b = bs[kind] or {}, cs[kind] or {}
        if a == b:
            continue
        if not isinstance(a, Mapping) or not isinstance(b, Mapping):
            diffs.append(f"{kind}: {_short(a)} (baseline) vs {_short(b)} (current)")
            continue
        for key in sorted(set(a) | set(b)):
            if a.get(key, _MISSING) != b.get(key, _MISSING):
                diffs.append(f"{kind}.{key}: {_short(a.get(key, _MISSING))} (baseline) vs "
                             f"{_short(b.get(key, _MISSING))} (current)")
    if diffs:
        return "scored with different settings: " + "; ".join(diffs)
    return None


class _Missing:
    def __repr__(self) -> str:
        return "<unset>"


_MISSING = _Missing()


def _short(value: object, limit: int = 60) -> str:
    text = repr(value) if isinstance(value, _Missing) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _index(cases: Iterable[RecordLike]) -> dict[str, Mapping[str, Any]]:
    """Key cases by id (the suite's unique name); by nodeid if ids repeat across suites. An
    agent case's counts EvalBench's rule lowered are compared as what its record holds
    (:func:`_held`)."""
    items = [_held(c) for c in cases]
    ids = [str(c.get("id")) for c in items]
    if len(set(ids)) == len(ids):
        return dict(zip(ids, items, strict=True))
    return {str(c.get("nodeid") or c.get("id")): c for c in items}


def _held(case: RecordLike) -> Mapping[str, Any]:
    """``case`` with the counts its record holds (``details.agent.held_counts``) in place of
    the reference's 0 (EvalBench scores a refused trajectory's ``tool_calls`` 0): twelve calls
    on ``user`` messages compared as 0 against a baseline of 3 showed no drop past
    ``--queryeval-max-drop=tool_calls=0.5`` (the forty-seventh re-probe's R6)."""
    details = case.get("details")
    agent = details.get("agent") if isinstance(details, Mapping) else None
    held = agent.get("held_counts") if isinstance(agent, Mapping) else None
    metrics = case.get("metrics")
    if not isinstance(held, Mapping) or not held or not isinstance(metrics, Mapping):
        return case
    return {**case, "metrics": {**metrics, **{k: v for k, v in held.items()
                                              if isinstance(v, int | float)}}}


def _change(cur: Mapping[str, Any], base: Mapping[str, Any]) -> OutcomeChange | None:
    before, after = str(judged_outcome(base)), str(judged_outcome(cur))
    if before == after:
        return None
    return OutcomeChange(
        id=str(cur.get("id")), kind=str(cur.get("kind")), difficulty=difficulty_of(cur),
        before=before, after=after,
        failed_metrics=tuple(str(m) for m in cur.get("failed_metrics") or []),
        error=cur.get("error"),
    )


def _turn_flips(cmp: Comparison, cur: Mapping[str, Any], base: Mapping[str, Any],
                change: OutcomeChange | None, limits: Mapping[str, float],
                significance: float | None) -> None:
    """The turns of a paired conversation case that passed in one run and not in the other
    (turns only one run scored are not compared). Under a max-drop of 0 on the pass rate or
    ``turn_accuracy`` (no significance), a turn that stopped passing fails the comparison by
    itself unless its case's own flip already does: nothing may get worse, and a turn fixed
    elsewhere in the conversation does not cancel it."""
    now, before = turn_outcomes(cur), turn_outcomes(base)
    if not now or not before or "skipped" in (cur.get("outcome"), base.get("outcome")):
        return
    case_flipped = change is not None and change.before in _PASS and change.after in _FAIL
    zero = significance is None and any(
        limits.get(name, limits.get(GLOBAL)) == 0 for name in (PASS_RATE, "turn_accuracy"))
    for turn in sorted(now.keys() & before.keys()):
        after, was = now[turn], before[turn]
        if (after == TURN_PASSED) == (was == TURN_PASSED):
            continue
        flip = OutcomeChange(id=flip_id(str(cur.get("id")), turn), kind=str(cur.get("kind")),
                             difficulty=difficulty_of(cur), before=was, after=after)
        if was == TURN_PASSED:
            cmp.turn_regressions.append(flip)
            if zero and not case_flipped:
                cmp.zero_drop_regressions.append(flip)
        else:
            cmp.turn_fixes.append(flip)


def _value(case: RecordLike, other: Mapping[str, Any], metric: str) -> float | None:
    metrics = case.get("metrics") or {}
    value = metrics.get(metric)
    if value is not None:
        return float(value)
    if (judged_outcome(case) in _FAIL and not lower_is_better(metric)
            and metric in (other.get("metrics") or {})):
        return 0.0
    return None


def _mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _group_deltas(scope: str, group: str,
                  members: list[tuple[Mapping[str, Any], Mapping[str, Any]]],
                  limits: Mapping[str, float], gated: bool, significance: float | None = None,
                  cmp: Comparison | None = None) -> list[MetricDelta]:
    live = [(c, b) for c, b in members
            if c.get("outcome") != "skipped" and b.get("outcome") != "skipped"]
    names = {m for c, b in live for m in (*(c.get("metrics") or {}), *(b.get("metrics") or {}))}
    out: list[MetricDelta] = []
    rated = [(c, b) for c, b in live
             if judged_outcome(c) in _SCORED_OUTCOMES and judged_outcome(b) in _SCORED_OUTCOMES]
    if rated:
        cur_rate = sum(judged_outcome(c) in _PASS for c, _ in rated) / len(rated)
        base_rate = sum(judged_outcome(b) in _PASS for _, b in rated) / len(rated)
        d = _delta(PASS_RATE, scope, group, base_rate, cur_rate, len(rated), limits, gated)
        if significance is not None:
            d = _mcnemar(d, rated, significance, gated)
            if cmp is not None and scope in ("overall", "model", "kind", "difficulty"):
                _small_group_warning(cmp, d, significance)
        out.append(d)
    for metric in ordered_metrics(names):
        cur_vals: list[float] = []
        base_vals: list[float] = []
        for c, b in live:
            cv, bv = _value(c, b, metric), _value(b, c, metric)
            if cv is not None and bv is not None:
                cur_vals.append(cv)
                base_vals.append(bv)
        if cur_vals:
            d = _delta(metric, scope, group, _mean(base_vals), _mean(cur_vals),
                       len(cur_vals), limits, gated)
            if significance is not None and gated and d.limit is not None:
                d = _bootstrap(d, base_vals, cur_vals, significance, cmp)
            out.append(d)
    return out


def _delta(metric: str, scope: str, group: str, base: float | None, cur: float | None, n: int,
           limits: Mapping[str, float], gated: bool) -> MetricDelta:
    limit = limits.get(metric)
    if limit is None and not lower_is_better(metric) and not is_spider_component(metric):
        limit = limits.get(GLOBAL)
    d = MetricDelta(metric, scope, group, base, cur, n, limit)
    if gated and limit is not None and d.worsening > limit + EPSILON:
        return MetricDelta(metric, scope, group, base, cur, n, limit, failed=True)
    return d


def _breaks_zero_drop(cur: Mapping[str, Any], base: Mapping[str, Any],
                      limits: Mapping[str, float]) -> bool:
    """Whether a pass → fail flip breaks a max-drop of 0: that of the pass rate (every flip
    drops it), or of a metric where higher is better whose value the case lost (a metric's own
    limit, else the global one)."""
    def limit(name: str) -> float | None:
        return limits.get(name, limits.get(GLOBAL))

    if limit(PASS_RATE) == 0:
        return True
    now, before = cur.get("metrics") or {}, base.get("metrics") or {}
    for name, old in before.items():
        new = now.get(name)
        if lower_is_better(name) or limit(name) != 0 or isinstance(old, bool):
            continue
        if isinstance(old, int | float) and (new is None or (isinstance(new, int | float)
                                             and new < old)):
            return True
    return False


def _critical(case: RecordLike) -> bool:
    """``severity: critical`` (case key) or the tag ``critical`` (a pytest marker)."""
    return case.get("severity") == "critical" or "critical" in (case.get("tags") or [])


def _mcnemar(d: MetricDelta, rated: list[tuple[Mapping[str, Any], Mapping[str, Any]]],
             alpha: float, gated: bool) -> MetricDelta:
    """The pass rate's drop counts only with more pass → fail than fail → pass flips and an
    exact McNemar p-value below ``alpha``."""
    from dataclasses import replace

    from .significance import mcnemar

    worse = sum(judged_outcome(b) in _PASS and judged_outcome(c) in _FAIL for c, b in rated)
    better = sum(judged_outcome(b) in _FAIL and judged_outcome(c) in _PASS for c, b in rated)
    p = mcnemar(worse, better)
    significant = worse > better and p < alpha
    return replace(d, p_value=p, significant=significant,
                   failed=d.failed and significant and gated)


def _bootstrap(d: MetricDelta, base: list[float], cur: list[float], alpha: float,
               cmp: Comparison | None) -> MetricDelta:
    """A metric's drop counts only when the whole ``1 - alpha`` interval of the mean paired
    difference lies on the worse side of 0 (below it; above it for timings)."""
    from dataclasses import replace

    from .significance import paired_bootstrap

    if len(base) < 2:
        return replace(d, significant=False, failed=False)
    iv = paired_bootstrap(base, cur, confidence=1 - alpha)
    if cmp is not None and not cmp.bootstrap:
        cmp.bootstrap = {"method": "percentile", "n_resamples": iv.n_resamples,
                         "seed": iv.seed, "confidence": iv.confidence, "rng": iv.rng}
    significant = iv.low > EPSILON if lower_is_better(d.metric) else iv.high < -EPSILON
    return replace(d, ci_low=iv.low, ci_high=iv.high, significant=significant,
                   failed=d.failed and significant)


def _small_group_warning(cmp: Comparison, d: MetricDelta, alpha: float) -> None:
    from .significance import min_flips_for

    need = min_flips_for(alpha)
    if d.n < need:
        cmp.warnings.append(f"{d.label}: {d.n} paired case(s) cannot show a significant "
                            f"change at alpha {alpha:g} (at least {need} needed)")


def _evidence(d: MetricDelta) -> str:
    """``p = 0.012`` or ``95% CI [-0.2, -0.05]``: why a drop counts as significant."""
    if d.p_value is not None:
        return f"McNemar p = {d.p_value:.3g}"
    if d.ci_low is not None and d.ci_high is not None:
        return f"CI [{d.ci_low:+.3f}, {d.ci_high:+.3f}]"
    return "not tested"
