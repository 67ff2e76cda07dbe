"""What a SQL case runs before its query is scored: the gold of its source's dialect, the
pinned clock, and the path of a task that writes (issue 28).

Why a module of its own: each is a transformation of the case (a gold picked or transpiled, texts
rewritten to an instant) or a different path altogether (a task scored on copies by its checks,
:mod:`...tasks`), applied by :class:`.SqlKind` before or instead of the read-only flow; kept
apart, that flow reads as it did.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import GoldError, QueryRefused
from ...model import Case, Scored
from .._fences import note as note_fence
from .._query import check_query_size, fenced_prediction_text, max_query_bytes

if TYPE_CHECKING:
    import datetime as dt

    from ..goldchecks.findings import AuditResult


def audit_task(case: Case, result: AuditResult) -> None:
    """The gold on its own copy against the case's own checks: a gold that fails them, or a
    setup, gold or cleanup that fails, is an error finding (BIRD-Interact ships golds that
    fail their own test cases)."""
    from ...tasks.case import build, score

    try:
        scored, _ = score(build(case, case.gold, ()), case, audit=True)
    except GoldError as exc:
        result.add("gold-error", exc.reason())
        return
    if scored.reason:
        result.add("gold-error", f"the gold fails its own checks: {scored.reason}")
    result.metrics.update(scored.metrics)


def case_dialect(case: Case) -> str | None:
    if case.dialect is not None:
        return case.dialect
    from ...sources.dialects import dialect_of

    return dialect_of(case.source_spec) if case.source_spec else None


def dialect_problems(case: Case) -> list[tuple[str, str]]:
    """``gold:`` keyed by dialect and ``transpile: {from: <dialect>}``, checked at collection:
    each entry a query (or a list), and an entry (or a source to transpile from) for the
    dialect the case's datasource runs."""
    from ...sources.dialects import DIALECTS

    problems: list[tuple[str, str]] = []
    source = None
    spec = case.options.get("transpile")
    if spec is not None:
        if not isinstance(spec, dict) or set(spec) != {"from"} or spec["from"] not in DIALECTS:
            problems.append(("transpile", "must be {from: <dialect>} with a dialect of "
                                          f"{', '.join(DIALECTS)}"))
        else:
            source = str(spec["from"])
    if not isinstance(case.gold, dict):
        if spec is not None and not problems:
            problems.append(("transpile", "needs gold: keyed by dialect (the entry to "
                                          "transpile from)"))
        return problems
    for key, value in case.gold.items():
        if key not in DIALECTS:
            problems.append((f"gold.{key}", f"unknown dialect (known: {', '.join(DIALECTS)})"))
        elif not (isinstance(value, str) and value.strip()) and not (
                isinstance(value, list) and value
                and all(isinstance(v, str) and v.strip() for v in value)):
            problems.append((f"gold.{key}", "must be an SQL string or a list of them"))
    dialect = case_dialect(case)
    if not problems and dialect is not None and dialect not in case.gold and (
            source is None or source not in case.gold):
        have = ", ".join(sorted(map(str, case.gold)))
        problems.append(("gold", f"no entry for {dialect}, the dialect of datasource "
                                 f"{case.datasource!r} (the case has {have}; add one, or "
                                 "transpile: {from: <one of them>})"))
    return problems


def with_dialect_gold(case: Case, transpiled: bool = True) -> tuple[Case, dict[str, Any]]:
    """The case with the gold its datasource's dialect runs: its own entry of a ``gold:``
    mapping, else the ``transpile: {from:}`` entry transpiled (the text actually run goes into
    the details; a construct sqlglot cannot carry over is a GoldError, never a silent
    substitute). ``transpiled=False``: the source entry as written (collection checks)."""
    if not isinstance(case.gold, dict):
        return case, {}
    from dataclasses import replace

    from ...sources.dialects import TranspileError, gold_for

    dialect = case_dialect(case) or "sqlite"
    spec = case.options.get("transpile")
    source = str(spec["from"]) if isinstance(spec, dict) and "from" in spec else None
    if not transpiled:
        gold = case.gold.get(dialect, case.gold.get(source or ""))
        return replace(case, gold=gold), {}
    try:
        gold, origin = gold_for(case.gold, dialect, source)
    except (KeyError, TranspileError) as exc:
        error = GoldError(str(exc.args[0] if isinstance(exc, KeyError) else exc))
        tried = {"dialect": dialect, **({"transpiled_from": source}
                                        if source is not None and dialect not in case.gold
                                        else {})}
        error.details = {"gold_dialect": tried}
        raise error from None
    chosen: dict[str, Any] = {"dialect": dialect}
    if origin is not None:
        chosen.update(transpiled_from=origin, gold_run=gold)
    return replace(case, gold=gold), chosen


def ran_pinned(chosen: dict[str, Any], case: Case) -> None:
    """``gold_run`` is the text run: on a ``now:`` source, the transpiled gold as the clock
    rewrote it (``case``: after :func:`pin_golds`), which the gold audit runs and reports too
    (they named the text before the rewrite, which no run executed)."""
    if "gold_run" in chosen:
        chosen["gold_run"] = case.gold


class Clock:
    """A datasource's ``now:`` applied to one case's texts (:func:`...sources.clock.pin_clock`), each
    rewrite remembered for the case's details."""

    def __init__(self, instant: dt.datetime, dialect: str) -> None:
        self.instant, self.dialect = instant, dialect
        self.rewrites: dict[str, list[str]] = {}

    def pin(self, sql: str, what: str) -> str:
        from ...sources.clock import pin_clock

        done = pin_clock(sql, self.instant, self.dialect)
        if done.replaced:
            self.rewrites.setdefault(what, []).extend(done.replaced)
        return done.sql

    def pin_all(self, value: object, what: str) -> Any:
        if isinstance(value, str):
            return self.pin(value, what)
        if isinstance(value, list):
            return [self.pin(v, what) if isinstance(v, str) else v for v in value]
        return value

    def record(self) -> dict[str, Any]:
        return {"now": self.instant.isoformat(sep=" "), "dialect": self.dialect,
                "replaced": self.rewrites}


def pin_golds(case: Case) -> tuple[Case, Clock | None]:
    """The case with its golds (and a task's check queries) read at the datasource's ``now:``
    instant, and the clock that pins the prediction alike; the case itself when the datasource
    pins no clock."""
    spec = case.source_spec or {}
    if spec.get("now") is None:
        return case, None
    from dataclasses import replace

    from ...sources.clock import parse_instant

    clock = Clock(parse_instant(spec["now"]), case_dialect(case) or "sqlite")
    options = case.options
    checks = options.get("checks")
    if isinstance(checks, list):
        checks = [{**c, "query": clock.pin(c["query"], "checks")}
                  if isinstance(c, dict) and isinstance(c.get("query"), str) else c
                  for c in checks]
        options = {**options, "checks": checks}
    return replace(case, gold=clock.pin_all(case.gold, "gold"), options=options), clock


def evaluate_task(case: Case, prediction: object, clock: Clock | None = None) -> Scored:
    """The prediction's statements run on a throwaway copy and judged by the case's checks
    (:mod:`...tasks.case`); never guarded read-only, never run on the datasource itself."""
    from ...tasks.case import build, score

    pred_sql, fence = fenced_prediction_text(prediction, case, "SQL",
                                             ("sql", "query", "predicted"))
    if pred_sql is None:
        raise GoldError("a task case scores a predicted statement, not a recorded result")
    try:
        check_query_size(pred_sql, max_query_bytes(case.options))
    except QueryRefused as e:
        return Scored({"execution_accuracy": 0.0, "checks_passed": 0.0}, reason=e.reason())
    if clock is not None:
        pred_sql = clock.pin(pred_sql, "predicted")
    scored, _ = score(build(case, case.gold, (pred_sql,)), case)
    note_fence(scored.details, fence)
    if clock is not None:
        scored.details["clock"] = clock.record()
    return scored


def dialect_prediction(case: Case, prediction: object) -> Any:
    """A prediction keyed by dialect (``{sqlite: ..., postgres: ...}``, inline or in a
    predictions file): the entry of the case's dialect; any other prediction as it is. A
    mapping of dialects without this one is a PredictionError naming what it has."""
    from ...sources.dialects import DIALECTS

    if not isinstance(prediction, dict) or not prediction or not set(prediction) <= set(DIALECTS):
        return prediction
    dialect = case_dialect(case)
    if dialect not in prediction:
        from ...errors import PredictionError

        raise PredictionError(f"the prediction has no entry for {dialect} (it has "
                              f"{', '.join(sorted(map(str, prediction)))})")
    return prediction[dialect]
