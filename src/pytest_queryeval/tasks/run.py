"""One stateful task, from copies to outcome, run in a sandbox worker (see the package doc).

Why one module of this size: a task's steps (copies, setup, gold, prediction, checks, the
collateral comparison's wiring, cleanup) run in one worker call and share one deadline and one
pair of connections; the engines' confinement (:mod:`.confine`, :mod:`.pgconfine`), the
PostgreSQL copies (:mod:`.pgcopies`) and the collateral comparison (:mod:`.collateral`) are
modules of their own.
"""

from __future__ import annotations

import importlib
import os
import shutil
import sqlite3
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .engines import server_copies, task_engine

if TYPE_CHECKING:
    from .collateral import Collateral
    from .dbapi import Connection, Cursor, CursorConnection, PgConnection

#: Memory the task's worker may use beyond its imports (bytes).
DEFAULT_MAX_MEMORY = 1 << 30


@dataclass(frozen=True)
class Check:
    """One check of a task's outcome; exactly one of ``rows``, ``compare``, ``tables``,
    ``python`` or ``livesqlbench_test`` says what is checked."""

    #: The verification query (``rows`` and ``compare``).
    query: str | None = None
    #: The rows the query must return (a multiset unless ``order``).
    rows: tuple[tuple[Any, ...], ...] | None = None
    #: ``"gold"``: the query's result on the prediction's copy must equal its result on the
    #: gold's copy.
    compare: str | None = None
    order: bool = False
    #: A schema expectation: table -> the columns it must have (for DDL tasks).
    tables: tuple[tuple[str, tuple[str, ...]], ...] | None = None
    #: Index names that must exist afterwards.
    indexes: tuple[str, ...] | None = None
    #: ``module:function`` called as ``function(conn, predicted, gold)``: a falsy return other
    #: than None, or an AssertionError, fails the check.
    python: str | None = None
    #: The source of a LiveSQLBench test case (``def test_case(pred_sqls, sol_sqls, db_name,
    #: conn)``), run with the reference's helpers (:mod:`.livesqlbench`): passes when it raises
    #: nothing.
    livesqlbench_test: str | None = None

    def describe(self) -> str:
        if self.livesqlbench_test is not None:
            return "livesqlbench test case"
        if self.python:
            return f"python {self.python}"
        if self.tables is not None or self.indexes is not None:
            return "schema"
        return f"{'compare: gold' if self.compare else 'rows'} of {(self.query or '')[:60]}"


@dataclass(frozen=True)
class Task:
    engine: str  #: sqlite | duckdb | postgres
    path: Path
    gold: tuple[str, ...]
    predicted: tuple[str, ...]
    checks: tuple[Check, ...]
    setup: tuple[str, ...] = ()
    cleanup: tuple[str, ...] = ()
    #: Directories searched first for a Python check's module (the case file's directory).
    search_path: tuple[str, ...] = ()
    #: PostgreSQL: the libpq connection strings of the gold's and the prediction's copies,
    #: made (and dropped) by the caller from its pool (:mod:`.pgcopies`).
    copies: tuple[str, str] | None = None
    #: The collateral check after the checks (:mod:`.collateral`): every table of the
    #: prediction's copy against the gold's; None turns it off.
    collateral: Collateral | None = None


@dataclass
class CheckResult:
    passed: bool
    #: One line: what failed (the case's reason when it is the first failure).
    reason: str = ""
    #: The check itself broke (a Python check that raised, not asserted): the suite's fault.
    broken: bool = False
    #: The rows that differ (missing, extra, counts), for the failure report.
    diff: list[str] = field(default_factory=list)


@dataclass
class TaskOutcome:
    passed: bool
    checks: list[CheckResult] = field(default_factory=list)
    #: The suite's fault (no check, a setup, gold or cleanup failure): the case is an error.
    error: str = ""
    #: The prediction did not execute on its copy: the case fails with this reason.
    predicted_error: str = ""
    #: Seconds spent making the two copies (and, for ``bench/bench_tasks.py``, the worker's
    #: CPU seconds for them: a wall time on a shared machine measures the neighbours too).
    copy_seconds: float = 0.0
    copy_cpu_seconds: float = 0.0
    #: The collateral check's verdict (None when it did not run: off, the gold audit).
    collateral: CheckResult | None = None
    #: Seconds the collateral check took, and the worker's CPU seconds for it
    #: (``bench/bench_tasks.py``).
    collateral_seconds: float = 0.0
    collateral_cpu_seconds: float = 0.0


def run_task(task: Task, *, timeout: float = 30.0, max_memory: int = DEFAULT_MAX_MEMORY,
             audit: bool = False) -> TaskOutcome:
    """The task's outcome; with ``audit`` the checks judge the gold's copy (a gold that fails
    its own checks is an error). Runs in a sandbox worker under ``timeout`` (a hard deadline
    that also bounds every Python check) and ``max_memory``."""
    if not task.checks:
        return TaskOutcome(False, error="a dml/ddl task needs at least one check: without one "
                                        "any prediction that executes would pass")
    from .._isolation.sandbox import shared_sandbox

    box = shared_sandbox("tasks", max_memory=max_memory, preload=("pytest_queryeval.tasks.run",))
    result: TaskOutcome = box.call(_run_here, task, audit, timeout=timeout, max_reply=16 << 20)
    return result


def _run_here(task: Task, audit: bool) -> TaskOutcome:
    """The task, in this process (the worker). SQLite copies are in-memory databases made from
    the source's image (:func:`_sqlite_copy`); DuckDB copies are files in a temporary
    directory of their own."""
    with tempfile.TemporaryDirectory(prefix="queryeval-task-") as tmp:
        t0, c0 = time.perf_counter(), time.process_time()
        conns = {side: _copy(task, Path(tmp) / side) for side in ("gold", "predicted")}
        outcome = TaskOutcome(False, copy_seconds=time.perf_counter() - t0,
                              copy_cpu_seconds=time.process_time() - c0)
        try:
            return _judge(task, conns, outcome, audit)
        finally:
            for conn in conns.values():
                conn.close()


def _judge(task: Task, conns: dict[str, Any], outcome: TaskOutcome, audit: bool) -> TaskOutcome:
    for side, conn in conns.items():
        problem = _execute(conn, task.setup)
        if problem:
            outcome.error = f"setup failed on the {side} copy: {problem}"
            return outcome
    # the judged side's last rows, kept only for LiveSQLBench's pred_query_result
    last: list[Any] | None = [None] if any(
        c.livesqlbench_test is not None for c in task.checks) else None
    problem = _execute(conns["gold"], task.gold, last if audit else None)
    if problem:
        outcome.error = f"the gold failed on its copy: {problem}"
        return outcome
    judged = "gold" if audit else "predicted"
    if not audit:
        problem = _pg_predicted(conns["predicted"], task, last) \
            if server_copies(task.engine) else _execute(conns["predicted"], task.predicted, last)
        if problem:
            outcome.predicted_error = problem if problem.startswith("refused: ") else \
                f"the prediction failed on its copy: {problem}"
            return outcome
    temporary = task_engine(task.engine).temporary
    if temporary is not None:  # else the server's: DISCARD ALL (pgcopies.run_confined)
        for side, conn in conns.items():
            problem = _drop_temporary(conn, temporary)
            if problem:
                outcome.error = f"the temporary objects of the {side} copy: {problem}"
                return outcome
    outcome.checks = [_check(c, conns[judged], conns["gold"], task, audit,
                             last[0] if last else None) for c in task.checks]
    broken = [c.reason for c in outcome.checks if c.broken]
    if broken:
        outcome.error = f"a check broke: {broken[0]}"
        return outcome
    # only when the checks pass: a failed check already fails the case and shows its rows
    if task.collateral is not None and not audit and all(c.passed for c in outcome.checks):
        from .collateral import compare

        t0, c0 = time.perf_counter(), time.process_time()
        try:
            why, lines = compare(conns["gold"], conns["predicted"], task.collateral)
        except Exception as exc:
            outcome.error = (f"the collateral check broke: {type(exc).__name__}: "
                             f"{' '.join(str(exc).split())[:300]} (list the table in "
                             "'collateral: {ignore: [...]}' or set 'collateral: false')")
            return outcome
        outcome.collateral_seconds = time.perf_counter() - t0
        outcome.collateral_cpu_seconds = time.process_time() - c0
        outcome.collateral = CheckResult(not why, why, diff=lines)
    for side, conn in conns.items():
        problem = _execute(conn, task.cleanup)
        if problem:
            outcome.error = f"cleanup failed on the {side} copy: {problem}"
            return outcome
    outcome.passed = all(c.passed for c in outcome.checks) and (
        outcome.collateral is None or outcome.collateral.passed)
    return outcome


def _drop_temporary(conn: Connection, temporary: tuple[str, dict[str, str], str]) -> str:
    """Drop every temporary object of a SQLite or DuckDB copy (its engine's
    :attr:`.engines.TaskEngine.temporary`, issue 50 item 2); '' or why it failed.

    Why: an unqualified name resolves to a temporary object before the copy's table, so a
    prediction that only runs ``CREATE TEMP VIEW Artist AS ...`` (or ``TEMP TABLE``) holding
    the rows the gold would leave passed every check of ``Artist`` and the collateral check
    while the copy's table was untouched. The checks judge the copy's tables, so nothing
    temporary (of the setup, the gold or the prediction) outlives the statements; PostgreSQL's
    are dropped by ``DISCARD ALL`` before its checks."""
    sql, verbs, schema = temporary
    try:
        found = [(str(t), str(n)) for t, n in conn.execute(sql).fetchall()]
        for kind, name in found:
            quoted = '"' + name.replace('"', '""') + '"'
            conn.execute(f"DROP {verbs[kind]} IF EXISTS {schema}.{quoted}")
    except Exception as exc:  # a copy that cannot be read is the checks' to report
        return f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
    return ""


def _copy(task: Task, dst: Path) -> Any:
    """A connection to a fresh copy: SQLite into memory (:func:`_sqlite_copy`); DuckDB by
    copying the file (and its WAL)."""
    engine = task_engine(task.engine)
    if engine.server_copies:
        from .pgcopies import connect

        assert task.copies is not None
        return connect(task.copies[0 if dst.name == "gold" else 1])
    if engine.in_memory_copy:
        return _sqlite_copy(task.path)
    import duckdb

    target = dst.with_suffix(".duckdb")
    shutil.copyfile(task.path, target)
    wal = Path(str(task.path) + ".wal")
    if wal.exists():
        shutil.copyfile(wal, Path(str(target) + ".wal"))
    conn = duckdb.connect(str(target), config={"enable_external_access": False})
    # no SET can lift it, nor turn on what writes files (CALL enable_logging(storage='file')
    # even aborted the worker): as on the read path (sources/duckdb.py)
    conn.execute("SET lock_configuration = true")
    return conn


def _pg_predicted(conn: Connection, task: Task, last: list[Any] | None) -> str:
    """The prediction on its PostgreSQL copy, confined (:func:`.pgcopies.run_confined`)."""
    from .pgcopies import run_confined

    return run_confined(cast("PgConnection", conn), task.predicted, _execute, last)


#: A source's image is kept (per worker) up to this size; a larger one is copied by the backup
#: API for each copy, so the worker never holds a third copy of a big database.
MAX_IMAGE_BYTES = 64 << 20
#: The most images kept at once (the least recently used is dropped first).
MAX_IMAGES = 4
#: path -> (the file's signature when it was read, its image): see :func:`_sqlite_copy`.
_IMAGES: dict[str, tuple[tuple[Any, ...], bytes]] = {}


def _sqlite_copy(path: Path) -> sqlite3.Connection:
    """A fresh in-memory database holding the file's content, on a connection of its own.

    Why an image: two backup-API copies, page by page, cost a Chinook case (1 MB) about 1.5 ms
    of the worker's CPU; the file's image, read once per worker through a read-only connection
    (``serialize()``: a consistent read, even of a file in use or in WAL mode) and copied into
    each new in-memory database by ``deserialize()``, about 0.4 ms for both copies
    (``bench/bench_tasks.py --sqlite-only``, the issue's target is 1 ms). It is read again when
    the file's signature (:func:`_signature`: its and its WAL's stat, the database header and
    the WAL header) changed since, so a source written by someone else during the session is
    never copied stale. The source is never written; each copy is a new connection, closed
    with its case, so nothing of one case's copy reaches the next (its image is immutable
    bytes)."""
    from .confine import TaskConnection, confine

    conn = sqlite3.connect(":memory:", isolation_level=None, factory=TaskConnection)
    try:
        image = _image(path)
        if image is None:  # too large to keep: page by page from the file
            src = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                src.backup(conn)
            finally:
                src.close()
        else:
            conn.deserialize(image)
        conn.execute("PRAGMA foreign_keys = ON")
        confine(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _image(path: Path) -> bytes | None:
    """The file's content as one SQLite image (rollback-journal header: an in-memory database
    cannot be in WAL mode), or None when it is larger than :data:`MAX_IMAGE_BYTES`."""
    key = str(path)
    signature = _signature(path)
    kept = _IMAGES.pop(key, None)
    if kept is not None and kept[0] == signature:
        _IMAGES[key] = kept  # most recently used last
        return kept[1]
    if signature[0][1] > MAX_IMAGE_BYTES:  # the file's size (its WAL adds to the image)
        return None
    src = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        data = bytearray(src.serialize())
    finally:
        src.close()
    if len(data) > MAX_IMAGE_BYTES:
        return None
    if len(data) >= 20 and data[18] == data[19] == 2:  # WAL mode: a legacy header instead
        data[18] = data[19] = 1
    image = bytes(data)
    _IMAGES[key] = (signature, image)
    while len(_IMAGES) > MAX_IMAGES:
        del _IMAGES[next(iter(_IMAGES))]
    return image


def _signature(path: Path) -> tuple[Any, ...]:
    """What changes when the database's content may have: the file's and its WAL's identity,
    size and times (nanoseconds), the database header (its change counter: a commit in
    rollback mode) and the WAL header (its salts: a WAL restarted after a checkpoint)."""

    def stat(p: str) -> tuple[int, ...] | None:
        try:
            st = os.stat(p)
        except FileNotFoundError:
            return None
        return st.st_dev, st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns

    def head(p: str, n: int) -> bytes:
        try:
            with open(p, "rb") as fh:
                return fh.read(n)
        except FileNotFoundError:
            return b""

    main = stat(str(path))
    if main is None:
        raise sqlite3.OperationalError(f"unable to open database file: {path}")
    wal = str(path) + "-wal"
    return main, stat(wal), head(str(path), 100), head(wal, 32)


def _execute(conn: Connection, statements: Sequence[str], keep: list[Any] | None = None) -> str:
    """Run ``statements`` in order; the first error's message, or ''. With ``keep``, the rows
    of the last statement (None if it returns none) are kept in ``keep[0]``."""
    for sql in statements:
        try:
            if isinstance(conn, sqlite3.Connection):
                conn.executescript(sql)
            else:
                cur = conn.execute(sql)
                if keep is not None:
                    keep[0] = _some_rows(cur)
        except Exception as exc:
            return _refusal(conn, exc, sql) or \
                f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
    return ""


def _refusal(conn: Connection, exc: BaseException, sql: str) -> str:
    """``"refused: ..."`` when the engine refused a statement that would reach past the copy:
    SQLite's authorizer (:mod:`.confine`), DuckDB's ``enable_external_access = false`` and
    ``lock_configuration``."""
    if isinstance(conn, sqlite3.Connection):
        from .confine import refusal

        return refusal(conn, exc, sql)
    if not type(exc).__module__.lstrip("_").startswith("duckdb"):
        return ""
    text = ' '.join(str(exc).split())[:300]
    if type(exc).__name__ == "PermissionException":
        return f"refused: {text} (a task's copy has no access to files outside it)"
    if "the configuration has been locked" in text:
        return f"refused: {text} (a task's copy keeps the configuration it was opened with)"
    return ""


def _some_rows(cur: Cursor) -> Any:
    """The first rows of a statement's result (as LiveSQLBench keeps them), None without one."""
    from .livesqlbench import MAX_ROWS

    while True:  # a text of several statements: the last one's result (psycopg: one set each)
        rows = None if getattr(cur, "description", None) is None else \
            [tuple(r) for r in cur.fetchmany(MAX_ROWS)]
        nextset = getattr(cur, "nextset", None)
        if nextset is None or not nextset():
            return rows


def _rows(conn: Connection, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The column names and rows, DECIMAL values as floats (DuckDB and PostgreSQL return
    Decimal, which never equals the float a YAML ``rows:`` holds)."""
    from decimal import Decimal

    cur = conn.execute(sql)
    columns = [str(d[0]) for d in cur.description or ()]
    return columns, [tuple(float(v) if isinstance(v, Decimal) else v for v in r)
                     for r in cur.fetchall()]


def _check(check: Check, conn: Connection, gold_conn: Connection, task: Task, audit: bool = False,
           last_rows: object = None) -> CheckResult:
    if check.livesqlbench_test is not None:
        return _livesqlbench_check(check.livesqlbench_test, conn, task, audit, last_rows)
    if check.python:
        try:
            return _python_check(check.python, conn, task)
        except Exception as exc:
            return CheckResult(False, f"{check.describe()} raised {type(exc).__name__}: "
                                      f"{' '.join(str(exc).split())[:300]}", broken=True)
    try:
        if check.tables is not None or check.indexes is not None:
            return _schema_check(check, conn)
        assert check.query is not None
        columns, got = _rows(conn, check.query)
        want = _rows(gold_conn, check.query)[1] if check.compare == "gold" else \
            [tuple(r) for r in check.rows or ()]
    except Exception as exc:
        return CheckResult(False, f"{check.describe()}: " + (
            _refusal(conn, exc, check.query or "")
            or _refusal(gold_conn, exc, check.query or "")
            or f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"))
    same = got == want if check.order else Counter(got) == Counter(want)
    if same:
        return CheckResult(True)
    return _rows_differ(check, columns, want, got)


def _rows_differ(check: Check, columns: list[str], want: list[tuple[Any, ...]],
                 got: list[tuple[Any, ...]]) -> CheckResult:
    """A failed row check as a SELECT case's failure reads: a one-line summary (the counts of
    missing and extra rows) and the diff of :func:`..metrics.table.compare_tables` (the rows
    that differ, not the first rows of each side, which are often the same); sides of at most
    :data:`SMALL` rows are shown whole in the one line."""
    from ..metrics.table import compare_tables
    from ..results import ResultTable

    if max(len(want), len(got)) <= SMALL:  # the whole of both sides says it best
        return CheckResult(False, f"{check.describe()}: expected {_show(want)}, got {_show(got)}")
    gold = check.compare == "gold"
    missing = sum((Counter(want) - Counter(got)).values())
    extra = sum((Counter(got) - Counter(want)).values())
    if missing or extra:
        summary = ", ".join(f"{n} rows {what}" for n, what in (
            (missing, "missing (in the gold's copy, not the prediction's)" if gold
             else "missing (expected, not in the prediction's copy)"),
            (extra, "extra (in the prediction's copy, not the gold's)" if gold
             else "extra (in the prediction's copy, not expected)")) if n)
    else:
        summary = "the same rows in another order"
    where = "in the gold's copy" if gold else "expected"
    summary += f"; {len(want)} rows {where}, " \
               f"{len(got)} in the prediction's copy"
    diff = compare_tables(ResultTable(columns, want), ResultTable(columns, got),
                          order_matters=check.order).diff()
    if not diff:  # equal up to a permutation of the columns, which a check does not allow
        from ..results import show_row

        diff = [f"rows: {'gold' if gold else 'expected'} {len(want)}, predicted {len(got)}"]
        diff += [f"  - {show_row(r)}" for r in list((Counter(want) - Counter(got)).elements())[:5]]
        diff += [f"  + {show_row(r)}" for r in list((Counter(got) - Counter(want)).elements())[:5]]
    return CheckResult(False, f"{check.describe()}: {summary}", diff=diff)


#: Row checks whose sides hold at most this many rows show both whole, in the reason.
SMALL = 5


def _show(rows: list[tuple[Any, ...]]) -> str:
    return f"{len(rows)} rows [{', '.join(repr(r) for r in rows)}]"


def _schema_check(check: Check, conn: Connection) -> CheckResult:
    problems: list[str] = []
    for table, columns in check.tables or ():
        have = _columns(conn, table)
        if not have:
            problems.append(f"no table {table}")
            continue
        missing = [c for c in columns if c.lower() not in have]
        if missing:
            problems.append(f"{table} lacks {', '.join(missing)}")
    indexes = _indexes(conn)
    problems += [f"no index {i}" for i in check.indexes or () if i.lower() not in indexes]
    return CheckResult(not problems, "schema: " + "; ".join(problems) if problems else "")


def _columns(conn: Connection, table: str) -> set[str]:
    if isinstance(conn, sqlite3.Connection):
        rows = conn.execute("SELECT name FROM pragma_table_info(?)", (table,)).fetchall()
    elif _is_postgres(conn):
        rows = conn.execute("SELECT column_name FROM information_schema.columns WHERE "
                            "lower(table_name) = lower(%s) AND table_schema = ANY "
                            "(current_schemas(false))", (table,)).fetchall()
    else:
        rows = conn.execute("SELECT column_name FROM duckdb_columns() WHERE table_name = ?",
                            [table]).fetchall()
    return {str(r[0]).lower() for r in rows}


def _indexes(conn: Connection) -> set[str]:
    if isinstance(conn, sqlite3.Connection):
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'").fetchall()
    elif _is_postgres(conn):
        rows = conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = ANY "
                            "(current_schemas(false))").fetchall()
    else:
        rows = conn.execute("SELECT index_name FROM duckdb_indexes()").fetchall()
    return {str(r[0]).lower() for r in rows}


def _is_postgres(conn: Connection) -> bool:
    return type(conn).__module__.startswith("psycopg")


def _python_check(target: str, conn: Connection, task: Task) -> CheckResult:
    import sys

    module, _, name = target.partition(":")
    missing = [p for p in task.search_path if p not in sys.path]
    sys.path[:0] = missing
    try:
        fn = getattr(importlib.import_module(module), name)
    finally:
        for p in missing:
            sys.path.remove(p)
    try:
        ok = fn(conn, list(task.predicted), list(task.gold))
    except AssertionError as exc:
        return CheckResult(False, f"python {target}: {exc or 'assertion failed'}")
    if ok is None or ok:
        return CheckResult(True)
    return CheckResult(False, f"python {target}: returned {ok!r}")


def _livesqlbench_check(source: str, conn: Connection, task: Task, audit: bool,
                        last_rows: object) -> CheckResult:
    """A LiveSQLBench test case on the judged copy; in the gold audit the gold stands in for
    the prediction (``pred_sqls``), as the reference's ``DEBUG_SOL_SQLS`` mode does."""
    from .livesqlbench import BrokenTest, run_test_case

    predicted = list(task.gold if audit else task.predicted)
    name = _database_name(conn)
    try:
        why = run_test_case(source, cast("CursorConnection", conn), predicted, list(task.gold),
                            name, last_rows)
    except BrokenTest as exc:
        return CheckResult(False, f"livesqlbench test case: {exc}", broken=True)
    return CheckResult(not why, f"livesqlbench test case: {why}" if why else "")


def _database_name(conn: Connection) -> str:
    """The copy's database name (the reference passes its ephemeral database's)."""
    info = getattr(conn, "info", None)
    return str(getattr(info, "dbname", "") or "") if info is not None else ""
