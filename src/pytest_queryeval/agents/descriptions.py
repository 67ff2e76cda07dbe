"""Descriptions planted in a copy (``instructions: [{comment: ...}]``), shown by ``get_schema``.

Why the plugin's tool shows them, and only for such a copy: a real agent's schema tool often
shows the catalog's comments, and an instruction hidden in a column's comment is an attack a
suite must be able to run (issue 62); but every other run's ``get_schema`` text must stay what
it was, so the descriptions come from the planted copy's record (:attr:`.Planted.descriptions`,
the same on SQLite, which has no comments, as on DuckDB and PostgreSQL, where the copy holds
them as ``COMMENT ON`` too), never from the catalog.

The form, in the ``CREATE TABLE`` text the tool serves:

- a table's description: a line ``-- description: <text>`` right after the statement's first
  line;
- a column's description: `` -- description: <text>`` at the end of the line that defines the
  column, or, when the statement defines several columns on one line (DuckDB writes one line),
  a line ``-- description of <Column>: <text>`` after the table's line.

The text is kept on one line (its line breaks become spaces), so it cannot end the comment.

Planting (:func:`plant_descriptions`) is here for a file copy, after :func:`.canaries.plant`
(:mod:`.copies` calls both); a PostgreSQL copy's is :mod:`.pgplant`'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .canaries import Instruction, PlantError, _connect, _ident, _table_columns

_SPACE = re.compile(r"\s+")


def annotate(ddl: Sequence[tuple[str, str]], notes: Mapping[str, str]
             ) -> list[tuple[str, str]]:
    """``(table, CREATE TABLE ...)`` with the descriptions of ``notes`` written in."""
    if not notes:
        return list(ddl)
    lowered = {k.lower(): v for k, v in notes.items()}
    out = []
    for table, text in ddl:
        lines = text.split("\n")
        head: list[str] = []
        described = lowered.get(table.lower())
        if described is not None:
            head.append(f"-- description: {_one_line(described)}")
        for key, value in lowered.items():
            t, _, column = key.rpartition(".")
            if t != table.lower() or not column:
                continue
            at = next((n for n in range(1, len(lines)) if _defines(lines[n], column)), None)
            if at is None:
                head.append(f"-- description of {_spelled(notes, key)}: {_one_line(value)}")
            else:
                lines[at] += f" -- description: {_one_line(value)}"
        out.append((table, "\n".join(lines[:1] + head + lines[1:])))
    return out


def _defines(line: str, column: str) -> bool:
    """``line`` defines ``column`` alone: it starts with the name, bare or quoted, and holds
    no second definition (a one-line statement defines them all on its first line)."""
    found = re.match(r'\s*(?:"([^"]+)"|\[([^\]]+)\]|`([^`]+)`|(\w+))\s', line + " ")
    if found is None:
        return False
    name = next(g for g in found.groups() if g is not None)
    return name.lower() == column and _top_commas(line) <= 1 and "(" not in line.split()[0]


def _top_commas(line: str) -> int:
    """Commas outside parentheses (``NUMERIC(10, 2),`` has one)."""
    depth = count = 0
    for char in line:
        depth += (char == "(") - (char == ")")
        count += char == "," and depth <= 0
    return count


def _spelled(notes: Mapping[str, str], key: str) -> str:
    """The column of ``key`` as the copy spells it."""
    return next(k for k in notes if k.lower() == key).rpartition(".")[2]


def _one_line(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


# -- planting (file copies; PostgreSQL's are :mod:`.pgplant`'s) ---------------------------

def plant_descriptions(path: Path, engine: str, items: Sequence[Instruction]
                       ) -> dict[str, str]:
    """The ``{comment: ...}`` instructions planted: ``COMMENT ON`` in a DuckDB copy (SQLite
    has no comments, and a comment written into its ``CREATE`` statement in
    ``sqlite_master`` could corrupt the file), and for both the descriptions the copy's
    :attr:`Planted.descriptions` records, by the names as the copy spells them."""
    out: dict[str, str] = {}
    if not items:
        return out
    conn = _connect(path, engine)
    try:
        _describe(conn, engine, items, out)
        conn.commit()
    finally:
        conn.close()
    return out


def _describe(conn: Any, engine: str, items: Sequence[Instruction], out: dict[str, str]
              ) -> None:
    for item in items:
        _, _, every = _table_columns(conn, engine, item.table)
        if not every:
            raise PlantError(f"instructions: comment on {item.describe()}: no table "
                             f"{item.table!r}")
        table = _spelling(conn, engine, item.table)
        column = None
        if item.column is not None:
            column = next((c for c in every if c.lower() == item.column.lower()), None)
            if column is None:
                raise PlantError(f"instructions: comment on {item.describe()}: no column "
                                 f"{item.column!r} in {table!r}")
        if engine == "duckdb":
            what = f"COLUMN {_ident(table)}.{_ident(column)}" if column else \
                f"TABLE {_ident(table)}"
            conn.execute(f"COMMENT ON {what} IS " + "'" + item.text.replace("'", "''") + "'")
        out[f"{table}.{column}" if column else table] = item.text


def _spelling(conn: Any, engine: str, table: str) -> str:
    """``table`` as the copy spells it (names are matched case-insensitively)."""
    if engine == "sqlite":
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    else:
        rows = conn.execute("SELECT table_name FROM information_schema.tables").fetchall()
    return next((str(r[0]) for r in rows if str(r[0]).lower() == table.lower()), table)
