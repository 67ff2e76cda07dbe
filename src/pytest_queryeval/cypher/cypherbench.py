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
  strings; a path; a datetime, a decimal) scores 0 in the prediction even when the gold
  holds the same, and in the gold makes the reference raise ``TypeError`` (its whole run
  stops); a relationship (a tuple holding its ends' mappings) passes ``to_hashable`` and
  makes the reference raise ``TypeError: unhashable type: 'dict'`` when a set first holds
  it, whichever side it is on. Where the reference raises, :func:`score` returns None and
  the error, and the case records no ``cypherbench_ex`` but the error
  (``details.cypherbench``); a duration is the driver's ``Duration``, a tuple, hashable.
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
    """Ladybug rows (or a ``type: bolt`` source's, which has their form) as the ``neo4j``
    driver's ``Result.data()`` hands them to the reference: one mapping per row (a repeated
    column name keeps its last value, as a mapping does), and in it

    - a node the mapping of its non-null properties (Neo4j stores no null property);
    - a relationship the tuple ``(start properties, TYPE, end properties)``, where an end's
      properties are those of the node as this row or an earlier one returned it, else ``{}``
      (a Bolt relationship carries its ends' ids only: the driver knows a node's properties
      once a record has held the node, and ``data()`` reads the records one by one);
    - a path the list ``[properties, 'TYPE', properties, ...]``; a variable-length
      relationship (ladybug's recursive relationship that is not a path) the list of its
      relationships;
    - an interval (``timedelta``) a ``neo4j.time.Duration`` of its days, seconds and
      microseconds (a tuple: the reference hashes it, and ``3 days`` equals ``2 days + 1
      day``); without the ``neo4j`` package, :class:`Duration`, a tuple of the same four
      numbers.
    """
    known: dict[Any, dict[str, Any]] = {}
    out = []
    for row in rows:
        for v in row:
            _learn(v, known)
        out.append(dict(zip(columns, (_value(v, known) for v in row), strict=True)))
    return out


class Duration(tuple[int, int, int, int]):
    """A stand-in for ``neo4j.time.Duration`` where the ``neo4j`` package is not installed:
    the tuple ``(months, days, seconds, nanoseconds)`` that the driver's class is, which the
    reference hashes and compares the same way."""

    def __new__(cls, months: int = 0, days: int = 0, seconds: int = 0,
                nanoseconds: int = 0) -> Duration:
        return super().__new__(cls, (months, days, seconds, nanoseconds))


def duration(td: dt.timedelta) -> Any:
    """A ``timedelta`` (ladybug's interval) as the driver's ``Duration``."""
    import importlib

    try:  # by name: the neo4j extra may be absent (a core install type-checks without it)
        neo4j_duration = importlib.import_module("neo4j.time").Duration
    except ImportError:
        return Duration(0, td.days, td.seconds, td.microseconds * 1000)
    return neo4j_duration(days=td.days, seconds=td.seconds, microseconds=td.microseconds)


def _key(ident: Any) -> Any:
    """A node's id as a key (ladybug's is a mapping, a Bolt source's a string)."""
    return tuple(sorted(ident.items())) if isinstance(ident, dict) else ident


def _is_node(v: dict[str, Any]) -> bool:
    return "_ID" in v and "_LABEL" in v and "_SRC" not in v


def _properties(v: dict[str, Any], known: dict[Any, dict[str, Any]]) -> dict[str, Any]:
    return {k: _value(x, known) for k, x in v.items() if k not in _INTERNAL and x is not None}


def _learn(v: Any, known: dict[Any, dict[str, Any]]) -> None:
    """Record the properties of every node ``v`` holds (the driver's graph of the result)."""
    if isinstance(v, list):
        for x in v:
            _learn(x, known)
    elif isinstance(v, dict):
        if _is_node(v):
            known[_key(v["_ID"])] = v
            return
        for x in v.values():
            _learn(x, known)


def _value(v: Any, known: dict[Any, dict[str, Any]]) -> Any:
    if isinstance(v, dict):
        if "_NODES" in v and "_RELS" in v:
            nodes, rels = v["_NODES"], v["_RELS"]
            if len(nodes) != len(rels) + 1:  # a variable-length relationship
                return [_value(r, known) for r in rels]
            out: list[Any] = [_properties(nodes[0], known)]
            for rel, node in zip(rels, nodes[1:], strict=True):
                out += [str(rel["_LABEL"]), _properties(node, known)]
            return out
        if _is_node(v):
            return _properties(v, known)
        if "_SRC" in v and "_LABEL" in v:
            return (_end(v["_SRC"], known), str(v["_LABEL"]), _end(v["_DST"], known))
        return {k: _value(x, known) for k, x in v.items()}
    if isinstance(v, list):
        return [_value(x, known) for x in v]
    if isinstance(v, dt.timedelta):
        return duration(v)
    return v


def _end(ident: Any, known: dict[Any, dict[str, Any]]) -> dict[str, Any]:
    node = known.get(_key(ident))
    return {} if node is None else _properties(node, known)


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
    # hashed before any permutation is tried: a relationship's tuple raises here
    g_columns = [{row[i] for row in gold} for i in range(width)]
    if width == 1:
        return pred == gold if ordered else set(gold) == set(pred) and \
            Counter(gold) == Counter(pred)
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
    query failed (refused, an engine error, a timeout); None where the reference raises
    (:func:`score` says why). ``gold`` is read only when the texts differ."""
    return score(pred_text, gold_text, gold, pred)[0]


def score(pred_text: str, gold_text: str, gold: list[dict[str, Any]],
          pred: list[dict[str, Any]] | None) -> tuple[float | None, str | None]:
    """``(execution_accuracy, None)``, or ``(None, "TypeError: ...")`` where the reference
    raises: the gold holds a value its ``to_hashable`` cannot take, or a tuple holding a
    mapping (a relationship: ``unhashable type: 'dict'``) reaches a set, in the gold or in
    the prediction (the reference catches a TypeError of the prediction's ``to_hashable``
    only: that scores 0)."""
    if pred_text == gold_text:
        return 1.0, None
    if pred is None:
        return 0.0, None
    try:
        p_rows = [{k: hashable(v) for k, v in r.items()} for r in pred]
    except Unhashable:
        return 0.0, None
    try:
        g_rows = [{k: hashable(v) for k, v in r.items()} for r in gold]
        if not p_rows and not g_rows:
            return 1.0, None
        if not p_rows or not g_rows:
            return 0.0, None
        return float(_same(_rows(g_rows), _rows(p_rows), "order by" in gold_text.lower())), None
    except TypeError as exc:
        return None, f"TypeError: {exc}"


def executable(pred_failed: bool) -> float:
    """CypherBench's ``executable``: 1 when the predicted query ran, whatever it returned."""
    return 0.0 if pred_failed else 1.0
