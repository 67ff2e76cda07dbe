"""``kind: cypher``: execute gold and predicted Cypher on a graph datasource, read-only, and
score the result tables.

Flow of one case (docs/cypher.md):

1. One Markdown fence around the prediction is stripped; a text over ``max_query_bytes`` or
   refused by :func:`.guard.check` (several statements, a clause reaching outside the graph)
   scores 0 with ``refused: ...`` and never reaches the engine.
2. Each gold alternative runs (trusted, cached across sessions by the datasource's fingerprint
   and the gold text); a gold that fails, times out or is cut by ``max_rows`` is an error of
   the suite.
3. The prediction runs; a write is refused by the read-only engine (``refused: MERGE at line
   1, column 1: the graph is read-only ...``), an engine error or a timeout scores 0 with its
   reason.
4. The metrics: the result-table metrics the SQL and SPARQL kinds share
   (``execution_accuracy``: the same rows, in order only when the gold's last ``RETURN`` has
   ``ORDER BY``; ``bird_ex``, ``soft_f1``, ...) and CypherBench's ``cypherbench_ex`` and
   ``cypherbench_executable`` (:mod:`.cypherbench`, reproduced with its quirks). The best
   gold alternative wins.

Nothing here is asked by name outside this folder: the kind declares what it can do
(``kindregistry.py``) and registers itself through ``pytest_queryeval_kinds``
(:mod:`.plugin`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, cast

from ..errors import ConfigError, GoldError, QueryRefused, SearchBudgetExhausted
from ..metricnames import QUERY_TIMING_METRICS as TIMING
from ..model import Case, Context, Scored
from ..results import ResultTable
from ..sources.base import DEFAULT_TIMEOUT
from . import cypherbench, guard

if TYPE_CHECKING:
    from ..audit import AuditResult
    from ..kinds._query import QueryLimits
    from ..metrics.table import CompareOptions

#: Cache namespace of executed gold results.
GOLD_CACHE = "cypher-gold"
_PREDICTION_KEYS = ("cypher", "query", "predicted")


@dataclass
class _Options:
    compare: CompareOptions
    limits: QueryLimits = field(default_factory=lambda: cast("QueryLimits", {}))
    max_query_bytes: int = 64 * 1024


@dataclass
class _Gold:
    query: str
    table: ResultTable
    cached: bool = False


class CypherKind:
    """The Cypher evaluator; stateless, one instance per session."""

    name: ClassVar[str] = "cypher"
    gold_alternatives: ClassVar[bool] = True
    #: A ``judge:`` may compare its results where execution disagrees (docs/judge.md).
    judged: ClassVar[bool] = True
    fence_language: ClassVar[str] = "cypher"
    language_name: ClassVar[str] = "Cypher"
    query_keywords: ClassVar[tuple[str, ...]] = guard.QUERY_KEYWORDS
    headline_metrics: ClassVar[tuple[str, ...]] = (
        "execution_accuracy", "cypherbench_ex", "cypherbench_executable")
    #: The gold's rows, exactly, gate a case that no threshold judges.
    default_thresholds: ClassVar[Mapping[str, float]] = {"execution_accuracy": 1.0}
    option_keys: ClassVar[frozenset[str]] = frozenset(
        {"compare", "timeout", "max_rows", "max_query_bytes"})

    def is_metric(self, name: str) -> bool:
        return name in metric_names()

    def metric_names(self) -> list[str]:
        return sorted(metric_names())

    def difficulty(self, case: Case) -> str | None:
        return None  # no published Cypher hardness scale

    def validate(self, case: Case) -> Iterable[tuple[str, str]]:
        problems: list[tuple[str, str]] = []
        if case.gold is None:
            problems.append(("gold", "a cypher case needs 'gold' (a read-only Cypher query)"))
        elif isinstance(case.gold, list) and not case.gold:
            problems.append(("gold", "an empty list of gold alternatives"))
        else:
            for i, gold in enumerate(case.golds):
                where = f"gold[{i}]" if isinstance(case.gold, list) else "gold"
                if not isinstance(gold, str) or not gold.strip():
                    problems.append((where, "must be a Cypher query string"))
                    continue
                try:
                    guard.check(gold)
                except QueryRefused as exc:
                    problems.append((where, exc.reason()))
                    continue
                write = guard.first_write(gold)
                if write is not None:
                    problems.append((where, f"{write.text.upper()} at {guard.where(write)}: "
                                            "a gold must be read-only (the graph is opened "
                                            "read-only)"))
        if case.source_spec is None:
            problems.append(("datasource", "a cypher case needs a datasource (e.g. type: "
                                           "ladybug)"))
        try:
            _parse_options(case)
        except ConfigError as exc:
            problems.append((exc.key or "options", exc.message))
        return problems

    def audit(self, case: Case, ctx: Context, result: AuditResult) -> None:
        """``--queryeval-audit-golds``: the audit of every query kind (each gold executed
        live, its result linted, scored as its own prediction), with no rule of another
        language's syntax (the kind declares no ``query_syntax`` the audit has rules for)."""
        from ..audit.query import audit_query

        audit_query(case, self, ctx, result)

    def evaluate(self, case: Case, prediction: object, ctx: Context) -> Scored:
        from ..kinds._fences import note as note_fence
        from ..kinds._query import (
            check_query_size,
            execute_or_reason,
            fenced_prediction_text,
            run_gold,
        )

        text, fence = fenced_prediction_text(prediction, case, "Cypher", _PREDICTION_KEYS)
        if text is None:
            raise GoldError("a cypher case scores an executed prediction: give 'predicted' "
                            "or a predictions source, not predicted_result")
        opts = _parse_options(case)
        src = ctx.source(case)
        golds = []
        for gold in case.golds:
            table, cached = run_gold(src, str(gold), ctx, GOLD_CACHE, opts.limits)
            golds.append(_Gold(str(gold), table, cached))
        start = time.perf_counter()
        got = execute_or_reason(src, text, opts.limits,
                                check=lambda: check_query_size(text, opts.max_query_bytes))
        pred: ResultTable | None = None if isinstance(got, str) else got
        reason: str | None = got if isinstance(got, str) else None
        elapsed = time.perf_counter() - start
        if pred is not None and pred.truncated:
            what, option = pred.cut_by()
            raise_it = "the datasource's max_values" if option == "max_values" else option
            reason = f"truncated: the predicted result {what} ({raise_it}); a partial result " \
                     "is never scored"
        seconds = float(opts.limits.get("timeout") or getattr(src, "timeout", None)
                        or DEFAULT_TIMEOUT)
        scored = _best(golds, text, None if reason else pred, opts, reason,
                       executed=pred is not None, seconds=seconds)
        scored.metrics["predicted_seconds"] = pred.seconds if pred is not None else elapsed
        note_fence(scored.details, fence)
        return scored


def _best(golds: list[_Gold], text: str, pred: ResultTable | None, opts: _Options,
          reason: str | None, *, executed: bool, seconds: float) -> Scored:
    """Every gold alternative scored, the best kept. A comparison that stops undecided (its
    search budget, or the case's timeout again: ``comparison_deadline``) fails the case with
    the reason unless another gold matches, as the SQL and SPARQL kinds do (the fifteenth
    re-probe's N4: it escaped as an internal ERROR)."""
    from ..kinds._query import best_of_golds
    from ..metrics.table import TABLE_METRIC_NAMES

    # made once for every alternative (the prediction's view costs its values); nodes of one
    # content are one object in every view (sharedends: the sixteenth re-probe's S1)
    contents: dict[Any, Any] = {}
    p_view = None if pred is None else cypherbench.neo4j_view(pred.columns, pred.rows,
                                                              contents)
    best = best_of_golds(len(golds), lambda i: _score(
        golds[i], text, (pred, p_view), opts, reason, executed=executed, contents=contents),
        seconds, TIMING)
    if isinstance(best, SearchBudgetExhausted):
        metrics = dict.fromkeys(TABLE_METRIC_NAMES, 0.0)
        metrics["cypherbench_executable"] = cypherbench.executable(not executed)
        metrics["gold_seconds"] = golds[0].table.seconds
        return Scored(metrics, {}, [], {"gold_cached": golds[0].cached}, reason=best.reason())
    return best


def metric_names() -> frozenset[str]:
    from ..metricnames import JUDGE_EX
    from ..metrics.table import TABLE_METRIC_NAMES

    return frozenset((*TABLE_METRIC_NAMES, *cypherbench.CYPHERBENCH_METRIC_NAMES, *TIMING,
                      JUDGE_EX))


def _score(gold: _Gold, text: str,
           predicted: tuple[ResultTable | None, list[dict[str, Any]] | None], opts: _Options,
           reason: str | None, *, executed: bool, contents: dict[Any, Any]) -> Scored:
    """One gold alternative against the prediction (``pred`` None: it failed, ``reason``)."""
    from ..metrics.table import TABLE_METRIC_NAMES, compare_tables

    g_view = cypherbench.neo4j_view(gold.table.columns, gold.table.rows, contents)
    pred, p_view = predicted
    details: dict[str, Any] = {"gold_cached": gold.cached}
    ex, crash = cypherbench.score(text, gold.query, g_view, p_view)
    if pred is None:
        metrics = dict.fromkeys(TABLE_METRIC_NAMES, 0.0)
        diff: list[str] = []
        signature = None
        compared = None
    else:
        ordered = guard.final_order_by(gold.query)
        cmp = compare_tables(gold.table, pred, order_matters=ordered, compare=opts.compare)
        metrics = dict(cmp.metrics())
        details.update(cmp.details())
        diff = list(cmp.diff())
        signature = pred.signature(ordered)
        compared = (gold.query, gold.table, text, pred)  # what a judge is shown
    if ex is None and str(crash).startswith("TypeError"):
        details["cypherbench"] = (f"CypherBench's execution_accuracy raises {crash} here (a "
                                  "value its to_hashable or a set cannot hash): the reference "
                                  "records no score")
    elif ex is None:
        details["cypherbench"] = f"CypherBench's execution_accuracy is not decided here: {crash}"
    else:
        metrics["cypherbench_ex"] = ex
    metrics["cypherbench_executable"] = cypherbench.executable(not executed)
    metrics["gold_seconds"] = gold.table.seconds
    return Scored(metrics, {}, diff, details, reason=reason, signature=signature,
                  compared=compared)


def _parse_options(case: Case) -> _Options:
    from ..kinds._query import compare_options, limits, max_query_bytes

    o = case.options
    return _Options(compare_options(o), limits(o), max_query_bytes(o))
