"""The gold audit (``--queryeval-audit-golds``): is every gold answer of the suite right?

Published audits of text-to-SQL benchmarks find a large share of gold answers wrong or
ambiguous: golds that do not execute, golds emptied by ``CURRENT_DATE``, ties at
``ORDER BY ... LIMIT`` that give another gold on another machine. The audit checks each gold
the way a case checks a prediction, plus lints no prediction run can see:

1. every gold (every alternative) is executed live, bypassing the gold-result cache, and then
   scored as its own prediction: it must score 1 on every metric its thresholds name (a gold
   that cannot pass its own case makes the case unpassable);
2. lints of the gold's text and result: empty result, clock-dependent or random functions,
   ties at ``ORDER BY ... LIMIT``, run time over half the timeout, alternatives that return
   identical results, a recorded ``gold_result`` that no longer matches live execution, SDMX
   target codes missing from their codelist, JSON golds that are not valid JSON.

Each problem is a :class:`Finding` with a stable code and a severity (:data:`CATALOG`); the
plugin turns error findings into failed items and writes them to every report. Independent of
pytest: :func:`audit_case` takes a case and the engine's session.

A kind audits its own golds with an optional ``audit(case, ctx, result)`` method
(:class:`~pytest_queryeval.model.AuditingKind`): the query kinds lint and execute them
(:mod:`.query`), JSON lints its text (:mod:`.jsonlint`), SDMX checks its codelists
(:mod:`.sdmx`). A kind without one, a custom kind too, gets :func:`self_check`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import kinds as kind_registry
from ..errors import QueryEvalError, SourceUnavailable
from ..metricnames import (
    JUDGE_EX,
    JUDGE_USAGE_METRICS,
    REPEAT_METRICS,
    TIMING_METRICS,
    USAGE_METRICS,
)
from ..model import Case, Context, Kind, Scored

if TYPE_CHECKING:
    from ..engine.steps import CaseOutcome
    from ..sources.base import DataSource

from .findings import CATALOG as CATALOG
from .findings import ERROR as ERROR
from .findings import MODES as MODES
from .findings import WARNING as WARNING
from .findings import AuditResult as AuditResult
from .findings import Finding as Finding

#: Metrics a gold is never required to score 1 on: timings, costs, efficiency ratios and
#: the repeat statistics measure the run, not the answer; the judge judges predictions, not
#: golds (a gold audit asks it nothing).
UNCHECKED_METRICS = frozenset({
    *TIMING_METRICS, "ves", "r_ves", *USAGE_METRICS, *REPEAT_METRICS,
    "neighbour_ex",  # a gold is never searched against itself (its audit lints neighbours)
    JUDGE_EX, *JUDGE_USAGE_METRICS,
})
#: A self-score this close to 1 is 1 (cosines of identical embeddings are 1 +- 1e-7).
TOLERANCE = 1e-6
#: Rows shown per side when tied rows are reported.
TIE_ROWS_SHOWN = 3


class _AuditContext:
    """The session's context with a private, in-memory cache: a gold is executed live
    (never read from pytest's cache, which would hide drift, timeouts and slowness) and once
    per audit (the kinds read the result the audit has just executed)."""

    #: The SQL kind does not search a gold against itself for a counterexample.
    auditing = True

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._memory: dict[tuple[str, str], object] = {}
        #: ``--queryeval-neighbours`` (:mod:`..neighbours.check`): also lint weak golds.
        self.neighbours = ctx.neighbours
        self.neighbour_base = ctx.neighbour_base

    def source(self, case: Case) -> DataSource:
        return self._ctx.source(case)

    def cache_get(self, namespace: str, key: str) -> Any | None:
        return self._memory.get((namespace, key))

    def cache_set(self, namespace: str, key: str, value: object) -> None:
        self._memory[(namespace, key)] = value

    @property
    def cache_dir(self) -> Path | None:  # embeddings: a vector does not change with the data
        return getattr(self._ctx, "cache_dir", None)

    def shared(self, key: str, factory: Callable[[], Any]) -> Any:
        return self._ctx.shared(key, factory)

    @property
    def all_cases(self) -> list[Case]:
        return list(getattr(self._ctx, "all_cases", []))


def audit_case(case: Case, ctx: Context) -> AuditResult:
    """Every finding of one case (never raises for a problem of the suite)."""
    result = AuditResult()
    if case.errors:
        _invalid_case(case, result)
        return result
    if case.expect == "abstain":  # no gold: its probes, if any, must not answer it
        from .abstain import audit_abstain

        try:
            audit_abstain(case, _AuditContext(ctx), result)
        except SourceUnavailable as exc:
            result.add("source-unavailable", exc.reason())
        except QueryEvalError as exc:  # a datasource that cannot be opened as configured
            result.add("gold-error", exc.reason())
        return result
    if case.expect == "clarify" and case.turns is None:  # no gold: a question back is right
        return result
    if case.turns is not None:  # a conversation (issue 42): each scored turn's gold
        from ..rules.conversation import turn_case

        for turn in case.turns:
            if turn.scored and turn.expect == "answer":
                for f in audit_case(turn_case(case, turn, []), ctx).findings:
                    result.add(f.code, f"turn {turn.number}: {f.message}", f.gold)
        return result
    try:
        kind = kind_registry.get_kind(case.kind)
    except (KeyError, ImportError) as exc:
        result.add("invalid-case", f"kind {case.kind!r} is not available: {exc}")
        return result
    actx = _AuditContext(ctx)
    audit = getattr(kind, "audit", None)
    try:
        if callable(audit):
            audit(case, actx, result)
        else:
            self_check(case, kind, actx, result, case.gold, None)
    except SourceUnavailable as exc:
        result.add("source-unavailable", exc.reason())
    except QueryEvalError as exc:  # a datasource that cannot be opened as configured
        result.add("gold-error", exc.reason())
    except Exception as exc:  # a bug must not end the audit of the other cases
        result.add("gold-error", f"internal error auditing the case: {type(exc).__name__}: "
                                 f"{exc}")
    return result


def audit_outcome(case: Case, ctx: Context, mode: str) -> CaseOutcome:
    """The audit of one case as the engine's :class:`~pytest_queryeval.engine.CaseOutcome`:
    failed when it has an error finding (unless ``mode`` is ``warn``), the findings as its
    diff and in ``details["audit"]``, the first gold's self-scores as its metrics."""
    from ..engine.steps import CaseOutcome

    found = audit_case(case, ctx)
    errors = found.errors
    failed = bool(errors) and mode != "warn"
    reason = (f"gold audit: {len(errors)} error finding(s), {len(found.findings) - len(errors)}"
              " warning(s)") if failed else None
    return CaseOutcome("failed" if failed else "passed", found.metrics, found.labels, [], None,
                       reason, None, [f.text() for f in found.findings],
                       {"audit": {"findings": [f.to_json() for f in found.findings],
                                  **({"transpiled": found.transpiled}
                                     if found.transpiled else {})}})


_JSON_GOLD_ERROR = re.compile(r"\bgold: not (valid )?JSON")
_GOLD_PARSE_ERROR = re.compile(r"\bgold(\[\d+\])?: (cannot parse|refused):")


def _invalid_case(case: Case, result: AuditResult) -> None:
    for error in case.errors:
        if kind_registry.declares(case.kind, "json_gold") and _JSON_GOLD_ERROR.search(error):
            result.add("invalid-json", error)
        elif _GOLD_PARSE_ERROR.search(error):  # found at collection: SPARQL golds are parsed
            result.add("gold-error", error)
        else:
            result.add("invalid-case", error)


def self_check(case: Case, kind: Kind, ctx: Context, result: AuditResult,
                prediction: object, gold: int | None, *, explained: Iterable[str] = (),
                where: str = "") -> Scored | None:
    """Score the gold as its own prediction; every threshold metric must be 1. ``where``
    names an alternative answer that has no gold index (an SDMX alternative target)."""
    try:
        scored: Scored = kind.evaluate(case, prediction, ctx)
    except SourceUnavailable:
        raise
    except QueryEvalError as exc:
        result.add("gold-error", where + exc.reason(), gold)
        return None
    except Exception as exc:  # a kind's bug must not end the audit of the other cases
        result.add("gold-error", f"{where}internal error scoring the gold: {type(exc).__name__}: "
                                 f"{exc}", gold)
        return None
    if gold in (None, 0) and not where:
        result.metrics, result.labels = dict(scored.metrics), dict(scored.labels)
    if scored.reason:
        code = "gold-timeout" if scored.reason.startswith("timeout:") else "gold-error"
        result.add(code, f"{where}as its own prediction: {scored.reason}", gold)
        return scored
    skip = set(explained)
    for metric, bound in sorted(case.thresholds.items()):
        if metric in UNCHECKED_METRICS or metric in skip or bound.min is None:
            continue
        value = scored.metrics.get(metric)
        if value is None:
            result.add("gold-below-threshold", f"{where}{metric} is never computed for this case, so "
                       f"its threshold ({bound.describe()}) cannot be met", gold)
        elif not value >= 1 - TOLERANCE:
            result.add("gold-below-threshold", f"{where}{metric} = {value:.4f} scoring the gold "
                       f"against itself (threshold {bound.describe()})", gold)
    return scored
