"""Shrink a counterexample to as few rows as still separate the two queries.

Delta debugging (Zeller and Hildebrandt 2002, the way Hypothesis shrinks): try leaving out
every row, then each table's rows, then chunks of rows, halving the chunk size whenever no
chunk can go, down to single rows, and start again after any success. Children are tried before
parents, since a parent row that a child still references cannot go (the rebuilt database drops
the child, which is a different database). The result is 1-minimal: no single remaining row can
be left out.
"""

from __future__ import annotations

from collections.abc import Callable

from .schema import DbSchema

Rows = dict[str, list[tuple[object, ...]]]
#: Attempts at most (each rebuilds a small database and runs both queries).
MAX_ATTEMPTS = 400


def shrink(schema: DbSchema, rows: Rows, differs: Callable[[Rows], bool]) -> Rows:
    """The smallest ``rows`` found for which ``differs`` still holds."""
    order = [t.name for t in reversed(schema.tables) if t.name in rows]
    items = [(name, row) for name in order for row in rows[name]]
    attempts = 0
    # No row at all, then a whole table's rows at once: chunks of half the rows never leave
    # out everything, and a difference that needs an empty table (``max`` against ``ORDER BY
    # ... LIMIT 1``) is smallest there.
    for name in [None, *order]:
        trial = [item for item in items if name is not None and item[0] != name]
        if trial != items and attempts < MAX_ATTEMPTS:
            attempts += 1
            if differs(_as_rows(trial, rows)):
                items = trial
    chunk = max(1, len(items) // 2)
    while chunk >= 1 and attempts < MAX_ATTEMPTS:
        progressed = False
        start = 0
        while start < len(items) and attempts < MAX_ATTEMPTS:
            trial = items[:start] + items[start + chunk:]
            attempts += 1
            if trial != items and differs(_as_rows(trial, rows)):
                items = trial
                progressed = True
            else:
                start += chunk
        if not progressed:
            chunk //= 2
        else:
            chunk = min(chunk, max(1, len(items) // 2))
    return _as_rows(items, rows)


def _as_rows(items: list[tuple[str, tuple[object, ...]]], like: Rows) -> Rows:
    out: Rows = {name: [] for name in like}
    for name, row in items:
        out[name].append(row)
    return out


#: Attempts at most to replace edge values by realistic ones (each runs both queries once).
MAX_REALISE_ATTEMPTS = 120


def realise(schema: DbSchema, rows: Rows, pools: dict[tuple[str, str], list[object]],
            realistic: Callable[[object, list[object]], bool],
            differs: Callable[[Rows], bool]) -> Rows:
    """``rows`` with each cell that is not ``realistic`` for its column (a cut string, a made-up
    word) replaced by the first value of the column's realistic pool for which ``differs``
    still holds; a cell no such value keeps separating stays as it is. Keys and references are
    left alone (rows point at them). Same rows, same count: only values change, so a reader
    sees data shaped like the real one wherever the difference allows it."""
    out = {name: list(table_rows) for name, table_rows in rows.items()}
    attempts = 0
    for table in schema.tables:
        for r, row in enumerate(out.get(table.name, [])):
            for c, col in enumerate(table.columns):
                if col.references is not None or col.primary_key or col is table.integer_key:
                    continue
                pool = pools.get((table.name, col.name), [])
                if realistic(row[c], pool):
                    continue
                # Non-NULL values first: a value reads better than a missing one.
                for value in [v for v in pool if v is not None] + [v for v in pool if v is None]:
                    if attempts >= MAX_REALISE_ATTEMPTS:
                        return out
                    attempts += 1
                    trial_row = (*row[:c], value, *row[c + 1:])
                    trial = dict(out)
                    trial[table.name] = [*out[table.name][:r], trial_row,
                                         *out[table.name][r + 1:]]
                    if differs(trial):
                        out = trial
                        row = trial_row
                        break
    return out
