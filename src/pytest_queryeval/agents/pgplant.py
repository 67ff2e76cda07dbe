"""Canaries planted in a PostgreSQL copy, and the least-privilege role the agent runs as there.

Why a template copy and a role of its own: a server's database cannot be copied as a file is,
and the agent must never write the suite's database nor run as the role that planted. So the
datasource's database is cloned (``CREATE DATABASE qe_canary_<pid>_<n> TEMPLATE ...``, the
name the copies' sweep of :mod:`..tasks.pgcopies` knows), the protected cells of the clone get
canaries, and a role ``qe_agent_<pid>_<n>`` (LOGIN, nothing else) is created for it. The
agent's tools and the replay of its trajectory connect as that role; the gold runs as the
datasource's role, on the same clone.

Without ``enforce:`` the role reads every table (the canaries can leak: that is what is
measured). With ``enforce: true`` the server itself withholds what is protected: a ``table:``
target gets no ``SELECT`` grant, a ``column:`` target is left out of the table's column
grants, and a ``where:`` target gets a row-level security policy that hides the rows it
selects from the role, each on the table's partitions and parents too, and revoked from
``PUBLIC`` as well; the copy's views then read as their caller, and a materialized view
reaching the hidden rows is revoked (:mod:`.pgwithhold` says why). A refused read is PostgreSQL's
``permission denied``.

The datasource's role must be able to clone the database, create roles and update the
protected tables: a superuser (with ``allow_privileged: true``), or the tables' owner with
``CREATEDB CREATEROLE``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from .canaries import Instruction, Planted, PlantError, Target, make_canaries
from .pgwithhold import ident as _ident
from .pgwithhold import quiet, refuse_logic, withhold, writes, wrote_only

_TEXT_TYPES = ("character varying", "text", "character")
_COLUMNS_SQL = """
SELECT c.column_name, c.data_type, coalesce(c.character_maximum_length, 1000),
       EXISTS (SELECT 1 FROM information_schema.key_column_usage k
               JOIN information_schema.table_constraints t
                 ON t.constraint_name = k.constraint_name
                AND t.constraint_schema = k.constraint_schema
               WHERE k.table_schema = c.table_schema AND k.table_name = c.table_name
                 AND k.column_name = c.column_name
                 AND t.constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY', 'UNIQUE'))
FROM information_schema.columns c
WHERE c.table_schema = %s AND c.table_name = %s ORDER BY c.ordinal_position
"""
_TABLES_SQL = """
SELECT table_schema, table_name FROM information_schema.tables
WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE'
ORDER BY table_schema, table_name
"""
#: Seconds the template's clone waits for the source database to be idle (docs/red-team.md).
TEMPLATE_WAIT = 30.0
#: (admin conninfo, source database) -> the process's private template of it, or why it could
#: not be made (every case that plants on it gets that error, without waiting again).
_TEMPLATES: dict[tuple[str, str], str | PlantError] = {}
#: (admin conninfo, copy, role) of every copy and role made, dropped at exit.
_CREATED: list[tuple[str, str, str]] = []
_LOCK = threading.Lock()


def plant_postgres(spec: Mapping[str, Any], targets: Sequence[Target], seed: int,
                   enforce: bool, instructions: Sequence[Instruction] = ()) -> Planted:
    """A template copy of the datasource ``spec`` (``type: sqlalchemy``, a PostgreSQL URL)
    with canaries planted, and the agent's role on it; ``Planted.spec`` is the copy as the
    datasource's role sees it, ``Planted.agent_spec`` as the agent's role does."""
    import psycopg
    from sqlalchemy.engine import make_url

    from ..tasks.pgcopies import conninfo

    url = str(spec.get("url"))
    source = str(make_url(url).database)
    # the sweep's names (qe_<what>_<pid>_<n>), n drawn at random: a module imported again in
    # the same process (a test runner's) must not meet the names of its first import
    n = secrets.randbelow(10**12)
    copy, role = f"qe_canary_{os.getpid()}_{n}", f"qe_agent_{os.getpid()}_{n}"
    try:
        _clone(conninfo(url, "postgres"), _template(conninfo(url, "postgres"), source), copy)
    except psycopg.Error as exc:
        raise PlantError(f"the PostgreSQL datasource cannot be copied for planting (its role "
                         f"needs CREATEDB and to own or be superuser): "
                         f"{str(exc).strip().splitlines()[0]}") from None
    try:
        with psycopg.connect(conninfo(url, copy), autocommit=True, connect_timeout=10) as conn:
            path = _builtins_only(conn)
            quiet(conn)
            refuse_logic(conn, sorted({_qualified(conn, name) for name in
                                       [*(t.table for t in targets),
                                        *(i.table for i in instructions)]}))
            canaries, tenant, physical = _plant(conn, targets, seed, path)
            notes: dict[str, str] = {}
            for item in instructions:
                if item.comment:
                    notes.update(_comment(conn, item))
                else:
                    _instruct(conn, item.table, item.text, targets, physical)
            password = secrets.token_hex(16)
            _role(conn, role, password, copy, conninfo(url, "postgres"))
            _disarm(conn, role)
            if enforce:
                withhold(conn, role, targets, [
                    f"{_ident(schema)}.{_ident(table)}" for schema, table, _ in
                    (_table(conn, target.table) for target in targets)], physical)
    except psycopg.Error as exc:
        _drop(conninfo(url, "postgres"), copy, role)
        raise PlantError(f"protected data cannot be planted in the PostgreSQL copy: "
                         f"{str(exc).strip().splitlines()[0]}") from None
    except PlantError:
        _drop(conninfo(url, "postgres"), copy, role)
        raise
    admin = str(make_url(url).set(database=copy).render_as_string(hide_password=False))
    agent = str(make_url(url).set(database=copy, username=role, password=password)
                .render_as_string(hide_password=False))
    base = {k: v for k, v in spec.items() if k != "allow_privileged"}
    planted = Planted(path=None, canaries={c: label for label, c in canaries.items()},
                      spec={**spec, "url": admin}, agent_spec={**base, "url": agent},
                      tenant_rows={k: sorted(v) for k, v in tenant.items()},
                      descriptions=notes)
    return planted


def prepare_template(spec: Mapping[str, Any]) -> None:
    """Make the process's private template of the datasource ``spec`` now, before any case
    runs (the runner calls it once its cases are collected, for each PostgreSQL datasource
    whose cases plant): the suite's own pools keep idle sessions on the source once a case has
    run there, and PostgreSQL clones only a database no session is connected to. An xdist
    worker schedules no case until every worker has collected, so no worker's pool is open yet.
    A failure is kept for the cases that plant, which report it as their own error."""
    import psycopg
    from sqlalchemy.engine import make_url

    from ..tasks.pgcopies import conninfo

    url = str(spec.get("url"))
    with contextlib.suppress(PlantError, psycopg.Error):
        _template(conninfo(url, "postgres"), str(make_url(url).database))


def _template(admin: str, source: str) -> str:
    """The process's private template of ``source`` (``qe_tpl_<pid>_<n>``), cloned once:
    PostgreSQL clones only a database no other session is connected to, and the suite's
    other cases may keep connections to ``source`` open; nothing connects to the template."""
    with _LOCK:
        known = _TEMPLATES.get((admin, source))
    if isinstance(known, PlantError):
        raise known
    if known is not None:
        return known
    name = f"qe_tpl_{os.getpid()}_{secrets.randbelow(10**12)}"
    try:
        _clone(admin, source, name, retry=TEMPLATE_WAIT)
    except PlantError as exc:
        with _LOCK:
            _TEMPLATES[(admin, source)] = exc
        raise
    with _LOCK:
        made = _TEMPLATES.setdefault((admin, source), name)
    assert isinstance(made, str)
    return made


def _clone(admin: str, source: str, copy: str, retry: float = 10.0) -> None:
    """``CREATE DATABASE copy TEMPLATE source``; retried while other sessions are connected
    to the source (PostgreSQL refuses to clone it then), and then refused naming them."""
    import psycopg

    with _LOCK:
        first = not _CREATED
        if first:
            atexit.register(_drop_all)
        _CREATED.append((admin, copy, ""))
    if first:
        _sweep(admin)
    from ..tasks.pgcopies import while_in_use

    with psycopg.connect(admin, autocommit=True, connect_timeout=10) as conn:
        try:
            while_in_use(lambda: conn.execute(
                f"CREATE DATABASE {_ident(copy)} TEMPLATE {_ident(source)}"), retry)
        except psycopg.errors.ObjectInUse:
            raise PlantError(_in_use(conn, source, retry)) from None


def _in_use(conn: Any, source: str, waited: float) -> str:
    """Why ``source`` could not be cloned: the sessions connected to it, by user and state."""
    rows = conn.execute("SELECT usename, coalesce(application_name, ''), state, count(*) FROM "
                        "pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid() "
                        "GROUP BY 1, 2, 3 ORDER BY 4 DESC", [source]).fetchall()
    held = ", ".join(f"{n} {s or '?'} of {u}" + (f" ({a})" if a else "") for u, a, s, n in rows)
    return (f"the PostgreSQL database {source!r} cannot be copied for planting: PostgreSQL "
            f"clones only a database no other session is connected to, and after "
            f"{waited:g} s {held or 'other sessions'} still were")


def _table(conn: Any, name: str) -> tuple[str, str, list[tuple[str, str, bool]]]:
    """(schema, table, [(column, type, is key)]) of the table ``name`` (case-insensitive; a
    ``schema.table`` name is taken as such)."""
    found = [(s, t) for s, t in conn.execute(_TABLES_SQL).fetchall()
             if t.lower() == name.lower() or f"{s}.{t}".lower() == name.lower()]
    if not found:
        raise PlantError(f"protected {name}: no table {name!r}")
    schema, table = found[0]
    # a text column too short for a canary (varchar(10)) is left as it is, as a number is
    cols = [(str(c), str(d) if n >= 13 else "short", bool(k)) for c, d, n, k in
            conn.execute(_COLUMNS_SQL, (schema, table)).fetchall()]
    return schema, table, cols


def _builtins_only(conn: Any) -> str:
    """The copy's ``search_path`` as the datasource's role gets it; the planting session's
    set to ``pg_catalog, pg_temp`` from here on. Why: the planting's own SQL names
    operators, casts and functions, and a database's ``public.=(oid, smallint)`` giving
    false, an exact match for a bound oid where the builtin is ``oid = oid``, made the
    planting ``UPDATE`` match no row while planting reported success: the copy kept the
    real values, with no canary for ``leaks`` to find (69a P1). The suite's ``where:``
    filter alone runs under the database's path (:func:`_filtered`): it is the suite's SQL,
    written for that database."""
    (path,) = conn.execute("SELECT pg_catalog.current_setting('search_path')").fetchone()
    conn.execute("SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', false)")
    return str(path)


def _filtered(conn: Any, path: str, sql: str) -> list[Any]:
    """The rows of ``sql``, which holds the suite's ``where:`` filter, read under the
    database's ``path``, the planting's ``pg_catalog, pg_temp`` set back after; the rest
    of ``sql`` names its casts."""
    conn.execute("SELECT pg_catalog.set_config('search_path', %s, false)", [path])
    try:
        return list(conn.execute(sql).fetchall())
    finally:
        conn.execute("SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', "
                     "false)")


def _columns(conn: Any, target: Target, path: str) -> tuple[str, list[str]]:
    """The qualified table of ``target`` and the columns a canary goes in."""
    schema, table, cols = _table(conn, target.table)
    qualified = f"{_ident(schema)}.{_ident(table)}"
    text = [c for c, d, k in cols if d in _TEXT_TYPES and not k]
    if target.where:
        try:
            row = _filtered(conn, path, f"SELECT 1 FROM {qualified} WHERE ({target.where}) "
                            "LIMIT 1")
        except Exception as exc:  # psycopg's errors: the suite's condition
            raise PlantError(f"protected {target.describe()}: "
                             f"{str(exc).strip().splitlines()[0]}") from None
        if not row:
            raise PlantError(f"protected {target.describe()}: the filter selects no row, so "
                             "nothing would be planted")
    if target.column is not None:
        col = target.column.lower()
        match = [c for c in text if c.lower() == col]
        if not match:
            kind = {c.lower(): (d, k) for c, d, k in cols}.get(col)
            why = "no such column" if kind is None else \
                "a key column (its joins would break)" if kind[1] else \
                "too short for a canary (13 characters)" if kind[0] == "short" else \
                "not a text column (a canary is text)"
            raise PlantError(f"protected {target.describe()}: {why}")
        return qualified, match
    if not text:
        raise PlantError(f"protected {target.describe()}: the table has no text column that is "
                         "no key, so nothing can be planted")
    return qualified, text


def _plant(conn: Any, targets: Sequence[Target], seed: int, path: str
           ) -> tuple[dict[str, str], dict[str, set[str]], dict[str, dict[int, set[str]]]]:
    """Every protected cell planted: label -> canary; for each table the ctids of the rows
    its ``where:`` targets selected, and the same rows by physical table (oid -> ctids), both
    after planting (an update moves a row to a new ctid, which ``RETURNING`` tells). A row is
    named by its physical table (``tableoid``) and ``ctid`` in the fresh clone (the same in
    every clone of the same database): a partitioned or inheritance parent's rows share
    ctids across its children, and ``WHERE ctid = ...`` on the parent updated one row of
    each (the forty-fifth re-probe's N16 put its policy on every relation of the family,
    which needs the physical table). Each row is updated once with all its protected
    columns."""
    cells: dict[tuple[str, int, str], dict[str, str]] = {}
    tenant: dict[str, set[str]] = {}
    physical: dict[str, dict[int, set[str]]] = {}
    for target in targets:
        qualified, columns = _columns(conn, target, path)
        cond = f" AND ({target.where})" if target.where else ""
        own = _oid(conn, qualified)
        if target.where:
            mine = physical.setdefault(qualified, {})
            for oid, ctid in _filtered(conn, path, f"SELECT tableoid, ctid::pg_catalog.text "
                                       f"FROM {qualified} WHERE ({target.where})"):
                mine.setdefault(int(oid), set()).add(str(ctid))
                tenant.setdefault(qualified, set()).add(str(ctid))
        for column in columns:
            for name, oid, ctid in _filtered(
                    conn, path, "SELECT tableoid::pg_catalog.regclass::pg_catalog.text, "
                    f"tableoid, ctid::pg_catalog.text FROM {qualified} "
                    f"WHERE {_ident(column)} IS NOT NULL{cond}"):
                label = f"{target.table}.{column} ctid {ctid}"
                if int(oid) != own:
                    label += f" in {name}"
                cells.setdefault((qualified, int(oid), str(ctid)), {})[column] = label
    canaries = make_canaries(seed, sorted(lab for row in cells.values()
                                          for lab in row.values()))
    with conn.transaction():
        before = writes(conn)
        for (qualified, oid, ctid), row in cells.items():
            sets = ", ".join(f"{_ident(c)} = %s" for c in row)
            moved = conn.execute(f"UPDATE {qualified} SET {sets} WHERE tableoid = %s::oid AND "
                                 "ctid = %s::tid RETURNING tableoid, ctid::text, "
                                 + ", ".join(f"{_ident(c)}::text" for c in row),
                                 [*(canaries[lab] for lab in row.values()), oid, ctid]
                                 ).fetchone()
            if moved is None or [str(v).rstrip() for v in moved[2:]] != [
                    canaries[lab] for lab in row.values()]:
                # a trigger or a rule swallowed it or set the old value back (69a P1, 70a P2)
                raise PlantError(f"protected {qualified}: the planting update of row {ctid} "
                                 "did not leave its canary there")
            rows = physical.get(qualified, {}).get(oid)
            if rows is not None and ctid in rows:
                rows.discard(ctid)
                physical[qualified].setdefault(int(moved[0]), set()).add(str(moved[1]))
                tenant[qualified].discard(ctid)
                tenant[qualified].add(str(moved[1]))
        wrote_only(conn, before, Counter(oid for _, oid, _ in cells))
    for qualified in sorted({q for q, _, _ in cells}):
        # the statistics of the copy are the source's: pg_stats gave the original values
        conn.execute(f"ANALYZE {qualified}")
    return canaries, tenant, physical


def _qualified(conn: Any, name: str) -> str:
    """The table ``name`` qualified and quoted (:func:`_table`'s error where there is none)."""
    schema, table, _ = _table(conn, name)
    return f"{_ident(schema)}.{_ident(table)}"


def _oid(conn: Any, qualified: str) -> int:
    """The oid of the relation ``qualified``."""
    return int(conn.execute("SELECT %s::regclass::oid", [qualified]).fetchone()[0])


def _comment(conn: Any, item: Instruction) -> dict[str, str]:
    """A ``{comment: ...}`` instruction: ``COMMENT ON`` the copy's table or column, and the
    description as :attr:`Planted.descriptions` records it (the names as the copy spells
    them)."""
    try:
        schema, name, cols = _table(conn, item.table)
    except PlantError:
        raise PlantError(f"instructions: comment on {item.describe()}: no table "
                         f"{item.table!r}") from None
    qualified = f"{_ident(schema)}.{_ident(name)}"
    if item.column is None:
        conn.execute(f"COMMENT ON TABLE {qualified} IS " + _literal(item.text))
        return {name: item.text}
    column = next((c for c, _, _ in cols if c.lower() == item.column.lower()), None)
    if column is None:
        raise PlantError(f"instructions: comment on {item.describe()}: no column "
                         f"{item.column!r} in {name!r}")
    conn.execute(f"COMMENT ON COLUMN {qualified}.{_ident(column)} IS " + _literal(item.text))
    return {f"{name}.{column}": item.text}


def _literal(text: str) -> str:
    """``text`` as an SQL string literal (``COMMENT ON`` takes no bound parameter)."""
    return "'" + text.replace("'", "''") + "'"


def _instruct(conn: Any, table: str, text: str, targets: Sequence[Target],
              physical: Mapping[str, Mapping[int, set[str]]]) -> None:
    """``text`` planted in ``table``'s widest text column no target protects (cut to its
    width: a ``varchar(40)`` holds the first 40 characters), in its first row (by ctid) no
    ``where:`` target selects. A row is named by its physical table and ctid: a parent's
    children share ctids, so ``WHERE ctid = ...`` on a parent wrote a row of each (one a
    ``where:`` target of a child selected, which ``ctid`` alone did not tell: N16)."""
    schema, name, cols = _table(conn, table)
    mine = [t for t in targets if t.table.lower() == table.lower()]
    free = [c for c, d, k in cols if d in _TEXT_TYPES and not k and
            not any(t.column and t.column.lower() == c.lower() for t in mine)]
    if not free:
        raise PlantError(f"instructions: table {table!r} has no text column left to plant in")
    qualified = f"{_ident(schema)}.{_ident(name)}"
    hidden = sorted(f"{oid}:{c}" for rows in physical.values() for oid, ctids in rows.items()
                    for c in ctids)
    row = conn.execute(f"SELECT tableoid, ctid::text FROM {qualified} WHERE NOT ((tableoid::text"
                       " || ':' || ctid::text) = ANY(%s::text[])) ORDER BY tableoid, ctid "
                       "LIMIT 1", [hidden]).fetchone()
    if row is None:
        raise PlantError(f"instructions: table {table!r} has no row to plant in")
    widths = dict(conn.execute(
        "SELECT column_name, coalesce(character_maximum_length, 1000000000) FROM "
        "information_schema.columns WHERE table_schema = %s AND table_name = %s",
        (schema, name)).fetchall())
    column = max(free, key=lambda c: int(widths.get(c, 0)))  # the widest: most of the text
    with conn.transaction():
        before = writes(conn)
        done = conn.execute(f"UPDATE {qualified} SET {_ident(column)} = %s WHERE tableoid = "
                            "%s::oid AND ctid = %s::tid",
                            [text[:int(widths.get(column, len(text)))], *row])
        if done.rowcount != 1:
            raise PlantError(f"instructions: the update of table {table!r} changed no row")
        wrote_only(conn, before, {int(row[0]): 1})


def _role(conn: Any, role: str, password: str, copy: str, admin: str) -> None:
    """The agent's role: LOGIN and nothing else, reading every table of the copy."""
    with _LOCK:
        _CREATED.append((admin, "", role))
    conn.execute(f"CREATE ROLE {_ident(role)} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE "
                 f"NOINHERIT NOREPLICATION NOBYPASSRLS PASSWORD '{password}'")
    conn.execute(f"GRANT CONNECT ON DATABASE {_ident(copy)} TO {_ident(role)}")
    for fn in ("pg_terminate_backend(integer, bigint)", "pg_cancel_backend(integer)"):
        # the copy's own catalog: no role signals the sessions of its own role here
        conn.execute(f"REVOKE EXECUTE ON FUNCTION pg_catalog.{fn} FROM PUBLIC")
    for (schema,) in conn.execute("SELECT DISTINCT table_schema FROM information_schema.tables"
                                  " WHERE table_schema NOT IN ('pg_catalog', "
                                  "'information_schema')").fetchall():
        conn.execute(f"GRANT USAGE ON SCHEMA {_ident(schema)} TO {_ident(role)}")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {_ident(schema)} TO "
                     f"{_ident(role)}")


def _disarm(conn: Any, role: str) -> None:
    """The copy's routines that would act past the agent's read-only role (another role's
    SECURITY DEFINER routine, a second name of a builtin, dblink, server files, a builtin
    initdb kept from PUBLIC granted back: :mod:`..sources.pgescape`) executable by PUBLIC no
    more: the copy is the run's own, and a C second name of ``dblink_exec`` otherwise wrote
    to the original database under ``enforce`` (the forty-second re-probe's Q20), and
    ``pg_hba_file_rules()`` granted to PUBLIC gave the agent ``pg_hba.conf`` (the forty-fifth
    re-probe's N10). A foreign table, or a catalog changed in
    place, stays: the agent's source refuses its role then, as any datasource's."""
    from ..sources.pgescape import ESCAPES_SQL, REVOCABLE_KINDS

    conn.execute(f"SET ROLE {_ident(role)}")
    try:
        routes = conn.execute(ESCAPES_SQL).fetchall()
    finally:
        conn.execute("RESET ROLE")
    for kind, name, _ in routes:
        if kind in REVOCABLE_KINDS:
            conn.execute(f"REVOKE EXECUTE ON FUNCTION {name} FROM PUBLIC")


def _drop(admin: str, copy: str, role: str) -> None:
    import psycopg

    with contextlib.suppress(psycopg.Error), \
            psycopg.connect(admin, autocommit=True, connect_timeout=10) as conn:
        if copy:
            conn.execute(f"DROP DATABASE IF EXISTS {_ident(copy)} WITH (FORCE)")
        if role:
            conn.execute(f"DROP ROLE IF EXISTS {_ident(role)}")


def _sweep(admin: str) -> None:
    """What a killed run left (its copies, then its roles), dropped once per process: the
    names carry the pid of the process that made them, and only a gone process's go."""
    import psycopg

    from .._util.safefile import process_alive
    from ..tasks.pgcopies import sweep

    with contextlib.suppress(psycopg.Error):
        sweep(admin)
        with psycopg.connect(admin, autocommit=True, connect_timeout=10) as conn:
            for (name,) in conn.execute("SELECT rolname FROM pg_roles WHERE rolname LIKE "
                                        "'qe\\_agent\\_%'").fetchall():
                parts = str(name).split("_")
                if len(parts) == 4 and parts[2].isdigit() and not process_alive(int(parts[2])):
                    with contextlib.suppress(psycopg.Error):
                        conn.execute(f"DROP ROLE IF EXISTS {_ident(str(name))}")


def _drop_all() -> None:
    """The copies first (the role's grants are in them), then the roles."""
    with _LOCK:
        made = list(_CREATED)
    for admin, copy, _ in made:
        if copy:
            _drop(admin, copy, "")
    for admin, _, role in made:
        if role:
            _drop(admin, "", role)
