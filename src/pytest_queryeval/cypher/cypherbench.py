"""CypherBench's execution metrics: ``cypherbench_ex`` and ``cypherbench_executable``.

Reference: megagonlabs/cypherbench @ 94605181d12d9bc837f737a37b9d46471c2f3eff,
``cypherbench/metrics/execution_accuracy.py`` (``execution_accuracy``, its comparison adapted
from taoyds/test-suite-sql-eval's ``result_eq``) and ``cypherbench/metrics/executable.py``
(``executable``), Apache-2.0. Reproduced digit for digit against the functions run unmodified
(``tests/data/cypherbench/``); nothing of them is copied here.

The reference works on ``neo4j`` records (``Result.data()``: one mapping per row, a node as
the mapping of its properties). :func:`neo4j_view` gives a ladybug row that form, and these
functions then decide exactly as the reference does, quirks kept:

- the same text (character for character) as the gold scores 1 without running anything;
- order matters iff ``"order by"`` occurs anywhere in the gold's lower-cased text (a ``WITH
  ... ORDER BY``, a string literal, a comment; not ``ORDER\\nBY``);
- column names are ignored and columns may be permuted; rows are a bag unless order matters;
  two empty results match, one empty result never does;
- every list in a cell is sorted (``collect`` order never matters), a map becomes its sorted
  items, a date its ISO text (so ``date('2020-01-02')`` equals the string ``'2020-01-02'``),
  and Python equality decides (``1 == 1.0 == true``);
- a value the reference cannot hash (a list mixing ``null`` with numbers, or numbers with
  strings; a datetime, a duration, a decimal) scores 0 in the prediction even when the gold
  holds the same, and in the gold makes the reference raise ``TypeError`` (its whole run
  stops): here :func:`execution_accuracy` returns None and the case records no
  ``cypherbench_ex`` (``details.cypherbench``).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import permutations
from typing import Any

CYPHERBENCH_METRIC_NAMES: tuple[str, ...] = ("cypherbench_ex", "cypherbench_executable")

#: The keys ladybug adds to a node, a relationship or a path (not properties).
_INTERNAL = ("_ID", "_LABEL", "_SRC", "_DST")


class Unhashable(TypeError):
    """A value the reference's ``to_hashable`` raises ``TypeError`` on."""


def neo4j_view(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    """Ladybug rows as the ``neo4j`` driver's ``Result.data()`` records: one mapping per row
    (a repeated column name keeps its last value, as a mapping does); a node or a relationship
    becomes the mapping of its non-null properties (Neo4j stores no null property), a path
    the list of its nodes and relationships."""
    return [dict(zip(columns, (_value(v) for v in row), strict=True)) for row in rows]


def _value(v: Any) -> Any:
    if isinstance(v, dict):
        if "_NODES" in v and "_RELS" in v:
            return [_value(x) for x in v["_NODES"]] + [_value(x) for x in v["_RELS"]]
        if "_ID" in v and "_LABEL" in v:
            return {k: _value(x) for k, x in v.items() if k not in _INTERNAL and x is not None}
        return {k: _value(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_value(x) for x in v]
    return v


def hashable(obj: Any) -> Any:
    """The reference's ``to_hashable`` (lists and sets sorted, maps as sorted items, a date
    as its ISO text); raises :class:`Unhashable` where the reference raises TypeError."""
    if obj is None or isinstance(obj, tuple | int | float | str | bool):
        return obj
    if isinstance(obj, dt.date) and not isinstance(obj, dt.datetime):
        return obj.isoformat()
    try:
        if isinstance(obj, list | set | frozenset):
            return tuple(sorted(hashable(item) for item in obj))
        if isinstance(obj, Mapping):
            return tuple(sorted((hashable(k), hashable(v)) for k, v in obj.items()))
    except Unhashable:
        raise
    except TypeError as exc:  # sorting values that do not compare (None and 1, 1 and 'a')
        raise Unhashable(str(exc)) from None
    raise Unhashable(f"unhashable type: {type(obj)}")


def _row_key(x: Any) -> str:
    return str(x) + str(type(x))


def _rows(records: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    keys = list(records[0])
    return [tuple(r[k] for k in keys) for r in records]


def _same(gold: list[tuple[Any, ...]], pred: list[tuple[Any, ...]], ordered: bool) -> bool:
    """Whether some column permutation makes the results equal (a list when ``ordered``,
    else a bag), after the reference's quick rejection on rows sorted cell by cell."""
    if not gold and not pred:
        return True
    if len(gold) != len(pred):
        return False
    width = len(gold[0])
    if len(pred[0]) != width:
        return False
    g_sorted = [tuple(sorted(r, key=_row_key)) for r in gold]
    p_sorted = [tuple(sorted(r, key=_row_key)) for r in pred]
    if (g_sorted != p_sorted) if ordered else (set(g_sorted) != set(p_sorted)):
        return False
    if width == 1:
        return pred == gold if ordered else set(gold) == set(pred) and \
            Counter(gold) == Counter(pred)
    g_columns = [{row[i] for row in gold} for i in range(width)]
    # a gold column can take a predicted one only if it holds every value of it
    allowed = [{j for j in range(width) if all(r[j] in g_columns[i] for r in pred)}
               for i in range(width)]
    for perm in permutations(range(width)):
        if any(perm[i] not in allowed[i] for i in range(width)):
            continue
        moved = [tuple(r[j] for j in perm) for r in pred]
        if ordered:
            if moved == gold:
                return True
        elif set(gold) == set(moved) and Counter(gold) == Counter(moved):
            return True
    return False


def execution_accuracy(pred_text: str, gold_text: str, gold: list[dict[str, Any]],
                       pred: list[dict[str, Any]] | None) -> float | None:
    """CypherBench's ``execution_accuracy`` of one pair: ``pred`` None when the predicted
    query failed (refused, an engine error, a timeout); None when the reference would raise
    (the gold holds a value it cannot hash). ``gold`` is read only when the texts differ."""
    if pred_text == gold_text:
        return 1.0
    if pred is None:
        return 0.0
    try:
        p_rows = [{k: hashable(v) for k, v in r.items()} for r in pred]
    except Unhashable:
        return 0.0
    try:
        g_rows = [{k: hashable(v) for k, v in r.items()} for r in gold]
    except Unhashable:
        return None
    if not p_rows and not g_rows:
        return 1.0
    if not p_rows or not g_rows:
        return 0.0
    return float(_same(_rows(g_rows), _rows(p_rows), "order by" in gold_text.lower()))


def executable(pred_failed: bool) -> float:
    """CypherBench's ``executable``: 1 when the predicted query ran, whatever it returned."""
    return 0.0 if pred_failed else 1.0
