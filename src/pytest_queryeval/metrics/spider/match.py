"""Exact set match and the ten partial components of the Spider evaluator.

A reimplementation of taoyds/spider ``evaluation.py`` (Apache-2.0; ``rebuild_sql_val``,
``rebuild_sql_col``, ``eval_partial_match``, ``eval_exact_match``) that never mutates its
inputs, so the parsed and rebuilt form of each query text can be cached on its schema and
reused by every pair that contains it. The quirks that move published numbers are kept on
purpose: nested WHERE subqueries keep raw column ids and DISTINCT flags, FROM subqueries keep
their values, the group component compares ordered column lists plus the whole HAVING,
``and/or`` is a set comparison, IUEN recurses into the full exact match, and the FROM-table
check applies to every gold with a FROM (``legacy_from_check``: only to multi-table golds, as in
the evaluator that produced Spider's historical ``eval_result_example.txt``).

Why one module of this size: it ports the reference's matching functions one for one, in their
order, so each can be compared with the reference line by line.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast, overload

from ...errors import GoldError
from ...metricnames import SPIDER_COMPONENTS
from ...sources.spider_tables import Schema
from .hardness import counts, hardness_of, level
from .parse import (
    AGG_OPS,
    SQL,
    UNIT_OPS,
    WHERE_OPS,
    ColUnit,
    SpiderParseError,
    ValUnit,
    empty_sql,
    parse_sql,
)

#: Our component names, in the evaluator's print order, with the evaluator's labels.
COMPONENTS: tuple[str, ...] = SPIDER_COMPONENTS
OFFICIAL_NAMES: dict[str, str] = dict(zip(COMPONENTS, (
    "select", "select(no AGG)", "where", "where(no OP)", "group(no Having)", "group", "order",
    "and/or", "IUEN", "keywords",
), strict=True))

_METRIC_KEYS = tuple((c, c + "_acc", c + "_rec", c + "_f1") for c in COMPONENTS)
_IN = WHERE_OPS.index("in")
_LIKE = WHERE_OPS.index("like")

Partial = tuple[int, int, int, int, int]  # acc, rec, f1, label_total, pred_total


@dataclass(slots=True)
class Entry:
    """One query text analysed against one schema (cached)."""

    raw: SQL
    rebuilt: SQL
    hardness: str
    counts: tuple[int, int, int]
    features: Features


@dataclass(slots=True)
class StructureResult:
    """Scores of one gold/pred pair.

    ``metrics`` are the per-case values (all 0 when the prediction does not parse); ``partial``
    holds the evaluator's own per-item tuples ``(acc, rec, f1, label_total, pred_total)`` — for
    an unparsable prediction those are the scores of the evaluator's empty query, which is what
    the official aggregation averages.
    """

    metrics: dict[str, float]
    hardness: str
    partial: dict[str, Partial]
    pred_parse_error: str | None = None
    diff: list[str] = field(default_factory=list)
    exact: int = 0
    counts: tuple[int, int, int] = (0, 0, 0)

    def to_details(self) -> dict[str, object]:
        """JSON-safe form that :func:`aggregate` accepts back (for reports that only keep
        per-case details): hardness, exact and the evaluator's per-component tuples."""
        return {"hardness": self.hardness, "exact": self.exact,
                "partial": {c: list(v) for c, v in self.partial.items()}}


# -- analysis (parse + rebuild), cached per schema --------------------------------------------
def analyse(text: str, schema: Schema) -> Entry | str:
    """The cached analysis of ``text``, or the parse error message."""
    key = ("q", text)
    hit = schema.cache_get(key)
    if hit is not None:
        return cast("Entry | str", hit)  # only analyse() stores under ("q", text)
    value = _analyse(text, schema)
    schema.cache_put(key, value)
    return value


def _analyse(text: str, schema: Schema) -> Entry | str:
    try:
        raw = parse_sql(text, schema)
    except SpiderParseError as exc:
        return str(exc) or "unparsable"
    try:
        c = counts(raw)
        rebuilt = rebuild(raw, schema)
        return Entry(raw, rebuilt, level(*c), c, Features(rebuilt))
    except (IndexError, TypeError, ValueError, KeyError):
        # e.g. "a = 1 b = 2 AND c = 3": the grammar accepts two predicates without a
        # connective, and the official evaluator then crashes; we call it unparsable.
        return "malformed condition (two predicates without AND/OR)"


#: Schema-free hardness by gold text: the level, or the GoldError's message for a text outside
#: the grammar (a suite repeats golds, and a gold is rated at collection and when scored).
_FREE_CACHE: dict[str, str | GoldError] = {}
_FREE_LOCK = threading.Lock()


def hardness(sql: str, schema: Schema | None = None) -> str:
    """Spider hardness of a gold query. Works without a schema (names are not resolved, which
    never changes the structure of a query that parses), so it can run at collection time.

    Raises :class:`~pytest_queryeval.errors.GoldError` when the query is outside the grammar.
    """
    if schema is not None:
        entry = analyse(sql, schema)
        if isinstance(entry, str):
            raise GoldError(f"gold SQL does not parse (Spider grammar): {entry}")
        return entry.hardness
    hit = _FREE_CACHE.get(sql)
    if hit is None:
        try:
            hit = hardness_of(parse_sql(sql, None))
        except SpiderParseError as exc:
            hit = GoldError(f"gold SQL does not parse (Spider grammar): {exc}")
        with _FREE_LOCK:
            if len(_FREE_CACHE) > 50_000:
                _FREE_CACHE.clear()
            _FREE_CACHE[sql] = hit
    if isinstance(hit, GoldError):
        raise GoldError(str(hit)) from None
    return hit


def rebuild(sql: SQL, schema: Schema) -> SQL:
    """Values dropped, then DISTINCT dropped and foreign keys canonicalised (``evaluate``)."""
    valid = schema.valid_col_units(
        tu[1] for tu in sql["from"]["table_units"] if tu[0] == "table_unit")
    rebuilt: SQL = _rebuild_cols(sql, valid, schema.kmap)
    return rebuilt


def _drop_values(sql: SQL | None) -> Any:
    if sql is None:
        return None
    out = dict(sql)
    out["from"] = {"table_units": sql["from"]["table_units"],
                   "conds": _drop_cond_values(sql["from"]["conds"])}
    out["having"] = _drop_cond_values(sql["having"])
    out["where"] = _drop_cond_values(sql["where"])
    for op in ("intersect", "except", "union"):
        out[op] = _drop_values(sql[op])
    return out


def _drop_cond_values(cond: list[Any]) -> list[Any]:
    res = []
    for i, unit in enumerate(cond):
        if i % 2 == 0 and isinstance(unit, tuple):
            not_op, op_id, val_unit, val1, val2 = unit
            val1 = _drop_values(val1) if type(val1) is dict else None
            val2 = _drop_values(val2) if type(val2) is dict else None
            unit = (not_op, op_id, val_unit, val1, val2)
        res.append(unit)
    return res


@overload
def _col(unit: ColUnit, valid: frozenset[str], kmap: dict[str, str]) -> ColUnit: ...
@overload
def _col(unit: None, valid: frozenset[str], kmap: dict[str, str]) -> None: ...
@overload
def _col(unit: ColUnit | None, valid: frozenset[str], kmap: dict[str, str]) -> ColUnit | None: ...
def _col(unit: ColUnit | None, valid: frozenset[str], kmap: dict[str, str]) -> ColUnit | None:
    if unit is None:
        return None
    agg, col_id, _ = unit
    if col_id in kmap and col_id in valid:
        col_id = kmap[col_id]
    return (agg, col_id, None)


def _val(unit: ValUnit | None, valid: frozenset[str], kmap: dict[str, str]) -> ValUnit | None:
    if unit is None:
        return None
    op, c1, c2 = unit
    return (op, _col(c1, valid, kmap), _col(c2, valid, kmap))


def _cond_cols(cond: list[Any], valid: frozenset[str], kmap: dict[str, str]) -> list[Any]:
    """Both rebuilds of a condition in one pass: values dropped (subqueries only get their
    values dropped, as ``rebuild_sql_val`` does), then the val_unit's columns rebuilt."""
    res = []
    for i, unit in enumerate(cond):
        if i % 2 == 0 and isinstance(unit, tuple):
            not_op, op_id, val_unit, val1, val2 = unit
            unit = (not_op, op_id, _val(val_unit, valid, kmap),
                    _drop_values(val1) if type(val1) is dict else None,
                    _drop_values(val2) if type(val2) is dict else None)
        res.append(unit)
    return res


def _rebuild_cols(sql: SQL | None, valid: frozenset[str], kmap: dict[str, str]) -> Any:
    """``rebuild_sql_col(rebuild_sql_val(sql))`` (set-operation operands get both)."""
    if sql is None:
        return None
    out = dict(sql)
    out["select"] = (None, [(agg, _val(vu, valid, kmap)) for agg, vu in sql["select"][1]])
    out["from"] = {"table_units": list(sql["from"]["table_units"]),
                   "conds": _cond_cols(sql["from"]["conds"], valid, kmap)}
    out["where"] = _cond_cols(sql["where"], valid, kmap)
    out["groupBy"] = [_col(u, valid, kmap) for u in sql["groupBy"]]
    if sql["orderBy"]:
        direction, units = sql["orderBy"]
        out["orderBy"] = (direction, [_val(u, valid, kmap) for u in units])
    out["having"] = _cond_cols(sql["having"], valid, kmap)
    for op in ("intersect", "except", "union"):
        out[op] = _rebuild_cols(sql[op], valid, kmap)
    return out




# -- components ---------------------------------------------------------------------------
def _scores(count: int, pred_total: int, label_total: int) -> tuple[int, int, int]:
    if pred_total != label_total:
        return 0, 0, 0
    if count == pred_total:
        return 1, 1, 1
    return 0, 0, 0


def _multiset_count(pred: list[Any], label: list[Any]) -> int:
    remaining = list(label)
    cnt = 0
    for unit in pred:
        if unit in remaining:
            cnt += 1
            remaining.remove(unit)
    return cnt


def _keywords(sql: SQL) -> set[str]:
    res = set()
    if sql["where"]:
        res.add("where")
    if sql["groupBy"]:
        res.add("group")
    if sql["having"]:
        res.add("having")
    if sql["orderBy"]:
        res.add(sql["orderBy"][0])
        res.add("order")
    if sql["limit"] is not None:
        res.add("limit")
    for op in ("except", "union", "intersect"):
        if sql[op] is not None:
            res.add(op)
    conds = sql["from"]["conds"], sql["where"], sql["having"]
    if any(tok == "or" for c in conds for tok in c[1::2]):
        res.add("or")
    units = [u for c in conds for u in c[::2]]
    if any(u[0] for u in units):
        res.add("not")
    if any(u[1] == _IN for u in units):
        res.add("in")
    if any(u[1] == _LIKE for u in units):
        res.add("like")
    return res


def _set_or_list(items: list[Any]) -> Any:
    try:
        return set(items)
    except TypeError:  # a malformed condition list; the evaluator would crash here
        return items


def _same_tables(label: list[Any], pred: list[Any]) -> bool:
    return len(label) == len(pred) and _multiset_count(pred, label) == len(label)


class Features:
    """The parts of a rebuilt query the components compare, computed once per query text."""

    __slots__ = ("ao", "group_cols", "group_stripped", "keywords", "sel", "sel_wo", "sql",
                 "where", "where_wo")

    def __init__(self, sql: SQL) -> None:
        self.sql = sql
        self.sel: list[Any] = sql["select"][1]
        self.sel_wo = [u[1] for u in self.sel]
        self.where: list[Any] = sql["where"][::2]
        self.where_wo = [u[2] for u in self.where]
        self.group_cols = [u[1] for u in sql["groupBy"]]
        self.group_stripped = [c.split(".")[1] if "." in c else c for c in self.group_cols]
        self.ao = _set_or_list(sql["where"][1::2])
        self.keywords = _keywords(sql)


def _component(cnt_of: Callable[[list[Any], list[Any]], int], pred: list[Any],
               label: list[Any]) -> Partial:
    lt, pt = len(label), len(pred)
    if lt != pt:
        return (0, 0, 0, lt, pt)
    return (*_scores(cnt_of(pred, label), pt, lt), lt, pt)


def partial_match(pred: SQL, label: SQL, legacy: bool, pf: Features | None = None,
                  lf: Features | None = None) -> dict[str, Partial]:
    """``eval_partial_match``: per component ``(acc, rec, f1, label_total, pred_total)``."""
    if pf is None:
        pf = Features(pred)
    if lf is None:
        lf = Features(label)
    res: dict[str, Partial] = {
        "select": _component(_multiset_count, pf.sel, lf.sel),
        "select_no_agg": _component(_multiset_count, pf.sel_wo, lf.sel_wo),
        "where": _component(_multiset_count, pf.where, lf.where),
        "where_no_op": _component(_multiset_count, pf.where_wo, lf.where_wo),
        "group_no_having": _component(_multiset_count, pf.group_stripped, lf.group_stripped),
    }

    pt = 1 if pred["groupBy"] else 0
    lt = 1 if label["groupBy"] else 0
    cnt = 1 if (pt == lt == 1 and pf.group_cols == lf.group_cols
                and pred["having"] == label["having"]) else 0
    res["group"] = (*_scores(cnt, pt, lt), lt, pt)

    pt = 1 if pred["orderBy"] else 0
    lt = 1 if label["orderBy"] else 0
    cnt = 1 if (lt and pred["orderBy"] == label["orderBy"]
                and (pred["limit"] is None) == (label["limit"] is None)) else 0
    res["order"] = (*_scores(cnt, pt, lt), lt, pt)

    if pf.ao == lf.ao:
        res["and_or"] = (1, 1, 1, 1, 1)
    else:
        # the evaluator returns (pred, label, 0) where it means (label, pred, cnt)
        lt, pt = len(pf.ao), len(lf.ao)
        res["and_or"] = (*_scores(0, pt, lt), lt, pt)

    lt = pt = cnt = 0
    for op in ("intersect", "except", "union"):
        p, g = pred[op], label[op]
        if p is not None:
            pt += 1
        if g is not None:
            lt += 1
        if p is not None and g is not None:
            cnt += exact_match(p, g, legacy)
    res["iuen"] = (*_scores(cnt, pt, lt), lt, pt)

    pk, lk = pf.keywords, lf.keywords
    lt, pt = len(lk), len(pk)
    res["keywords"] = (*_scores(len(pk & lk), pt, lt), lt, pt)
    return res


def exact_match(pred: SQL, label: SQL, legacy: bool = False,
                partial: dict[str, Partial] | None = None) -> int:
    """``eval_exact_match``: every component's f1 is 1 and the FROM tables agree."""
    if partial is None:
        partial = partial_match(pred, label, legacy)
    if any(p[2] != 1 for p in partial.values()):
        return 0
    label_units = label["from"]["table_units"]
    if len(label_units) > (1 if legacy else 0):
        return 1 if _same_tables(label_units, pred["from"]["table_units"]) else 0
    return 1


_EMPTY_REBUILT: SQL = _rebuild_cols(empty_sql(), frozenset(), {})
_EMPTY_FEATURES = Features(_EMPTY_REBUILT)


# -- public entry point -----------------------------------------------------------------------
def structure_scores(gold_sql: str, pred_sql: str, schema: Schema, *,
                     legacy_from_check: bool = False) -> StructureResult:
    """Score one pair like the official evaluator (match mode).

    Raises :class:`~pytest_queryeval.errors.GoldError` when the gold is outside the grammar.
    """
    gold = analyse(gold_sql, schema)
    if isinstance(gold, str):
        raise GoldError(f"gold SQL does not parse (Spider grammar): {gold}")
    pred = analyse(pred_sql, schema)
    parse_error: str | None = None
    if isinstance(pred, str):
        parse_error = pred
        pred_rebuilt, pred_features = _EMPTY_REBUILT, _EMPTY_FEATURES
    else:
        pred_rebuilt, pred_features = pred.rebuilt, pred.features
    partial = partial_match(pred_rebuilt, gold.rebuilt, legacy_from_check, pred_features,
                            gold.features)
    exact = exact_match(pred_rebuilt, gold.rebuilt, legacy_from_check, partial)
    metrics: dict[str, float] = {"exact_set_match": float(exact)}
    if parse_error is None:
        for name, k_acc, k_rec, k_f1 in _METRIC_KEYS:
            acc, rec, f1 = partial[name][:3]
            metrics[k_acc] = float(acc)
            metrics[k_rec] = float(rec)
            metrics[k_f1] = float(f1)
        diff = [] if exact else describe_diff(gold.rebuilt, pred_rebuilt, partial,
                                              legacy_from_check)
    else:
        for _, k_acc, k_rec, k_f1 in _METRIC_KEYS:
            metrics[k_acc] = metrics[k_rec] = metrics[k_f1] = 0.0
        key = ("reason", pred_sql)
        reason = schema.cache_get(key)
        if reason is None:  # sqlglot takes milliseconds: once per text, like the parse
            reason = _reason(pred_sql, parse_error)
            schema.cache_put(key, reason)
        parse_error = str(reason)
        diff = [f"prediction does not parse: {parse_error}"]
    return StructureResult(metrics, gold.hardness, partial, parse_error, diff, exact,
                           gold.counts)


def _reason(pred_sql: str, message: str) -> str:
    """Say whether the prediction is invalid SQL or only outside the Spider grammar."""
    import logging

    import sqlglot
    from sqlglot import exp

    log = logging.getLogger("sqlglot")
    level = log.level
    log.setLevel(logging.CRITICAL)  # sqlglot warns when it falls back to a raw Command
    try:
        tree = sqlglot.parse_one(pred_sql, read="sqlite")
    except sqlglot.errors.SqlglotError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"invalid SQL ({first}); the Spider parser rejects it: {message}"
    except Exception:  # sqlglot internals; the Spider message is enough
        return f"the Spider parser rejects it: {message}"
    finally:
        log.setLevel(level)
    if not isinstance(tree, exp.Query):
        return f"invalid SQL (not a query); the Spider parser rejects it: {message}"
    return f"the Spider parser rejects it: {message}"


# -- human-readable diff ------------------------------------------------------------------------
def _col_text(unit: ColUnit | None) -> str:
    if unit is None:
        return ""
    agg, col_id, distinct = unit
    name = "*" if col_id == "__all__" else str(col_id).strip("_")
    if distinct:
        name = "DISTINCT " + name
    return f"{AGG_OPS[agg]}({name})" if agg else name


def _val_text(unit: ValUnit) -> str:
    op, c1, c2 = unit
    text = _col_text(c1)
    return f"{text} {UNIT_OPS[op]} {_col_text(c2)}" if op else text


def _value_text(val: object) -> str:
    if val is None:
        return "value"
    if isinstance(val, dict):
        return "(subquery)"
    if isinstance(val, tuple):
        return _col_text(val)
    return str(val)


def _cond_text(cond: list[Any]) -> str:
    parts = []
    for i, unit in enumerate(cond):
        if i % 2 == 1 or not isinstance(unit, tuple):
            parts.append(str(unit).upper())
            continue
        not_op, op_id, val_unit, v1, v2 = unit
        op = ("NOT " if not_op else "") + WHERE_OPS[op_id].upper()
        text = f"{_val_text(val_unit)} {op} {_value_text(v1)}"
        if v2 is not None:
            text += f" AND {_value_text(v2)}"
        parts.append(text)
    return " ".join(parts) or "-"


def _component_text(name: str, sql: SQL) -> str:
    if name in ("select", "select_no_agg"):
        units = sql["select"][1]
        if name == "select":
            return ", ".join(
                (f"{AGG_OPS[a]}({_val_text(v)})" if a else _val_text(v)) for a, v in units) or "-"
        return ", ".join(_val_text(v) for _, v in units) or "-"
    if name in ("where", "where_no_op", "and_or"):
        return _cond_text(sql["where"])
    if name in ("group_no_having", "group"):
        text = ", ".join(_col_text(u) for u in sql["groupBy"]) or "-"
        if name == "group" and sql["having"]:
            text += " HAVING " + _cond_text(sql["having"])
        return text
    if name == "order":
        if not sql["orderBy"]:
            return "-"
        direction, units = sql["orderBy"]
        text = ", ".join(_val_text(u) for u in units) + " " + str(direction).upper()
        return text + (" LIMIT n" if sql["limit"] is not None else "")
    if name == "iuen":
        return ", ".join(op.upper() for op in ("intersect", "except", "union")
                         if sql[op] is not None) or "-"
    return ", ".join(sorted(_keywords(sql))) or "-"


def describe_diff(gold: SQL, pred: SQL, partial: dict[str, Partial], legacy: bool) -> list[str]:
    """One line per mismatched component (plus the FROM tables), gold first."""
    out = []
    for name in COMPONENTS:
        if partial[name][2] != 1:
            out.append(f"{OFFICIAL_NAMES[name]}: gold {_component_text(name, gold)} | "
                       f"pred {_component_text(name, pred)}")
    if not out:
        def tables(sql: SQL) -> str:
            return ", ".join(sorted(
                str(t[1]).strip("_") if t[0] == "table_unit" else "(subquery)"
                for t in sql["from"]["table_units"])) or "-"
        out.append(f"from: gold {tables(gold)} | pred {tables(pred)}")
    return out
