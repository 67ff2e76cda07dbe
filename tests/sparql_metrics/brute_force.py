"""A deliberately plain re-implementation of BuildingQA's metrics, used as the test oracle.

Written from the documented semantics (docs/metrics-sparql.md), not from the reference's code:
rows are SPARQL-JSON bindings (``{var: {"value": ...}}``, unbound variables absent), every
``itertools.permutations`` mapping is scored, rows are matched pairwise and greedily, and the
column averages go through ``numpy.mean`` as in the reference. Slow on purpose.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from typing import Any

import numpy as np

from pytest_queryeval.results import ResultTable, Term

Binding = dict[str, dict[str, str]]


def table_to_bindings(table: ResultTable, kind: str) -> tuple[list[Binding], list[str] | None]:
    """SPARQL-JSON bindings for a table, and the column list to force (SQL: every column)."""
    rows: list[Binding] = []
    for row in table.rows:
        b: Binding = {}
        for name, v in zip(table.columns, row, strict=True):
            if v is None:
                continue
            b[name] = v.to_binding() if isinstance(v, Term) else {"value": str(v)}
        rows.append(b)
    forced = list(table.columns) if kind == "sql" and table.rows else None
    return rows, forced


def bf_normalize(v: Any) -> str:
    s = str(v).strip().lower()
    if len(s) >= 2 and s.startswith('"') and s.endswith('"'):
        s = s[1:-1]
    s = re.sub(r"\^\^.*$", "", s)
    return re.sub(r"@[a-z]{2}(-[a-z]{2})?$", "", s)


def bf_arity_count(q: Any) -> int:
    if not isinstance(q, str):
        return 0
    m = re.search(r"SELECT\s+(.+?)\s+WHERE", q, flags=re.I | re.S)
    if not m:
        return 0
    out, depth, tok = [], 0, ""
    for c in m.group(1).strip():
        depth += (c == "(") - (c == ")")
        if c.isspace() and depth == 0:
            if tok:
                out.append(tok)
            tok = ""
        else:
            tok += c
    if tok:
        out.append(tok)
    return len([t for t in out if t.upper() != "DISTINCT"])


def bf_arity(pred: Any, gold: Any) -> float:
    def width(x: Any) -> int:
        if isinstance(x, str):
            return bf_arity_count(x)
        if isinstance(x, list):
            return len(x[0]) if x else 0
        return 0

    a, b = width(pred), width(gold)
    if a == 0 and b == 0:
        return 1.0
    return 2 * min(a, b) / (a + b)


def _row_key(row: Binding, keys: set[str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, bf_normalize(v.get("value", ""))) for k, v in row.items() if k in keys))


def bf_scores_for_mapping(gold: list[Binding], pred: list[Binding], mapping: dict[str, str]):
    """(entity F1, row F1, row tp) for one pred->gold mapping."""
    if not mapping or not gold:
        return 0.0, 0.0, 0
    precs, recs = [], []
    for pc, gc in mapping.items():
        gv = {str(r.get(gc, {}).get("value", "")) for r in gold}
        pv = {str(r.get(pc, {}).get("value", "")) for r in pred}
        tp = len(gv & pv)
        precs.append(tp / len(pv) if pv else 1.0)
        recs.append(tp / len(gv) if gv else 1.0)
    mp, mr = np.mean(precs), np.mean(recs)
    ent = 2 * mp * mr / (mp + mr) if (mp + mr) > 0 else 0.0
    keys = set(mapping.values())
    renamed = [{mapping[k]: v for k, v in r.items() if k in mapping} for r in pred]
    used: set[int] = set()
    tp_rows = 0
    for g in gold:
        gk = _row_key(g, keys)
        for j, p in enumerate(renamed):
            if j not in used and _row_key(p, keys) == gk:
                used.add(j)
                tp_rows += 1
                break
    prec = tp_rows / len(pred) if pred else 1.0
    rec = tp_rows / len(gold) if gold else 1.0
    row = 2 * prec * rec / (prec + rec) if (prec + rec) > 0 else 0.0
    return float(ent), float(row), tp_rows


def bf_best(
    gold: list[Binding],
    pred: list[Binding],
    gold_cols: list[str] | None = None,
    pred_cols: list[str] | None = None,
) -> dict[str, Any]:
    """Entity and row F1 of the reference's chosen mapping, and that mapping (pred, gold) pairs."""
    if not gold or not pred:
        s = 1.0 if not gold and not pred else 0.0
        return {"entity_set_f1": s, "row_match_f1": s, "mapping": None}
    gcols = gold_cols if gold_cols is not None else list(gold[0])
    pcols = pred_cols if pred_cols is not None else list(pred[0])
    if len(pcols) < len(gcols):
        return {"entity_set_f1": 0.0, "row_match_f1": 0.0, "mapping": None}
    best: dict[str, Any] = {"entity_set_f1": 0.0, "row_match_f1": 0.0, "mapping": None}
    best_row, best_ent = -1.0, -1.0
    for p in itertools.permutations(pcols, len(gcols)):
        mapping = dict(zip(p, gcols, strict=True))
        ent, row, tp = bf_scores_for_mapping(gold, pred, mapping)
        if row > best_row or (row == best_row and ent > best_ent):
            best_row, best_ent = row, ent
            best = {
                "entity_set_f1": ent,
                "row_match_f1": row,
                "mapping": list(zip(p, gcols, strict=True)),
                "tp": tp,
            }
        if best_row == 1.0 and best_ent == 1.0:
            break
    return best


def bf_exact(
    gold: list[Binding],
    pred: list[Binding],
    gold_cols: list[str] | None = None,
    pred_cols: list[str] | None = None,
) -> float:
    if not gold and not pred:
        return 1.0
    if not gold or not pred:
        return 0.0
    gcols = gold_cols if gold_cols is not None else list(gold[0])
    pcols = pred_cols if pred_cols is not None else list(pred[0])
    if len(gcols) != len(pcols):
        return 0.0
    return bf_scores_for_mapping(gold, pred, dict(zip(pcols, gcols, strict=True)))[1]


def bf_table_metrics(gold: ResultTable, pred: ResultTable, kind: str) -> dict[str, Any]:
    """All four metrics (arity from the results) plus the mapping, from two tables."""
    g, gcols = table_to_bindings(gold, kind)
    p, pcols = table_to_bindings(pred, kind)
    best = bf_best(g, p, gcols, pcols)
    gw = len(gcols) if gcols is not None else (len(g[0]) if g else 0)
    pw = len(pcols) if pcols is not None else (len(p[0]) if p else 0)
    return {
        "arity_f1": 1.0 if gw == pw == 0 else 2 * min(gw, pw) / (gw + pw),
        "entity_set_f1": best["entity_set_f1"],
        "row_match_f1": best["row_match_f1"],
        "exact_match_f1": bf_exact(g, p, gcols, pcols),
        "mapping": best["mapping"],
    }


def bf_best_hashed(gold: ResultTable, pred: ResultTable) -> dict[str, Any]:
    """:func:`bf_best` for big SPARQL tables whose first rows are fully bound: still every
    permutation in itertools order with numpy averages, but rows counted with a ``Counter``
    (greedy one-to-one matching on equality counts exactly the multiset intersection)."""
    g, _ = table_to_bindings(gold, "sparql")
    p, _ = table_to_bindings(pred, "sparql")
    gcols, pcols = list(g[0]), list(p[0])

    def norm_rows(rows: list[Binding], cols: list[str]) -> list[list[str | None]]:
        return [[bf_normalize(r[c]["value"]) if c in r else None for r in rows] for c in cols]

    def value_set(rows: list[Binding], c: str) -> set[str]:
        return {str(r.get(c, {}).get("value", "")) for r in rows}

    gn, pn = norm_rows(g, gcols), norm_rows(p, pcols)
    gsets, psets = [value_set(g, c) for c in gcols], [value_set(p, c) for c in pcols]
    gold_rows = Counter(zip(*gn, strict=True))
    best: dict[str, Any] = {}
    best_row, best_ent = -1.0, -1.0
    for perm in itertools.permutations(range(len(pcols)), len(gcols)):
        pred_rows = Counter(zip(*(pn[j] for j in perm), strict=True))
        tp = sum(min(c, gold_rows[k]) for k, c in pred_rows.items() if k in gold_rows)
        prec, rec = tp / len(p), tp / len(g)
        row = 2 * prec * rec / (prec + rec) if prec + rec > 0 else 0.0
        inter = [len(gsets[i] & psets[j]) for i, j in enumerate(perm)]
        mp = np.mean([t / len(psets[j]) for t, j in zip(inter, perm, strict=True)])
        mr = np.mean([t / len(gsets[i]) for i, t in enumerate(inter)])
        ent = float(2 * mp * mr / (mp + mr)) if mp + mr > 0 else 0.0
        if row > best_row or (row == best_row and ent > best_ent):
            best_row, best_ent = row, ent
            best = {
                "entity_set_f1": ent,
                "row_match_f1": row,
                "mapping": [(pcols[j], gcols[i]) for i, j in enumerate(perm)],
            }
        if best_row == 1.0 and best_ent == 1.0:
            break
    return best
