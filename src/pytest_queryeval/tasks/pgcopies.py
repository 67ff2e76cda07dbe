"""Throwaway PostgreSQL databases for tasks: ``CREATE DATABASE ... TEMPLATE`` from a small pool.

Why a pool: cloning Chinook by template costs about 64 ms and dropping it about 108 ms, twice per
case (the gold's copy and the prediction's); copies made ahead, in a background thread, take
that off the case's time, and drops run in the background too.

Why a private template: PostgreSQL refuses to clone a database that another session is
connected to, and the read-only cases of the same suite keep connections to the datasource's
database. So the datasource's database is cloned once per process into a private template that
nothing else ever connects to, and every copy is cloned from that (the first clone retries for a
few seconds while other sessions are connected).

Why the process id in every name (``qe_task_<pid>_<n>``, ``qe_tpl_<pid>_<n>``): a killed pytest
(``kill -9``, a crashed xdist worker) drops nothing, so the first pool of each process drops the
databases of processes of this host that are no longer alive (the sweep); Ctrl-C and a normal
exit drop the process's own (``atexit``).

The role of the datasource's URL needs ``CREATEDB`` (not superuser): it owns the template and
the copies, and reads the datasource's database only as a template. A prediction runs as that
role, which could act on the datasource's database and the server: it is held to its copy by
the statement guard (:mod:`.pgconfine`), then by :func:`run_confined` (its transaction checked
against the server's shared state, the session reset), and a role that is more than LOGIN
CREATEDB is refused before any case runs (:func:`role_problems`).
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import queue
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .._util.safefile import process_alive

if TYPE_CHECKING:
    from .dbapi import PgConnection

#: Copies kept ready per datasource (each case takes two).
POOL_SIZE = 4
_NAME = re.compile(r"^qe_(task|tpl|canary)_(\d+)_\d+$")
_POOLS: dict[str, CopyPool] = {}
_LOCK = threading.Lock()
_COUNTER = itertools.count(1)


def while_in_use(create: Callable[[], object], retry: float) -> None:
    """Run ``create`` (a ``CREATE DATABASE ... TEMPLATE``) again every 0.2 s for up to
    ``retry`` seconds while it fails with psycopg's ``ObjectInUse``: PostgreSQL clones only a
    template no other session is connected to, and a pooled connection of the suite's own may
    be closing. Past ``retry`` the last ``ObjectInUse`` is raised, for the caller to say why.
    The task copies and the red-team's planted copies (agents/pgplant.py) clone this way."""
    import psycopg

    deadline = time.monotonic() + retry
    while True:
        try:
            create()
            return
        except psycopg.errors.ObjectInUse:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def conninfo(url: str, database: str | None = None) -> str:
    """A libpq connection string for a SQLAlchemy URL (``postgresql+psycopg://...``)."""
    from sqlalchemy.engine import make_url

    u = make_url(url)
    parts = {"host": u.host or "127.0.0.1", "port": u.port or 5432, "user": u.username,
             "password": u.password, "dbname": database or u.database}
    return " ".join(f"{k}={_quote(str(v))}" for k, v in parts.items() if v is not None)


def _quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def new_name(what: str = "task") -> str:
    """A new database name the sweep knows (``qe_<what>_<pid>_<n>``). One counter for the
    process, not per pool: two writable datasources on one server (two pools) would otherwise
    both name their template qe_tpl_<pid>_1; the counterexample search's throwaway databases
    (:mod:`..neighbours.pgengine`) are named here too."""
    return f"qe_{what}_{os.getpid()}_{next(_COUNTER)}"


def pool_for(url: str) -> CopyPool:
    """The process's pool of copies of the datasource at ``url`` (made on first use)."""
    with _LOCK:
        pool = _POOLS.get(url)
        if pool is None:
            pool = _POOLS[url] = CopyPool(url)
        return pool


class CopyPool:
    """Copies of one database, made ahead in a background thread and dropped after use."""

    def __init__(self, url: str, size: int = POOL_SIZE) -> None:
        from sqlalchemy.engine import make_url

        self.url, self.size = url, size
        self.source = str(make_url(url).database)
        self._admin = conninfo(url, "postgres")
        self._ready: queue.Queue[str] = queue.Queue()
        self._drops: queue.Queue[str | None] = queue.Queue()
        self._alive = set[str]()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self.template = ""
        self.swept = sweep(self._admin)
        self.template = self._clone(self.source, "tpl", retry=10.0)
        self._worker = threading.Thread(target=self._run, name="queryeval-pg-copies",
                                        daemon=True)
        self._worker.start()
        atexit.register(self.close)

    def _name(self, what: str) -> str:
        return new_name(what)

    def _execute(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self._admin, autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql)

    def _clone(self, source: str, what: str = "task", retry: float = 0.0) -> str:

        name = self._name(what)
        # known before it exists: a close() racing this CREATE drops it (IF EXISTS) or, when
        # the CREATE finishes after close() has looked, the check below does
        with self._lock:
            self._alive.add(name)
        while_in_use(lambda: self._execute(f'CREATE DATABASE "{name}" TEMPLATE "{source}"'),
                     retry)
        if self._closed.is_set():
            self._drop_now(name)
        return name

    def take(self) -> tuple[str, float]:
        """A fresh copy's name and the seconds the caller waited for it (near 0 when the pool
        had one ready)."""
        t0 = time.perf_counter()
        try:
            name = self._ready.get_nowait()
        except queue.Empty:
            name = self._clone(self.template)
        self._drops.put(None)  # wake the worker: refill
        return name, time.perf_counter() - t0

    def drop(self, name: str) -> None:
        """Drop ``name`` in the background (the case does not wait for it)."""
        self._drops.put(name)

    def _run(self) -> None:
        while True:
            with contextlib.suppress(Exception):
                while self._ready.qsize() < self.size and not self._closed.is_set():
                    self._ready.put(self._clone(self.template))
            item = self._drops.get()
            if item == "":
                return
            if item is not None:
                self._drop_now(item)

    def _drop_now(self, name: str, attempts: int = 3) -> None:
        """Drop ``name``; a refusal (a connect timeout on a loaded server) is retried, and a
        name still there after that is left to the next process's sweep."""
        for attempt in range(attempts):
            try:
                self._execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            except Exception:
                time.sleep(0.2 * (attempt + 1))
                continue
            with self._lock:
                self._alive.discard(name)
            return

    def close(self) -> None:
        """Drop every copy and the template this pool made (exit, Ctrl-C). The worker stops
        cloning first; a clone it has in flight is dropped by whichever of the two sees it
        last (:meth:`_clone`)."""
        self._closed.set()
        self._drops.put("")
        self._worker.join(60)
        with self._lock:
            names = sorted(self._alive)
        for name in names:
            self._drop_now(name)
        with _LOCK:
            if _POOLS.get(self.url) is self:
                del _POOLS[self.url]


def sweep(admin: str) -> list[str]:
    """Drop the copies and templates of processes of this host that are gone (a crashed or
    killed session); the names dropped."""
    import psycopg

    dropped: list[str] = []
    with psycopg.connect(admin, autocommit=True, connect_timeout=10) as conn:
        names = [str(r[0]) for r in conn.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE 'qe\\_%'").fetchall()]
        for name in names:
            match = _NAME.match(name)
            if match is None or process_alive(int(match.group(2))):
                continue
            with contextlib.suppress(psycopg.Error):
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                dropped.append(name)
    return dropped


def connect(info: str) -> Any:
    """A connection to a copy (autocommit: each statement is applied as it runs; the
    prediction's own transaction is :func:`run_confined`'s). psycopg prepares nothing on it:
    the session reset (``DISCARD ALL``) deallocates prepared statements behind psycopg's back
    when it was itself sent as a prepared statement (a connection that runs it five times
    then fails with ``prepared statement "_pg3_0" does not exist``)."""
    import psycopg

    return psycopg.connect(info, autocommit=True, connect_timeout=10, prepare_threshold=None)


#: Built-in roles whose members reach the server beyond a database (files, programs, other
#: sessions): a task's prediction runs as the datasource's role.
_SERVER_ROLES = ("pg_execute_server_program", "pg_write_server_files", "pg_read_server_files",
                 "pg_signal_backend")
_TASK_ROLE_SQL = f"""
SELECT current_user, r.rolsuper, r.rolcreaterole, r.rolreplication, r.rolbypassrls,
       ARRAY(SELECT g.rolname::text FROM pg_roles g
             WHERE g.rolname IN ({", ".join(f"'{r}'" for r in _SERVER_ROLES)})
               AND pg_has_role(current_user, g.oid, 'MEMBER') ORDER BY 1)
FROM pg_roles r WHERE r.rolname = current_user
"""


def role_problems(url: str) -> tuple[str, list[str]]:
    """The role of a ``writable: sandbox`` datasource's URL and what it may do beyond its own
    databases, each as a phrase ("is a superuser", "is a member of pg_execute_server_program",
    ...); an empty list for a role fit to run predictions (LOGIN CREATEDB, owning the task
    database). Why refused: the statement guard (:mod:`.pgconfine`) names what a prediction
    may not do, the role is what the server still allows past it (a superuser's ``COPY ...
    TO PROGRAM`` runs a shell command as the server's user)."""
    import psycopg

    with psycopg.connect(conninfo(url), autocommit=True, connect_timeout=10) as conn:
        row = conn.execute(_TASK_ROLE_SQL).fetchone()
    if row is None:
        return "", []
    role, superuser, createrole, replication, bypassrls, members = row
    if superuser:
        return str(role), ["is a superuser"]
    problems = [phrase for flag, phrase in (
        (createrole, "can create roles (CREATEROLE)"), (replication, "has REPLICATION"),
        (bypassrls, "bypasses row-level security (BYPASSRLS)")) if flag]
    if members:
        problems.append("is a member of " + ", ".join(members))
    return str(role), problems


#: What a prediction must leave as it was, read from the shared catalogs every role can read:
#: databases (but this session's pool's copies, made and dropped meanwhile), per-role and
#: per-database settings, shared comments, roles' attributes and memberships, tablespaces.
_SHARED_STATE_SQL = r"""
SELECT 'database ' || quote_ident(datname) || ': owner ' || datdba || ', connection limit '
       || datconnlimit || ', allow connections ' || datallowconn || ', template '
       || datistemplate || ', acl ' || coalesce(datacl::text, '-')
FROM pg_database WHERE datname !~ '^qe_(task|tpl)_\d+_\d+$'
UNION ALL
SELECT 'setting of role ' || setrole || ' in database ' || setdatabase || ': '
       || coalesce(setconfig::text, '-') FROM pg_db_role_setting
UNION ALL
SELECT 'comment on shared object ' || classoid || '/' || objoid || ': ' || description
FROM pg_shdescription
UNION ALL
SELECT 'role ' || quote_ident(rolname) || ': super ' || rolsuper || ', createrole '
       || rolcreaterole || ', createdb ' || rolcreatedb || ', login ' || rolcanlogin
       || ', replication ' || rolreplication || ', bypassrls ' || rolbypassrls
       || ', connection limit ' || rolconnlimit || ', valid until '
       || coalesce(rolvaliduntil::text, '-') FROM pg_roles
UNION ALL
SELECT 'membership ' || roleid || ' <- ' || member || ' admin ' || admin_option
FROM pg_auth_members
UNION ALL
SELECT 'tablespace ' || quote_ident(spcname) || ': acl ' || coalesce(spcacl::text, '-')
       || ', options ' || coalesce(spcoptions::text, '-') FROM pg_tablespace
"""


def shared_state(conn: PgConnection) -> set[str]:
    """The server's shared state as the connection's transaction sees it (its own changes
    included), one line per object (:data:`_SHARED_STATE_SQL`)."""
    return {str(r[0]) for r in conn.execute(_SHARED_STATE_SQL).fetchall()}


def run_confined(conn: PgConnection, statements: Sequence[str], execute: Callable[..., str],
                 keep: list[Any] | None = None) -> str:
    """A task's prediction on its copy, as the second layer behind the statement guard
    (:mod:`.pgconfine`): in one transaction, after which the server's shared state
    (:func:`shared_state`) is compared with what it was before; a change is rolled back and
    named (the case fails with it), else the transaction commits. A statement PostgreSQL
    runs only outside a transaction (``CREATE INDEX CONCURRENTLY``, ``VACUUM``) makes the
    prediction run again, statement by statement, after the rollback (those only: ``CREATE
    DATABASE`` stays refused by the server); a prediction that
    ends the transaction itself (``COMMIT``) is compared after it ends. The session is then
    reset (``DISCARD ALL``: settings, ``SET ROLE``, temporary tables, prepared statements,
    advisory locks), so what the checks read is the copy, not the prediction's session.
    Returns the error ('' when none), as :func:`~.run._execute` does."""
    import psycopg

    from .pgconfine import runs_outside_transactions

    before = shared_state(conn)
    conn.execute("BEGIN")
    problem = execute(conn, statements, keep)
    if "ActiveSqlTransaction" in problem and runs_outside_transactions(statements):
        conn.execute("ROLLBACK")  # VACUUM, CREATE INDEX CONCURRENTLY: as they are written
        problem = execute(conn, statements, keep)
    status = psycopg.pq.TransactionStatus
    if conn.info.transaction_status == status.INERROR:  # a failed statement: nothing applied
        conn.execute("ROLLBACK")
    after = shared_state(conn)
    changed = sorted(after - before) or [f"gone: {line}" for line in sorted(before - after)]
    in_transaction = conn.info.transaction_status == status.INTRANS
    if changed:
        if in_transaction:
            conn.execute("ROLLBACK")
        undone = "rolled back" if in_transaction else \
            "not undone: the prediction's own COMMIT had applied it"
        return (f"refused: the prediction changed the server outside its copy ({undone}): "
                f"{changed[0][:300]}")
    if in_transaction:
        conn.execute("COMMIT")
    conn.execute("DISCARD ALL")
    return problem
