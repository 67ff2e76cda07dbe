"""``kind: sql``: execute gold and predicted SQL read-only and score the result tables.

Flow of one case (see docs/sql-sources.md):

1. One Markdown code fence around the prediction is stripped (:mod:`.._fences`). The
   predicted statement is checked by :func:`~pytest_queryeval.sources.sqlguard.
   check_read_only`; a statement that is not a single read-only query scores 0 with
   ``refused: ...`` and never reaches the source. On a schema-only source, which executes
   nothing, a text Spider's parser reads is scored as the reference parses it (text after
   its first ``;`` ignored); the guard there only names why Spider's parser rejected a text.
2. Each gold alternative is executed (trusted, cached by source fingerprint and query text) or
   taken from ``gold_result``. A gold that fails, times out or is truncated is an error of the
   suite (:class:`GoldError`), not a model failure.
3. The prediction is executed (or taken from ``predicted_result``). Failure, timeout or
   truncation scores every metric 0 with the reason.
4. Table metrics (EX on the results of the queries as written, or with ``test_suite_rewrite``
   on the texts the Spider test-suite evaluator executes; BIRD EX, Soft-F1, Denodo; opt-in,
   BIRD Soft EX on the texts LiveSQLBench executes, see :meth:`_SqlRun.soft_ex`),
   BuildingQA alignment metrics, Spider structure metrics (when a schema is available) and,
   opt-in, VES/R-VES are computed per gold alternative; the best alternative wins: highest
   ``execution_accuracy``, then highest mean of the other metrics. Each is one entry of
   :data:`_SQL_METRICS`, the table that scoring, threshold names and failures' zeros read.

Why one module of this size: the flow above is one case's path; its steps live on one
``_SqlRun`` object, one method each, so the order they run in is read in one place.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar, cast

from ..._util.wording import suggest
from ...errors import (
    ConfigError,
    GoldError,
    PartlyRead,
    QueryEvalError,
    QueryRefused,
    QueryTimeout,
    SearchBudgetExhausted,
    SourceUnavailable,
)
from ...metricnames import JUDGE_EX
from ...metricnames import QUERY_TIMING_METRICS as TIMING
from ...metrics.ambrosia import AMBROSIA_METRIC_NAMES
from ...model import Case, Context, Scored
from ...results import ResultTable
from ...sources import source_type
from ...sources.base import DEFAULT_TIMEOUT, DataSource
from .._fences import note as note_fence
from .._optin import OPTION_KEYS, RELAXED_EX, add_hallucination
from .._optin import check_options as check_optin
from .._query import (
    DEFAULT_MAX_QUERY_BYTES,
    best_of_golds,
    check_query_size,
    compare_options,
    execute_or_reason,
    fenced_prediction_text,
    limits,
    max_query_bytes,
    prediction_text,
    run_gold,
)
from .case import (
    audit_task,
    dialect_prediction,
    dialect_problems,
    evaluate_task,
    pin_golds,
    ran_pinned,
    with_dialect_gold,
)
from .interpretations import KEYS as INTERPRETATION_KEYS
from .interpretations import applies as has_interpretations
from .interpretations import probe_problems
from .spider_text import for_spider, has_bare_alias, normalised

if TYPE_CHECKING:
    from ...metrics.spider import Schema
    from ...metrics.table import CompareOptions, TableComparison
    from ...neighbours.check import Settings
    from .._query import QueryLimits
    from ..goldchecks.findings import AuditResult
    from ..goldchecks.query import QueryRules

#: Cache namespace of executed gold results (values: :mod:`...sources.codec` tables).
GOLD_CACHE = "sql-gold"
#: Cache namespace of golds' ``sql_hardness`` labels that sqlglot counted (``{"level": ...}``).
HARDNESS_CACHE = "sql-hardness"
EFFICIENCY = ("ves", "r_ves")
#: Iterations allowed for ``efficiency`` (each runs gold and prediction once more).
MAX_ITERATIONS = 1000


#: ``condition_cols:`` as :func:`~...metrics.spider2.check_condition_cols` accepts it.
ConditionCols = int | list[int] | list[list[int]] | list[None] | None


@dataclass
class _Options:
    """A case's options, read and checked once (:func:`_parse_options`)."""

    #: ``compare:``, how cells are normalised before every table metric.
    compare: CompareOptions
    #: ``structure:``: auto (when a gold parses in Spider's grammar), required or off.
    structure: Literal["auto", "required", "off"] = "auto"
    legacy_from_check: bool = False
    test_suite_rewrite: bool = False
    keep_distinct: bool = False
    tie_aware: bool = True
    #: ``arity_from:``: the alignment metrics' column count, of the results or the query.
    arity_from: Literal["result", "query"] = "result"
    #: ``efficiency.iterations`` (VES/R-VES); None: not asked for.
    iterations: int | None = None
    db_id: str | None = None
    #: ``timeout`` / ``max_rows`` overrides of the source's.
    limits: QueryLimits = field(default_factory=lambda: cast("QueryLimits", {}))
    max_query_bytes: int = DEFAULT_MAX_QUERY_BYTES
    #: A ``conditions`` key or a threshold on soft_ex asks for it.
    soft_ex: bool = False
    #: ``conditions.order``: list (true) or set equality of the rows.
    soft_ex_order: bool = False
    #: Spider 2.0: 0-based gold columns, flat or one list per gold.
    condition_cols: ConditionCols = None
    #: Spider 2.0: compare each column sorted.
    ignore_order: bool = False
    #: Spider 2.0 keys, gold CSV files or a threshold ask for spider2_ex.
    spider2: bool = False
    #: A threshold on ehrsql_ex asks for it (the EHRSQL 2024 answer comparison).
    ehrsql: bool = False


@dataclass
class _Gold:
    sql: str | None
    table: ResultTable | None
    cached: bool = False
    recorded: bool = False


@dataclass
class _Pred:
    sql: str | None
    table: ResultTable | None
    recorded: bool = False


@dataclass(frozen=True)
class _Plan:
    """What a failure of the case scores, fixed once its golds ran (:meth:`_SqlRun.plan`),
    held once for every way the prediction can fail."""

    #: The metrics the case scores, each at 0 when it fails.
    planned: Sequence[str]
    gold_seconds: float | None
    #: The source's Spider schema when the structure is scored (Spider's table then still
    #: counts a question the prediction never answered), else None.
    structure: Schema | None


class SqlKind:
    """The SQL evaluator; stateless, one instance per session (caches live in the Context)."""

    name: ClassVar[str] = "sql"
    #: What it declares to the modules outside kinds/ (:mod:`...kindregistry`).
    gold_alternatives: ClassVar[bool] = True
    gold_by_dialect: ClassVar[bool] = True
    judged: ClassVar[bool] = True
    conversation_turns: ClassVar[bool] = True  # issue 42: suite/conversation.py
    result_files: ClassVar[bool] = True
    spider_details: ClassVar[bool] = True
    pinned_before_kinds: ClassVar[bool] = True
    fence_language: ClassVar[str] = "sql"
    language_name: ClassVar[str] = "SQL"
    query_syntax: ClassVar[str] = "sql"
    query_keywords: ClassVar[tuple[str, ...]] = (
        "SELECT", "WITH", "VALUES", "TABLE", "FROM", "INSERT", "UPDATE", "DELETE", "MERGE",
        "UPSERT", "REPLACE", "CREATE", "ALTER", "DROP", "TRUNCATE", "PRAGMA", "EXPLAIN", "SHOW",
        "DESCRIBE", "CALL", "BEGIN", "SET", "COPY", "GRANT", "REVOKE", "DO")
    headline_metrics: ClassVar[tuple[str, ...]] = (
        "execution_accuracy", "judge_ex", "exact_set_match", "soft_f1", "row_match_f1")
    option_keys: ClassVar[frozenset[str]] = frozenset({
        "compare", "efficiency", "db_id", "timeout", "max_rows", "structure", "arity_from",
        "keep_distinct", "test_suite_rewrite", "max_query_bytes", "conditions", "tie_aware",
        "condition_cols", "ignore_order", "task", "setup", "cleanup", "checks", "transpile",
        "collateral", *OPTION_KEYS, *INTERPRETATION_KEYS,
    })

    # -- contract: names and validation ---------------------------------------------------------

    def default_thresholds(self, case: Case) -> Mapping[str, float]:
        """What gates a case no threshold judges (docs/reference.md, "Thresholds"): the
        gold's result table, exactly; on a schema-only source (``spider-schema``: nothing
        runs), the gold's structure, Spider's exact set match."""
        if has_interpretations(case):
            return {"all_found": 1.0}
        if source_type((case.source_spec or {}).get("type")).schema_only:
            return {"exact_set_match": 1.0}
        return {"execution_accuracy": 1.0}

    def is_metric(self, name: str) -> bool:
        return name in AMBROSIA_METRIC_NAMES or _is_sql_metric(name)

    def metric_names(self) -> list[str]:
        """Names for "did you mean" hints."""
        return sorted(_metric_names() | set(AMBROSIA_METRIC_NAMES))

    def validate(self, case: Case) -> Iterable[tuple[str, str]]:
        if has_interpretations(case):
            from .interpretations import validate as validate_interpretations

            return validate_interpretations(case)
        per_dialect = dialect_problems(case) + probe_problems(case)
        if per_dialect:
            return per_dialect
        if isinstance(case.gold, dict):  # validated on the entry its source runs
            case = with_dialect_gold(case, transpiled=False)[0]
        if any(key in case.options for key in ("task", "setup", "cleanup", "checks")):
            return _validate_task(case)
        problems: list[tuple[str, str]] = []
        golds = case.golds if case.gold is not None else []
        recorded = case.gold_result is not None or case.gold_result_files is not None
        if case.gold is None and not recorded:
            problems.append(("gold", "a sql case needs 'gold' (SQL text) or 'gold_result'"))
        if isinstance(case.gold, list) and not case.gold:
            problems.append(("gold", "an empty list of gold alternatives"))
        for i, g in enumerate(golds):
            if not isinstance(g, str) or not g.strip():
                where = f"gold[{i}]" if isinstance(case.gold, list) else "gold"
                problems.append((where, "must be an SQL string"))
        if isinstance(case.gold, list) and len(case.gold) > 1 and recorded:
            problems.append(("gold_result", "a recorded gold result cannot go with several "
                                            "gold alternatives"))
        if case.source_spec is None and not recorded:
            problems.append(("datasource", "a sql case needs a datasource (or gold_result "
                                           "and predicted_result)"))
        spec = case.source_spec or {}
        if source_type(spec.get("type")).schema_only and not (case.options.get("db_id")
                                                              or spec.get("db_id")):
            problems.append(("db_id", "required with a spider-schema datasource"))
        try:
            _parse_options(case)
        except ConfigError as e:
            problems.append((e.key or "options", e.message))
        if "collateral" in case.options:  # a file's or the suite's default reaches SELECT cases
            from ...tasks.case import collateral_problems

            problems += collateral_problems(case)
        return problems

    def difficulty(self, case: Case) -> str | None:
        """Spider's reference hardness of the first gold where Spider's grammar parses it,
        else its ``sql_hardness`` (the same criteria on a sqlglot parse); None when neither
        parses it."""
        if isinstance(case.gold, dict):  # the entry its source's dialect runs (or transpiles)
            case = with_dialect_gold(case, transpiled=False)[0]
        if case.options.get("task") is not None:
            return None  # Spider's hardness rates queries, not statements that write
        first = case.golds[0] if case.golds else None
        if has_interpretations(case):  # rated by its first reading
            from .interpretations import readings

            first = next((gold for _, gold in readings(case)), None)
        if not isinstance(first, str):
            return None
        dialect = _spec_dialect(case.source_spec)
        if _means(case.source_spec) and has_bare_alias(first):
            first = normalised(first, dialect) or first  # rated as its meaning: spider_text.py
        return _hardness(first) or _sql_hardness(first, dialect)

    # -- evaluation -----------------------------------------------------------------------------

    def prefetch(self, case: Case, prediction: object, ctx: Context) -> bool:
        """Run ahead, in the source's worker, the queries :meth:`evaluate` will run first
        (:meth:`_SqlRun.prefetch`); False when nothing was sent."""
        if has_interpretations(case):
            return False
        return _SqlRun.prefetch(case, prediction, ctx)

    @staticmethod
    def sends_ahead(case: Case, ctx: Context) -> bool:
        """Whether :meth:`prefetch` can send anything for ``case``: its source runs queries
        ahead (a spider-schema source executes nothing). Asked before the case's prediction
        is looked up, which was most of a Spider run's cost of the prefetch."""
        return case.source_spec is not None and not has_interpretations(case) \
            and getattr(ctx.source(case), "prefetch_pair", None) is not None

    def query_rules(self) -> QueryRules:
        """SQL's text rules for the gold audit (:mod:`..goldchecks.query`)."""
        from ..goldchecks.query import SQL_RULES

        return SQL_RULES

    def audit(self, case: Case, ctx: Context, result: AuditResult) -> None:
        """``--queryeval-audit-golds``: each gold linted, executed live and scored as its own
        prediction (:mod:`..goldchecks.query`)."""
        if has_interpretations(case):
            from ..goldchecks.interpretations import audit_interpretations

            audit_interpretations(case, ctx, result)
            return
        written = case
        try:
            case, chosen = with_dialect_gold(case)
        except GoldError as exc:
            result.add("gold-error", exc.reason())
            return
        resolved = case
        case, _ = pin_golds(case)
        if chosen.get("transpiled_from") and case.options.get("task") is None:
            from ..goldchecks.transpiled import audit_transpiled

            audit_transpiled(written, resolved, chosen["transpiled_from"], chosen["dialect"],
                             ctx, result, ran=case)
        if case.options.get("task") is not None:
            audit_task(case, result)
            return
        from ..goldchecks.query import audit_query

        audit_query(case, self, ctx, result)

    def evaluate(self, case: Case, prediction: object, ctx: Context) -> Scored:
        if has_interpretations(case):
            from .interpretations import evaluate as evaluate_interpretations

            return evaluate_interpretations(case, prediction, ctx)
        case, chosen = with_dialect_gold(case)
        try:
            return self._evaluate(case, chosen, prediction, ctx)
        except QueryEvalError as exc:  # a failing gold still says which dialect's gold ran
            if chosen:
                exc.details = {**(exc.details or {}), "gold_dialect": chosen}
            raise

    def _evaluate(self, case: Case, chosen: dict[str, Any], prediction: object,
                  ctx: Context) -> Scored:
        prediction = dialect_prediction(case, prediction)
        case, clock = pin_golds(case)
        ran_pinned(chosen, case)
        if case.options.get("task") is not None:
            scored = evaluate_task(case, prediction, clock)
            if chosen:
                scored.details["gold_dialect"] = chosen
            return scored
        pred_sql, fence = fenced_prediction_text(prediction, case, "SQL",
                                                 ("sql", "query", "predicted"))
        if clock is not None and pred_sql is not None:
            pred_sql = clock.pin(pred_sql, "predicted")
        opts = _parse_options(case)
        run = _SqlRun(case, ctx, opts, ctx.source(case) if case.source_spec is not None else None)
        scored = run.evaluate(pred_sql)
        if "spider2_ex" in scored.metrics:
            raw = prediction_text(prediction, case, "SQL", ("sql", "query", "predicted"))
            scored = run.spider2(scored, raw, pred_sql)
        add_hallucination(scored, case, ctx, run.src, pred_sql)
        note_fence(scored.details, fence)
        if clock is not None:
            scored.details["clock"] = clock.record()
        if chosen:
            scored.details["gold_dialect"] = chosen
        if not ctx.auditing:  # a gold audit scores the gold against itself
            from ...neighbours.check import settings_for

            settings = settings_for(case, ctx.neighbours, ctx.neighbour_base)
            if settings is not None:
                run.neighbours(scored, settings)
        return scored


@dataclass
class _SqlRun:
    """One sql case being scored: what every step reads (the case, the session's context, the
    case's options, its source, the gold alternatives and the prediction once they are known),
    held once instead of passed to each step."""

    case: Case
    ctx: Context
    opts: _Options
    src: DataSource | None
    golds: list[_Gold] = field(default_factory=list)
    #: None until the prediction passed the guard (a refused one is never executed).
    pred: _Pred | None = None
    #: The prediction to send with the first gold's execution (one round trip, see
    #: :meth:`gold`), and then its text with the call that returns or raises its result.
    pair_with: str | None = None
    prefetched: tuple[str, Callable[[], ResultTable]] | None = None
    #: Why the structure metrics were not scored (a gold outside Spider's grammar), said in
    #: the record instead of an exact set match that is silently absent.
    no_structure: str | None = None

    def evaluate(self, pred_sql: str | None) -> Scored:
        """Golds, then the guarded prediction, then every gold alternative scored: the best."""
        case, src = self.case, self.src
        executable = src is not None and src.executable
        dialect = src.dialect if src is not None else None
        can_execute = case.gold_result is not None or executable
        # with no datasource, a recorded gold still plans the table metrics of a text
        # prediction: one that is no query (an empty text) scores them 0, in every mean
        pred_executable = case.predicted_result is not None or (pred_sql is not None and (
            executable or (src is None and can_execute)))
        schema = self.schema()
        engine_guard = self.engine_guards(pred_sql)
        if pred_sql is not None and _paired(case, src, pred_sql, self.opts):
            self.pair_with = pred_sql
        can_execute = self.run_golds(can_execute)
        plan = self.plan(schema, pred_sql, exec_=bool(can_execute and pred_executable))
        # A schema-only source (spider-schema) executes nothing, so the guard protects nothing
        # there and only names why a text is not a query: it runs after the structural
        # scoring, and only when Spider's parser rejected the text (its parse of every
        # prediction was a fifth of a Spider dev run). A text Spider's parser took is scored
        # as the reference scores it, text after its first ';' ignored (issue 48: SParC's
        # golds end in ';'); where the text is executed, several statements stay refused.
        defer_guard = src is not None and not src.executable and plan.structure is not None \
            and case.predicted_result is None
        if pred_sql is not None:
            refused = self.guard(pred_sql, dialect, plan, read_only=not defer_guard
                                 and not engine_guard)
            if refused is not None:
                return refused
        pred = self.pred = _Pred(pred_sql, case.predicted_result,
                                 case.predicted_result is not None)
        if pred.table is None and executable and pred_sql is not None:
            failed = self.execute_prediction(pred, pred_sql, dialect, plan, engine_guard)
            if failed is not None:
                return failed
        if pred.table is not None and pred.table.truncated:
            what, option = pred.table.cut_by()
            return self.failure(plan, f"truncated: the predicted result {what} ({option}); a "
                                "partial result is never scored", pred.table.seconds)
        if pred.table is None and plan.structure is None:
            raise GoldError("nothing to score: no executable datasource and no recorded "
                            "results, and no schema for structural metrics")
        scored = self.best(plan.structure, plan.planned, plan.gold_seconds)
        if defer_guard and pred_sql is not None and "structure_parse_error" in scored.details:
            refused = self.guard(pred_sql, dialect, plan, read_only=True, size=False)
            if refused is not None:  # the same failure as when the guard runs first
                return refused
        return scored

    def engine_guards(self, pred_sql: str | None) -> bool:
        """Whether the source's engine is the guard of this prediction: one that refuses every
        action but reading (SQLite's authorizer) runs a text that starts like a query
        unparsed; the guard then runs only when the engine fails it (:meth:`execute_prediction`),
        and its refusal ends the case exactly as if it had run first."""
        from ...sources.sqlguard import query_led

        return bool(getattr(self.src, "engine_guard", False)) and pred_sql is not None \
            and self.case.predicted_result is None and query_led(pred_sql)

    def run_golds(self, can_execute: bool) -> bool:
        """Every gold alternative's result into :attr:`golds` (gold CSV files: each one an
        alternative); whether the golds have results to compare with."""
        case = self.case
        gold_sqls: list[str | None] = [g for g in case.golds if isinstance(g, str)] or [None]
        golds: list[_Gold] = []
        if case.gold_result_files is not None:  # CSV files: each a gold alternative
            can_execute = True
            golds = [_Gold(gold_sqls[0], t, recorded=True) for t in case.gold_result_files]
        for g in gold_sqls if not golds else ():
            golds.append(self.gold(g) if can_execute else _Gold(g, None))
        self.golds = golds
        return can_execute

    def plan(self, schema: Schema | None, pred_sql: str | None, *, exec_: bool) -> _Plan:
        """What the case scores once its golds are known, which a failure scores at 0."""
        golds = self.golds
        structure_ok = schema is not None and pred_sql is not None \
            and self.structure_possible(schema)
        planned = _planned(self.opts, exec_=exec_, structure=structure_ok)
        gold_seconds = golds[0].table.seconds if golds[0].table is not None else None
        return _Plan(planned, gold_seconds, schema if structure_ok else None)

    def failure(self, plan: _Plan, reason: str, pred_seconds: float | None) -> Scored:
        """Every planned metric at 0; Spider's table still counts the question."""
        scored = _failure(plan.planned, reason, plan.gold_seconds, pred_seconds, self.golds,
                          self.case, self.ctx)
        if plan.structure is not None:
            _spider_of_no_answer(scored, self.golds, plan.structure, self.opts)
        return scored

    def guard(self, pred_sql: str, dialect: str | None, plan: _Plan, *, read_only: bool,
              size: bool = True) -> Scored | None:
        """The prediction's size and, unless the guard is deferred or the engine's, its
        read-only check: the failure of a refused text (never executed), else None."""
        from ...sources.sqlguard import check_read_only

        try:
            if size:
                check_query_size(pred_sql, self.opts.max_query_bytes)
            if read_only:
                check_read_only(pred_sql, dialect)
        except QueryRefused as e:
            return self.failure(plan, e.reason(), None)
        return None

    def execute_prediction(self, pred: _Pred, pred_sql: str, dialect: str | None, plan: _Plan,
                           engine_guard: bool) -> Scored | None:
        """The prediction's result into ``pred.table`` (sent with the gold when it was paired):
        the failure of a query that timed out, failed or was refused, else None."""
        src = self.src
        assert src is not None
        start = time.perf_counter()
        try:
            if self.prefetched is not None and self.prefetched[0] == pred_sql:
                pred.table = self.prefetched[1]()  # ran with the gold
            else:
                pred.table = src.execute(pred_sql, **self.opts.limits)
        except SourceUnavailable:
            raise
        except QueryTimeout as e:
            return self.failure(plan, e.reason(), time.perf_counter() - start)
        except QueryEvalError as e:  # QueryFailed, QueryRefused by the engine
            seconds = time.perf_counter() - start
            if engine_guard:
                refused = self.guard(pred_sql, dialect, plan, read_only=True, size=False)
                if refused is not None:
                    return refused
            failed = self.failure(plan, e.reason(), seconds)
            if isinstance(e, PartlyRead):  # what it read before it failed, counted
                failed.read = tuple(sorted(e.tables))
            return failed
        return None

    def best(self, schema: Schema | None, planned: Sequence[str], gold_seconds: float | None,
             ) -> Scored:
        """Every gold alternative scored; the best wins. Each comparison runs under the case's
        timeout; a gold whose comparison stops undecided (over its budget or past the
        timeout) fails the case, with the metrics it planned at 0, only when no other gold
        matches (a score is never guessed, and a match is a match)."""
        case, golds, pred = self.case, self.golds, self.pred
        assert pred is not None
        timeout = self.src.timeout if self.src is not None else DEFAULT_TIMEOUT
        seconds = float(self.opts.limits.get("timeout") or timeout or DEFAULT_TIMEOUT)
        best = best_of_golds(len(golds), lambda i: self.score(golds[i], schema), seconds,
                             TIMING, "exact_set_match")
        if isinstance(best, SearchBudgetExhausted):
            return _failure(planned, best.reason(), gold_seconds,
                            pred.table.seconds if pred.table else None, golds, case, self.ctx)
        return best

    def spider2(self, scored: Scored, raw: str | None, pred_sql: str | None) -> Scored:
        """``spider2_ex`` / ``spider2_ex_aligned`` over all gold alternatives at once (the
        reference's any-gold-file-matches rule), on the SQL the reference extracts from the
        prediction (the first ```` ```sql ```` block): when that differs from the query the
        other metrics scored, it is executed on its own."""
        from ...metrics.spider2 import SPIDER2_METRIC_NAMES, extract_sql_query, spider2_scores

        case, golds, pred, src, opts = self.case, self.golds, self.pred, self.src, self.opts
        tables = [g.table for g in golds if g.table is not None]
        if len(tables) != len(golds):
            return scored
        table = pred.table if pred is not None else None
        recorded = pred is not None and pred.recorded
        reason: str | None = None
        if raw is not None and not recorded:
            ref_sql = extract_sql_query(raw)
            if ref_sql.strip() != (pred_sql or "").strip():
                scored.details["spider2_sql"] = ref_sql
                table, reason = self.execute_extra(ref_sql)
        if table is not None and table.truncated:
            reason = "truncated: the predicted result " + table.cut_by()[0]
            table = None
        if table is None:
            for name in SPIDER2_METRIC_NAMES:
                scored.metrics[name] = 0.0
            if reason:
                scored.details["spider2_reason"] = reason
            return scored
        multi = case.gold_result_multi if case.gold_result_files is not None \
            else len(tables) > 1
        empty_zero = not recorded and (src is None
                                       or source_type(src.type).empty_result_scores_zero)
        try:
            result = spider2_scores(table, tables, multi=multi,
                                    condition_cols=opts.condition_cols,
                                    ignore_order=opts.ignore_order,
                                    empty_scores_zero=empty_zero)
        except SearchBudgetExhausted as e:  # a score is never guessed
            planned = list(scored.metrics)
            return _failure(planned, e.reason(), None, None, golds, case, self.ctx)
        scored.metrics.update(result.metrics)
        if result.reason:
            scored.details["spider2_reason"] = result.reason
        return scored

    def execute_extra(self, sql: str) -> tuple[ResultTable | None, str | None]:
        """Execute a prediction text other than the scored one (guarded): table or reason."""
        src, opts = self.src, self.opts
        if src is None or not src.executable:
            return None, "no executable datasource for the SQL the reference extracts"
        from ...sources.sqlguard import check_read_only

        dialect = src.dialect

        def check() -> None:
            check_query_size(sql, opts.max_query_bytes)
            check_read_only(sql, dialect)

        got = execute_or_reason(src, sql, opts.limits, check=check)
        return (None, got) if isinstance(got, str) else (got, None)

    def neighbours(self, scored: Scored, settings: Settings) -> None:
        """``--queryeval-neighbours``: a passing prediction searched for a counterexample
        database (:mod:`...neighbours.check`): ``neighbour_ex``, ``details.neighbours`` and,
        when one is found, the diff lines that show it."""
        from ...metrics.tsse_sql import order_matters
        from ...neighbours.check import check

        index = int(scored.details.get("gold_index") or 0)
        gold = self.golds[index] if index < len(self.golds) else None
        gold_sql = gold.sql if gold is not None and not gold.recorded else None
        pred = self.pred
        pred_sql = pred.sql if pred is not None and not pred.recorded else None
        metrics, info, diff = check(
            self.case, settings, self.src, gold_sql, pred_sql,
            scored.metrics.get("execution_accuracy"), order_matters(gold_sql or ""),
            self.opts.compare, self.opts.tie_aware and not self.opts.test_suite_rewrite,
            scope=self.ctx.shared("neighbours-scope", lambda: os.urandom(8).hex()))
        scored.metrics.update(metrics)
        scored.details["neighbours"] = info
        scored.diff.extend(diff)

    # -- pieces ---------------------------------------------------------------------------------

    def gold(self, sql: str | None) -> _Gold:
        """One gold alternative's result: recorded, or executed (trusted, cached)."""
        case, src, ctx, opts = self.case, self.src, self.ctx, self.opts
        if case.gold_result is not None:
            if case.gold_result.truncated:
                raise GoldError("the recorded gold result is marked truncated")
            return _Gold(sql, case.gold_result, recorded=True)
        if sql is None or src is None:
            raise GoldError("no gold query to execute")
        pair = getattr(src, "execute_pair", None)
        predicted, self.pair_with = self.pair_with, None  # with the first gold executed only
        if predicted is None or pair is None:
            table, cached = run_gold(src, sql, ctx, GOLD_CACHE, opts.limits)
            return _Gold(sql, table, cached)

        def execute() -> ResultTable:
            """The gold and the prediction in one round trip, when the source does that."""
            both = pair(sql, predicted, **opts.limits)
            if both is None:
                return src.execute(sql, trusted=True, **opts.limits)
            self.prefetched = (predicted, both[1])
            return both[0]  # type: ignore[no-any-return]

        table, cached = run_gold(src, sql, ctx, GOLD_CACHE, opts.limits, execute=execute)
        return _Gold(sql, table, cached)

    @staticmethod
    def prefetch(case: Case, prediction: object, ctx: Context) -> bool:
        """Send ahead the round trip :meth:`gold` will make for ``case`` (its first gold and
        its prediction, :meth:`~...sources.sandboxed.SandboxedFileSource.prefetch_pair`), so
        the worker runs it while the case before is scored. The same steps as
        :meth:`SqlKind.evaluate` and :meth:`evaluate` find the two texts and limits; only
        where that is exact and the queries read nothing that changes before the case runs:
        no task, clock or recorded result, a gold the cache does not hold (:func:`run_gold`
        would not execute it; then the prediction alone). False when nothing was sent."""
        from .._query import gold_cache_key

        if not SqlKind.sends_ahead(case, ctx):
            return False  # first: a source that runs nothing ahead (spider-schema) costs nothing
        case, _ = with_dialect_gold(case)
        prediction = dialect_prediction(case, prediction)
        case, clock = pin_golds(case)
        if clock is not None or case.source_spec is None \
                or any(key in case.options for key in ("task", "setup", "cleanup", "checks")):
            return False
        pred_sql, _ = fenced_prediction_text(prediction, case, "SQL",
                                             ("sql", "query", "predicted"))
        golds = [g for g in case.golds if isinstance(g, str)]
        if pred_sql is None or not golds:
            return False
        opts = _parse_options(case)
        src = ctx.source(case)
        prefetch_pair = getattr(src, "prefetch_pair", None)
        if prefetch_pair is None or not _paired(case, src, pred_sql, opts):
            return False
        if getattr(ctx, "caching", True) \
                and ctx.cache_get(GOLD_CACHE, gold_cache_key(src, golds[0])) is not None:
            # the gold is not run (a warm rerun): the prediction still is (issue 53)
            prefetch_query = getattr(src, "prefetch_query", None)
            return prefetch_query is not None and bool(prefetch_query(pred_sql, **opts.limits))
        return bool(prefetch_pair(golds[0], pred_sql, **opts.limits))

    def score(self, gold: _Gold, schema: Schema | None) -> Scored:
        """The prediction against one gold alternative: each metric of :data:`_SQL_METRICS`
        that applies, in the table's order (the order records list them), then the labels."""
        pred, src = self.pred, self.src
        assert pred is not None
        comparison = _Comparison(self, gold, pred, schema)
        applies = {"tables": gold.table is not None and pred.table is not None,
                   "schema": schema is not None and gold.sql is not None and pred.sql is not None}
        applies["timings"] = applies["tables"]
        for metric in _SQL_METRICS:
            if metric.compute is not None and applies.get(metric.on, False) \
                    and metric.wanted(self.opts):
                comparison.metrics.update(metric.compute(comparison))
        labels = comparison.labels
        if not applies["schema"] and self.no_structure is not None:
            comparison.details["structure_not_scored"] = self.no_structure
        if not applies["schema"] and gold.sql is not None:
            h = _hardness(gold.sql)
            if h:
                labels["hardness"] = h
        if gold.sql is not None:
            _label_sql_hardness(labels, gold.sql, src.dialect if src is not None else None,
                                self.ctx)
        compared = (gold.sql or "", gold.table, pred.sql or "", pred.table) \
            if gold.table is not None and pred.table is not None else None  # for a judge
        return Scored(comparison.metrics, labels, comparison.diff, comparison.details,
                      signature=comparison.signature, relaxed=comparison.relaxed,
                      compared=compared)

    def ties(self, gold: _Gold, metrics: dict[str, float], details: dict[str, Any]) -> list[str]:
        """Tie-aware ``execution_accuracy`` (:mod:`.ties`): when the gold's ORDER BY leaves
        rows tied, a prediction that orders or picks them differently is correct. Sets EX to 1
        then (``details.execution_accuracy_strict`` keeps the test-suite value) and returns the
        diff lines that show the ties; a gold that cannot be analysed leaves EX as it was,
        with the reason in ``details.ties.skipped``."""
        from ...metrics import ties

        pred, src, ctx, opts = self.pred, self.src, self.ctx, self.opts
        assert pred is not None
        if src is None or not src.executable or not gold.sql \
                or gold.recorded or gold.table is None or pred.table is None \
                or not ties.could_match(gold.table.rows, pred.table.rows):
            return []
        query = ties.keyed_query(gold.sql, src.dialect)
        if isinstance(query, str):
            details["ties"] = {"skipped": query}
            return []
        def probe(sql: str) -> Sequence[Any] | None:
            try:
                return run_gold(src, sql, ctx, GOLD_CACHE, opts.limits)[0].rows
            except SourceUnavailable:
                raise
            except QueryEvalError:
                return None

        keyed = ties.probed_rows(query, probe)  # the window and one row past it
        try:
            if keyed is None:
                keyed = run_gold(src, query.sql, ctx, GOLD_CACHE, opts.limits)[0].rows
        except SourceUnavailable:
            raise
        except QueryEvalError as e:
            details["ties"] = {"skipped": f"the keyed gold failed: {e.reason()}"}
            return []
        return ties.accept_ties(query, keyed, gold.table.rows, pred.table.rows,
                                opts.compare.normalise, metrics, details,
                                strict="test-suite comparison")

    def tsse_ex(self, gold: _Gold, ordered: bool) -> tuple[float, str] | None:
        """``test_suite_rewrite``: EX as the Spider test-suite evaluator computes it, on both
        texts with DISTINCT removed (unless ``keep_distinct``) and ``'> ='`` repaired;
        re-execute only when that changes a text. Opt-in: the removal changes what the
        queries mean (``count(DISTINCT x)`` becomes ``count(x)``)."""
        pred, src, ctx, opts = self.pred, self.src, self.ctx, self.opts
        assert pred is not None
        if src is None or not src.executable or not gold.sql or not pred.sql \
                or gold.recorded or pred.recorded:
            return None
        from ...metrics.table import compare_tables
        from ...metrics.tsse_sql import tsse_prepare

        g_text = tsse_prepare(gold.sql, keep_distinct=opts.keep_distinct)
        p_text = tsse_prepare(pred.sql, keep_distinct=opts.keep_distinct)
        if g_text == gold.sql and p_text == pred.sql:
            return None
        assert gold.table is not None
        assert pred.table is not None
        g_table = gold.table
        if g_text != gold.sql:
            g_table, _ = run_gold(src, g_text, ctx, GOLD_CACHE, opts.limits)
        p_table = pred.table
        if p_text != pred.sql:
            from ...sources.sqlguard import check_read_only

            dialect = src.dialect
            got = execute_or_reason(src, p_text, opts.limits,
                                    check=lambda: check_read_only(p_text, dialect))
            if isinstance(got, str):
                return 0.0, f"test-suite text failed: {got}"
            p_table = got
            if p_table.truncated:
                return 0.0, "test-suite text: truncated"
        ex = compare_tables(g_table, p_table, order_matters=ordered, compare=opts.compare).ex
        what = "DISTINCT kept" if opts.keep_distinct else "DISTINCT removed"
        return (1.0 if ex else 0.0), f"test-suite texts ({what})"

    def soft_ex(self, gold: _Gold) -> tuple[float, dict[str, Any]]:
        """BIRD Soft EX (LiveSQLBench ``test_case_default``): comments, DISTINCT and ROUND
        removed from both texts, which are executed again when that changes them (prediction
        first, as the reference does), then the rows compared after rounding.

        Where the reference would score 0 (the rewritten text fails, an empty result) this
        scores 0 with the reason; recorded results are compared as recorded (there is no text
        to rewrite)."""
        from ...metrics.soft_ex import REFERENCE, soft_ex_rewrite, soft_ex_score
        from ...sources.sqlguard import check_read_only

        pred, src, ctx, opts = self.pred, self.src, self.ctx, self.opts
        assert pred is not None
        assert gold.table is not None
        assert pred.table is not None
        info: dict[str, Any] = {"order": opts.soft_ex_order, "reference": REFERENCE}
        g_table, p_table = gold.table, pred.table
        executable = src is not None and src.executable
        if gold.recorded or pred.recorded or not executable or not gold.sql or not pred.sql:
            info["on"] = "recorded results (no SQL rewrite)"
        else:
            assert src is not None
            info["on"] = "rewritten texts"
            dialect = src.dialect
            p_text, g_text = soft_ex_rewrite(pred.sql), soft_ex_rewrite(gold.sql)
            if p_text != pred.sql:
                info["predicted_sql"] = p_text
                got = execute_or_reason(src, p_text, opts.limits,
                                        check=lambda: check_read_only(p_text, dialect))
                if isinstance(got, str):
                    return 0.0, {**info, "reason": f"the rewritten prediction: {got}"}
                p_table = got
                if p_table.truncated:
                    return 0.0, {**info, "reason": "the rewritten prediction's result is "
                                                  f"truncated ({p_table.cut_by()[1]})"}
            if g_text != gold.sql:
                info["gold_sql"] = g_text
                try:
                    check_read_only(g_text, dialect)
                    g_table, _ = run_gold(src, g_text, ctx, GOLD_CACHE, opts.limits)
                except SourceUnavailable:
                    raise
                except QueryEvalError as e:  # GoldError, QueryRefused: the reference says 0
                    return 0.0, {**info, "reason": f"the rewritten gold: {e.reason()}"}
        score, why = soft_ex_score(g_table.rows, p_table.rows, order=opts.soft_ex_order)
        if why is not None:
            info["reason"] = why
        return score, info

    def efficiency(self, gold: _Gold, *, correct: bool,
                   details: dict[str, Any]) -> dict[str, float]:
        """BIRD VES / R-VES: time gold and prediction ``iterations`` times each."""
        from ...metrics import efficiency

        pred, src, opts = self.pred, self.src, self.opts
        assert pred is not None
        assert src is not None
        assert gold.sql is not None
        assert pred.sql is not None
        assert opts.iterations is not None
        gold_times: list[float] = []
        pred_times: list[float] = []
        if correct:
            try:
                for _ in range(opts.iterations):
                    gold_times.append(src.execute(gold.sql, trusted=True, **opts.limits).seconds)
                    pred_times.append(src.execute(pred.sql, **opts.limits).seconds)
            except SourceUnavailable:
                raise
            except QueryEvalError as e:
                details["efficiency_error"] = e.reason()
                correct = False
        out = efficiency.efficiency_metrics(gold_times, pred_times, correct=correct)
        details["efficiency"] = {k: v for k, v in out.items() if k not in EFFICIENCY}
        return {k: float(v) for k, v in out.items() if k in EFFICIENCY}

    def schema(self) -> Any:
        """The Spider schema of the case's source (built once per session), or None."""
        src, ctx, opts = self.src, self.ctx, self.opts
        if opts.structure == "off" or src is None:
            if opts.structure == "required":
                raise GoldError("structure: true needs a datasource with a schema")
            return None
        type_name = src.type
        entry = source_type(type_name)
        from ...metrics.spider import Schema

        if entry.schema_only:
            db = opts.db_id or src.db_id
            return ctx.shared(f"sql-schema:{src.fingerprint()}:{db}",
                              lambda: src.schema(db))  # type: ignore[attr-defined]
        if entry.sqlite_file and hasattr(src, "path"):
            path = src.path
            return ctx.shared(f"sql-schema:{src.fingerprint()}",
                              lambda: Schema.from_sqlite(path))
        if hasattr(src, "tables"):
            def build() -> Any:
                tables, fks = src.tables()
                return Schema.from_tables(tables, [(f"{t}.{c}", f"{rt}.{rc}")
                                                   for t, c, rt, rc in fks])
            return ctx.shared(f"sql-schema:{src.fingerprint()}", build)
        if opts.structure == "required":
            raise GoldError(f"structure: true, but datasource type {type_name!r} has no schema")
        return None

    def structure_possible(self, schema: Schema) -> bool:
        """Auto mode skips structure metrics when a gold is outside the Spider grammar;
        ``structure: true`` makes that an error of the suite."""
        from ...metrics.spider import hardness

        opts = self.opts
        for g in self.golds:
            if g.sql is None:
                return False
            try:
                hardness(self.spider_text(g.sql, schema), schema)
            except GoldError as exc:
                if opts.structure == "required":
                    raise
                self.no_structure = f"the gold is outside Spider's grammar: {exc}"
                return False
        return True

    def spider_text(self, sql: str, schema: Schema) -> str:
        """``sql`` as Spider's parser is given it: as written on a Spider artifact, its
        sqlglot normalisation on the user's own database when the grammar rejects the text
        as written (:mod:`.spider_text`)."""
        src = self.src
        if src is None or source_type(src.type).schema_only:
            return sql
        return for_spider(sql, schema, _glot_dialect(src.dialect))[0]


# -- helpers --------------------------------------------------------------------------------------


def _validate_task(case: Case) -> list[tuple[str, str]]:
    """A dml/ddl case: its gold is a list of statements run in order (not alternatives)."""
    from ...tasks.case import validate as validate_task

    problems: list[tuple[str, str]] = []
    if "task" not in case.options:
        problems.append(("task", "setup, cleanup and checks belong to a task: dml or task: "
                                 "ddl case"))
    elif case.gold is None:
        problems.append(("gold", f"a task: {case.options['task']} case needs 'gold' (a "
                                 "statement or a list of statements)"))
    else:
        from ...tasks.case import statements

        try:
            statements(case.gold, "gold")
        except ConfigError as exc:
            problems.append((exc.key or "gold", exc.message))
    try:
        _conditions_order(case.options.get("conditions"))
    except ConfigError as exc:
        problems.append((exc.key or "conditions", exc.message))
    return problems + validate_task(case)


def _paired(case: Case, src: DataSource | None, pred_sql: str, opts: _Options) -> bool:
    """Whether the prediction goes to the worker with the case's first gold, in one round
    trip (:meth:`_SqlRun.gold`; and so may be sent ahead, :meth:`_SqlRun.prefetch`): an
    executable source whose engine refuses by itself whatever does not read, both queries
    executed (nothing recorded), a text that starts like a query and is not too long."""
    from ...sources.sqlguard import query_led

    return src is not None and src.executable and bool(getattr(src, "engine_guard", False)) \
        and case.predicted_result is None and case.gold_result is None \
        and case.gold_result_files is None and query_led(pred_sql) and _size_ok(pred_sql, opts)


def _size_ok(sql: str, opts: _Options) -> bool:
    """Whether ``sql`` passes :func:`check_query_size` (a longer one is refused unexecuted)."""
    try:
        check_query_size(sql, opts.max_query_bytes)
    except QueryRefused:
        return False
    return True


def _relaxations(gold: ResultTable, pred: ResultTable, ordered: bool, compare: CompareOptions,
                 base: TableComparison | None) -> Callable[..., dict[str, dict[str, float]]]:
    """Near-miss attribution (:mod:`...rules.nearmiss`), computed only if the case fails, from the
    case's own comparison ``base`` (not made again)."""
    def relaxed(names: frozenset[str] | None = None) -> dict[str, dict[str, float]]:
        from ...rules.nearmiss import relaxed_metrics

        return relaxed_metrics(gold, pred, order_matters=ordered, compare=compare, base=base,
                               names=names)
    return relaxed


# -- the metrics: one table feeds scoring, threshold names and a failed case's zeros --------------


@dataclass
class _Comparison:
    """One gold alternative being compared with the prediction: what each metric of
    :data:`_SQL_METRICS` reads, and the details, diff lines and labels they add beside their
    scores (their scores are what each returns, merged in the table's order)."""

    run: _SqlRun
    gold: _Gold
    pred: _Pred
    schema: Schema | None
    metrics: dict[str, float] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    diff: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    #: Set by the result-table metrics: what repeats compare, and the near-miss relaxations.
    signature: str | None = None
    relaxed: Callable[..., dict[str, dict[str, float]]] | None = None

    @property
    def opts(self) -> _Options:
        return self.run.opts

    def tables(self) -> tuple[ResultTable, ResultTable]:
        """Both result tables (a ``tables`` metric runs only when both exist)."""
        assert self.gold.table is not None
        assert self.pred.table is not None
        return self.gold.table, self.pred.table


#: When a metric is computed: ``tables`` (both result tables exist; a refused, failed, timed
#: out or truncated prediction scores it 0), ``schema`` (both texts and the source's Spider
#: schema; 0 likewise when the structure was planned), ``timings`` (both tables; a failure
#: records the seconds it measured instead of a 0) or ``case`` (a later step of the case sets
#: it: listed here so that a threshold on it is valid).
MetricOn = Literal["tables", "schema", "timings", "case"]


def _always(opts: _Options) -> bool:
    return True


@dataclass(frozen=True)
class SqlMetric:
    """One entry of :data:`_SQL_METRICS`: the SQL kind's scoring, its threshold names and a
    failed case's zeros all read it, so a metric cannot be scored but refused as a threshold,
    or vanish from failed cases (pytest-regressions' ``perform_regression_check`` shape: the
    loop is generic, what differs is injected)."""

    #: The names it sets; a callable so that the metric's module is imported when first asked.
    names: Callable[[], Sequence[str]]
    on: MetricOn
    #: Its scores for one gold alternative (details, diff lines and labels go on the
    #: comparison); None for a ``case`` metric, set elsewhere.
    compute: Callable[[_Comparison], Mapping[str, float]] | None = None
    #: Whether the case's options ask for it (an opt-in metric); default: always.
    wanted: Callable[[_Options], bool] = _always
    #: Its place among a failed case's zeros. A failed case has listed the result-table
    #: metrics, then the opt-in ones, then the structure's, an order the reports keep; a new
    #: metric keeps the default: after those, in the table's order.
    failed_rank: int = 99


def _names(module: str, attr: str) -> Callable[[], tuple[str, ...]]:
    """The names tuple ``attr`` of ``module`` (relative to this package), imported when asked
    (then kept: the names of a module do not change)."""
    got: list[tuple[str, ...]] = []

    def names() -> tuple[str, ...]:
        if not got:
            got.append(tuple(getattr(importlib.import_module(module, __package__), attr)))
        return got[0]
    return names


def _on_tables(module: str, func: str) -> Callable[[_Comparison], Mapping[str, float]]:
    """A metric that is a pure function of the two result tables (``func(gold, pred) ->
    {name: score}`` in ``module``), imported when first computed: the shape of a home-grown
    metric (docs/metrics-sql.md)."""
    def compute(comparison: _Comparison) -> Mapping[str, float]:
        metric: Callable[[ResultTable, ResultTable], Mapping[str, float]] = getattr(
            importlib.import_module(module, __package__), func)
        return metric(*comparison.tables())
    return compute


def _table_metrics(c: _Comparison) -> Mapping[str, float]:
    """EX (tie-aware, or on the test-suite texts), BIRD EX, Soft-F1, Denodo...
    (:mod:`...metrics.table`), with the row diff of a mismatch."""
    from ...metrics.table import compare_tables
    from ...metrics.tsse_sql import order_matters, tsse_prepare

    run, gold, opts = c.run, c.gold, c.opts
    gold_table, pred_table = c.tables()
    gold_text = gold.sql or ""
    if opts.test_suite_rewrite and gold.sql:
        gold_text = tsse_prepare(gold.sql, keep_distinct=opts.keep_distinct)
    ordered = order_matters(gold_text)
    c.signature = pred_table.signature(ordered)
    cmp = compare_tables(gold_table, pred_table, order_matters=ordered, compare=opts.compare)
    metrics = dict(cmp.metrics())
    c.details.update(cmp.details())
    c.relaxed = _relaxations(gold_table, pred_table, ordered, opts.compare, cmp)
    tsse = run.tsse_ex(gold, ordered) if opts.test_suite_rewrite else None
    note = "texts as written"
    if tsse is not None:
        metrics["execution_accuracy"], note = tsse
        c.details["execution_accuracy_on"] = note
    if (metrics["execution_accuracy"] != 1.0 and ordered and opts.tie_aware
            and not opts.test_suite_rewrite):
        c.diff.extend(run.ties(gold, metrics, c.details))
    if metrics["execution_accuracy"] != 1.0:
        # The row diff of the texts as written; when only the test-suite texts differ
        # (``test_suite_rewrite``: DISTINCT removed), say so instead of showing nothing.
        c.diff.extend(cmp.diff() or [f"execution_accuracy: 0 on the {note}"])
    return metrics


def _spider2_placeholder(c: _Comparison) -> Mapping[str, float]:
    """Spider 2.0's scores are computed over all golds at once (:meth:`_SqlRun.spider2`);
    each alternative holds their place."""
    from ...metrics.spider2 import SPIDER2_METRIC_NAMES

    return dict.fromkeys(SPIDER2_METRIC_NAMES, 0.0)


def _alignment(c: _Comparison) -> Mapping[str, float]:
    from ...metrics.alignment import alignment_metrics

    return alignment_metrics(*c.tables(), gold_query=c.gold.sql, pred_query=c.pred.sql,
                             arity_from=c.opts.arity_from, kind="sql")


def _soft_ex(c: _Comparison) -> Mapping[str, float]:
    score, info = c.run.soft_ex(c.gold)
    c.details["soft_ex"] = info
    if score != 1.0 and "reason" in info:
        c.diff.append(f"soft_ex: 0: {info['reason']}")
    return {"soft_ex": score}


def _timings(c: _Comparison) -> Mapping[str, float]:
    gold_table, pred_table = c.tables()
    c.details["gold_cached"] = c.gold.cached
    return {"gold_seconds": gold_table.seconds, "predicted_seconds": pred_table.seconds}


def _efficiency(c: _Comparison) -> Mapping[str, float]:
    if c.run.src is None or not c.gold.sql or not c.pred.sql:
        return {}
    return c.run.efficiency(c.gold, correct=c.metrics["bird_ex"] == 1.0, details=c.details)


def _structure(c: _Comparison) -> Mapping[str, float]:
    """Spider's component matching and exact set match, with the gold's hardness."""
    from ...metrics.spider import structure_scores

    assert c.gold.sql is not None
    assert c.pred.sql is not None
    assert c.schema is not None
    s = structure_scores(c.run.spider_text(c.gold.sql, c.schema),
                         c.run.spider_text(c.pred.sql, c.schema), c.schema,
                         legacy_from_check=c.opts.legacy_from_check)
    c.labels["hardness"] = s.hardness
    c.details["spider"] = s.to_details()  # for the per-hardness official aggregation
    if s.pred_parse_error:
        c.details["structure_parse_error"] = s.pred_parse_error
    c.diff.extend(f"structure: {line}" for line in s.diff)
    return s.metrics


#: Where the reference metrics live: entries name modules absolutely (a folder move keeps them).
_METRICS = "pytest_queryeval.metrics"

#: Every metric the SQL kind scores, in the order it computes them (the order a scored case's
#: record lists them). A per-case metric is one module plus one line here (docs/metrics-sql.md,
#: "Where a home-grown SQL metric belongs").
_SQL_METRICS: tuple[SqlMetric, ...] = (
    SqlMetric(_names(f"{_METRICS}.table", "TABLE_METRIC_NAMES"), "tables", _table_metrics,
              failed_rank=0),
    SqlMetric(_names(f"{_METRICS}.spider2", "SPIDER2_METRIC_NAMES"), "tables",
              _spider2_placeholder, wanted=lambda opts: opts.spider2, failed_rank=2),
    SqlMetric(_names(f"{_METRICS}.alignment", "ALIGNMENT_METRIC_NAMES"), "tables", _alignment,
              failed_rank=1),
    SqlMetric(_names(f"{_METRICS}.soft_ex", "SOFT_EX_METRIC_NAMES"), "tables", _soft_ex,
              wanted=lambda opts: opts.soft_ex, failed_rank=4),
    SqlMetric(_names(f"{_METRICS}.reliability", "EHRSQL_METRIC_NAMES"), "tables",
              _on_tables(f"{_METRICS}.reliability", "ehrsql_ex"), wanted=lambda opts: opts.ehrsql),
    SqlMetric(lambda: TIMING, "timings", _timings),
    SqlMetric(lambda: EFFICIENCY, "tables", _efficiency,
              wanted=lambda opts: opts.iterations is not None, failed_rank=3),
    SqlMetric(_names(f"{_METRICS}.spider", "METRICS"), "schema", _structure, failed_rank=5),
    SqlMetric(lambda: ("schema_hallucination", RELAXED_EX), "case"),  # ._optin
    SqlMetric(lambda: ("neighbour_ex",), "case"),  # :meth:`_SqlRun.neighbours`
    SqlMetric(_names("pytest_queryeval.tasks.case", "TASK_METRICS"), "case"),  # task: dml|ddl
    SqlMetric(lambda: (JUDGE_EX,), "case"),  # the LLM judge (:mod:`...judge`)
)


T = TypeVar("T")

#: What :func:`_metric_names` and :func:`_planned` built, per metric table (the table itself
#: beside it: a table replaced, as a test may, is never answered from the one before).
_BUILT: dict[tuple[Any, ...], tuple[tuple[SqlMetric, ...], Any]] = {}


def _per_table(key: tuple[Any, ...], build: Callable[[tuple[SqlMetric, ...]], T]) -> T:
    """``build(_SQL_METRICS)`` once per ``key`` and table. Keyed by the table's identity, not
    its value: hashing the table's frozen entries was 50 us a call, twice a case (issue 61)."""
    table = _SQL_METRICS
    full = (id(table), *key)
    got = _BUILT.get(full)
    if got is None or got[0] is not table:
        got = _BUILT[full] = (table, build(table))
    return cast(T, got[1])


def _is_sql_metric(name: str) -> bool:
    """Whether an entry of :data:`_SQL_METRICS` sets ``name``, asked in the table's order and
    stopping at the first that does: a threshold on ``bird_ex`` or ``execution_accuracy`` is
    answered by the table metrics' module, which every run imports anyway. Building the whole
    set imported every metric's module at collection (the DML/DDL tasks' engines and catalogs
    among them) for a suite that scores none of them (issue 61 item 4). An unknown name still
    asks every entry (its error then lists them all)."""
    return any(name in metric.names() for metric in _SQL_METRICS)


def _metric_names() -> frozenset[str]:
    return _per_table(("names",), _names_of)


def _names_of(table: tuple[SqlMetric, ...]) -> frozenset[str]:
    return frozenset(name for metric in table for name in metric.names())


def _planned(opts: _Options, *, exec_: bool, structure: bool) -> tuple[str, ...]:
    """The metrics a case of these options scores (each at 0 when it fails)."""
    wanted = tuple(metric.wanted(opts) for metric in _SQL_METRICS)
    return _per_table(("planned", wanted, exec_, structure),
                      lambda table: _planned_names(table, wanted, exec_, structure))


def _planned_names(table: tuple[SqlMetric, ...], wanted: tuple[bool, ...], exec_: bool,
                   structure: bool) -> tuple[str, ...]:
    """Once per combination: the imports and lists were built again for every case."""
    on = {"tables": exec_, "schema": structure}
    chosen = sorted((metric.failed_rank, index) for index, metric in enumerate(table)
                    if wanted[index] and on.get(metric.on, False))
    return tuple(name for _, index in chosen for name in table[index].names())


def _failure(planned: Sequence[str], reason: str, gold_seconds: float | None,
             pred_seconds: float | None, golds: list[_Gold], case: Case,
             ctx: Context | None = None) -> Scored:
    """Every metric the case would have had, at 0, with the reason."""
    metrics = {name: 0.0 for name in planned}
    if gold_seconds is not None:
        metrics["gold_seconds"] = gold_seconds
    if pred_seconds is not None:
        metrics["predicted_seconds"] = pred_seconds
    details: dict[str, Any] = {"gold_cached": golds[0].cached} if golds else {}
    first = golds[0].sql if golds else None
    h = _hardness(first) if first else None
    labels = {"hardness": h} if h else {}
    if first:
        _label_sql_hardness(labels, first, _spec_dialect(case.source_spec), ctx)
    return Scored(metrics, labels, [], details, reason=reason)


def _spider_of_no_answer(scored: Scored, golds: list[_Gold], schema: Schema,
                         opts: _Options) -> None:
    """A prediction that never reached the structural scoring (empty, refused, failed, timed
    out, truncated) is still one question of Spider's table: its evaluator scores a text it
    cannot parse as the empty query against the gold and counts it in the gold's hardness
    (``evaluation.py``), so the table's denominators are every question, as the reference's."""
    from ...metrics.spider import structure_scores

    gold_sql = golds[0].sql if golds else None
    if not gold_sql:
        return
    try:
        result = structure_scores(gold_sql, "", schema, legacy_from_check=opts.legacy_from_check)
    except (QueryEvalError, ValueError, RecursionError):  # a gold outside the grammar
        return
    scored.details["spider"] = result.to_details()


def _hardness(sql: str) -> str | None:
    from ...metrics.spider import hardness

    try:
        return str(hardness(sql))
    except (QueryEvalError, ValueError, RecursionError):
        return None


def _sql_hardness(sql: str, dialect: str | None) -> str | None:
    """The seq2SQL document's hardness on a sqlglot parse (None when sqlglot cannot parse)."""
    from ...metrics.sql_hardness import cached_sql_hardness

    return cached_sql_hardness(sql, dialect)


def _label_sql_hardness(labels: dict[str, str], sql: str, dialect: str | None,
                        ctx: Context | None = None) -> None:
    h = _sql_hardness(sql, dialect) if ctx is None else _kept_sql_hardness(sql, dialect, ctx)
    if h is not None:
        labels["sql_hardness"] = h


def _kept_sql_hardness(sql: str, dialect: str | None, ctx: Context) -> str | None:
    """:func:`_sql_hardness` of a gold, kept in the session's cache where it needs sqlglot
    (issue 53: a rerun imported sqlglot, some 0.2 s, and parsed again golds that had not
    changed, to label them); the key names the sqlglot version that counted it."""
    import json

    from ...metrics.sql_hardness import spider_level, sqlglot_version

    fast = spider_level(sql, dialect)
    if fast is None and not getattr(ctx, "labels_read", True):
        return None  # a label for nobody: sqlglot is not imported for it
    if fast is not None or not getattr(ctx, "caching", True):
        return fast if fast is not None else _sql_hardness(sql, dialect)
    key = json.dumps([sqlglot_version(), dialect, sql])
    hit = ctx.cache_get(HARDNESS_CACHE, key)
    if isinstance(hit, dict) and isinstance(hit.get("level"), str | None):
        return cast("str | None", hit.get("level"))
    level = _sql_hardness(sql, dialect)
    ctx.cache_set(HARDNESS_CACHE, key, {"level": level})
    return level


def _means(spec: Mapping[str, Any] | None) -> bool:
    """Spider's parser is given what a query means (:mod:`.spider_text`): every source but a
    Spider artifact (a schema-only ``spider-schema`` source), which keeps the reference's."""
    return bool(spec) and not source_type((spec or {}).get("type")).schema_only


def _glot_dialect(dialect: str | None) -> str | None:
    from ...sources.sqlguard import sqlglot_dialect

    return dialect if dialect in (None, "sqlite", "duckdb") else sqlglot_dialect(dialect)


def _spec_dialect(spec: Mapping[str, Any] | None) -> str | None:
    """The sqlglot dialect of a datasource spec, known at collection (None: generic SQL)."""
    if not spec:
        return None
    from ...sources.dialects import dialect_of
    from ...sources.sqlguard import sqlglot_dialect

    dialect = dialect_of(spec)
    return dialect if dialect in ("sqlite", "duckdb") else sqlglot_dialect(dialect)


#: The last options :func:`_parse_options` read, by the identity of what they are read from
#: (the objects are kept with the result, so an identity is never another object's): a case's
#: options were read when it was collected, again when its queries were sent ahead and again
#: when it ran (issue 53). The copies :func:`with_dialect_gold` and :func:`pin_golds` make of a
#: case share these objects.
_PARSED: dict[tuple[int, int, int], tuple[tuple[object, ...], tuple[bool, ...], _Options]] = {}
#: The thresholds :func:`_read_options` reads options from.
_OPTION_THRESHOLDS = ("soft_ex", "ehrsql_ex", "spider2_ex", "spider2_ex_aligned")
#: A suite's cases are read in order at collection and run in the same order later: a bound
#: above the suite's size keeps every reading; a larger suite reads a case's options twice.
_PARSED_MAX = 4096
#: The reading of a case with no option, no gold result file and none of the thresholds
#: :data:`_OPTION_THRESHOLDS`: the same for every such case.
_PLAIN: _Options | None = None


def _parse_options(case: Case) -> _Options:
    """Validate and normalise the case options (ConfigError names the key), once per case:
    the result is shared by its readers, which never change it."""
    thresholds = case.thresholds
    held = (case.options, thresholds, case.gold_result_files)
    key = (id(held[0]), id(held[1]), id(held[2]))
    # a kind's default threshold is added to the mapping after collection: the names read
    # below are part of what the reading depends on
    asked = tuple(name in thresholds for name in _OPTION_THRESHOLDS)
    if not case.options and case.gold_result_files is None and not any(asked):
        # most cases set no option: they share one reading, so a large suite's memo holds
        # only the cases that do (a collected case's memory, tests/collection)
        from ...metrics.table import CompareOptions

        global _PLAIN
        # a run that imports the metrics anew (pytester's in-process runs restore
        # sys.modules) reads anew: the reading holds an instance of their class
        if _PLAIN is None or type(_PLAIN.compare) is not CompareOptions:
            _PLAIN = _read_options(case)
        return _PLAIN
    known = _PARSED.get(key)
    if known is not None and known[1] == asked \
            and all(a is b for a, b in zip(known[0], held, strict=True)):
        return known[2]
    opts = _read_options(case)
    _PARSED[key] = (held, asked, opts)
    while len(_PARSED) > _PARSED_MAX:  # the oldest first (a dict keeps insertion order)
        with contextlib.suppress(KeyError, StopIteration, RuntimeError):  # another thread
            del _PARSED[next(iter(_PARSED))]
    return opts


def _read_options(case: Case) -> _Options:
    o = case.options
    check_optin(case)
    opts = _Options(compare_options(o))
    _read_structure(o.get("structure", "auto"), opts)
    for key in ("test_suite_rewrite", "keep_distinct", "tie_aware"):
        flag = o.get(key, getattr(opts, key))
        if not isinstance(flag, bool):
            raise ConfigError("must be true or false", key=key)
        setattr(opts, key, flag)
    arity = o.get("arity_from", "result")
    if arity not in ("result", "query"):
        raise ConfigError("must be 'result' (column count of the results) or 'query'",
                          key="arity_from")
    opts.arity_from = "query" if arity == "query" else "result"
    eff = o.get("efficiency")
    if eff is not None:
        opts.iterations = _read_iterations(eff)
    db_id = o.get("db_id")
    if db_id is not None and not isinstance(db_id, str):
        raise ConfigError("must be a string", key="db_id")
    opts.db_id = db_id
    opts.limits = limits(o)
    opts.max_query_bytes = max_query_bytes(o)
    if "conditions" in o:
        opts.soft_ex_order = _conditions_order(o["conditions"])
    opts.soft_ex = "conditions" in o or "soft_ex" in case.thresholds
    opts.ehrsql = "ehrsql_ex" in case.thresholds
    _read_spider2(case, opts)
    return opts


def _read_structure(structure: object, opts: _Options) -> None:
    """``structure:`` (auto, true, false or ``{legacy_from_check: bool}``) into ``opts``."""
    if isinstance(structure, dict):
        unknown = set(structure) - {"legacy_from_check"}
        if unknown:
            raise ConfigError(f"unknown option(s) {', '.join(sorted(map(str, unknown)))}; "
                              "known: legacy_from_check", key="structure")
        legacy = structure.get("legacy_from_check", False)
        if not isinstance(legacy, bool):
            raise ConfigError("must be true or false", key="structure.legacy_from_check")
        opts.structure, opts.legacy_from_check = "required", legacy
    elif structure is True:
        opts.structure = "required"
    elif structure is False:
        opts.structure = "off"
    elif structure != "auto":
        raise ConfigError("must be auto, true, false or {legacy_from_check: bool}",
                          key="structure")


def _read_iterations(eff: object) -> int:
    """``efficiency: {iterations: N}``: bounded, since each iteration runs both queries."""
    if not isinstance(eff, dict) or set(eff) - {"iterations"}:
        raise ConfigError("must be a mapping {iterations: N}", key="efficiency")
    n = eff.get("iterations", 10)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_ITERATIONS:
        raise ConfigError(f"must be an integer from 1 to {MAX_ITERATIONS}",
                          key="efficiency.iterations")
    return n


def _read_spider2(case: Case, opts: _Options) -> None:
    """The Spider 2.0 keys into ``opts``; any of them, a gold CSV file or a threshold on its
    metrics asks for ``spider2_ex``."""
    o = case.options
    if "condition_cols" in o:
        from ...metrics.spider2 import check_condition_cols

        problem = check_condition_cols(o["condition_cols"])
        if problem:
            raise ConfigError(problem, key="condition_cols")
        opts.condition_cols = cast("ConditionCols", o["condition_cols"])
    ignore = o.get("ignore_order", False)
    if not isinstance(ignore, bool):
        raise ConfigError("must be true or false", key="ignore_order")
    opts.ignore_order = ignore
    opts.spider2 = bool({"condition_cols", "ignore_order"} & set(o)) \
        or case.gold_result_files is not None \
        or any(name in case.thresholds for name in ("spider2_ex", "spider2_ex_aligned"))


def _conditions_order(conditions: object) -> bool:
    """``conditions.order`` (default false), after checking the mapping (ConfigError names
    the key)."""
    from ...metrics.soft_ex import CONDITION_KEYS

    if conditions is None:
        return False
    if not isinstance(conditions, dict):
        raise ConfigError("must be a mapping such as {order: true}", key="conditions")
    for key, value in conditions.items():
        if key not in CONDITION_KEYS:
            raise ConfigError("unknown key" + suggest(str(key), CONDITION_KEYS)
                              + f"; known: {', '.join(CONDITION_KEYS)}", key=f"conditions.{key}")
        if key in ("order", "distinct") and not isinstance(value, bool):
            raise ConfigError("must be true or false", key=f"conditions.{key}")
        if key == "decimal" and (isinstance(value, bool) or not isinstance(value, int)):
            raise ConfigError("must be an integer (number of decimal places; -1: none)",
                              key=f"conditions.{key}")
    return bool(conditions.get("order", False))
