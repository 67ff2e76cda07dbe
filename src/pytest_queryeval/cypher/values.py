"""How many values a graph query's result may carry to the pytest process (``max_values``),
counted where the result is made, before it is sent.

Why a bound of its own beside ``max_rows`` and the reply's bytes (the thirteenth re-probe's
F1): a row may hold a list, and a ``NULL`` pickles to one byte, so 100,000 rows of 400
``NULL`` (40 M values, a 40 MB reply, built in a second inside the worker's memory bound)
cost the pytest process 55 s and 2 GB to score: every value is walked, copied and hashed
several times there, in Python, after the query's deadline. Scoring a million values (the
table's metrics, CypherBench's view of it) took 2.4-4.3 s and 66-204 MB on a loaded 2-core
machine (docs/cypher.md has the shapes), so the default keeps the worst case to a few seconds
and a few hundred MB, and every honest result of the shape CypherBench asks (rarely more than
a few thousand rows of a few columns; at ``max_rows``, ten values a row) far inside it.

What counts as one value: each scalar, each list and each map, and each item of a list and
entry of a map, recursively (a node or a relationship is the map of its properties). A
result over the bound is cut like one over ``max_rows``: never scored, the prediction's verdict
names ``max_values``; a gold over it is an error of the suite (raise ``max_values``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: The default ``max_values`` of a ladybug and a bolt datasource.
DEFAULT_MAX_VALUES = 1_000_000


class TooManyValues(Exception):
    """A result passed ``max_values`` while it was read; the reading stopped there."""


def count(rows: Iterable[Iterable[Any]], budget: int) -> int:
    """The values in ``rows``' cells, counted recursively; the count stops once it passes
    ``budget`` (the walk of a huge value is not finished to be refused)."""
    n = 0
    stack: list[Any] = [cell for row in rows for cell in row]
    while stack:
        value = stack.pop()
        n += 1
        if n > budget:
            return n
        if isinstance(value, Mapping):
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            stack.extend(value)
    return n
