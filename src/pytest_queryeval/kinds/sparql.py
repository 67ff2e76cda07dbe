"""``kind: sparql``: execute gold and predicted SPARQL read-only and score the result tables.

Flow of one case (see docs/sparql-sources.md):

1. One Markdown code fence around the prediction is stripped (:mod:`._fences`). The
   predicted request goes through :func:`~pytest_queryeval.sources.sparqlguard.check_query`
   (parsed with a SPARQL 1.1 grammar): SPARQL Update or CONSTRUCT/DESCRIBE scores 0 with
   ``refused: ...``, a text that does not parse with ``cannot parse: syntax error ...``;
   neither reaches the source.
2. Each gold alternative is executed (trusted, cached across sessions by source fingerprint and
   query text; results holding blank nodes are never cached, their labels change per load) or
   taken from ``gold_result``. A gold that is refused, fails, times out or is truncated is an
   error of the suite (:class:`GoldError`); an unreachable source raises SourceUnavailable.
3. The prediction is executed (or taken from ``predicted_result``). Failure, timeout or
   truncation scores every metric 0 with the reason (``query failed:``, ``timeout:``...).
4. The result-table metrics shared with SQL (``execution_accuracy`` with row order only when the
   gold's outer query has ORDER BY, ``bird_ex``, ``soft_f1``...) and BuildingQA's four alignment
   metrics (arity from the query texts, as the reference agent does, unless
   ``arity_from: result``), TEXT2SPARQL's set metrics (``set_precision``, ``set_recall``,
   ``set_f1``; ``ndcg`` when the case's ``features`` hold RESULT_ORDER_MATTERS or
   ``result_order_matters: true``) and GERBIL's QALD ones (``qald_*``). The best gold
   alternative wins: highest ``execution_accuracy``, then the highest mean of the other metrics.
   A prediction that fails (refused, error, timeout, truncated) is an empty answer for the
   reference-named metrics, as in their references (QALD: precision 1, recall 0).

ASK results are one-cell tables (column ``boolean``, a Python bool), as recorded SPARQL JSON
``{"boolean": ...}`` results are read; for the alignment metrics the cell is the literal
``"true"``/``"false"``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

from ..errors import (
    ConfigError,
    GoldError,
    QueryEvalError,
    QueryRefused,
    SearchBudgetExhausted,
    SourceUnavailable,
)
from ..metricnames import QUERY_TIMING_METRICS as TIMING
from ..model import Case, Context, Scored
from ..results import ResultTable, Term
from ..sources.base import DEFAULT_TIMEOUT, DataSource
from ._fences import note as note_fence
from ._optin import OPTION_KEYS, RELAXED_EX, add_hallucination
from ._optin import check_options as check_optin
from ._query import (
    DEFAULT_MAX_QUERY_BYTES,
    best_of_golds,
    check_query_size,
    compare_options,
    execute_or_reason,
    fenced_prediction_text,
    limits,
    max_query_bytes,
    run_gold,
)

if TYPE_CHECKING:
    from ..metrics.table import CompareOptions
    from ._query import QueryLimits
    from .goldchecks.findings import AuditResult
    from .goldchecks.query import QueryRules

#: Cache namespace of executed gold results (values: :mod:`..sources.codec` tables).
GOLD_CACHE = "sparql-gold"
XSD_BOOLEAN = "http://www.w3.org/2001/XMLSchema#boolean"
_PREDICTION_KEYS = ("sparql", "query", "predicted")


@dataclass
class _Options:
    #: ``compare:``, how cells are normalised before every table metric.
    compare: CompareOptions
    arity_from: Literal["result", "query"] = "query"
    #: ``timeout`` / ``max_rows`` overrides of the source's.
    limits: QueryLimits = field(default_factory=lambda: cast("QueryLimits", {}))
    max_query_bytes: int = DEFAULT_MAX_QUERY_BYTES
    order_matters: bool = False  # TEXT2SPARQL RESULT_ORDER_MATTERS: ndcg is scored
    tie_aware: bool = True  # execution_accuracy accepts another order or choice among ties


@dataclass
class _Gold:
    query: str | None
    table: ResultTable
    cached: bool = False
    recorded: bool = False  #: a ``gold_result``: nothing to re-run for the tie analysis


class SparqlKind:
    """The SPARQL evaluator; stateless, one instance per session (caches live in the Context)."""

    name: ClassVar[str] = "sparql"
    #: What it declares to the modules outside kinds/ (:mod:`..kindregistry`).
    gold_alternatives: ClassVar[bool] = True
    judged: ClassVar[bool] = True
    conversation_turns: ClassVar[bool] = True  # issue 42: suite/conversation.py
    fence_language: ClassVar[str] = "sparql"
    language_name: ClassVar[str] = "SPARQL"
    query_syntax: ClassVar[str] = "sparql"
    query_keywords: ClassVar[tuple[str, ...]] = (
        "SELECT", "ASK", "CONSTRUCT", "DESCRIBE", "PREFIX", "BASE", "INSERT", "DELETE", "WITH",
        "LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY")
    headline_metrics: ClassVar[tuple[str, ...]] = (
        "execution_accuracy", "judge_ex", "row_match_f1", "entity_set_f1", "arity_f1")
    #: What gates a case no threshold judges (docs/reference.md, "Thresholds"): the gold's
    #: bindings, exactly.
    default_thresholds: ClassVar[Mapping[str, float]] = {"execution_accuracy": 1.0}
    option_keys: ClassVar[frozenset[str]] = frozenset(
        {"compare", "timeout", "max_rows", "arity_from", "max_query_bytes", "features",
         "result_order_matters", "tie_aware", *OPTION_KEYS})

    # -- contract: names and validation ---------------------------------------------------------

    def is_metric(self, name: str) -> bool:
        return name in metric_names()

    def metric_names(self) -> list[str]:
        """Names for "did you mean" hints."""
        return sorted(metric_names())

    def difficulty(self, case: Case) -> str | None:
        return None  # no published SPARQL hardness scale

    def validate(self, case: Case) -> Iterable[tuple[str, str]]:
        from ..sources.sparqlguard import check_query

        problems: list[tuple[str, str]] = []
        if case.gold is None and case.gold_result is None:
            problems.append(("gold", "a sparql case needs 'gold' (a SELECT or ASK query) or "
                                     "'gold_result'"))
        if isinstance(case.gold, list) and not case.gold:
            problems.append(("gold", "an empty list of gold alternatives"))
        golds = case.golds if case.gold is not None else []
        for i, g in enumerate(golds):
            where = f"gold[{i}]" if isinstance(case.gold, list) else "gold"
            if not isinstance(g, str) or not g.strip():
                problems.append((where, "must be a SPARQL query string"))
                continue
            try:
                check_query(g)
            except QueryRefused as exc:
                problems.append((where, exc.reason()))
        if isinstance(case.gold, list) and len(case.gold) > 1 and case.gold_result is not None:
            problems.append(("gold_result", "a recorded gold result cannot go with several "
                                            "gold alternatives"))
        if case.source_spec is None and (case.gold_result is None
                                         or case.predicted_result is None):
            problems.append(("datasource", "a sparql case needs a datasource (or gold_result "
                                           "and predicted_result)"))
        try:
            opts = _parse_options(case)
        except ConfigError as e:
            problems.append((e.key or "options", e.message))
        else:
            if "ndcg" in case.thresholds and not opts.order_matters:
                problems.append(("thresholds.ndcg", "ndcg is scored only where the result order "
                                 "matters: add features: [RESULT_ORDER_MATTERS] (or "
                                 "result_order_matters: true)"))
        return problems

    # -- evaluation -----------------------------------------------------------------------------

    def query_rules(self) -> QueryRules:
        """SPARQL's text rules for the gold audit (:mod:`.goldchecks.query`)."""
        from .goldchecks.query import SPARQL_RULES

        return SPARQL_RULES

    def audit(self, case: Case, ctx: Context, result: AuditResult) -> None:
        """``--queryeval-audit-golds``: each gold linted, executed live and scored as its own
        prediction (:mod:`.goldchecks.query`)."""
        from .goldchecks.query import audit_query

        audit_query(case, self, ctx, result)

    def evaluate(self, case: Case, prediction: object, ctx: Context) -> Scored:
        pred_query, fence = fenced_prediction_text(prediction, case, "SPARQL", _PREDICTION_KEYS)
        scored = self._evaluate(case, pred_query, ctx)
        add_hallucination(scored, case, ctx,
                          ctx.source(case) if case.source_spec is not None else None, pred_query)
        note_fence(scored.details, fence)
        return scored

    def _evaluate(self, case: Case, pred_query: str | None, ctx: Context) -> Scored:
        opts = _parse_options(case)
        src = ctx.source(case) if case.source_spec is not None else None

        gold_texts: list[str | None] = [g for g in case.golds if isinstance(g, str)] or [None]
        golds = [self._gold(case, g, src, ctx, opts) for g in gold_texts]
        gold_seconds = golds[0].table.seconds

        pred_table = _predicted_table(case, pred_query, src, opts, golds)
        if isinstance(pred_table, Scored):
            return pred_table
        return _best_alternative(golds, pred_table, pred_query, src, ctx, opts, gold_seconds)

    def _gold(self, case: Case, query: str | None, src: DataSource | None, ctx: Context,
              opts: _Options) -> _Gold:
        if case.gold_result is not None:
            if case.gold_result.truncated:
                raise GoldError("the recorded gold result is marked truncated")
            table = _normalized(case.gold_result)
            assert table is not None
            return _Gold(query, table, recorded=True)
        if query is None or src is None:
            raise GoldError("no gold query to execute")
        table, cached = run_gold(src, query, ctx, GOLD_CACHE, opts.limits,
                                     cacheable=_no_bnodes)
        return _Gold(query, table, cached)


# -- helpers --------------------------------------------------------------------------------------


def _predicted_table(case: Case, pred_query: str | None, src: DataSource | None, opts: _Options,
                     golds: list[_Gold]) -> ResultTable | Scored:
    """The prediction's result, recorded or executed after the guard; the failure of a
    prediction refused, failed, timed out or truncated."""
    from ..sources.sparqlguard import check_query

    gold_seconds = golds[0].table.seconds
    pred_table = _normalized(case.predicted_result)
    if pred_query is not None:
        try:
            check_query_size(pred_query, opts.max_query_bytes)
            default = src.timeout if src is not None else None
            check_query(pred_query, timeout=opts.limits.get("timeout", default))
        except QueryRefused as e:
            return _failure(e.reason(), gold_seconds, None, golds, opts)
    if pred_table is None:
        if src is None or pred_query is None:
            raise GoldError("nothing to execute the prediction on: no datasource")
        start = time.perf_counter()
        got = execute_or_reason(src, pred_query, opts.limits)
        if isinstance(got, str):  # QueryFailed, QueryTimeout, QueryRefused (SERVICE)
            return _failure(got, gold_seconds, time.perf_counter() - start, golds, opts)
        pred_table = got
    if pred_table.truncated:
        what, option = pred_table.cut_by()
        return _failure(f"truncated: the predicted result {what} ({option}); a partial "
                        "result is never scored",
                        gold_seconds, pred_table.seconds, golds, opts)
    return pred_table


def _best_alternative(golds: list[_Gold], pred_table: ResultTable, pred_query: str | None,
                      src: DataSource | None, ctx: Context, opts: _Options,
                      gold_seconds: float) -> Scored:
    """Every gold alternative scored; the best wins. Each comparison runs under the case's
    timeout; a gold whose comparison stops undecided fails the case only when no other gold
    matches (as for SQL)."""
    timeout = src.timeout if src is not None else DEFAULT_TIMEOUT
    seconds = float(opts.limits.get("timeout") or timeout or DEFAULT_TIMEOUT)

    def score(index: int) -> Scored:
        gold = golds[index]
        scored = _score(gold, pred_table, pred_query, opts)
        if opts.tie_aware and src is not None and gold.query is not None \
                and not gold.recorded and scored.metrics.get("execution_accuracy") != 1.0 \
                and _order_matters(gold):
            scored.diff.extend(_ties(gold, pred_table, src, ctx, opts, scored))
        return scored

    best = best_of_golds(len(golds), score, seconds, TIMING)
    if isinstance(best, SearchBudgetExhausted):
        return _failure(best.reason(), gold_seconds, pred_table.seconds, golds, opts)
    return best


def metric_names() -> frozenset[str]:
    """Every metric a sparql case can produce (table + alignment + reference sets + timing)."""
    from ..metricnames import JUDGE_EX

    return frozenset((*_scored_names(), "ndcg", *TIMING, "iri_hallucination", RELAXED_EX,
                      JUDGE_EX))


def _scored_names() -> list[str]:
    """The metrics every scored case has (``ndcg`` only where the result order matters)."""
    from ..metrics.alignment import ALIGNMENT_METRIC_NAMES
    from ..metrics.gerbil_qa import QALD_METRIC_NAMES
    from ..metrics.table import TABLE_METRIC_NAMES

    return [*TABLE_METRIC_NAMES, *ALIGNMENT_METRIC_NAMES, "set_precision", "set_recall",
            "set_f1", *QALD_METRIC_NAMES]


def _reference_sets(gold: ResultTable, pred: ResultTable | None, opts: _Options,
                    metrics: dict[str, float], details: dict[str, Any]) -> None:
    """TEXT2SPARQL's and GERBIL's answer-set metrics; ``pred=None`` is an empty answer.

    The counts and the order flag go into the details: the session aggregates (micro F1,
    ``set_f1_ndcg``) are computed from them, as the references do over all questions.
    """
    from ..metrics import gerbil_qa, text2sparql

    t_pred = text2sparql.answers_from_table(pred) if pred is not None else {}
    t_gold = text2sparql.answers_from_table(gold)
    metrics.update(text2sparql.question_metrics(t_gold, t_pred,
                                                order_matters=opts.order_matters))
    # GERBIL's answer set is TEXT2SPARQL's values but for an ASK result (every cell's value
    # read once per table: a large result's 400,000 strings)
    g_pred = (set() if pred is None else gerbil_qa.answers_from_table(pred)
              if text2sparql.is_ask(pred) else set(t_pred))
    g_gold = gerbil_qa.answers_from_table(gold) if text2sparql.is_ask(gold) else set(t_gold)
    counts = gerbil_qa.counts(g_gold, g_pred)
    metrics.update(gerbil_qa.question_metrics(counts))
    details["text2sparql"] = {"order_matters": opts.order_matters}
    details["gerbil"] = counts.to_json()


def _normalized(table: ResultTable | None) -> ResultTable | None:
    """A recorded result in the engines' Term normal form (``xsd:string`` dropped, lang tags
    lower-cased, canonical numbers), so it compares like an executed one."""
    if table is None:
        return None
    from ..sources.rdf_codec import normalize_cell

    rows = [tuple(normalize_cell(c) for c in row) for row in table.rows]
    return ResultTable(list(table.columns), rows, table.truncated, table.seconds, dict(table.meta))


def _boolean_terms(table: ResultTable) -> ResultTable:
    """ASK cells as ``xsd:boolean`` Terms, the form the alignment metrics read values from."""
    # a bool is exactly a bool (no subclasses): the cell types are read in C
    if bool not in set(map(type, chain.from_iterable(table.rows))):
        return table
    rows = [tuple(Term("literal", "true" if c else "false", XSD_BOOLEAN)
                  if isinstance(c, bool) else c for c in row) for row in table.rows]
    return ResultTable(list(table.columns), rows, table.truncated, table.seconds, dict(table.meta))


def _order_matters(gold: _Gold) -> bool:
    from ..sources.sparqlguard import classify

    if gold.query is None:
        return bool(gold.table.meta.get("order_by", False))
    return classify(gold.query).has_order_by


def _score(gold: _Gold, pred: ResultTable, pred_query: str | None, opts: _Options) -> Scored:
    from ..metrics.alignment import alignment_details, alignment_diff
    from ..metrics.table import compare_tables

    ordered = _order_matters(gold)
    cmp = compare_tables(gold.table, pred, order_matters=ordered, compare=opts.compare)
    metrics: dict[str, float] = dict(cmp.metrics())
    details: dict[str, Any] = dict(cmp.details())
    diff = list(cmp.diff())
    # Each step's structures (the table sides' multisets and columns, the alignment's codes
    # and value sets) are dropped before the next: on a large result they are as large as
    # the tables, and holding them all set the parent's peak memory.
    del cmp
    g_al, p_al = _boolean_terms(gold.table), _boolean_terms(pred)
    al = alignment_details(g_al, p_al, gold_query=gold.query, pred_query=pred_query,
                           arity_from=opts.arity_from, kind="sparql")
    metrics.update(al.metrics)
    if al.mapping is not None:
        details["alignment_mapping"] = [list(pair) for pair in al.mapping]
    if al.metrics["row_match_f1"] < 1.0:
        diff.extend(f"alignment: {line}" for line in alignment_diff(g_al, p_al, details=al))
    del al, g_al, p_al
    _reference_sets(gold.table, pred, opts, metrics, details)
    metrics["gold_seconds"] = gold.table.seconds
    metrics["predicted_seconds"] = pred.seconds
    details["gold_cached"] = gold.cached
    table, compare = gold.table, opts.compare

    def relaxed(names: frozenset[str] | None = None) -> dict[str, dict[str, float]]:
        from ..rules.nearmiss import relaxed_metrics  # near misses, only if the case fails

        return relaxed_metrics(table, pred, order_matters=ordered, compare=compare, names=names)
    compared = (gold.query or "", table, pred_query or "", pred)  # what a judge is shown
    return Scored(metrics, {}, diff, details, signature=pred.signature(ordered), relaxed=relaxed,
                  compared=compared)


def _ties(gold: _Gold, pred: ResultTable, src: DataSource, ctx: Context, opts: _Options,
          scored: Scored) -> list[str]:
    """Tie-aware ``execution_accuracy``, as the SQL kind's (:meth:`.sql._SqlRun.ties`): when
    the gold's ORDER BY leaves solutions tied, a prediction that orders or picks them
    differently scores 1 (``details.execution_accuracy_strict`` keeps the strict value); the
    reference metrics (TEXT2SPARQL, GERBIL, ndcg) are left as they are. A gold that cannot be
    analysed keeps the strict value, with the reason in ``details.ties.skipped``."""
    from ..metrics import ties
    from ._ties_sparql import keyed_sparql

    assert gold.query is not None
    details, metrics = scored.details, scored.metrics
    if not ties.could_match(gold.table.rows, pred.rows):
        return []
    query = keyed_sparql(gold.query, tuple(gold.table.columns))
    if isinstance(query, str):
        details["ties"] = {"skipped": query}
        return []

    def run(text: str) -> list[Any] | None:
        try:
            return list(run_gold(src, text, ctx, GOLD_CACHE, opts.limits,
                                 cacheable=_no_bnodes)[0].rows)
        except SourceUnavailable:
            raise
        except QueryEvalError:
            return None

    keyed = ties.probed_rows(query, run)
    if keyed is None:
        keyed = run(query.sql)
        if keyed is None:
            details["ties"] = {"skipped": "the keyed gold failed"}
            return []
    return ties.accept_ties(query, keyed, gold.table.rows, pred.rows, opts.compare.normalise,
                            metrics, details, strict="strict comparison", rows="solutions")


def _failure(reason: str, gold_seconds: float | None, pred_seconds: float | None,
             golds: list[_Gold], opts: _Options) -> Scored:
    """Every scored metric at 0, with the reason; the reference-named set metrics score an
    empty answer against the first gold, as their references do. No diff line: the reason is
    the whole story, and a diff that repeated it was printed twice (as the SQL kind's is not)."""
    metrics = dict.fromkeys(_scored_names(), 0.0)
    details: dict[str, Any] = {"gold_cached": golds[0].cached} if golds else {}
    if golds:
        _reference_sets(golds[0].table, None, opts, metrics, details)
    if gold_seconds is not None:
        metrics["gold_seconds"] = gold_seconds
    if pred_seconds is not None:
        metrics["predicted_seconds"] = pred_seconds
    return Scored(metrics, {}, [], details, reason=reason)


def _parse_options(case: Case) -> _Options:
    """Validate and normalise the case options (ConfigError names the key)."""
    o = case.options
    check_optin(case)
    opts = _Options(compare_options(o))
    arity = o.get("arity_from", "query")
    if arity not in ("result", "query"):
        raise ConfigError("must be 'query' (projection of the query texts, as BuildingQA) or "
                          "'result' (column count of the results)", key="arity_from")
    opts.arity_from = "result" if arity == "result" else "query"
    opts.limits = limits(o)
    opts.max_query_bytes = max_query_bytes(o)
    opts.order_matters = _result_order_matters(o)
    tie_aware = o.get("tie_aware", True)
    if not isinstance(tie_aware, bool):
        raise ConfigError("must be true or false", key="tie_aware")
    opts.tie_aware = tie_aware
    return opts


def _result_order_matters(o: dict[str, Any]) -> bool:
    """``features`` (TEXT2SPARQL's list, e.g. [RESULT_ORDER_MATTERS]) or the flag
    ``result_order_matters``: either asks for ``ndcg``."""
    from ..metrics.text2sparql import RESULT_ORDER_MATTERS

    flag = o.get("result_order_matters", False)
    if not isinstance(flag, bool):
        raise ConfigError("must be true or false", key="result_order_matters")
    features = o.get("features", [])
    if not isinstance(features, list):
        raise ConfigError(f"must be a list of feature names, e.g. [{RESULT_ORDER_MATTERS}]",
                          key="features")
    for i, name in enumerate(features):
        if not isinstance(name, str) or not name.strip():
            raise ConfigError("must be a feature name (a string)", key=f"features[{i}]")
    return flag or RESULT_ORDER_MATTERS in features


def _no_bnodes(table: ResultTable) -> bool:
    """Blank-node labels differ from one load to the next: such results are not cached."""
    from ..sources.rdf_codec import has_bnodes

    return not has_bnodes(table)
