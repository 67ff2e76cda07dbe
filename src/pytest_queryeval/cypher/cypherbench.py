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

What runs here runs in the pytest process, after every deadline and outside ``max_values``
(the fourteenth re-probe), so its work stays in proportion to the values: only the engine's
own nodes, relationships and paths are read as such (a map shaped like one is a map, as the
driver gives it), a node's properties are shared by the relationships ending there, and the
column permutations are searched rather than walked (:func:`_permutable`), the search bounded
by :data:`MAX_SEARCH_CELLS` (past it: None and the reason, as where the reference raises).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from .._isolation.comparison_deadline import check_deadline
from ..results import GraphNode, GraphPath, GraphRelationship, well_formed
from .sharedends import Undecided, end_work, shared

CYPHERBENCH_METRIC_NAMES: tuple[str, ...] = ("cypherbench_ex", "cypherbench_executable")

#: The keys ladybug adds to a node, a relationship or a path (not properties).
_INTERNAL = ("_ID", "_LABEL", "_SRC", "_DST")


#: The most row cells :func:`_assign` extends looking for a column permutation (the columns
#: tried times the rows): past it, the score is not decided (:class:`Undecided`).
MAX_SEARCH_CELLS = 2_000_000


class Unhashable(TypeError):
    """A value the reference's ``to_hashable`` raises ``TypeError`` on."""


def neo4j_view(columns: Sequence[str], rows: Sequence[Sequence[Any]],
               contents: dict[Any, Any] | None = None) -> list[dict[str, Any]]:
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

    Only the source's own graph values (:class:`~pytest_queryeval.results.GraphNode`,
    ``GraphRelationship``, ``GraphPath``), and only of the shape an engine gives them
    (:func:`~pytest_queryeval.results.well_formed`), are read so; a map a query built is a
    map, whatever its keys (the driver gives it as one), and so is a malformed graph value. A
    node is its own properties (an engine's node carries all of them each time it is
    returned, so they were counted): one occurrence's properties are never given to another
    (the fifteenth re-probe's N1: R tiny nodes sharing a big one's id each took its P
    properties, R * P uncounted work). Only a relationship's ends are looked up by id, and
    share the node's properties made once (:class:`~.sharedends.SharedEnd`): ``R``
    relationships to a node of ``P`` properties cost ``R`` here; their text (an ordered
    comparison's :func:`_row_key`) is made once too. Nodes of one content share one object,
    within the view and with the other views given the same ``contents`` (the gold's and
    the prediction's).
    """
    known: dict[Any, dict[str, Any]] = {}
    ends: dict[Any, Any] = {} if contents is None else contents
    out = []
    for row in rows:
        for v in row:
            _learn(v, known, ends)
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


def _properties(v: dict[str, Any], known: dict[Any, dict[str, Any]]) -> dict[str, Any]:
    return {k: _value(x, known) for k, x in v.items() if k not in _INTERNAL and x is not None}


def _node(node: Any, known: dict[Any, dict[str, Any]]) -> dict[str, Any]:
    """A node's own properties (never another occurrence's: :func:`neo4j_view`)."""
    return _properties(node, known)


def _learn(v: Any, known: dict[Any, dict[str, Any]], contents: dict[Any, Any]) -> None:
    """Record the properties of every node ``v`` holds (the driver's graph of the result)."""
    if isinstance(v, GraphNode) and well_formed(v):
        key = _key(v.get("_ID"))
        if key not in known:
            known[key] = shared(_properties(v, known), contents)
    elif isinstance(v, GraphPath) and well_formed(v):
        _learn(v.get("_NODES"), known, contents)
    elif isinstance(v, list):
        for x in v:
            _learn(x, known, contents)
    elif isinstance(v, dict) and not (isinstance(v, GraphRelationship) and well_formed(v)):
        for x in v.values():
            _learn(x, known, contents)


def _value(v: Any, known: dict[Any, dict[str, Any]]) -> Any:
    if isinstance(v, GraphPath) and well_formed(v):
        nodes, rels = v["_NODES"], v["_RELS"]
        if len(nodes) != len(rels) + 1:  # a variable-length relationship
            return [_value(r, known) for r in rels]
        out: list[Any] = [_node(nodes[0], known)]
        for rel, node in zip(rels, nodes[1:], strict=True):
            out += [str(rel["_LABEL"]), _node(node, known)]
        return out
    if isinstance(v, GraphNode) and well_formed(v):
        return _node(v, known)
    if isinstance(v, GraphRelationship) and well_formed(v):
        return (_end(v["_SRC"], known), str(v["_LABEL"]), _end(v["_DST"], known))
    if isinstance(v, dict):  # a map, or a malformed graph value read as one
        return {k: _value(x, known) for k, x in v.items()}
    if isinstance(v, list):
        return [_value(x, known) for x in v]
    if isinstance(v, dt.timedelta):
        return duration(v)
    return v


def _end(ident: Any, known: dict[Any, dict[str, Any]]) -> dict[str, Any]:
    found = known.get(_key(ident))
    return {} if found is None else found


def hashable(obj: Any) -> Any:
    """The reference's ``to_hashable`` (lists and sets sorted, maps as sorted items, a date
    as its ISO text); raises :class:`Unhashable` where the reference raises TypeError. Each
    list and map checks the case's deadline (``check_deadline``): its sort is the work of
    the values it holds, charged where it compares relationship ends
    (:class:`~.sharedends.SharedEnd`)."""
    if obj is None or isinstance(obj, tuple | int | float | str | bool):
        return obj
    if isinstance(obj, dt.date) and not isinstance(obj, dt.datetime):
        return obj.isoformat()
    check_deadline(_in_hashable)
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


def _in_hashable() -> str:  # the deadline message of hashable (one function, made once)
    return "the reference's to_hashable (cypherbench_ex)"


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
    if not ordered:  # the reference's first set of rows raises here (a relationship's tuple)
        for row in (*gold, *pred):
            hash(row)
    elif _hashable(gold) and not _hashable(pred):
        return False  # a row holding a mapping equals no gold row: spared its text (_row_key)
    _charge_text((*gold, *pred))
    g_sorted = [_sorted_cells(r) for r in gold]
    p_sorted = [_sorted_cells(r) for r in pred]
    if (g_sorted != p_sorted) if ordered else (set(g_sorted) != set(p_sorted)):
        return False
    for row in gold:  # the reference's sets of the gold's columns raise here
        hash(row)
    if width == 1:
        return pred == gold if ordered else set(gold) == set(pred) and \
            Counter(gold) == Counter(pred)
    return _permutable(gold, pred, ordered)


def _sorted_cells(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row's cells sorted by their text (the reference's quick rejection), under the case's
    deadline (a cell's text is the work of its values, relationship ends included)."""
    check_deadline(lambda: "sorting a row's cells by their text (cypherbench_ex)")
    return tuple(sorted(row, key=_row_key))


#: The most characters the texts of one comparison's cells (:func:`_row_key`) may take: past
#: it, the score is not decided. A list of ``R`` relationships prints both ends ``R`` times
#: (the eighteenth re-probe's S3: an 89-byte prediction repeating one relationship to a node
#: of 100,000 values took 8 GB in the pytest process).
MAX_ROW_TEXT = 50_000_000


def _charge_text(rows: Sequence[tuple[Any, ...]]) -> None:
    """Count the characters the rows' cell texts will take before making them (each object
    sized once, its text counted each time it is printed): past :data:`MAX_ROW_TEXT`,
    :class:`Undecided`."""
    sizes: dict[int, int] = {}
    total = 0
    try:
        for row in rows:
            check_deadline(lambda: "sizing the rows' cell texts (cypherbench_ex)")
            for cell in row:
                total += _text_size(cell, sizes)
                if total > MAX_ROW_TEXT:
                    raise Undecided(f"the rows' cells print more than {MAX_ROW_TEXT:,} "
                                    "characters, which the reference's sort by text would make")
    except RecursionError:
        raise Undecided("the rows' cells are nested too deep to print") from None


def _text_size(x: Any, sizes: dict[int, int]) -> int:
    """The length of ``str(x)`` (:func:`_row_key`), without making it: a shared end's text is
    made once (:class:`~.sharedends.SharedEnd`), a container's is its items'."""
    known = sizes.get(id(x))
    if known is not None:
        return known
    if isinstance(x, list | tuple):
        n = 2 + sum(_text_size(v, sizes) + 2 for v in x)
    elif isinstance(x, dict) and type(x).__repr__ is dict.__repr__:
        n = 2 + sum(_text_size(k, sizes) + _text_size(v, sizes) + 4 for k, v in x.items())
    else:  # a shared end (its text cached), a scalar, a text (printed once here)
        n = len(repr(x))
    sizes[id(x)] = n
    return n


def _hashable(rows: list[tuple[Any, ...]]) -> bool:
    try:
        for row in rows:
            hash(row)
    except TypeError:
        return False
    return True


def _permutable(gold: list[tuple[Any, ...]], pred: list[tuple[Any, ...]],
                ordered: bool) -> bool:
    """Whether a column permutation makes ``pred`` equal to ``gold``: the reference's answer
    (it tries each permutation its constraints allow, ``width!`` at most), found without
    trying them all. A gold column can only take a predicted column holding the same values
    (the same list when ordered, the same bag otherwise: any permutation that matches has
    that): ordered, that decides; otherwise the columns left ambiguous (the same bag of
    values in several columns) are searched (:func:`_assign`)."""
    width = len(gold[0])
    g_cols = [tuple(r[i] for r in gold) for i in range(width)]
    p_cols = [tuple(r[j] for r in pred) for j in range(width)]

    def signature(col: tuple[Any, ...]) -> Any:
        return col if ordered else frozenset(Counter(col).items())

    classes: dict[Any, list[int]] = {}
    for j, col in enumerate(p_cols):
        classes.setdefault(signature(col), []).append(j)
    g_keys = [signature(col) for col in g_cols]
    if Counter(g_keys) != Counter({k: len(v) for k, v in classes.items()}):
        return False
    return ordered or _assign(gold, pred, [classes[k] for k in g_keys], p_cols)


def _assign(gold: list[tuple[Any, ...]], pred: list[tuple[Any, ...]],
            options: list[list[int]], p_cols: list[tuple[Any, ...]]) -> bool:
    """Whether gold column ``i`` can take one of ``options[i]`` each, injectively, so that
    the rows are the same bag: a depth-first search, columns with fewest options first, each
    partial assignment kept only while the gold's rows cut to its columns are the same bag
    as the prediction's (a necessary condition), predicted columns holding the same list
    tried once. :class:`Undecided` past :data:`MAX_SEARCH_CELLS` row cells; under the kind's
    ``comparison_deadline``, ``ComparisonTimeout`` past the case's timeout (the bound costs
    about a second of CPU per gold alternative: the fifteenth re-probe's N4b)."""
    n = len(gold)
    order = sorted(range(len(options)), key=lambda i: len(options[i]))
    seen: dict[tuple[Any, ...], int] = {}
    first = [seen.setdefault(col, j) for j, col in enumerate(p_cols)]
    ids: dict[tuple[int, Any], int] = {}
    used: set[int] = set()
    chosen: list[int] = []
    start = [0] * n
    frames = [(start, start, iter(options[order[0]]), set[int]())]
    spent = 0
    while frames:
        g_ids, p_ids, candidates, tried = frames[-1]
        j = next((c for c in candidates if c not in used and first[c] not in tried), None)
        if j is None:
            frames.pop()
            if chosen:
                used.discard(chosen.pop())
            continue
        tried.add(first[j])
        spent += n
        check_deadline(lambda: "the search for a column permutation (cypherbench_ex)")
        if spent > MAX_SEARCH_CELLS:
            raise Undecided(
                f"the search for a column permutation passed {MAX_SEARCH_CELLS:,} row cells "
                f"({len(options)} columns sharing their bags of values, {n:,} rows): "
                "the reference would try each permutation of them")
        g_next, p_next = _extend(ids, (gold, g_ids, order[len(frames) - 1]), (pred, p_ids, j))
        if Counter(g_next) != Counter(p_next):
            continue
        if len(frames) == len(options):
            return True
        used.add(j)
        chosen.append(j)
        frames.append((g_next, p_next, iter(options[order[len(frames)]]), set()))
    return False


def _extend(ids: dict[tuple[int, Any], int],
            gold: tuple[list[tuple[Any, ...]], list[int], int],
            pred: tuple[list[tuple[Any, ...]], list[int], int]) -> tuple[list[int], list[int]]:
    """Each row's partial assignment extended by one column: a row's id names the values of
    its columns so far (equal values, equal ids: one table of ids for both sides)."""
    out = []
    for rows, prev, col in (gold, pred):
        out.append([ids.setdefault((a, r[col]), len(ids)) for a, r in zip(prev, rows,
                                                                          strict=True)])
    return out[0], out[1]


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
        with end_work():  # the comparisons of relationship ends this score makes
            return _decide(gold_text, gold, pred)
    except Undecided as exc:
        return None, str(exc)


def _decide(gold_text: str, gold: list[dict[str, Any]],
            pred: list[dict[str, Any]]) -> tuple[float | None, str | None]:
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
