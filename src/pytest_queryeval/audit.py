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
"""

from __future__ import annotations

import contextlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from . import kinds as kind_registry
from .errors import QueryEvalError, QueryTimeout, SourceUnavailable
from .model import MISSING, Case, Scored
from .results import ResultTable

ERROR = "error"
WARNING = "warning"
#: ``--queryeval-audit-golds`` (fail on error findings) and ``=warn`` (report only).
MODES = ("error", "warn")

#: Every finding code: its severity and what it means (docs/auditing.md has the fixes).
CATALOG: dict[str, tuple[str, str]] = {
    "invalid-case": (ERROR, "the case does not validate (it is never scored)"),
    "source-unavailable": (ERROR, "the datasource cannot be reached: the gold was not checked"),
    "gold-error": (ERROR, "the gold fails to execute or to parse (its own outcome)"),
    "gold-timeout": (ERROR, "the gold exceeds its timeout"),
    "gold-below-threshold": (ERROR, "scored as its own prediction, the gold is not 1 on a "
                                    "metric its thresholds name"),
    "gold-drift": (ERROR, "the recorded gold_result no longer matches live execution"),
    "code-not-in-codelist": (ERROR, "an SDMX target code is not in its codelist"),
    "invalid-json": (ERROR, "a JSON gold is not valid JSON"),
    "empty-result": (WARNING, "the gold returns no rows (or one row of NULLs)"),
    "clock-dependent": (WARNING, "the gold reads the clock (CURRENT_DATE, now(), NOW()...)"),
    "nondeterministic": (WARNING, "the gold calls a random function (RANDOM(), RAND()...)"),
    "ties-at-limit": (WARNING, "ORDER BY ... LIMIT cuts through tied rows: another answer is "
                               "equally correct"),
    "slow-gold": (WARNING, "the gold takes over half its timeout"),
    "redundant-alternative": (WARNING, "two gold alternatives return identical results"),
    "codelist-name-mismatch": (WARNING, "an SDMX target names a code differently from its "
                                        "codelist"),
    "duplicate-json-key": (WARNING, "a JSON gold repeats a key (the last one wins)"),
}

#: Metrics a gold is never required to score 1 on: timings, costs, efficiency ratios and
#: the repeat statistics measure the run, not the answer.
UNCHECKED_METRICS = frozenset({
    *kind_registry.TIMING_METRICS, "ves", "r_ves", "prompt_tokens", "completion_tokens",
    "cost_usd", "consistency", "pass_at_k", "pass_all_k",
})
#: A self-score this close to 1 is 1 (cosines of identical embeddings are 1 +- 1e-7).
TOLERANCE = 1e-6
#: Rows shown per side when tied rows are reported.
TIE_ROWS_SHOWN = 3


@dataclass(frozen=True)
class Finding:
    """One problem of one case's gold; ``gold`` is the alternative's index when there are
    several, else None."""

    code: str
    message: str
    gold: int | None = None

    @property
    def severity(self) -> str:
        return CATALOG[self.code][0]

    def text(self) -> str:
        where = f"gold[{self.gold}]: " if self.gold is not None else ""
        return f"{self.severity} {self.code}: {where}{self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "severity": self.severity, "gold": self.gold,
                "message": self.message}


@dataclass
class AuditResult:
    """The findings of one case, and the self-scores of its first gold (for the reports)."""

    findings: list[Finding] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == ERROR]

    def add(self, code: str, message: str, gold: int | None = None) -> None:
        finding = Finding(code, message, gold)
        if finding not in self.findings:
            self.findings.append(finding)


class _AuditContext:
    """The session's context with a private, in-memory cache: a gold is executed live
    (never read from pytest's cache, which would hide drift, timeouts and slowness) and once
    per audit (the kinds read the result the audit has just executed)."""

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx
        self._memory: dict[tuple[str, str], Any] = {}

    def source(self, case: Case) -> Any:
        return self._ctx.source(case)

    def cache_get(self, namespace: str, key: str) -> Any | None:
        return self._memory.get((namespace, key))

    def cache_set(self, namespace: str, key: str, value: Any) -> None:
        self._memory[(namespace, key)] = value

    @property
    def cache_dir(self) -> Any:  # embeddings: a vector does not change with the data
        return getattr(self._ctx, "cache_dir", None)

    def shared(self, key: str, factory: Any) -> Any:
        return self._ctx.shared(key, factory)

    @property
    def all_cases(self) -> list[Case]:
        return list(getattr(self._ctx, "all_cases", []))


def audit_case(case: Case, ctx: Any) -> AuditResult:
    """Every finding of one case (never raises for a problem of the suite)."""
    result = AuditResult()
    if case.errors:
        _invalid_case(case, result)
        return result
    try:
        kind = kind_registry.get_kind(case.kind)
    except (KeyError, ImportError) as exc:
        result.add("invalid-case", f"kind {case.kind!r} is not available: {exc}")
        return result
    actx = _AuditContext(ctx)
    try:
        if case.kind in ("sql", "sparql"):
            _audit_query(case, kind, actx, result)
        elif case.kind == "sdmx":
            _audit_sdmx(case, kind, actx, result)
        else:
            if case.kind == "json":
                _lint_json(case.gold, result)
            _self_check(case, kind, actx, result, case.gold, None)
    except SourceUnavailable as exc:
        result.add("source-unavailable", exc.reason())
    except QueryEvalError as exc:  # a datasource that cannot be opened as configured
        result.add("gold-error", exc.reason())
    except Exception as exc:  # a bug must not end the audit of the other cases
        result.add("gold-error", f"internal error auditing the case: {type(exc).__name__}: "
                                 f"{exc}")
    return result


def audit_outcome(case: Case, ctx: Any, mode: str) -> Any:
    """The audit of one case as the engine's :class:`~pytest_queryeval.engine.CaseOutcome`:
    failed when it has an error finding (unless ``mode`` is ``warn``), the findings as its
    diff and in ``details["audit"]``, the first gold's self-scores as its metrics."""
    from .engine import CaseOutcome

    found = audit_case(case, ctx)
    errors = found.errors
    failed = bool(errors) and mode != "warn"
    reason = (f"gold audit: {len(errors)} error finding(s), {len(found.findings) - len(errors)}"
              " warning(s)") if failed else None
    return CaseOutcome("failed" if failed else "passed", found.metrics, found.labels, [], None,
                       reason, None, [f.text() for f in found.findings],
                       {"audit": {"findings": [f.to_json() for f in found.findings]}})


# -- shared pieces -----------------------------------------------------------------------------


_JSON_GOLD_ERROR = re.compile(r"\bgold: not (valid )?JSON")
_GOLD_PARSE_ERROR = re.compile(r"\bgold(\[\d+\])?: (cannot parse|refused):")


def _invalid_case(case: Case, result: AuditResult) -> None:
    for error in case.errors:
        if case.kind == "json" and _JSON_GOLD_ERROR.search(error):
            result.add("invalid-json", error)
        elif _GOLD_PARSE_ERROR.search(error):  # found at collection: SPARQL golds are parsed
            result.add("gold-error", error)
        else:
            result.add("invalid-case", error)


def _self_check(case: Case, kind: Any, ctx: _AuditContext, result: AuditResult,
                prediction: Any, gold: int | None, *, explained: Iterable[str] = (),
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


# -- SQL and SPARQL ----------------------------------------------------------------------------


def _audit_query(case: Case, kind: Any, ctx: _AuditContext, result: AuditResult) -> None:
    from .kinds._query import limits as case_limits

    language = case.kind
    texts = [g for g in case.golds if isinstance(g, str)] if case.gold is not None else []
    several = len(texts) > 1
    src = ctx.source(case) if case.source_spec is not None else None
    executable = src is not None and src.executable
    limits = case_limits(case.options)
    timeout = limits.get("timeout", src.timeout if src is not None else None)
    tables: list[ResultTable | None] = []
    for i, text in enumerate(texts):
        index = i if several else None
        for code, message in lint_text(text, language):
            result.add(code, message, index)
        table = _execute(src, text, limits, case, ctx, result, index) if executable else None
        tables.append(table)
        if table is None and executable:
            continue  # the execution finding says it all
        if table is not None:
            _lint_table(table, result, index, timeout)
            _ties(src, text, table, language, limits, result, index)
        if case.gold_result is None:
            single = replace(case, gold=text, predicted=MISSING, predicted_result=None)
            _self_check(single, kind, ctx, result, text, index)
    if case.gold_result is not None:
        recorded = _normalized(case.gold_result, language)
        live = tables[0] if tables else None
        if live is not None and texts:
            _drift(recorded, live, texts[0], language, result)
        else:
            _lint_table(recorded, result, None, None)
        single = replace(case, predicted=MISSING, predicted_result=case.gold_result)
        _self_check(single, kind, ctx, result, MISSING, None)
    elif not texts:
        result.add("gold-error", "no gold query to execute")
    _redundant(tables, texts, language, result)


def _execute(src: Any, text: str, limits: Mapping[str, Any], case: Case, ctx: _AuditContext,
             result: AuditResult, index: int | None) -> ResultTable | None:
    """Run one gold live (trusted, as the kinds run golds); hand the result to the kinds."""
    from .kinds._query import gold_cache_key, short
    from .sources.codec import CodecError, encode_table

    try:
        table: ResultTable = src.execute(text, trusted=True, **limits)
    except SourceUnavailable:
        raise
    except QueryTimeout as exc:
        result.add("gold-timeout", f"{exc.reason()} -- {short(text)}", index)
        return None
    except QueryEvalError as exc:
        result.add("gold-error", f"{exc.reason()} -- {short(text)}", index)
        return None
    if table.truncated:
        what, option = table.cut_by()
        result.add("gold-error", f"the gold result {what} (raise {option}) -- {short(text)}",
                   index)
        return None
    namespace = "sql-gold" if case.kind == "sql" else "sparql-gold"
    with contextlib.suppress(CodecError):  # else the kind executes it once more
        ctx.cache_set(namespace, gold_cache_key(src, text), encode_table(table))
    return table


def _normalized(table: ResultTable, language: str) -> ResultTable:
    """A recorded SPARQL result in the engines' Term normal form (as the kind reads it)."""
    if language != "sparql":
        return table
    from .sources.rdf_codec import normalize_cell

    rows = [tuple(normalize_cell(c) for c in row) for row in table.rows]
    return ResultTable(list(table.columns), rows, table.truncated, table.seconds, dict(table.meta))


def _lint_table(table: ResultTable, result: AuditResult, index: int | None,
                timeout: float | None) -> None:
    if not table.rows:
        result.add("empty-result", "the gold returns no rows: any prediction that returns "
                   "nothing is right, and some reference metrics (cell_f1, the Denodo BIRD "
                   "F1; percent_overlap; percent_subset) are 0 even for the gold itself", index)
    elif len(table.rows) == 1 and table.rows[0] and all(c is None for c in table.rows[0]):
        result.add("empty-result", "the gold returns one row of NULLs (an aggregate over no "
                   "rows)", index)
    if timeout and table.seconds > timeout / 2:
        result.add("slow-gold", f"took {table.seconds:.2f} s, over half its {timeout:g} s "
                   "timeout: on a busier machine it times out", index)


def _drift(recorded: ResultTable, live: ResultTable, text: str, language: str,
           result: AuditResult) -> None:
    from .metrics.table import compare_tables

    if compare_tables(recorded, live, order_matters=_ordered(text, language)).ex:
        return
    old, new = _row_counts(recorded.rows), _row_counts(live.rows)
    gone = [r for r in recorded.rows if (old - new)[repr(r)]][:TIE_ROWS_SHOWN]
    came = [r for r in live.rows if (new - old)[repr(r)]][:TIE_ROWS_SHOWN]
    shown = (f"; only recorded: {_rows(gone)}" if gone else "") + (
        f"; only live: {_rows(came)}" if came else "")
    if not shown:
        shown = "; the same rows in another order"
    result.add("gold-drift", f"the recorded gold_result ({len(recorded.rows)} rows) differs "
               f"from executing the gold now ({len(live.rows)} rows){shown}")


def _ordered(text: str, language: str) -> bool:
    if language == "sparql":
        from .sources.sparqlguard import classify

        try:
            return bool(classify(text).has_order_by)
        except QueryEvalError:
            return False
    from .metrics.tsse_sql import order_matters

    return order_matters(text)


def _row_counts(rows: Iterable[tuple[Any, ...]]) -> Counter[str]:
    return Counter(repr(r) for r in rows)


def _redundant(tables: list[ResultTable | None], texts: list[str], language: str,
               result: AuditResult) -> None:
    """Alternatives with identical results: same columns in the same order, same rows (in
    the same order when the alternative orders them)."""
    seen: list[tuple[int, ResultTable]] = []
    for i, table in enumerate(tables):
        if table is None:
            continue
        for j, earlier in seen:
            if len(table.columns) != len(earlier.columns):
                continue
            ordered = _ordered(texts[i], language) and _ordered(texts[j], language)
            same = (table.rows == earlier.rows if ordered
                    else _row_counts(table.rows) == _row_counts(earlier.rows))
            if same:
                result.add("redundant-alternative", f"returns the same result as gold[{j}] "
                           f"({len(table.rows)} rows): the alternative adds nothing", i)
                break
        else:
            seen.append((i, table))


# -- text lints --------------------------------------------------------------------------------

_SQL_CLOCK = re.compile(
    r"\b(CURRENT_DATE|CURRENT_TIME|CURRENT_TIMESTAMP|LOCALTIME|LOCALTIMESTAMP|SYSDATE|"
    r"SYSTIMESTAMP)\b(?!\s*\.)"
    r"|\b(NOW|GETDATE|GETUTCDATE|SYSDATETIME|SYSUTCDATETIME|CURDATE|CURTIME|UTC_DATE|"
    r"UTC_TIME|UTC_TIMESTAMP|TRANSACTION_TIMESTAMP|STATEMENT_TIMESTAMP|CLOCK_TIMESTAMP|"
    r"TIMEOFDAY|TODAY)\s*\("
    r"|\bUNIX_TIMESTAMP\s*\(\s*\)", re.IGNORECASE)
#: SQLite's date functions read the clock through the string 'now'; PostgreSQL casts
#: 'now', 'today', 'tomorrow' and 'yesterday' to dates and timestamps.
_SQL_CLOCK_STRINGS = re.compile(
    r"\b(?:date|time|datetime|julianday|strftime|unixepoch|timediff)\s*\([^()]*'\s*now\s*'"
    r"|'\s*(?:now|today|tomorrow|yesterday)\s*'\s*::"
    r"|\b(?:date|timestamp|timestamptz|time)\s+'\s*(?:now|today|tomorrow|yesterday)\s*'"
    r"|\bCAST\s*\(\s*'\s*(?:now|today|tomorrow|yesterday)\s*'\s+AS\b", re.IGNORECASE)
_SQL_RANDOM = re.compile(r"\b(RANDOM|RAND|NEWID|UUID|GEN_RANDOM_UUID|RANDOMBLOB)\s*\(",
                         re.IGNORECASE)
_SPARQL_CLOCK = re.compile(r"\bNOW\s*\(\s*\)", re.IGNORECASE)
_SPARQL_RANDOM = re.compile(r"\b(RAND|UUID|STRUUID)\s*\(\s*\)", re.IGNORECASE)

_SQL_STRING = re.compile(r"'(?:[^']|'')*'")
_SQL_COMMENT = re.compile(r"--[^\n]*|/\*.*?\*/", re.DOTALL)
_SPARQL_MASK = re.compile(r'"""(?:.|\n)*?"""|\'\'\'(?:.|\n)*?\'\'\'|"(?:[^"\\\n]|\\.)*"|'
                          r"'(?:[^'\\\n]|\\.)*'|<[^<>\"{}|^`\\\s]*>|#[^\n]*")


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group(0))


def _closed(match: str) -> str:
    """``date('now'`` as ``date('now')``: a match ends at the clock's string argument."""
    text = " ".join(match.split())
    return text + ")" * (text.count("(") - text.count(")"))


def lint_text(text: str, language: str) -> list[tuple[str, str]]:
    """Clock and random functions in a gold query: ``(code, message)`` pairs.

    String literals and comments are blanked first, so that a column named ``now_playing``
    or a comment mentioning NOW() is not a finding; SQLite's ``date('now')`` is found by its
    string argument.
    """
    out: list[tuple[str, str]] = []
    if language == "sparql":
        code = _SPARQL_MASK.sub(_blank, text)
        clock = sorted({m.group(0).upper().replace(" ", "") for m in _SPARQL_CLOCK.finditer(code)})
        random = sorted({m.group(1).upper() + "()" for m in _SPARQL_RANDOM.finditer(code)})
    else:
        code = _SQL_STRING.sub(_blank, _SQL_COMMENT.sub(_blank, text))
        uncommented = _SQL_COMMENT.sub(_blank, text)
        clock = sorted({(m.group(1) or (m.group(2) or "UNIX_TIMESTAMP") + "()").upper()
                        for m in _SQL_CLOCK.finditer(code)}
                       | {_closed(m.group(0)) for m in _SQL_CLOCK_STRINGS.finditer(uncommented)})
        random = sorted({m.group(1).upper() + "()" for m in _SQL_RANDOM.finditer(code)})
    if clock:
        out.append(("clock-dependent", f"reads the clock ({', '.join(clock)}): its result "
                    "changes with the day the suite runs; use a fixed date literal"))
    if random:
        out.append(("nondeterministic", f"calls {', '.join(random)}: its result changes from "
                    "one run to the next"))
    return out


# -- ties at ORDER BY ... LIMIT ----------------------------------------------------------------


def tie_variants(text: str, language: str, columns: list[str],
                 dialect: str | None = None) -> tuple[str, str] | None:
    """The gold with its ORDER BY extended by every selected column, ascending and then
    descending; None when its outermost query has no ORDER BY with a LIMIT.

    The two extremes of tie-breaking select the same rows exactly when no tie at the cut
    separates rows with different values (a tied group split by the cut holds, ascending, its
    smallest rows and, descending, its largest: the same multiset only if all are equal).
    """
    if not columns:
        return None
    if language == "sparql":
        return _sparql_tie_variants(text, columns)
    return _sql_tie_variants(text, len(columns), dialect)


def _sql_tie_variants(text: str, width: int, dialect: str | None) -> tuple[str, str] | None:
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(text, read=dialect)
    except Exception:  # outside sqlglot's grammar: the lint cannot tell
        return None
    if tree is None or tree.args.get("order") is None or not (
            tree.args.get("limit") or tree.args.get("fetch")):
        return None

    def variant(desc: bool) -> str:
        copy = tree.copy()
        order = copy.args["order"]
        order.set("expressions", [*order.expressions, *(
            exp.Ordered(this=exp.Literal.number(i + 1), desc=desc) for i in range(width))])
        return str(copy.sql(dialect=dialect))

    try:
        return variant(False), variant(True)
    except Exception:
        return None


_SPARQL_ORDER = re.compile(r"\bORDER\s+BY\b", re.IGNORECASE)
_SPARQL_CUT = re.compile(r"\b(LIMIT|OFFSET)\b", re.IGNORECASE)


def _sparql_tie_variants(text: str, columns: list[str]) -> tuple[str, str] | None:
    """The solution modifiers follow the outermost group's closing brace."""
    masked = _SPARQL_MASK.sub(_blank, text)
    tail = masked.rfind("}")
    if tail < 0:
        return None
    order = _SPARQL_ORDER.search(masked, tail)
    limit = re.search(r"\bLIMIT\b", masked[tail:], re.IGNORECASE)
    if order is None or limit is None:
        return None
    cut = _SPARQL_CUT.search(masked, order.end())
    at = cut.start() if cut else len(text)
    names = [c for c in columns if re.fullmatch(r"[A-Za-z0-9_\u00b7\u00c0-\uffff]+", c)]
    if len(names) != len(columns):
        return None

    def variant(direction: str) -> str:
        extra = " ".join(f"{direction}(?{c})" for c in names)
        return f"{text[:at].rstrip()} {extra} {text[at:]}".rstrip()

    return variant("ASC"), variant("DESC")


def _ties(src: Any, text: str, table: ResultTable, language: str,
          limits: Mapping[str, Any], result: AuditResult, index: int | None) -> None:
    variants = tie_variants(text, language, list(table.columns), src.dialect)
    if variants is None:
        return
    found: list[ResultTable] = []
    for query in variants:
        try:
            out: ResultTable = src.execute(query, trusted=True, **limits)
        except SourceUnavailable:
            raise
        except QueryEvalError:
            return  # the rewritten text does not run here: no verdict, no finding
        if out.truncated:
            return
        found.append(out)
    low, high = _row_counts(found[0].rows), _row_counts(found[1].rows)
    if low == high:
        return
    only_low = [r for r in found[0].rows if (low - high)[repr(r)]][:TIE_ROWS_SHOWN]
    only_high = [r for r in found[1].rows if (high - low)[repr(r)]][:TIE_ROWS_SHOWN]
    result.add("ties-at-limit", "ORDER BY ... LIMIT cuts through rows tied on the ORDER BY "
               f"keys: breaking the ties one way selects {_rows(only_low)}, the other way "
               f"{_rows(only_high)}; both answers are correct. Add a tie-breaking key to the "
               "ORDER BY, or list both answers as alternatives", index)


def _rows(rows: list[tuple[Any, ...]]) -> str:
    return ", ".join("(" + ", ".join(_cell(c) for c in r) + ")" for r in rows)


def _cell(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return "NULL" if value is None else str(value)


# -- JSON --------------------------------------------------------------------------------------


class _Duplicate(ValueError):
    pass


def _lint_json(gold: Any, result: AuditResult) -> None:
    """A gold written as JSON text must be strict JSON: no NaN/Infinity; a repeated key is
    legal but loses all but its last value."""
    if isinstance(gold, str):
        duplicates: list[str] = []

        def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
            keys = [k for k, _ in items]
            duplicates.extend(k for k, n in Counter(keys).items() if n > 1)
            return dict(items)

        def constant(name: str) -> Any:
            raise ValueError(f"{name} is not JSON (RFC 8259 has no NaN or Infinity)")

        try:
            json.loads(gold, object_pairs_hook=pairs, parse_constant=constant)
        except ValueError as exc:
            result.add("invalid-json", f"the gold is not valid JSON: {exc}")
            return
        if duplicates:
            result.add("duplicate-json-key", f"repeated key(s) {', '.join(sorted(set(duplicates)))}"
                       ": only the last value of each is compared")
        return
    try:
        json.dumps(gold, allow_nan=False, default=str)
    except ValueError:
        result.add("invalid-json", "the gold holds NaN or Infinity, which JSON cannot express")


# -- SDMX --------------------------------------------------------------------------------------


def _audit_sdmx(case: Case, kind: Any, ctx: _AuditContext, result: AuditResult) -> None:
    """The targets as the prediction: the kind checks the selected codes against the
    codelists of the case's ``sdmx-structure`` datasource."""
    from .kinds.sdmx import match_options, target_turns
    from .metrics.sdmx import SelectionError

    try:
        turns = target_turns(case.raw)
    except SelectionError as exc:
        result.add("invalid-case", f"target: {exc}")
        return
    primary = [{"indicator_selection": t.raw["target"]["indicator_selection"]} for t in turns]
    answers: list[tuple[str, list[Any]]] = [("", primary)]
    for pos, turn in enumerate(turns):  # every alternative target is a gold answer too
        known = [("target", _selection_key(turn.target))]
        for j, selection in enumerate(turn.alternatives):
            key = _selection_key(selection)
            same = next((name for name, k in known if k == key), None)
            if same is not None:
                result.add("redundant-alternative", f"conversation[{turn.index}]."
                           f"alternative_targets[{j}] selects the same terms as {same}: the "
                           "alternative adds nothing")
            known.append((f"alternative_targets[{j}]", key))
        for j, alt in enumerate(turn.raw.get("alternative_targets") or []):
            prediction = list(primary)
            prediction[pos] = {"indicator_selection": alt["indicator_selection"]}
            answers.append((f"conversation[{turn.index}].alternative_targets[{j}]: ", prediction))
    by_name = "name" in match_options(case.options).match_on
    bound = case.thresholds.get("valid_term_rate")
    seen: set[str] = set()  # a term an alternative shares with the target is reported once
    for where, prediction in answers:
        scored = _self_check(case, kind, ctx, result, prediction, None,
                             explained=["valid_term_rate"], where=where)
        if scored is None:
            continue
        for term in scored.details.get("invalid_terms") or []:
            if _first_sight(term, seen):
                result.add("code-not-in-codelist", where + _term(term) + f": {term.get('reason')}")
        for term in (scored.details.get("name_mismatches") or []) if by_name else []:
            if _first_sight(term, seen):
                result.add("codelist-name-mismatch", where + _term(term) + ": the codelist "
                           f"calls it {term.get('codelist_name')!r}")
        rate = scored.metrics.get("valid_term_rate")
        if bound is not None and bound.min is not None and rate is not None \
                and not scored.details.get("invalid_terms") and rate < 1 - TOLERANCE:
            result.add("gold-below-threshold", f"{where}valid_term_rate = {rate:.4f} scoring "
                       f"the gold against itself (threshold {bound.describe()})")


def _selection_key(selection: Mapping[tuple[str, str], list[Any]]) -> Any:
    """A selection compared as the metrics see it: terms per (dataset, dimension), as sets."""
    return sorted((k, sorted(set(map(repr, v)))) for k, v in selection.items() if v)


def _first_sight(term: Mapping[str, Any], seen: set[str]) -> bool:
    key = json.dumps({k: v for k, v in term.items() if k != "reason"}, sort_keys=True,
                     default=str)
    if key in seen:
        return False
    seen.add(key)
    return True


def _term(term: Mapping[str, Any]) -> str:
    name = f" ({term['name']})" if term.get("name") else ""
    return (f"conversation[{term.get('turn')}] {term.get('dataset_id')} "
            f"{term.get('dimension')}={term.get('id')}{name}")


# -- the session's findings --------------------------------------------------------------------


def findings_table(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every finding of the run, one row each, located: ``file:line`` of the case, errors
    first, then by file and line."""
    rows: list[dict[str, Any]] = []
    for rec in records:
        for f in ((rec.get("details") or {}).get("audit") or {}).get("findings") or []:
            rows.append({"id": rec.get("id"), "file": rec.get("file"), "line": rec.get("line"),
                         "kind": rec.get("kind"), **f})
    rows.sort(key=lambda r: (r["severity"] != ERROR, str(r["file"]), int(r["line"] or 0),
                             str(r["id"]), str(r["code"])))
    return rows


def audit_report(records: Sequence[Mapping[str, Any]], mode: str) -> dict[str, Any]:
    """The ``audit`` section of the JSON report."""
    rows = findings_table(records)
    audited = [r for r in records if r.get("outcome") not in ("skipped",)]
    counts = Counter(r["severity"] for r in rows)
    return {"mode": mode, "cases": len(audited),
            "cases_with_findings": len({(r["file"], r["id"]) for r in rows}),
            "errors": counts.get(ERROR, 0), "warnings": counts.get(WARNING, 0),
            "by_code": dict(sorted(Counter(r["code"] for r in rows).items())),
            "findings": rows}


def summary_lines(audit: Mapping[str, Any], limit: int = 50) -> list[str]:
    """The terminal's findings table."""
    rows = audit.get("findings") or []
    head = (f"gold audit: {audit.get('cases', 0)} cases, {audit.get('errors', 0)} errors, "
            f"{audit.get('warnings', 0)} warnings")
    if audit.get("mode") == "warn" and audit.get("errors"):
        head += " (--queryeval-audit-golds=warn: reported, not failed)"
    lines = [head]
    for r in rows[:limit]:
        gold = f" gold[{r['gold']}]" if r.get("gold") is not None else ""
        lines.append(f"  {r['severity'].upper():7} {r['code']:22} {r['file']}:{r['line']} "
                     f"{r['id']}{gold}: {r['message']}")
    if len(rows) > limit:
        lines.append(f"  ... {len(rows) - limit} more findings in the JSON report")
    if not rows:
        lines.append("  OK: no finding")
    return lines
