"""Near-miss attribution: which documented relaxation would turn a failing case into a pass.

A prediction that returns the right rows in another order, with one extra column, or with
``0.30000000000000004`` for ``0.3`` fails like a wrong one. For every failing case whose result
tables were compared, each relaxation below is applied on its own to both tables, the result
table metrics are computed again, and the case's thresholds are checked on the metrics with the
relaxed values in place; the relaxations under which every threshold holds are listed. It never
changes a metric or a verdict: it explains them.

=====================  ======================================================================
name                   what is relaxed (applied to the gold and the predicted table)
=====================  ======================================================================
``row_order``          row order: EX compares multisets, the predicted rows are put in the
                       gold's order where they match (the positional F1s stop counting order)
``column_subset``      extra predicted columns: the prediction is cut to one column per gold
                       column (same name first, else an equal value multiset)
``numeric_tolerance``  a predicted number within abs 1e-2 or rel 1e-4 of a gold number of the
                       same column is taken as that number (``math.isclose``)
``round_2``            numbers rounded to 2 decimals (``compare: {float_digits: 2}``)
``null_as_zero``       NULL taken as 0
``case_whitespace``    strings compared stripped and case-folded
``distinct``           duplicate rows dropped on both sides
``int_float``          int and Decimal taken as float (``compare: {numbers_as_float: true}``)
``column_order``       the predicted columns put in the gold's order (EX's column mapping, else a
                       match by name or values), for the metrics that compare by position
``language_tag``       RDF literals compared without their language tag (``"Foundation"@en``
                       as ``"Foundation"``)
``text_number``        text that is a number taken as that number, on both sides: ``'2022'``
                       as ``2022``; an RDF literal, plain or numeric (``"2022"``,
                       ``"2022"^^xsd:integer``), as its number
=====================  ======================================================================

Only the result-table metrics are recomputed; a failing threshold on another metric (a Spider
structure score, a timing) keeps its value, so such a case is never attributed. Pure, no pytest.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeGuard

from ..model import NO_DIFFICULTY, Threshold
from ..results import ResultTable, Term

if TYPE_CHECKING:
    from ..metrics.table import CompareOptions, TableComparison
    from ..model import RecordLike

#: name -> label, in report order
RELAXATIONS: dict[str, str] = {
    "row_order": "ignore row order",
    "column_subset": "ignore extra columns",
    "numeric_tolerance": "numeric tolerance (abs 1e-2, rel 1e-4)",
    "round_2": "rounding to 2 decimals",
    "null_as_zero": "NULL equal to 0",
    "case_whitespace": "case and whitespace of strings",
    "distinct": "DISTINCT",
    "int_float": "int versus float",
    "column_order": "column order",
    "language_tag": "ignore language tags",
    "text_number": "text versus number",
}
ABS_TOL = 1e-2
REL_TOL = 1e-4
#: Larger results (gold + predicted cells) are not attributed: nine more comparisons of a
#: million-row failure would cost more than the explanation is worth.
MAX_CELLS = 2_000_000

EX = "execution_accuracy"
#: What a reader of ``execution_accuracy`` alone passes (``relaxed_ex``, the judge's facts).
EX_ONLY: frozenset[str] = frozenset({EX})


def table_metrics_of(names: Iterable[str]) -> frozenset[str]:
    """The result-table metrics among ``names``, as ``relaxed(names)`` is asked for them: the
    readers of a case share one cached computation when they need the same ones."""
    from ..metrics.table import TABLE_METRIC_NAMES

    return frozenset(TABLE_METRIC_NAMES).intersection(names)


def relaxed_metrics(gold: ResultTable, pred: ResultTable, *, order_matters: bool,
                    compare: CompareOptions | Mapping[str, object] | None = None,
                    base: TableComparison | None = None,
                    names: Collection[str] | None = None) -> dict[str, dict[str, float]]:
    """The result-table metrics under each relaxation that changes something (by name).
    ``base``: the kind's own comparison of the two under the same options, when it has one
    (else it is made here). ``names``: the metrics the caller reads (None: all seven);
    ``execution_accuracy`` and ``bird_ex`` are computed without the others, on a sixth of
    the cost of the seven (every reader but a threshold on another table metric needs
    nothing else), and nothing at all is computed when no table metric is asked for."""
    from ..metrics.table import (
        MATCH_METRICS,
        TABLE_METRIC_NAMES,
        CompareOptions,
        compare_tables,
        match_metrics,
    )

    cells = sum(len(t.rows) * max(_width(t), 1) for t in (gold, pred))
    if cells > MAX_CELLS:
        raise ValueError(f"results of {cells:,} cells (over {MAX_CELLS:,}) are not attributed")
    wanted = None if names is None else set(TABLE_METRIC_NAMES).intersection(names)
    if wanted is not None and not wanted:
        return {}
    matches = frozenset(wanted) if wanted is not None and wanted <= MATCH_METRICS else None
    opts = CompareOptions.from_config(compare)
    if base is None:
        base = compare_tables(gold, pred, order_matters=order_matters, compare=opts)

    def score(g: ResultTable, p: ResultTable, ordered: bool = order_matters,
              o: CompareOptions = opts) -> dict[str, float]:
        if matches is not None:
            return match_metrics(g, p, order_matters=ordered, compare=o, names=matches)
        return compare_tables(g, p, order_matters=ordered, compare=o).metrics()

    return _each_relaxation(gold, pred, opts, base, score)


def _each_relaxation(gold: ResultTable, pred: ResultTable, opts: CompareOptions,
                     base: TableComparison,
                     score: Callable[..., dict[str, float]]) -> dict[str, dict[str, float]]:
    """``score`` of the two tables under each relaxation that changes something, in
    :data:`RELAXATIONS` order: one the options already apply, or one that finds nothing to
    relax in these tables (no NULL, no duplicate row, ...), is left out."""
    out: dict[str, dict[str, float]] = {}
    if len(gold.rows) > 1 or len(pred.rows) > 1:
        out["row_order"] = score(gold, _in_gold_order(gold, pred, opts.normalise), False)
    sub = _column_subset(gold, pred)
    if sub is not None:
        out["column_subset"] = score(gold, sub)
    snapped = _snap_numbers(gold, pred)
    if snapped is not None:
        out["numeric_tolerance"] = score(gold, snapped)
    if opts.float_tolerance is None and opts.float_digits != 2:
        out["round_2"] = score(gold, pred, o=replace(opts, float_digits=2))
    if _has(gold, pred, lambda v: v is None):
        out["null_as_zero"] = score(_map(gold, _null_zero), _map(pred, _null_zero))
    if _has(gold, pred, lambda v: isinstance(v, str)) and not (
            opts.strip_whitespace and opts.case_insensitive):
        out["case_whitespace"] = score(gold, pred, o=replace(opts, strip_whitespace=True,
                                                             case_insensitive=True))
    if _has_duplicates(gold) or _has_duplicates(pred):
        out["distinct"] = score(_dedup(gold), _dedup(pred))
    if not opts.numbers_as_float and _has(gold, pred, _is_number):
        out["int_float"] = score(gold, pred, o=replace(opts, numbers_as_float=True))
    perm = base.perm if base.perm is not None else _column_match(gold, pred)
    if perm is not None and list(perm) != list(range(len(perm))) and _width(pred) == len(perm):
        out["column_order"] = score(gold, _project(pred, perm))
    if _has(gold, pred, _has_lang):
        out["language_tag"] = score(_map(gold, _no_lang), _map(pred, _no_lang))
    if _has(gold, pred, _is_numeric_text):
        out["text_number"] = score(_map(gold, _as_number), _map(pred, _as_number))
    return out


def flips(thresholds: Mapping[str, Threshold], metrics: Mapping[str, float],
          relaxed: Mapping[str, Mapping[str, float]]) -> list[str]:
    """The relaxations under which every threshold holds, in :data:`RELAXATIONS` order."""
    from .thresholds import evaluate

    found = []
    for name in RELAXATIONS:
        values = relaxed.get(name)
        if values is None:
            continue
        # a relaxation only relaxes: it never lowers a value (a tie-aware EX stays 1)
        merged = {**metrics, **{k: max(v, metrics.get(k, v)) for k, v in values.items()}}
        if not evaluate(thresholds, merged):
            found.append(name)
    return found


def describe(names: Sequence[str]) -> str:
    """The diff line: ``near miss: would pass with ignore row order; DISTINCT``."""
    return "near miss: would pass with " + "; ".join(RELAXATIONS[n] for n in names)


def aggregate(records: Iterable[RecordLike]) -> dict[str, Any]:
    """Counts of failing cases per relaxation, overall and per kind and difficulty, from the
    records' ``near_miss`` lists (``failures``: the failing cases with compared results)."""
    overall: Counter[str] = Counter()
    by_kind: dict[str, Counter[str]] = {}
    by_difficulty: dict[str, Counter[str]] = {}
    failures = 0
    for rec in records:
        names = rec.get("near_miss")
        if names is None:
            continue
        failures += 1
        kind = str(rec.get("kind"))
        diff = str(rec.get("difficulty") or NO_DIFFICULTY)
        for n in names:
            overall[n] += 1
            by_kind.setdefault(kind, Counter())[n] += 1
            by_difficulty.setdefault(diff, Counter())[n] += 1

    def ordered(c: Counter[str]) -> dict[str, int]:
        return {n: c[n] for n in RELAXATIONS if c[n]}

    return {"failures": failures, "overall": ordered(overall),
            "by_kind": {k: ordered(v) for k, v in sorted(by_kind.items())},
            "by_difficulty": {k: ordered(v) for k, v in sorted(by_difficulty.items())}}


def summary_lines(agg: Mapping[str, Any]) -> list[str]:
    """``12 failures would pass ignoring row order`` lines, with per kind/difficulty counts."""
    overall: Mapping[str, int] = agg.get("overall") or {}
    if not overall:
        return []
    lines = [f"near misses ({agg.get('failures', 0)} failing cases with compared results; "
             "a case can count under several):"]
    for name, count in overall.items():
        per = [f"{k} {v[name]}" for scope in ("by_kind", "by_difficulty")
               for k, v in (agg.get(scope) or {}).items() if v.get(name)]
        lines.append(f"  {count} failure{'s' if count != 1 else ''} would pass with "
                     f"{RELAXATIONS[name]}  ({', '.join(per)})")
    return lines


# -- relaxations ---------------------------------------------------------------------------------


def _width(t: ResultTable) -> int:
    return len(t.columns) if t.columns else (len(t.rows[0]) if t.rows else 0)


def _with_rows(t: ResultTable, rows: list[tuple[Any, ...]],
               columns: list[str] | None = None) -> ResultTable:
    return ResultTable(list(t.columns) if columns is None else columns, rows, seconds=t.seconds)


def _map(t: ResultTable, fn: Callable[[Any], Any]) -> ResultTable:
    return _with_rows(t, [tuple(map(fn, r)) for r in t.rows])


def _null_zero(v: object) -> object:
    return 0 if v is None else v


def _is_number(v: object) -> bool:
    from decimal import Decimal

    return isinstance(v, int | float | Decimal) and not isinstance(v, bool)


def _has(gold: ResultTable, pred: ResultTable, test: Callable[[Any], bool]) -> bool:
    return any(test(v) for t in (gold, pred) for r in t.rows for v in r)


def _key(row: tuple[Any, ...], norm: Callable[[Any], Any]) -> Any:
    try:
        key = tuple(map(norm, row))
        hash(key)
        return key
    except TypeError:
        return repr(row)


def _has_duplicates(t: ResultTable) -> bool:
    keys = [_key(r, lambda v: v) for r in t.rows]
    return len(set(keys)) < len(keys)


def _dedup(t: ResultTable) -> ResultTable:
    seen: dict[Any, tuple[Any, ...]] = {}
    for r in t.rows:
        seen.setdefault(_key(r, lambda v: v), tuple(r))
    return _with_rows(t, list(seen.values()))


def _in_gold_order(gold: ResultTable, pred: ResultTable,
                   norm: Callable[[Any], Any]) -> ResultTable:
    """The predicted rows that equal a gold row, in the gold's order; the others after."""
    pool: dict[Any, list[tuple[Any, ...]]] = {}
    for r in pred.rows:
        pool.setdefault(_key(r, norm), []).append(tuple(r))
    first: list[tuple[Any, ...]] = []
    for g in gold.rows:
        bucket = pool.get(_key(g, norm))
        if bucket:
            first.append(bucket.pop(0))
    rest = [r for bucket in pool.values() for r in bucket]
    return _with_rows(pred, first + rest)


def _column_values(t: ResultTable, j: int) -> Counter[Any]:
    return Counter(_key((r[j],), lambda v: v) for r in t.rows if j < len(r))


def _column_match(gold: ResultTable, pred: ResultTable) -> list[int] | None:
    """For each gold column, a distinct predicted column: same name first, else an equal value
    multiset; None when some gold column finds none."""
    gw, pw = _width(gold), _width(pred)
    if gw == 0 or pw < gw:
        return None
    names = [str(c).lower() for c in pred.columns]
    used: set[int] = set()
    perm: list[int] = []
    for j in range(gw):
        name = str(gold.columns[j]).lower() if j < len(gold.columns) else None
        pick = next((i for i, n in enumerate(names) if n == name and i not in used), None)
        if pick is None:
            want = _column_values(gold, j)
            pick = next((i for i in range(pw) if i not in used
                         and _column_values(pred, i) == want), None)
        if pick is None:
            return None
        used.add(pick)
        perm.append(pick)
    return perm


def _project(t: ResultTable, perm: Sequence[int]) -> ResultTable:
    cols = [t.columns[i] if i < len(t.columns) else f"col{i}" for i in perm]
    return _with_rows(t, [tuple(r[i] for i in perm) for r in t.rows], cols)


def _column_subset(gold: ResultTable, pred: ResultTable) -> ResultTable | None:
    if _width(pred) <= _width(gold):
        return None
    perm = _column_match(gold, pred)
    return None if perm is None else _project(pred, perm)


def _snap_numbers(gold: ResultTable, pred: ResultTable) -> ResultTable | None:
    """Each predicted number close to a gold number of its column becomes that number."""
    width = min(_width(gold), _width(pred))
    columns: list[list[float]] = []
    originals: list[dict[float, Any]] = []
    for j in range(width):
        values: dict[float, Any] = {}
        for r in gold.rows:
            v = r[j] if j < len(r) else None
            if v is not None and _is_number(v) and math.isfinite(float(v)):
                values.setdefault(float(v), v)
        columns.append(sorted(values))
        originals.append(values)
    if not any(columns):
        return None
    changed = False
    rows = []
    for r in pred.rows:
        new = list(r)
        for j in range(min(width, len(r))):
            v = r[j]
            if not _is_number(v) or not columns[j] or not math.isfinite(float(v)):
                continue
            f = float(v)
            k = bisect.bisect_left(columns[j], f)
            for cand in columns[j][max(k - 1, 0):k + 1]:
                if math.isclose(f, cand, rel_tol=REL_TOL, abs_tol=ABS_TOL):
                    if originals[j][cand] != v:
                        new[j] = originals[j][cand]
                        changed = True
                    break
        rows.append(tuple(new))
    return _with_rows(pred, rows) if changed else None


def _has_lang(v: object) -> TypeGuard[Term]:
    return isinstance(v, Term) and v.lang is not None


def _no_lang(v: object) -> object:
    return Term(v.type, v.value) if _has_lang(v) else v


_XSD = "http://www.w3.org/2001/XMLSchema#"
#: The RDF literal datatypes whose lexical form :func:`_as_number` reads as a number.
_NUMERIC_TYPES = frozenset(_XSD + t for t in (
    "integer", "decimal", "double", "float", "int", "long", "short", "byte",
    "nonNegativeInteger", "positiveInteger", "nonPositiveInteger", "negativeInteger",
    "unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte"))
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+-]?\d+")


def _text_of(v: object) -> str | None:
    """The text of a string or of a text RDF literal (plain, ``xsd:string``), else None."""
    if isinstance(v, str):
        return v
    if isinstance(v, Term) and v.type == "literal" and v.lang is None \
            and v.datatype in (None, _XSD + "string"):
        return v.value
    return None


def _is_numeric_text(v: object) -> bool:
    text = _text_of(v)
    return text is not None and _NUMBER.fullmatch(text.strip()) is not None


def _as_number(v: object) -> object:
    """Numeric text, and an RDF literal of a numeric type, as a Python number (an int when
    whole digits, else a float); any other value unchanged."""
    text = _text_of(v)
    if text is None and isinstance(v, Term) and v.type == "literal" \
            and v.datatype in _NUMERIC_TYPES:
        text = v.value
    if text is None or _NUMBER.fullmatch(text.strip()) is None:
        return v
    text = text.strip()
    return int(text) if _INTEGER.fullmatch(text) else float(text)
