"""The gold audit of the query kinds (SQL, SPARQL): each gold executed live, its text and
result linted, its ties at ``ORDER BY ... LIMIT`` tried both ways.

What is done with a gold's text is what the kind answers (its ``query_rules()``:
:data:`SQL_RULES`, :data:`SPARQL_RULES`); a kind that has no such method (a
``pytest_queryeval_kinds`` kind) gets :data:`PLAIN`: its golds executed, their results linted
and scored, no text rule of another language. Why: the language used to be the kind's name
passed as ``language``, and every name but ``sparql`` fell into the SQL branch, so a new kind
was silently linted, tie-checked and mutated as SQL.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ...errors import QueryEvalError, QueryTimeout, SourceUnavailable
from ...model import MISSING, Case, Context, Kind
from ...results import ResultTable
from ...sources.base import DataSource
from . import TIE_ROWS_SHOWN, AuditResult, self_check


def audit_query(case: Case, kind: Kind, ctx: Context, result: AuditResult) -> None:
    """Every gold text of the case linted by the kind's rules (:func:`rules_of`), executed
    live and scored as its own prediction; a recorded ``gold_result`` checked against the
    live one."""
    from .._query import limits as case_limits

    rules = rules_of(kind)
    texts = [g for g in case.golds if isinstance(g, str)] if case.gold is not None else []
    several = len(texts) > 1
    src = ctx.source(case) if case.source_spec is not None else None
    #: the source the golds run on; None when the case has none or it cannot execute
    live_src = src if src is not None and src.executable else None
    limits = case_limits(case.options)
    timeout = limits.get("timeout", src.timeout if src is not None else None)
    tables: list[ResultTable | None] = []
    for i, text in enumerate(texts):
        index = i if several else None
        for code, message in rules.lint(text):
            result.add(code, message, index)
        table = (_execute(live_src, text, limits, rules, ctx, result, index)
                 if live_src is not None else None)
        tables.append(table)
        if live_src is not None:
            if table is None:
                continue  # the execution finding says it all
            lint_table(table, result, index, timeout)
            _ties(live_src, text, table, rules, limits, result, index)
            if rules.sql_checks:
                from .smells import audit_smells

                audit_smells(live_src, text, table, limits, result, index)
            if rules.sql_checks and _neighbours_wanted(case, ctx):
                _weak(live_src, text, table, case, limits, result, index)
        if case.gold_result is None:
            single = replace(case, gold=text, predicted=MISSING, predicted_result=None)
            self_check(single, kind, ctx, result, text, index)
    if case.gold_result is not None:
        recorded = rules.normalized(case.gold_result)
        live = tables[0] if tables else None
        if live is not None and texts:
            _drift(recorded, live, texts[0], rules, result)
        else:
            lint_table(recorded, result, None, None)
        single = replace(case, predicted=MISSING, predicted_result=case.gold_result)
        self_check(single, kind, ctx, result, MISSING, None)
    elif not texts:
        result.add("gold-error", "no gold query to execute")
    _redundant(tables, texts, rules, result)


def _execute(src: DataSource, text: str, limits: Mapping[str, Any], rules: QueryRules,
             ctx: Context, result: AuditResult, index: int | None) -> ResultTable | None:
    """Run one gold live (trusted, as the kinds run golds); hand the result to the kinds."""
    from ...sources.codec import CodecError, encode_table
    from .._query import gold_cache_key, short

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
    if rules.cache_namespace is not None:
        with contextlib.suppress(CodecError):  # else the kind executes it once more
            ctx.cache_set(rules.cache_namespace, gold_cache_key(src, text),
                          encode_table(table))
    return table


#: Weak-gold findings listed per gold (the last one says how many more there are).
WEAK_SHOWN = 5


def _neighbours_wanted(case: Case, ctx: Context) -> bool:
    """The run or the case's suite asks for counterexample databases (:mod:`...neighbours.check`):
    the audit then also looks for the gold's indistinguishable neighbours."""
    from ...neighbours.check import settings_for

    return settings_for(case, ctx.neighbours, ctx.neighbour_base) is not None


def _weak(src: DataSource, text: str, table: ResultTable, case: Case,
          limits: Mapping[str, Any], result: AuditResult, index: int | None) -> None:
    """``weak-gold``: each neighbour of the gold one edit away (:mod:`...neighbours.mutate`)
    that returns the gold's result on the real database, under the case's comparison. Such a
    neighbour is an obviously different query that a model can write and pass with."""
    from ...metrics.table import compare_tables
    from ...neighbours.mutate import indistinguishable
    from .._query import compare_options, short

    ordered = _sql_ordered(text)
    compare = compare_options(case.options)

    def run(sql: str) -> ResultTable | None:
        if sql == text:
            return table
        try:
            found: ResultTable = src.execute(sql, trusted=True, **limits)
        except SourceUnavailable:
            raise
        except QueryEvalError:
            return None
        return None if found.truncated else found

    def same(a: ResultTable, b: ResultTable) -> bool:
        return bool(compare_tables(a, b, order_matters=ordered, compare=compare).ex)

    weak = indistinguishable(text, run, same, src.dialect or "sqlite")
    for n, neighbour in enumerate(weak[:WEAK_SHOWN]):
        new, _, old = neighbour.edit.partition(" for ")
        what = f"{old} from {new}" if old else f"itself from its neighbour ({new})"
        more = len(weak) - WEAK_SHOWN
        tail = f" ({more} more such neighbours)" if n == WEAK_SHOWN - 1 and more > 0 else ""
        result.add("weak-gold", f"this gold cannot tell {what} here: {short(neighbour.sql)} "
                   "returns the same result on this database, so a model that writes it passes; "
                   f"add rows that tell them apart{tail}", index)


def _as_recorded(table: ResultTable) -> ResultTable:
    """A recorded result as it is (SQL, and a kind with no syntax rules)."""
    return table


def _sparql_normalized(table: ResultTable) -> ResultTable:
    """A recorded SPARQL result in the engines' Term normal form (as the kind reads it)."""
    from ...sources.rdf_codec import normalize_cell

    rows = [tuple(normalize_cell(c) for c in row) for row in table.rows]
    return ResultTable(list(table.columns), rows, table.truncated, table.seconds, dict(table.meta))


def lint_table(table: ResultTable, result: AuditResult, index: int | None,
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


def _drift(recorded: ResultTable, live: ResultTable, text: str, rules: QueryRules,
           result: AuditResult) -> None:
    from ...metrics.table import compare_tables

    if compare_tables(recorded, live, order_matters=rules.ordered(text)).ex:
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


def _sparql_ordered(text: str) -> bool:
    from ...sources.sparqlguard import classify

    try:
        return bool(classify(text).has_order_by)
    except QueryEvalError:
        return False


def _sql_ordered(text: str) -> bool:
    from ...metrics.tsse_sql import order_matters

    return order_matters(text)


def _unordered(text: str) -> bool:
    """A syntax the audit cannot read: results compared as multisets of rows."""
    return False


def _row_counts(rows: Iterable[tuple[Any, ...]]) -> Counter[str]:
    return Counter(repr(r) for r in rows)


def _redundant(tables: list[ResultTable | None], texts: list[str], rules: QueryRules,
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
            ordered = rules.ordered(texts[i]) and rules.ordered(texts[j])
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


def lint_text(text: str, rules: QueryRules) -> list[tuple[str, str]]:
    """Clock and random functions in a gold query read by ``rules``: ``(code, message)``
    pairs."""
    return rules.lint(text)


def _no_lint(text: str) -> list[tuple[str, str]]:
    return []


def _sparql_lint(text: str) -> list[tuple[str, str]]:
    """``NOW()``, ``RAND()``, ``UUID()``, ``STRUUID()`` outside strings, IRIs and comments."""
    code = _SPARQL_MASK.sub(_blank, text)
    clock = sorted({m.group(0).upper().replace(" ", "") for m in _SPARQL_CLOCK.finditer(code)})
    random = sorted({m.group(1).upper() + "()" for m in _SPARQL_RANDOM.finditer(code)})
    return _findings(clock, random, "")


def _sql_lint(text: str) -> list[tuple[str, str]]:
    """String literals and comments are blanked first, so that a column named
    ``now_playing`` or a comment mentioning NOW() is not a finding; SQLite's
    ``date('now')`` is found by its string argument."""
    code = _SQL_STRING.sub(_blank, _SQL_COMMENT.sub(_blank, text))
    uncommented = _SQL_COMMENT.sub(_blank, text)
    clock = sorted({(m.group(1) or (m.group(2) or "UNIX_TIMESTAMP") + "()").upper()
                    for m in _SQL_CLOCK.finditer(code)}
                   | {_closed(m.group(0)) for m in _SQL_CLOCK_STRINGS.finditer(uncommented)})
    random = sorted({m.group(1).upper() + "()" for m in _SQL_RANDOM.finditer(code)})
    return _findings(clock, random, ", or pin the clock with now: on the datasource")


def _findings(clock: list[str], random: list[str], pin: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if clock:
        out.append(("clock-dependent", f"reads the clock ({', '.join(clock)}): its result "
                    f"changes with the day the suite runs; use a fixed date literal{pin}"))
    if random:
        out.append(("nondeterministic", f"calls {', '.join(random)}: its result changes from "
                    "one run to the next"))
    return out


# -- ties at ORDER BY ... LIMIT ----------------------------------------------------------------


def tie_variants(text: str, rules: QueryRules, columns: list[str],
                 dialect: str | None = None) -> tuple[str, str] | None:
    """The gold with its ORDER BY extended by every selected column, ascending and then
    descending; None when its outermost query has no ORDER BY with a LIMIT.

    The two extremes of tie-breaking select the same rows exactly when no tie at the cut
    separates rows with different values (a tied group split by the cut holds, ascending, its
    smallest rows and, descending, its largest: the same multiset only if all are equal).
    """
    if not columns:
        return None
    return rules.ties(text, columns, dialect)


def _no_ties(text: str, columns: list[str], dialect: str | None) -> tuple[str, str] | None:
    return None


def _sql_ties(text: str, columns: list[str], dialect: str | None) -> tuple[str, str] | None:
    return _sql_tie_variants(text, len(columns), dialect)


def _sparql_ties(text: str, columns: list[str], dialect: str | None,
                 ) -> tuple[str, str] | None:
    return _sparql_tie_variants(text, columns)


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


def _ties(src: DataSource, text: str, table: ResultTable, rules: QueryRules,
          limits: Mapping[str, Any], result: AuditResult, index: int | None) -> None:
    variants = rules.ties(text, list(table.columns), src.dialect) if table.columns else None
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


def _cell(value: object) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return "NULL" if value is None else str(value)


@dataclass(frozen=True)
class QueryRules:
    """What the gold audit does with the text of one query syntax."""

    #: Clock and random functions in a gold: ``(code, message)`` pairs.
    lint: Callable[[str], list[tuple[str, str]]]
    #: Whether a query's result order is part of its answer (drift and redundant
    #: alternatives compare rows in order then).
    ordered: Callable[[str], bool]
    #: The gold with its ORDER BY extended both ways, or None (no ORDER BY with a LIMIT).
    ties: Callable[[str, list[str], str | None], tuple[str, str] | None]
    #: A recorded result as the kind reads it.
    normalized: Callable[[ResultTable], ResultTable]
    #: Where the executed gold is cached for the kind (None: not cached by the audit).
    cache_namespace: str | None
    #: SQL's own checks: the smells (:mod:`.smells`) and the weak-gold search.
    sql_checks: bool = False


#: A syntax the audit has no rules for: the golds run, their results linted and scored.
PLAIN = QueryRules(_no_lint, _unordered, _no_ties, _as_recorded, None)
#: SQL's: its lints, ``ORDER BY`` rule, ties, and its own checks (smells, weak golds).
SQL_RULES = QueryRules(_sql_lint, _sql_ordered, _sql_ties, _as_recorded, "sql-gold",
                       sql_checks=True)
#: SPARQL's: its lints, ``ORDER BY`` rule and ties; recorded results in RDF terms' form.
SPARQL_RULES = QueryRules(_sparql_lint, _sparql_ordered, _sparql_ties, _sparql_normalized,
                          "sparql-gold")


def rules_of(kind: object) -> QueryRules:
    """What ``kind`` answers for its query texts (its ``query_rules()``); :data:`PLAIN` for a
    kind without the method."""
    answer = getattr(kind, "query_rules", None)
    rules = answer() if callable(answer) else None
    return rules if isinstance(rules, QueryRules) else PLAIN
