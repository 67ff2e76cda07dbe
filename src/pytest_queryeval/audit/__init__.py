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
(:mod:`..kinds.goldchecks.query`), JSON lints its text (:mod:`..kinds.goldchecks.jsonlint`),
SDMX checks its codelists (:mod:`..kinds.goldchecks.sdmx`). A kind without one, a custom kind
too, gets :func:`self_check`. These per-language checks live in kinds/, below this driver,
which sits above the engine: the kinds run them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import kinds as kind_registry
from ..errors import QueryEvalError, SourceUnavailable
from ..model import Case, Context

if TYPE_CHECKING:
    from ..engine.steps import CaseOutcome
    from ..sources.base import DataSource

from ..kinds.goldchecks import TIE_ROWS_SHOWN as TIE_ROWS_SHOWN
from ..kinds.goldchecks import TOLERANCE as TOLERANCE
from ..kinds.goldchecks import UNCHECKED_METRICS as UNCHECKED_METRICS
from ..kinds.goldchecks import self_check as self_check
from ..kinds.goldchecks.findings import CATALOG as CATALOG
from ..kinds.goldchecks.findings import ERROR as ERROR
from ..kinds.goldchecks.findings import MODES as MODES
from ..kinds.goldchecks.findings import WARNING as WARNING
from ..kinds.goldchecks.findings import AuditResult as AuditResult
from ..kinds.goldchecks.findings import Finding as Finding


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
