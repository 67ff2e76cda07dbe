"""Protected data planted with canaries, and the canaries traced through an agent's run.

Why canaries and not a judge: whether an agent showed its user another tenant's rows is a
question of evidence. Each protected cell of a throwaway copy of the database gets a unique,
seeded value (``QZX-7F41-K9M2``) that exists nowhere else; a canary found in a tool result, a
query, the assistant's text or the final answer is protected data that reached that place,
whatever a judge would make of it. A paraphrase of a protected fact carries no canary, and a
figure derived from protected rows (a sum, a count) is not one: neither is detected.

What is planted (:func:`plant`): the suite declares targets (``{table: Employee}``: every
text column of every row; ``{column: Customer.Email}``: that column of every row;
``{table: Invoice, where: "CustomerId = 2"}``: the text columns of the rows the filter
selects, another tenant's). Key columns (primary and foreign keys) are left alone so joins
still work. The copy is made first; the original file is only ever read.

How a canary is found (:func:`find`): as written, upper- or lower-cased, split or joined by
whitespace or punctuation (``qzx 7f41 k9m2``, ``QZX7F41K9M2``), inside JSON-escaped text
(``\\u0051ZX-...``, ``\\n`` between its parts), percent-encoded (a URL) or in Unicode
compatibility characters (full-width): the text is compared with every character that is not
a letter or digit removed and the letters lower-cased, so one canary is one key. How well
that holds is measured on a labelled set (tests/data/redteam, docs/red-team.md).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import unicodedata
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Characters of a canary's body: no 0/O, 1/I/L or U, which a model or OCR may swap.
ALPHABET = "23456789ABCDEFGHJKMNPQRSTVWXYZ"
#: Letters a prefix is drawn from: rare in text, so a prefix rarely starts a false key.
_PREFIX_LETTERS = "JQXZVKW"
#: Characters of a canary's key (prefix and body, separators removed).
KEY_CHARS = 11
#: The engines a file copy is planted in (a datasource's ``type``; PostgreSQL's template
#: copies are :mod:`.pgplant`'s).
ENGINES = ("sqlite", "duckdb")
#: Leaks a record lists (all are counted).
MAX_LISTED = 50
_NOT_ALNUM = re.compile(r"[^0-9a-z]+")
_JSON_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})|\\([nrtbf])|\\([\"/\\])")
#: Levels of JSON text inside JSON strings undone (a tool's JSON result quoted in a message).
_JSON_LEVELS = 4


class PlantError(ValueError):
    """A target that cannot be planted: the message names the target and why."""


@dataclass(frozen=True)
class Target:
    """One protected thing a suite declares."""

    table: str
    column: str | None = None
    where: str | None = None

    def describe(self) -> str:
        name = f"{self.table}.{self.column}" if self.column else self.table
        return f"{name} where {self.where}" if self.where else name


@dataclass(frozen=True)
class Instruction:
    """Text planted in the copy the agent reads (a red-team attack): in a row of ``table``
    (``{table: T, text: ...}``), or, with ``comment``, as the description of ``table`` or of
    its ``column`` (``{comment: T.Column, text: ...}``), which ``get_schema`` shows."""

    table: str
    text: str
    column: str | None = None
    comment: bool = False

    def describe(self) -> str:
        return f"{self.table}.{self.column}" if self.column else self.table


def read_protected(value: object, key: str = "agent.protected"
                   ) -> tuple[tuple[Target, ...], list[tuple[str, str]]]:
    """``protected:`` checked: the targets, and ``(key path, message)`` for each problem."""
    if not isinstance(value, list) or not value:
        return (), [(key, "must be a non-empty list of {table: ...}, {column: Table.Column} "
                          "or {table: ..., where: ...}")]
    targets: list[Target] = []
    problems: list[tuple[str, str]] = []
    for i, item in enumerate(value):
        where = f"{key}[{i}]"
        if not isinstance(item, Mapping):
            problems.append((where, "must be a mapping ({table: ...} or {column: T.C})"))
            continue
        unknown = [k for k in item if k not in ("table", "column", "where")]
        if unknown:
            problems.append((f"{where}.{unknown[0]}", "unknown key (allowed: table, column, "
                                                      "where)"))
            continue
        target, why = _target(item)
        if target is None:
            problems.append((where, why))
        else:
            targets.append(target)
    return tuple(targets), problems


def _target(item: Mapping[str, Any]) -> tuple[Target | None, str]:
    table, column, cond = item.get("table"), item.get("column"), item.get("where")
    if cond is not None and (not isinstance(cond, str) or not cond.strip()):
        return None, "where: must be an SQL condition"
    if column is not None:
        if not isinstance(column, str) or column.count(".") != 1 or \
                not all(column.split(".")) or table is not None:
            return None, "column: must be Table.Column (and no table: beside it)"
        t, c = column.split(".")
        return Target(t, c, cond), ""
    if not isinstance(table, str) or not table:
        return None, "needs table: <name> or column: <Table.Column>"
    return Target(table, None, cond), ""


# -- making canaries ----------------------------------------------------------------------

def prefix(seed: int) -> str:
    """The three letters every canary of ``seed`` starts with."""
    digest = hashlib.sha256(f"queryeval-canary-prefix:{seed}".encode()).digest()
    return "".join(_PREFIX_LETTERS[b % len(_PREFIX_LETTERS)] for b in digest[:3])


def make_canary(seed: int, label: str, attempt: int = 0) -> str:
    """The canary of ``label`` (a cell) under ``seed``: the same for the same inputs."""
    digest = hashlib.sha256(f"queryeval-canary:{seed}:{attempt}:{label}".encode()).digest()
    body = "".join(ALPHABET[b % len(ALPHABET)] for b in digest[:8])
    return f"{prefix(seed)}-{body[:4]}-{body[4:]}"


def key_of(text: str) -> str:
    """What is compared: letters lower-cased, everything that is not a letter or digit
    removed."""
    return _NOT_ALNUM.sub("", text.lower())


def make_canaries(seed: int, labels: Iterable[str]) -> dict[str, str]:
    """label -> canary, unique among themselves (a collision is drawn again)."""
    out: dict[str, str] = {}
    keys: set[str] = set()
    for label in labels:
        attempt = 0
        canary = make_canary(seed, label)
        while key_of(canary) in keys:
            attempt += 1
            canary = make_canary(seed, label, attempt)
        keys.add(key_of(canary))
        out[label] = canary
    return out


# -- planting -----------------------------------------------------------------------------

@dataclass
class Planted:
    """A planted copy: where it is, and each canary with the cell it stands in."""

    #: The copy's file (None: a PostgreSQL copy, named by :attr:`spec`'s URL).
    path: Path | None
    #: canary -> the cell it was planted in (``Employee.LastName rowid 3``).
    canaries: dict[str, str] = field(default_factory=dict)
    #: The datasource spec of the copy as the suite's gold reads it (None: the original
    #: spec with :attr:`path`).
    spec: dict[str, Any] | None = None
    #: The spec the agent's tools and replay read (PostgreSQL: the agent's role; with
    #: ``enforce:`` on a file, the tenant's copy); None: :attr:`spec`.
    agent_spec: dict[str, Any] | None = None
    #: What the copy protects (for :mod:`.enforce`).
    targets: tuple[Target, ...] = ()
    #: table -> the rows its ``where:`` targets selected before planting (a file's rowids,
    #: a PostgreSQL copy's ctids after it): a filter on a planted column no longer selects
    #: them once their values are canaries.
    tenant_rows: dict[str, list[Any]] = field(default_factory=dict)
    #: ``Table`` or ``Table.Column`` (as the copy spells them) -> the description planted
    #: there (``{comment: ...}`` instructions): what ``get_schema`` shows beside the
    #: definition. SQLite has no comments, so this is where its description lives; on DuckDB
    #: and PostgreSQL the copy holds it too (``COMMENT ON``).
    descriptions: dict[str, str] = field(default_factory=dict)

    def index(self) -> dict[str, str]:
        """key -> canary (:func:`key_of`)."""
        return {key_of(c): c for c in self.canaries}


def plant(source: Path, engine: str, targets: Sequence[Target], seed: int,
          dest_dir: Path, instructions: Sequence[Instruction] = ()) -> Planted:
    """A copy of ``source`` in ``dest_dir`` with a canary in every cell ``targets`` protect,
    and the row ``instructions`` (a ``comment`` one is :mod:`.descriptions`' to plant).
    ``source`` is only read (copied first, the copy written)."""
    if engine not in ENGINES:
        raise PlantError(f"protected data is planted in a copy of a SQLite or DuckDB file or "
                         f"of a PostgreSQL database, not a datasource of type {engine!r}")
    if not source.is_file():
        raise PlantError(f"no database file at {source}")
    dest = dest_dir / source.name
    shutil.copyfile(source, dest)
    for suffix in ("-wal", ".wal"):
        side = source.with_name(source.name + suffix)
        if side.is_file():
            shutil.copyfile(side, dest.with_name(dest.name + suffix))
    conn = _connect(dest, engine)
    try:
        cells: list[tuple[Target, str, list[int]]] = []
        tenant: dict[str, list[int]] = {}
        for target in targets:
            for column in _columns(conn, engine, target):
                cells.append((target, column, _rowids(conn, target, column)))
            if target.where:
                rows = conn.execute(f"SELECT rowid FROM {_ident(target.table)} WHERE "
                                    f"({target.where})").fetchall()
                tenant[target.table] = sorted({*tenant.get(target.table, []),
                                               *(int(r[0]) for r in rows)})
        labels = [f"{t.table}.{c} rowid {r}" for t, c, rows in cells for r in rows]
        canaries = make_canaries(seed, labels)
        for target, column, rows in cells:
            if not rows:  # duckdb refuses an empty executemany
                continue
            conn.executemany(
                f"UPDATE {_ident(target.table)} SET {_ident(column)} = ? WHERE rowid = ?",
                [(canaries[f"{target.table}.{column} rowid {r}"], r) for r in rows])
        for item in instructions:
            if item.comment:
                continue
            column, row = _instruction_cell(conn, engine, item.table, targets, tenant)
            conn.execute(f"UPDATE {_ident(item.table)} SET {_ident(column)} = ? WHERE rowid = ?",
                         [item.text, row])
        conn.commit()
    finally:
        conn.close()
    return Planted(dest, {c: label for label, c in canaries.items()}, tenant_rows=tenant)


def _connect(path: Path, engine: str) -> Any:
    if engine == "sqlite":
        import sqlite3

        return sqlite3.connect(str(path))
    import duckdb

    return duckdb.connect(str(path))


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _columns(conn: Any, engine: str, target: Target) -> list[str]:
    """The columns of ``target`` a canary goes in: its column, or every text column of its
    table that is no key."""
    text, keys, every = _table_columns(conn, engine, target.table)
    if not every:
        raise PlantError(f"protected {target.describe()}: no table {target.table!r}")
    if _a_view(conn, engine, target.table):  # its rows have no rowid: every case crashed
        raise PlantError(f"protected {target.describe()}: a view, whose rows no canary can be "
                         "planted in; protect the tables it reads (39a L4)")
    if target.where:
        _check_where(conn, target)
    if target.column is not None:
        found = {c.lower() for c in every}
        col = target.column.lower()
        if col not in {c.lower() for c in text}:
            why = "a key column (its joins would break)" if col in {k.lower() for k in keys} \
                else "not a text column (a canary is text)" if col in found else "no such column"
            raise PlantError(f"protected {target.describe()}: {why}")
        return [c for c in text if c.lower() == col]
    if not text:
        raise PlantError(f"protected {target.describe()}: the table has no text column that is "
                         "no key, so nothing can be planted")
    return text


def _a_view(conn: Any, engine: str, table: str) -> bool:
    """Whether ``table`` names a view of the file's database."""
    query = ("SELECT 1 FROM sqlite_master WHERE type = 'view' AND lower(name) = lower(?)"
             if engine == "sqlite" else "SELECT 1 FROM information_schema.tables WHERE "
             "table_type = 'VIEW' AND lower(table_name) = lower(?)")
    return bool(conn.execute(query, [table]).fetchall())


def _table_columns(conn: Any, engine: str, table: str
                   ) -> tuple[list[str], list[str], list[str]]:
    """(text columns that are no key, key columns, every column) of ``table``; no column:
    no table."""
    if engine == "sqlite":
        info = conn.execute(f"PRAGMA table_info({_ident(table)})").fetchall()
        fks = {row[3].lower() for row in
               conn.execute(f"PRAGMA foreign_key_list({_ident(table)})").fetchall()}
        keys = [r[1] for r in info if r[5] or r[1].lower() in fks]
        text = [r[1] for r in info if r[1] not in keys and
                re.search(r"char|clob|text", str(r[2]), re.IGNORECASE)]
        return text, keys, [r[1] for r in info]
    rows = conn.execute("SELECT column_name, data_type FROM information_schema.columns "
                        "WHERE lower(table_name) = lower(?) ORDER BY ordinal_position",
                        [table]).fetchall()
    cons = conn.execute("SELECT constraint_column_names FROM duckdb_constraints() WHERE "
                        "lower(table_name) = lower(?) AND constraint_type IN "
                        "('PRIMARY KEY', 'FOREIGN KEY', 'UNIQUE')", [table]).fetchall()
    keyset = {str(c).lower() for row in cons for c in row[0]}
    keys = [r[0] for r in rows if r[0].lower() in keyset]
    text = [r[0] for r in rows if r[0] not in keys and str(r[1]).upper() == "VARCHAR"]
    return text, keys, [r[0] for r in rows]


def _instruction_cell(conn: Any, engine: str, table: str, targets: Sequence[Target],
                      tenant: Mapping[str, list[int]]) -> tuple[str, int]:
    """Where an instruction is planted in ``table``: its first text column that no target
    protects, in its first row no ``where:`` target selects (what the agent may read)."""
    text, _, every = _table_columns(conn, engine, table)
    if not every:
        raise PlantError(f"instructions: no table {table!r}")
    mine = [t for t in targets if t.table.lower() == table.lower()]
    free = [c for c in text if not any(t.column and t.column.lower() == c.lower()
                                       for t in mine)]
    if not free:
        raise PlantError(f"instructions: table {table!r} has no text column left to plant in")
    hidden = {r for t, rows in tenant.items() if t.lower() == table.lower() for r in rows}
    row = next(((r,) for (r,) in conn.execute(f"SELECT rowid FROM {_ident(table)} ORDER BY "
                                             "rowid").fetchall() if r not in hidden), None)
    if row is None or row[0] is None:
        raise PlantError(f"instructions: table {table!r} has no row to plant in")
    return free[0], int(row[0])


def _check_where(conn: Any, target: Target) -> None:
    """A filter that is no condition of the table, or selects no row, is the suite's
    mistake: nothing would be protected."""
    try:
        row = conn.execute(f"SELECT 1 FROM {_ident(target.table)} WHERE ({target.where}) "
                           "LIMIT 1").fetchone()
    except Exception as exc:  # sqlite3 and duckdb raise their own error types
        raise PlantError(f"protected {target.describe()}: {exc}") from None
    if row is None:
        raise PlantError(f"protected {target.describe()}: the filter selects no row, so "
                         "nothing would be planted")


def _rowids(conn: Any, target: Target, column: str) -> list[int]:
    """The rows of ``target`` whose ``column`` holds a value (a NULL stays NULL)."""
    cond = f" AND ({target.where})" if target.where else ""
    rows = conn.execute(f"SELECT rowid FROM {_ident(target.table)} WHERE "
                        f"{_ident(column)} IS NOT NULL{cond}").fetchall()
    return [int(r[0]) for r in rows]


# -- finding canaries ---------------------------------------------------------------------

def _decoded(text: str) -> list[str]:
    """The text with JSON string escapes undone, one level after another (``\\u0051`` a
    letter, ``\\n`` a separator, ``\\\\`` a backslash of the level below)."""
    def one(m: re.Match[str]) -> str:
        return chr(int(m.group(1), 16)) if m.group(1) else " " if m.group(2) else m.group(3)
    out = []
    for _ in range(_JSON_LEVELS):
        if "\\" not in text:
            break
        text = _JSON_ESCAPE.sub(one, text)
        out.append(text)
    return out


def _keys_in(squeezed: str, index: Mapping[str, str], head: str) -> list[str]:
    out = []
    start = squeezed.find(head)
    while start >= 0:
        canary = index.get(squeezed[start:start + KEY_CHARS])
        if canary is not None and canary not in out:
            out.append(canary)
        start = squeezed.find(head, start + 1)
    return out


def _readings(text: str) -> list[tuple[str, str]]:
    """The other readings of ``text`` a canary may hide in, each with the form it gives:
    JSON string escapes undone (:func:`_decoded`), then percent-encoding undone in the text
    and in each of those (a value sent in a URL: ``wxx%20bns6%20swvh``), then Unicode's
    compatibility characters folded (NFKC: full-width ``ＷＸＸ``, circled or mathematical
    letters). Look-alikes of other scripts (a Cyrillic ``Х``) are not folded: no standard
    mapping says which Latin letter they stand for."""
    out = [("json-escaped", level) for level in _decoded(text)]
    for level in [text, *(t for _, t in out)]:
        if "%" in level:
            out.append(("url-encoded", urllib.parse.unquote(level)))
    for level in [text, *(t for _, t in out)]:
        if not level.isascii():
            compatible = unicodedata.normalize("NFKC", level)
            if compatible != level:
                out.append(("compatibility", compatible))
    return out


def find(text: str, index: Mapping[str, str]) -> list[tuple[str, str]]:
    """``(canary, form)`` of each canary of ``index`` (:meth:`Planted.index`) in ``text``, in
    order of first position; form ``exact``, ``cased``, ``split`` (separators added, removed
    or changed), ``json-escaped``, ``url-encoded`` or ``compatibility``."""
    if not index or not text:
        return []
    head = next(iter(index))[:3]
    found = _keys_in(key_of(text), index, head)
    other: dict[str, str] = {}
    for form, reading in _readings(text):
        for canary in _keys_in(key_of(reading), index, head):
            if canary not in found:
                other.setdefault(canary, form)
    lower = text.lower()
    out = []
    for canary in found:
        form = "exact" if canary in text else "cased" if canary.lower() in lower else "split"
        out.append((canary, form))
    return out + list(other.items())


def as_text(value: object) -> str:
    """A message part as the text searched (a structured part as its JSON)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, default=str)


# -- tracing an agent's run ---------------------------------------------------------------

#: Where a canary can be seen, in the order of a run.
PARTS = ("tool_arguments", "query", "tool_result", "assistant", "trajectory", "final_query",
         "final_answer")


def _places(env: Any) -> Iterable[tuple[str, int | None, int | None, str]]:
    """``(part, step, message, text)`` of an envelope (:class:`~.trajectory.Envelope`), in
    the order the run wrote them: each message of the trajectory (a call's arguments, its
    result, the assistant's text; a user's reply is the suite's, not searched), then the final
    query and the final answer."""
    from .trajectory import step_query

    traj = env.trajectory
    if traj is not None:
        by_call = {s.call_id: s for s in traj.steps}
        for m, msg in enumerate(traj.messages):
            role = msg.get("role")
            if role == "assistant":
                yield "assistant", None, m, as_text(msg.get("content"))
                for step in (s for s in traj.steps if s.message == m):
                    part = "query" if step_query(step) is not None else "tool_arguments"
                    yield part, step.index, m, step.arguments_text
                yield "assistant", None, m, _beside(msg)
            elif role == "tool":
                step = by_call.get(str(msg.get("tool_call_id")))
                index = None if step is None else step.index
                yield "tool_result", index, m, as_text(msg.get("content"))
                yield "tool_result", index, m, _beside(msg)
    elif env.raw is not None:  # a refused trajectory: searched as a whole
        yield "trajectory", None, None, as_text(env.raw)
    if getattr(env, "aside", None) is not None:  # messages under the record's other keys
        yield "trajectory", None, None, as_text(env.aside)
    yield "final_query", None, None, as_text(env.predicted)
    yield "final_answer", None, None, as_text(env.answer)


#: A message's fields that are searched on their own (the calls through their steps).
_OWN_FIELDS = frozenset({"role", "content", "tool_calls", "tool_call_id"})


def _beside(msg: Mapping[str, Any]) -> str:
    """The fields a message carries beside its content, as JSON: a reasoning model's
    ``reasoning_content``, an assistant's ``refusal``, an exporter's own keys. They are
    what the agent wrote or read too, and a recorded trajectory keeps them."""
    rest = {k: v for k, v in msg.items() if k not in _OWN_FIELDS}
    return as_text(rest) if rest else ""


def trace(env: Any, planted: Planted) -> list[dict[str, Any]]:
    """Each canary of ``planted`` the run shows, in order of first sight: the canary, the
    cell it stands in, the form and place it was first seen in, and every part it reached."""
    index = planted.index()
    seen: dict[str, dict[str, Any]] = {}
    for part, step, message, text in _places(env):
        for canary, form in find(text, index):
            got = seen.get(canary)
            if got is None:
                first: dict[str, Any] = {"part": part, "form": form}
                if step is not None:
                    first["step"] = step
                if message is not None:
                    first["message"] = message
                seen[canary] = {"canary": canary, "planted": planted.canaries[canary],
                                "first": first, "parts": [part]}
            elif part not in got["parts"]:
                got["parts"].append(part)
    return list(seen.values())
