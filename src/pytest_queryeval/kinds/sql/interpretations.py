"""``interpretations:``: an ambiguous SQL question, one gold per reading (docs/metrics-sql.md,
"Ambiguous questions").

A question such as "Which customers bought rock tracks?" can mean two things, and a good
system returns a query for each. Such a case lists one gold per reading instead of ``gold:``;
its prediction is a list of queries (or one). Scoring is Ambrosia's
(:mod:`...metrics.ambrosia`): interpretation recall, precision, F1 and ``all_found``, the
case's default gate. The golds run through the SQL kind's gold cache (trusted); each predicted
query is guarded and run like any SQL prediction, a refusal, failure or truncated result
being that query's failure (the reference's ``PredQueryExecutionError``), never the case's.

Kept apart from the SQL kind's single-gold flow (``_SqlRun``), which it shares nothing of but
the source, the guard and the gold cache: the SQL kind hands a case here when it has the key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

from ...errors import GoldError, PredictionError, QueryEvalError, SourceUnavailable
from ...metrics.ambrosia import (
    AMBROSIA_METRIC_NAMES,
    DETERMINISTIC,
    MODES,
    REFERENCE,
    AmbrosiaMetrics,
    DublicatesError,
    GoldQueryExecutionError,
    Mode,
    ReferenceCrash,
    score_predicted_statements,
)
from ...model import MISSING, Case, Context, Scored, Threshold

if TYPE_CHECKING:
    from ...sources.base import DataSource
    from .._query import QueryLimits

#: The case keys this module reads (the SQL kind's ``option_keys`` include them), and
#: ``probe``: an ``expect: abstain`` case's queries for the gold audit (:mod:`...audit.abstain`).
KEYS = frozenset({"interpretations", "interpretation_scoring", "probe"})
#: Keys of one reading written as a mapping.
READING_KEYS = ("gold", "label")
#: Keys an ``interpretations`` case cannot have (it has one gold per reading instead).
EXCLUSIVE = ("gold", "gold_result", "predicted_result", "task", "setup", "cleanup", "checks")
#: A prediction mapping's keys holding its queries (a list, or one text).
PREDICTION_KEYS = ("queries", "sql", "query", "predicted")
_BLOCK = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})[^\n`]*\n(?P<body>.*?)\n[ \t]*(?P=fence)[`~]*[ \t]*$",
                    re.DOTALL | re.MULTILINE)


class Reading(TypedDict):
    """One reading as the case's details record it."""

    label: str
    gold: str
    found: bool


def applies(case: Case) -> bool:
    """Whether ``case`` is an ``interpretations`` case."""
    return "interpretations" in case.options


def probe_problems(case: Case) -> list[tuple[str, str]]:
    """``probe:`` on a case that expects an answer: what it would check has a gold."""
    if "probe" in case.options:
        return [("probe", "only for an expect: abstain case (the gold audit runs it to check "
                          "that the data does not answer the question)")]
    return []


def readings(case: Case) -> list[tuple[str, str]]:
    """``(label, gold)`` per reading, as written (labels default to ``reading 1``, ...)."""
    out: list[tuple[str, str]] = []
    raw = case.options.get("interpretations")
    for i, entry in enumerate(raw if isinstance(raw, list) else []):
        if isinstance(entry, str):
            out.append((f"reading {i + 1}", entry))
        elif isinstance(entry, Mapping) and isinstance(entry.get("gold"), str):
            label = entry.get("label")
            out.append((str(label) if isinstance(label, str) else f"reading {i + 1}",
                        str(entry["gold"])))
    return out


def validate(case: Case) -> list[tuple[str, str]]:
    """Every bad shape as ``(key path, message)``; the SQL kind's single-gold checks do not
    apply. Also drops the bounds the case inherits on SQL metrics it does not compute (the
    suite's ``execution_accuracy: 1``), as an ``expect: abstain`` case does, and gates it by
    ``all_found`` when nothing else judges it."""
    raw = case.options.get("interpretations")
    if not isinstance(raw, list) or not raw:
        return [("interpretations", "a list of gold queries, one per reading (a query, or "
                                    "{gold: query, label: text})")]
    problems = _reading_problems(raw)
    for key in EXCLUSIVE:
        if key in case.raw:
            problems.append((key, f"an interpretations case has no {key}: each reading has its "
                                  "gold under interpretations"))
    if case.source_spec is None:
        problems.append(("datasource", "an interpretations case runs its golds: it needs a "
                                       "datasource"))
    from ...errors import ConfigError
    from .._query import limits, max_query_bytes

    try:
        limits(case.options)
        max_query_bytes(case.options)
    except ConfigError as exc:
        problems.append((exc.key or "options", exc.message))
    mode = case.options.get("interpretation_scoring", DETERMINISTIC)
    if mode not in MODES:
        problems.append(("interpretation_scoring", f"must be one of {', '.join(MODES)}, not "
                                                   f"{mode!r}"))
    problems += probe_problems(case)
    if case.predicted is not MISSING:
        try:
            predicted_queries(case.predicted)
        except PredictionError as exc:
            where, _, message = str(exc).partition(": ")
            problems.append((where, message) if where.startswith("predicted[")
                            else ("predicted", str(exc)))
    if not problems:
        _own_thresholds(case)
    return problems


def _reading_problems(raw: list[object]) -> list[tuple[str, str]]:
    """The readings' problems: unknown keys, empty or repeated labels, and golds that are no
    query or repeat another reading's (each reading has its own gold)."""
    problems: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    labels: dict[str, int] = {}
    for i, entry in enumerate(raw):
        where = f"interpretations[{i}]"
        if isinstance(entry, Mapping):
            for key in entry:
                if key not in READING_KEYS:
                    problems.append((f"{where}.{key}", "unknown key (a reading has gold and "
                                                       "label)"))
            label = entry.get("label")
            if "label" in entry and (not isinstance(label, str) or not label.strip()):
                problems.append((f"{where}.label", "must be a non-empty text"))
            elif isinstance(label, str):
                if label in labels:
                    problems.append((f"{where}.label", f"the same label as "
                                                       f"interpretations[{labels[label]}]"))
                labels.setdefault(label, i)
            gold = entry.get("gold")
            where = f"{where}.gold"
        else:
            gold = entry
        if not isinstance(gold, str) or not gold.strip():
            problems.append((where, "must be an SQL string"))
            continue
        if gold in seen:
            problems.append((where, f"the same query as interpretations[{seen[gold]}]: each "
                                    "reading has its own gold"))
        seen.setdefault(gold, i)
    return problems


def _own_thresholds(case: Case) -> None:
    """Inherited bounds on other SQL metrics dropped; ``all_found >= 1`` when none is left."""
    from ...metricnames import RECORDED_METRICS

    def judges_answer(metric: str) -> bool:  # as rules.thresholds says it (no timing bound)
        return metric not in RECORDED_METRICS

    written = case.raw.get("thresholds")
    mine = set(written) if isinstance(written, Mapping) else set()
    kept = {m: t for m, t in case.thresholds.items()
            if m in mine or m in AMBROSIA_METRIC_NAMES or not judges_answer(m)}
    if not any(judges_answer(m) for m in kept):
        kept["all_found"] = Threshold("all_found", min=1.0)
        case.default_thresholds = ["all_found"]
    else:
        case.default_thresholds = [m for m in case.default_thresholds if m in kept]
    case.thresholds = kept


def predicted_queries(prediction: object) -> list[str]:
    """The predicted queries: a list of texts; a mapping's ``queries`` (or ``sql``, ``query``,
    ``predicted``); or a text: a JSON list of texts (bare, or in one enclosing fence), else
    each fenced code block, else the text as one query (one enclosing fence stripped, as
    every kind does)."""
    if isinstance(prediction, Mapping):
        for key in PREDICTION_KEYS:
            if key in prediction:
                return predicted_queries(prediction[key])
        raise PredictionError("a predicted mapping needs 'queries' (a list of SQL texts)")
    if isinstance(prediction, list):
        for i, query in enumerate(prediction):
            if not isinstance(query, str):
                raise PredictionError(f"predicted[{i}]: expected SQL text, got "
                                      f"{type(query).__name__}")
        return [str(q) for q in prediction]
    if not isinstance(prediction, str):
        raise PredictionError(f"expected a list of SQL texts (or one), got "
                              f"{type(prediction).__name__}")
    from .._fences import strip_fence

    body, fence = strip_fence(prediction)
    listed = _json_list(body)
    if listed is not None:
        return listed
    if fence is not None:
        return [body]
    blocks = [m["body"] for m in _BLOCK.finditer(prediction)]
    return blocks or [prediction]


def _json_list(text: str) -> list[str] | None:
    """``text`` read as a JSON list of texts, else None."""
    if not text.strip().startswith("["):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if isinstance(data, list) and all(isinstance(q, str) for q in data):
        return [str(q) for q in data]
    return None


class _QueryFailed(Exception):
    """One query's failure, as the reference's ``sqlite3.DatabaseError``."""


@dataclass
class _Executor:
    """The reference's ``execute`` on the case's source: a gold runs trusted through the SQL
    kind's gold cache (its rows kept, to name two readings that cannot be told apart), a
    prediction guarded like any SQL prediction; a prediction's failure raises
    :class:`_QueryFailed`."""

    src: DataSource
    ctx: Context
    limits: QueryLimits
    max_bytes: int
    gold_texts: list[str]
    gold_rows: dict[str, list[tuple[object, ...]]] = field(default_factory=dict)

    def __call__(self, query: str) -> list[tuple[object, ...]]:
        from ...sources.sqlguard import check_read_only
        from .._query import check_query_size, run_gold

        src, lim = self.src, self.limits
        if query in self.gold_texts:  # trusted, cached
            gold, _ = run_gold(src, query, self.ctx, "sql-gold", lim)
            self.gold_rows[query] = list(gold.rows)
            return self.gold_rows[query]
        try:
            check_query_size(query, self.max_bytes)
            check_read_only(query, src.dialect)
            table = src.execute(query, **lim)
        except SourceUnavailable:
            raise
        except QueryEvalError as exc:
            raise _QueryFailed(exc.reason()) from None
        if table.truncated:
            raise _QueryFailed(f"truncated: the predicted result {table.cut_by()[0]}; a partial "
                               "result is never scored")
        return list(table.rows)


def evaluate(case: Case, prediction: object, ctx: Context) -> Scored:
    """Ambrosia's metrics of the predicted queries against the readings' golds."""
    from .._query import limits, max_query_bytes

    queries = predicted_queries(prediction)
    golds = readings(case)
    gold_texts = [g for _, g in golds]
    mode: Mode = DETERMINISTIC if case.options.get("interpretation_scoring",
                                                   DETERMINISTIC) == DETERMINISTIC \
        else "ambrosia"
    src = ctx.source(case)
    lim = limits(case.options)
    cap = max_query_bytes(case.options)
    execute = _Executor(src, ctx, lim, cap, gold_texts)
    try:
        result = score_predicted_statements(queries, gold_texts, execute, _QueryFailed, mode=mode)
    except DublicatesError as exc:
        first, second = _duplicate_pair(golds, execute.gold_rows, exc)
        raise GoldError(f"interpretations[{first}] ({golds[first][0]}) and "
                        f"interpretations[{second}] ({golds[second][0]}) return the same "
                        f"result: the readings cannot be told apart (Ambrosia's "
                        f"DublicatesError)") from None
    except GoldQueryExecutionError as exc:
        raise GoldError(exc.original) from None
    except ReferenceCrash as exc:
        raise QueryEvalError(f"the reference ({REFERENCE}) crashes here "
                             f"(interpretation_scoring: ambrosia): {exc}") from None
    return _scored(result, queries, golds, mode)


def _scored(result: AmbrosiaMetrics, queries: list[str], golds: list[tuple[str, str]],
            mode: Mode) -> Scored:
    """The case's metrics, and the readings found and the predictions matched as its details
    and diff lines."""
    metrics = {
        "interpretation_recall": float(result["recall"]),
        "interpretation_precision": float(result["precision"]),
        "interpretation_f1": float(result["f1_score"]),
        "all_found": 1.0 if result["all_found"] else 0.0,
    }
    # each distinct prediction in first-occurrence order in both modes (the reference's hash
    # order would make the record differ from one process to the next)
    matched = dict(zip(result["statements"], result["matched"], strict=True))
    errors = {e["query"]: e["original_exception"] for e in result["execution_errors"]}
    details: dict[str, object] = {"interpretations": {
        "reference": REFERENCE,
        "scoring": mode,
        "readings": [Reading(label=label, gold=gold, found=found)
                     for (label, gold), found in zip(golds, result["found"], strict=True)],
        "predictions": [{"sql": q, "matched": matched[q],
                         **({"error": errors[q]} if q in errors else {})}
                        for q in dict.fromkeys(queries)],
        "num_queries": result["num_queries"],
        "num_unique_queries": result["num_unique_queries"],
        "unique_results": result["unique_results"],
    }}
    missing = [label for (label, _), found in zip(golds, result["found"], strict=True)
               if not found]
    diff = [f"reading not found: {label}" for label in missing]
    diff += [f"query failed: {q} -- {m}" for q, m in errors.items()]
    return Scored(metrics, {}, diff, details)


def _duplicate_pair(golds: Sequence[tuple[str, str]],
                    results: Mapping[str, Sequence[tuple[object, ...]]],
                    exc: DublicatesError) -> tuple[int, int]:
    """The positions of the two readings :class:`DublicatesError` is about (the reference
    names only the second, counted among golds of distinct text)."""
    distinct = list(dict.fromkeys(g for _, g in golds))
    second_text = distinct[exc.duplicate_idx - 1]
    second = next(i for i, (_, g) in enumerate(golds) if g == second_text)
    first = next((i for i, (_, g) in enumerate(golds[:second])
                  if tuple(map(tuple, results.get(g, ()))) == exc.duplicates), 0)
    return first, second


def metric_names() -> tuple[str, ...]:
    return AMBROSIA_METRIC_NAMES
