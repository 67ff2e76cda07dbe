"""A ``task: dml`` / ``task: ddl`` SQL case: its keys read into a :class:`Task`, and scored.

Why the datasource must say ``writable: sandbox``: a task executes the prediction's writes, so
the suite author states once, on the datasource, that its file may serve as the template of
throwaway copies; every other case keeps the read-only guard, and a task case on a datasource
without that mark is an error found when the suite is collected, before any case runs. The
real file is only ever read (an SQLite image read through a read-only connection, a file copy
for DuckDB).

Case keys (LiveSQLBench's Management tasks and EvalBench's dml/ddl cases map onto them
one-to-one): ``setup`` and ``cleanup`` (a statement or a list), ``gold`` (a statement or a list
run in order), ``checks`` (a list; each a query with ``rows``, a query with ``compare: gold``, a
``schema`` expectation, a ``python`` check or a ``livesqlbench_test``, the source of an imported
LiveSQLBench test case), ``conditions`` (``order: true`` makes row
checks ordered, as LiveSQLBench's ``conditions`` do) and ``collateral`` (``false``, or
``{ignore: [tables]}``: the check after the checks that the prediction changed nothing the gold
did not, :mod:`.collateral`; also a file or suite default, so any SQL case accepts it).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._util.wording import plural
from ..errors import ConfigError, GoldError, QueryEvalError, SourceUnavailable
from ..model import Case, Scored
from .engines import TASK_ENGINES, server_copies
from .run import Check, Task, TaskOutcome, run_task

TASKS = ("dml", "ddl")
#: The value of a datasource's ``writable`` key that allows tasks on it.
WRITABLE = "sandbox"
_CHECK_KINDS = ("rows", "compare", "schema", "python", "livesqlbench_test")
#: Metrics a task case records.
TASK_METRICS = ("execution_accuracy", "checks_passed", "copy_seconds")


def is_task(case: Case) -> bool:
    return case.options.get("task") is not None


def validate(case: Case) -> list[tuple[str, str]]:
    """``(key path, message)`` for each problem of a task case (none when valid)."""
    o = case.options
    problems: list[tuple[str, str]] = []
    if o.get("task") not in TASKS:
        return [("task", f"must be one of {', '.join(TASKS)}, not {o.get('task')!r}")]
    spec = case.source_spec
    if spec is None:
        problems.append(("datasource", f"task: {o['task']} needs a datasource marked "
                                       f"'writable: {WRITABLE}'"))
    elif spec.get("writable") != WRITABLE:
        problems.append(("datasource", f"task: {o['task']} writes: datasource "
                                       f"{case.datasource!r} is read-only; mark it "
                                       f"'writable: {WRITABLE}' in queryeval.yaml to score "
                                       "writes on throwaway copies of it"))
    elif engine_of(spec) is None:
        problems.append(("datasource", f"task: {o['task']} runs on sqlite, duckdb or "
                                       "PostgreSQL (sqlalchemy) datasources, not "
                                       f"{spec.get('type')!r}"))
    for key in ("setup", "cleanup"):
        if key in o:
            try:
                statements(o[key], key)
            except ConfigError as exc:
                problems.append((exc.key or key, exc.message))
    problems += collateral_problems(case)
    try:
        checks = parse_checks(o.get("checks"), o.get("conditions"))
    except ConfigError as exc:
        problems.append((exc.key or "checks", exc.message))
    else:
        if not checks:
            problems.append(("checks", f"a task: {o['task']} case needs at least one check "
                                       "(without one, any prediction that executes would "
                                       "pass)"))
    return problems


def collateral_problems(case: Case) -> list[tuple[str, str]]:
    """``(key path, message)`` for a malformed ``collateral:`` (any SQL case: a file's or the
    suite's ``defaults:`` reach read-only cases too, where it means nothing)."""
    try:
        collateral_of(case)
    except ConfigError as exc:
        return [(exc.key or "collateral", exc.message)]
    return []


def collateral_of(case: Case) -> Any:
    """The case's :class:`.collateral.Collateral`, or None when it is off: ``collateral:
    false``, or by default a case checked by LiveSQLBench test cases (the reference judges
    only by them); ConfigError names the key."""
    from .collateral import Collateral

    value = case.options.get("collateral")
    if value is None:
        checks = case.options.get("checks")
        imported = isinstance(checks, list) and any(
            isinstance(c, dict) and "livesqlbench_test" in c for c in checks)
        return None if imported else Collateral(schema=case.options.get("task") == "ddl")
    if value is False:
        return None
    if value is True:
        value = {}
    if not isinstance(value, dict):
        raise ConfigError("must be true, false or {ignore: [tables]}", key="collateral")
    unknown = sorted(set(map(str, value)) - {"ignore"})
    if unknown:
        from .._util.wording import suggest

        raise ConfigError(f"unknown key{suggest(unknown[0], {'ignore'})}",
                          key=f"collateral.{unknown[0]}")
    ignore = value.get("ignore", [])
    if not isinstance(ignore, list):
        raise ConfigError("must be a list of table names", key="collateral.ignore")
    for i, name in enumerate(ignore):
        if not isinstance(name, str) or not name.strip():
            raise ConfigError("must be a table name", key=f"collateral.ignore[{i}]")
    return Collateral(ignore=tuple(ignore), schema=case.options.get("task") == "ddl")


def engine_of(spec: Mapping[str, Any]) -> str | None:
    from ..sources import source_type  # the dialects tasks run on, per type
    from ..sources.dialects import dialect_of

    dialect = dialect_of(spec)
    # the type says which of its dialects take tasks; the engine table, what each needs
    return dialect if dialect in source_type(spec.get("type")).tasks \
        and dialect in TASK_ENGINES else None


def statements(value: object, key: str) -> tuple[str, ...]:
    """A statement or a list of them; ConfigError names the key."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise ConfigError("must be an SQL statement or a list of them", key=key)
    for i, item in enumerate(items):
        if not isinstance(item, str) or not item.strip():
            raise ConfigError("must be an SQL statement", key=f"{key}[{i}]")
    return tuple(items)


def parse_checks(value: object, conditions: object = None) -> tuple[Check, ...]:
    """``checks:`` as :class:`Check` objects; ConfigError names the check and key."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ConfigError("must be a list of checks", key="checks")
    ordered = bool(conditions.get("order", False)) if isinstance(conditions, dict) else False
    return tuple(_check(item, f"checks[{i}]", ordered) for i, item in enumerate(value))


def _check(item: object, where: str, ordered: bool) -> Check:
    if not isinstance(item, dict):
        raise ConfigError("must be a mapping: {query, rows}, {query, compare: gold}, "
                          "{schema}, {python} or {livesqlbench_test}", key=where)
    allowed = {"query", "rows", "compare", "order", "schema", "python", "livesqlbench_test"}
    unknown = sorted(set(map(str, item)) - allowed)
    if unknown:
        from .._util.wording import suggest

        raise ConfigError(f"unknown key{suggest(unknown[0], allowed)}", key=f"{where}.{unknown[0]}")
    kinds = [k for k in _CHECK_KINDS if k in item]
    if len(kinds) != 1:
        raise ConfigError("needs exactly one of rows, compare, schema or python, not "
                          f"{', '.join(kinds) or 'none'}", key=where)
    order = item.get("order", ordered)
    if not isinstance(order, bool):
        raise ConfigError("must be true or false", key=f"{where}.order")
    kind = kinds[0]
    if kind == "livesqlbench_test":
        source = item["livesqlbench_test"]
        if not isinstance(source, str) or not source.strip():
            raise ConfigError("must be the Python source of a LiveSQLBench test case (def "
                              "test_case(pred_sqls, sol_sqls, db_name, conn): ...)",
                              key=f"{where}.livesqlbench_test")
        return Check(livesqlbench_test=source)
    if kind == "python":
        target = item["python"]
        if not isinstance(target, str) or target.count(":") != 1 or not all(
                part.strip() for part in target.split(":")):
            raise ConfigError("must be 'module:function' (called as function(conn, predicted, "
                              "gold))", key=f"{where}.python")
        return Check(python=target)
    if kind == "schema":
        return _schema(item["schema"], f"{where}.schema")
    query = item.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ConfigError("must be the verification query", key=f"{where}.query")
    if kind == "compare":
        if item["compare"] != "gold":
            raise ConfigError("must be 'gold' (the query's result after the gold)",
                              key=f"{where}.compare")
        return Check(query=query, compare="gold", order=order)
    rows = item["rows"]
    if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
        raise ConfigError("must be a list of rows, each a list of values", key=f"{where}.rows")
    return Check(query=query, rows=tuple(tuple(r) for r in rows), order=order)


def _schema(spec: object, where: str) -> Check:
    if not isinstance(spec, dict) or not spec or set(map(str, spec)) - {"tables", "indexes"}:
        raise ConfigError("must be a mapping with tables ({table: [columns]}) and/or indexes "
                          "([names])", key=where)
    tables = spec.get("tables")
    if tables is not None and not (isinstance(tables, dict) and all(
            isinstance(cols, list) and all(isinstance(c, str) for c in cols)
            for cols in tables.values())):
        raise ConfigError("must map each table to a list of column names", key=f"{where}.tables")
    indexes = spec.get("indexes")
    if indexes is not None and not (isinstance(indexes, list)
                                    and all(isinstance(i, str) for i in indexes)):
        raise ConfigError("must be a list of index names", key=f"{where}.indexes")
    return Check(tables=None if tables is None else tuple(
                     (str(t), tuple(cols)) for t, cols in tables.items()),
                 indexes=None if indexes is None else tuple(indexes))


def build(case: Case, gold: object, predicted: tuple[str, ...]) -> Task:
    """The :class:`Task` of a validated case (``gold``: its statements for this engine)."""
    spec = case.source_spec or {}
    o = case.options
    engine = engine_of(spec)
    assert engine is not None
    where = Path(str(spec["path"])) if "path" in spec else Path()
    return Task(engine, where, gold=statements(gold, "gold"),
                predicted=predicted,
                checks=parse_checks(o.get("checks"), o.get("conditions")),
                setup=statements(o["setup"], "setup") if "setup" in o else (),
                cleanup=statements(o["cleanup"], "cleanup") if "cleanup" in o else (),
                search_path=(str(case.file.parent),), collateral=collateral_of(case))


def limits_of(case: Case) -> tuple[float, int]:
    """The task's deadline (the case's ``timeout``, else the datasource's, else 30 s: it bounds
    the whole task, Python checks included) and memory cap."""
    from .run import DEFAULT_MAX_MEMORY

    spec = case.source_spec or {}
    timeout = case.options.get("timeout", spec.get("timeout", 30))
    memory = spec.get("max_memory", DEFAULT_MAX_MEMORY)
    return float(timeout), int(memory)


def score(task: Task, case: Case, *, audit: bool = False) -> tuple[Scored, TaskOutcome | None]:
    """The task run in its worker, as a :class:`Scored`: ``execution_accuracy`` 1 when every
    check passes, ``checks_passed`` the share of checks that pass, ``copy_seconds`` what the two
    copies cost. A problem of the suite (setup, gold, cleanup, a broken check) raises
    :class:`GoldError`: the case is an error, never a pass or a model failure."""
    ran = _run_confined(task, case, audit)
    if isinstance(ran, Scored):
        return ran, None
    task, outcome = ran
    if outcome.error:
        raise GoldError(outcome.error)
    details: dict[str, Any] = {
        "task": case.options.get("task"), "copy_seconds": outcome.copy_seconds,
        "checks": [{"check": c.describe(), "passed": r.passed, **({"reason": r.reason}
                                                                   if r.reason else {})}
                   for c, r in zip(task.checks, outcome.checks, strict=False)]}
    if outcome.collateral is not None:
        details["collateral"] = {"passed": outcome.collateral.passed, **(
            {"reason": outcome.collateral.reason} if outcome.collateral.reason else {})}
    if outcome.predicted_error:
        scored = _failed(outcome.predicted_error, details)
        scored.metrics["copy_seconds"] = outcome.copy_seconds
        return scored, outcome
    return _checks_scored(outcome, details), outcome


def _run_confined(task: Task, case: Case, audit: bool) -> tuple[Task, TaskOutcome] | Scored:
    """The task run (on fresh copies from the pool on a server, dropped after; a prediction
    the confinement refuses never reaches the server): the task as run and its outcome, or
    the failure of a refused prediction, a timeout, the memory cap or a crashed worker."""
    timeout, memory = limits_of(case)
    copies: list[str] = []
    waited = 0.0
    if server_copies(task.engine) and not audit:
        from ..errors import QueryRefused
        from .pgconfine import check_task_statements

        try:  # before any copy is made: a refused prediction never reaches the server
            check_task_statements(task.predicted)
        except QueryRefused as exc:
            return _failed(exc.reason(), {"task": case.options.get("task")})
    try:
        if server_copies(task.engine):
            task, copies, waited = _with_copies(task, str((case.source_spec or {})["url"]))
        outcome = run_task(task, timeout=timeout, max_memory=memory, audit=audit)
    except SourceUnavailable:
        raise
    except QueryEvalError as exc:  # a timeout, the memory cap, a crashed worker
        return _failed(exc.reason(), {})
    finally:
        if copies:
            from .pgcopies import pool_for

            pool = pool_for(str((case.source_spec or {})["url"]))
            for name in copies:
                pool.drop(name)
    outcome.copy_seconds += waited
    return task, outcome


def _checks_scored(outcome: TaskOutcome, details: dict[str, Any]) -> Scored:
    """The metrics of a prediction that ran, and the failing checks (then a collateral
    change) as its reason and diff lines."""
    passed = sum(r.passed for r in outcome.checks)
    metrics = {"execution_accuracy": 1.0 if outcome.passed else 0.0,
               "checks_passed": passed / len(outcome.checks),
               "copy_seconds": outcome.copy_seconds}
    failing = [r for r in outcome.checks if not r.passed]
    collateral = outcome.collateral if outcome.collateral and not outcome.collateral.passed \
        else None
    reason = None
    if failing:
        reason = (f"{len(failing)} of {plural(len(outcome.checks), 'check')} failed: "
                  f"{failing[0].reason}")
    elif collateral is not None:
        reason = collateral.reason
    # each failure's one line is said once: the first in the reason, the others here, each
    # followed by the rows that differ
    diff: list[str] = []
    for i, r in enumerate([*failing, *([collateral] if collateral else [])]):
        if i:
            diff.append(f"check failed: {r.reason}" if r is not collateral else r.reason)
        diff += r.diff
    return Scored(metrics, {}, diff, details, reason=reason)


def _with_copies(task: Task, url: str) -> tuple[Task, list[str], float]:
    """The task pointed at two fresh copies from the datasource's pool, their names (to drop)
    and the seconds waited for them. A server that refuses is SourceUnavailable."""
    from dataclasses import replace

    from .pgcopies import conninfo, pool_for

    names: list[str] = []
    waited = 0.0
    try:
        pool = pool_for(url)
        for _ in range(2):
            name, seconds = pool.take()
            names.append(name)
            waited += seconds
    except Exception as exc:
        if names:
            for name in names:
                pool.drop(name)
        hint = ""
        if type(exc).__name__ == "ObjectInUse":  # CREATE DATABASE ... TEMPLATE needs it idle
            hint = ("; copies are made with CREATE DATABASE ... TEMPLATE, which needs a "
                    "database no other session is connected to (this run's read-only cases "
                    "included): point the writable: sandbox datasource at a database of its own "
                    "(made once: CREATE DATABASE mydb_tasks TEMPLATE mydb)")
        raise SourceUnavailable(f"cannot make a copy of the PostgreSQL datasource: "
                                f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
                                f"{hint}") from None
    return (replace(task, copies=(conninfo(url, names[0]), conninfo(url, names[1]))),
            names, waited)


def _failed(reason: str, details: dict[str, Any]) -> Scored:
    return Scored({"execution_accuracy": 0.0, "checks_passed": 0.0}, {}, [], details,
                  reason=reason)


def writable_role_problems(cases: list[Case]) -> list[str]:
    """A usage problem (located at the datasource in ``queryeval.yaml``) for each PostgreSQL
    ``writable: sandbox`` datasource of ``cases``' tasks whose role is more than LOGIN
    CREATEDB (a superuser, a member of the server-file roles, ...), unless the datasource says
    ``allow_privileged: true``: found before any case runs, as the read-only datasources'
    roles are refused. A server that cannot be reached is left to the cases (each reports
    it)."""
    from ..sources import locate_datasource

    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for case in cases:
        spec = case.source_spec
        if not is_task(case) or spec is None or spec.get("writable") != WRITABLE \
                or not server_copies(engine_of(spec)) or spec.get("allow_privileged") is True:
            continue
        seen.setdefault((str(case.datasource), str(spec.get("url"))), spec)
    problems: list[str] = []
    for (name, url), spec in seen.items():
        from .pgcopies import role_problems

        try:
            role, found = role_problems(url)
        except Exception:  # unreachable, refused login: each case reports it when it runs
            continue
        if not found:
            continue
        message = (f"the role {role!r} {'; '.join(found)}: a writable: sandbox datasource "
                   "runs task predictions as its role, which must be LOGIN CREATEDB and own "
                   "only the task database (the tasks guide, 'A role for PostgreSQL tasks'), "
                   "or set allow_privileged: true on the datasource")
        exc = locate_datasource(ConfigError(message, key=f"datasources.{name}.url"), name, spec)
        problems.append(exc.located() if exc.file is not None else
                        f"datasources.{name}.url: {message}")
    return problems
