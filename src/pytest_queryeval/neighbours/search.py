"""Search small databases of the real schema for one on which gold and prediction differ.

Why small databases: a counterexample is only useful when a person can read it, and the
test-suite method found that small random databases with the queries' values separate
non-equivalent queries best. Each candidate has at most a handful of rows per table, only in the
tables the queries read (and the tables those reference), drawn from :mod:`.values`' pools;
where a query compares a count (``HAVING COUNT(*) >= 15``), half the candidates size tables to
it, up to :data:`GROUP_ROWS_MAX` rows, since only a group of exactly that size tells ``>=``
from ``>`` (:func:`group_sizes`).

Determinism: candidate ``i`` of a gold depends only on the seed, the gold text and the schema
(:func:`_rng`), so the same seed gives the same databases and the same verdicts, and the first
databases of a gold (built from the gold's own literals) are the same for every prediction of
that gold that reads the same tables and date columns: they are built once per session
(:data:`_SUITES`) and a model comparison pays for them once; a prediction that reads another
table gets a suite of its own, so what ran before it never changes its verdict.
Only later candidates add the prediction's literals. Every other candidate (the
even ones, starting with the first) draws only realistic values (:func:`.values.both_pools`:
dates in the column's format, existing codes, numbers in range), so a difference that
real-looking data shows is found on such data; the odd ones add the edge values. The database
budget is the
deterministic bound; the seconds budget is a safety net, and a search it stops says so.

Bounded per database: each query on a candidate has seconds of its own (:func:`query_seconds`),
so a prediction that loops, cross-joins or allocates without end on any database but the real
one cannot spend the whole budget on the first candidate and leave "nothing found". Where the
gold gives a result and the prediction does not (it runs out of its seconds, or the engine
raises), the candidate separates them like any other difference; where the gold gives none,
the candidate tells nothing and is not counted as checked (:attr:`SearchResult.gold_failures`).

Proof: a found database is shrunk (:mod:`.shrink`), its edge values replaced by realistic ones
where the difference survives (:func:`.shrink.realise`), written to a real SQLite file with the real
DDL and ``PRAGMA foreign_keys = ON``, checked with ``foreign_key_check`` and
``integrity_check``, and both queries are run on it again; only a difference that survives that
is reported.

Why one module of this size: one search is one loop over candidates whose steps (draw, compare,
shrink, prove) read the same draws from the real database, held on one ``_Search``; the value
pools, the shrink, the engines and the named files already live in their own modules.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..results import ResultTable
from .engines import C, Engine, Failed, Rows, engine_for
from .named import engine_inserts, engine_writer
from .schema import Column, DbSchema, Table
from .values import Pools, both_pools, date_columns, is_realistic, size_thresholds

#: How many rows a candidate's table may get (small tables: readable, quick, and separating).
ROW_CHOICES = (0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 8)
#: The most rows a candidate's table gets to reach a count the queries compare with
#: (``HAVING COUNT(*) >= 15`` needs a group of 15): a threshold above it is not reached, and
#: the search says so in its notes. Bounds a candidate's rows and its shrink.
GROUP_ROWS_MAX = 64
#: In a candidate sized to such a count, the share of rows that copy the table's first row
#: (all but its key), drawn per candidate: all of them make one group of exactly the size.
GROUP_COPY_SHARES = (1.0, 1.0, 0.9, 0.75)
#: Share of a value taken from the pool rather than made up.
POOL_SHARE = 0.85
#: Share of a value that repeats an earlier row's in the same column (ties, duplicates).
REPEAT_SHARE = 0.25
#: True when the two result tables count as the same answer (the case's own comparison).
Same = Callable[[ResultTable, ResultTable], bool]
#: The case's second chance for two results ``Same`` tells apart: true when they are the same
#: answer after all, given a way to run more SQL on the same database (the tie-aware rule runs
#: the gold's keyed query there).
Tied = Callable[[ResultTable, ResultTable, Callable[[str], ResultTable | None]], bool]
#: The most seconds one query gets on a candidate (half the budget below 20 s).
QUERY_SECONDS_MAX = 10.0
#: Seconds the shrink of a found database may take past the budget (at least; twice a query's
#: own seconds when that is more). A prediction that ran out of its seconds is shrunk for two
#: of its queries' seconds from when it was found instead: each attempt that still separates
#: costs a whole query's seconds.
SHRINK_SECONDS = 5.0


@dataclass(frozen=True)
class Budget:
    """How hard one case is searched (documented in docs/neighbours.md)."""

    databases: int = 200
    seconds: float = 10.0


def query_seconds(budget: Budget) -> float:
    """One query's own seconds on a candidate: half the seconds budget, at least 1 s and at
    most :data:`QUERY_SECONDS_MAX` (the whole budget when it is shorter than 1 s). A few rows
    take milliseconds, so an honest query never meets it; a candidate started just before the
    budget ends still gets its full seconds (the sandbox's hard deadline allows for it)."""
    return min(budget.seconds, max(1.0, min(QUERY_SECONDS_MAX, budget.seconds / 2)))


@dataclass
class Counterexample:
    """A database of the real schema on which gold and prediction give different results."""

    schema: DbSchema
    rows: Rows
    gold: ResultTable
    #: The prediction's result, or why it gave none where the gold did (itself a difference).
    predicted: ResultTable | Failed
    #: Which candidate it came from (``database 17 of the gold's suite``).
    origin: str
    engine: str = "sqlite"

    @property
    def row_count(self) -> int:
        return sum(len(r) for r in self.rows.values())

    def to_sql(self) -> str:
        """The database as SQL: the real DDL, then one INSERT per row."""
        lines = [ddl.rstrip(";") + ";" for ddl in self.schema.ddl()]
        return "\n".join(lines + engine_inserts(self.engine, self.schema, self.rows)) + "\n"

    def write(self, path: Path) -> None:
        """Write the database as a file of its engine (replacing ``path``)."""
        engine_writer(self.engine).write(self.schema, self.rows, path)


@dataclass
class SearchResult:
    #: Candidate databases on which both queries were run.
    checked: int
    seconds: float
    counterexample: Counterexample | None = None
    #: Why the search stopped without using its whole database budget (``time budget ...``).
    stopped: str = ""
    #: Candidates of the gold's suite that were built earlier in the session and reused.
    reused: int = 0
    #: Candidates on which the gold itself gave no result (not checked), and the first reason.
    gold_failures: int = 0
    gold_failure: str = ""
    notes: list[str] = field(default_factory=list)


def _rng(seed: int, gold: str, index: int, phase: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}\0{phase}\0{index}\0{gold}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


#: (scope, schema, sampled values, tables filled and date columns, gold, seed) -> the gold's
#: suite of candidate databases built so far; a changed database or another session's scope
#: starts a suite of its own.
_SUITES: dict[tuple[str, str, str, int], list[Rows]] = {}


def search(db_path: Path, gold: str, predicted: str, same: Same, *, seed: int = 0,
           budget: Budget = Budget(), engine: Engine[Any] | None = None,
           tied: Tied | None = None, scope: str = "") -> SearchResult:
    """Look for a database on which ``gold`` and ``predicted`` differ under ``same`` (and
    ``tied``, when given: ties at the gold's ORDER BY are no difference); ``engine``: SQLite or
    DuckDB, from the file when not given."""
    start = time.monotonic()
    deadline = start + budget.seconds
    eng = engine or engine_for(db_path)
    draws = _read_draws(eng, db_path, gold, predicted)
    run = _Search(eng, draws, gold, predicted, same, tied, seed, query_seconds(budget))
    suite = run.gold_suite(scope)
    result = run.result
    if draws.too_big:
        result.notes.append(
            f"a count of {draws.too_big} compared with is beyond the {GROUP_ROWS_MAX} rows a "
            f"candidate's table gets: a difference only a group that large shows is not looked for")
    gold_share = (budget.databases * 3) // 4
    for i in range(budget.databases):
        if time.monotonic() > deadline:
            result.stopped = f"time budget of {budget.seconds:g} s spent"
            break
        rows, origin = run.database(i, gold_share, suite)
        outcome = _differs(eng, draws.schema, rows, gold, predicted, same, run.seconds, tied)
        if isinstance(outcome, Failed):
            result.gold_failures += 1
            result.gold_failure = result.gold_failure or outcome.describe()
            continue
        result.checked += 1
        if outcome[0]:
            result.counterexample = run.proven(outcome[1], outcome[2], origin, deadline)
            if result.counterexample is not None:
                break
            result.notes.append(f"{origin}: the difference did not survive the proof")
    result.seconds = time.monotonic() - start
    return result


@dataclass(frozen=True)
class _Draws:
    """What one search's candidates are drawn from, read once: the real schema, the tables the
    queries read (parents first), the date columns, the sampled values (the gold's alone, and
    with the prediction's literals; all and only the realistic ones) and the table sizes the
    queries' counts ask for."""

    schema: DbSchema
    tables: list[Table]
    dated: frozenset[tuple[str, str]]
    gold_pools: Pools
    gold_real: Pools
    pair_pools: Pools
    pair_real: Pools
    gold_sizes: tuple[int, ...]
    pair_sizes: tuple[int, ...]
    #: The largest count compared with beyond :data:`GROUP_ROWS_MAX` (0 when none is).
    too_big: int


def _read_draws(eng: Engine[Any], db_path: Path, gold: str, predicted: str) -> _Draws:
    """The schema and values sampled from the real database (open only for that), and what
    the queries' texts say about the tables to fill."""
    real = eng.open_real(db_path)
    try:
        schema = eng.introspect(real)

        def sample(table: str, column: str) -> list[Any]:
            return eng.sample(real, table, column)

        gold_pools, gold_real = both_pools(sample, schema, [gold], eng.dialect)
        pair_pools, pair_real = both_pools(sample, schema, [gold, predicted], eng.dialect)
    finally:
        real.close()
    tables = _read_tables(schema, [gold, predicted], eng.dialect)
    dated = date_columns(pair_pools)
    gold_sizes, _ = group_sizes([gold], eng.dialect)
    pair_sizes, too_big = group_sizes([gold, predicted], eng.dialect)
    return _Draws(schema, tables, dated, gold_pools, gold_real, pair_pools, pair_real,
                  gold_sizes, pair_sizes, too_big)


@dataclass
class _Search:
    """One search under way: what each step reads (the engine, the draws, both queries and
    the case's comparison), held once instead of passed to each step."""

    eng: Engine[Any]
    draws: _Draws
    gold: str
    predicted: str
    same: Same
    tied: Tied | None
    seed: int
    #: One query's own seconds on a candidate (:func:`query_seconds`).
    seconds: float
    result: SearchResult = field(default_factory=lambda: SearchResult(checked=0, seconds=0.0))

    def gold_suite(self, scope: str) -> list[Rows]:
        """The gold's suite of candidates built so far in the session (:data:`_SUITES`)."""
        draws = self.draws
        # the key holds all a gold's candidate is built from: with the tables it fills and the
        # date columns it makes up no value for (both also read off the prediction), a
        # candidate reused by another prediction of the gold is the one that prediction would
        # have built, whatever ran before it in the process (a shard, a resumed attempt, an
        # xdist worker)
        data = "\n".join(draws.schema.ddl()) + repr(sorted(draws.gold_pools.items(), key=repr)) \
            + repr([t.name for t in draws.tables]) + repr(sorted(draws.dated))
        key = (scope, hashlib.sha256(data.encode()).hexdigest(), self.gold, self.seed)
        return _SUITES.setdefault(key, [])

    def database(self, i: int, gold_share: int, suite: list[Rows]) -> tuple[Rows, str]:
        """Candidate ``i`` and where it comes from: the gold's suite (reused when built before,
        else built and kept), past ``gold_share`` one with the prediction's values too; the
        even ones realistic."""
        draws, gold = self.draws, self.gold
        if i < gold_share:
            if i < len(suite):
                rows = suite[i]
                self.result.reused += 1
            else:
                rows = _candidate(draws.schema, draws.tables,
                                  draws.gold_real if i % 2 == 0 else draws.gold_pools,
                                  _rng(self.seed, gold, i, "gold"), realistic=i % 2 == 0,
                                  dated=draws.dated, sizes=draws.gold_sizes)
                suite.append(rows)
            return rows, f"database {i + 1} of the gold's suite"
        rows = _candidate(draws.schema, draws.tables,
                          draws.pair_real if i % 2 == 0 else draws.pair_pools,
                          _rng(self.seed, gold + "\0" + self.predicted, i, "pair"),
                          realistic=i % 2 == 0, dated=draws.dated, sizes=draws.pair_sizes)
        return rows, f"database {i + 1} (with the prediction's values)"

    def proven(self, rows: Rows, failure: Failed | None, origin: str,
               deadline: float) -> Counterexample | None:
        """The candidate that separates the queries, shrunk and proven on a real file; None
        when the difference does not survive the proof."""
        eng, schema, seconds = self.eng, self.draws.schema, self.seconds
        until = time.monotonic() + 2 * seconds if failure and failure.kind == "timeout" \
            else max(deadline, time.monotonic()) + max(SHRINK_SECONDS, 2 * seconds)
        small = _shrunk(eng, schema, rows, self.gold, self.predicted, self.same, self.tied,
                        seconds, until, self.draws.pair_real)
        proof = prove(eng, schema, small, self.gold, self.predicted, self.same, self.tied, seconds)
        if proof is None:
            return None
        return Counterexample(schema, small, proof[0], proof[1], origin, eng.name)


def _read_tables(schema: DbSchema, queries: Sequence[str], dialect: str) -> list[Table]:
    """The tables the queries read, with every table they reference, parents first."""
    import sqlglot
    from sqlglot import exp

    names: set[str] = set()
    for sql in queries:
        try:
            names |= {t.name.lower() for t in sqlglot.parse_one(sql, read=dialect)
                      .find_all(exp.Table)}
        except Exception:
            continue
    wanted = {t.name for t in schema.tables if t.name.lower() in names}
    changed = True
    while changed:
        changed = False
        for t in schema.tables:
            if t.name in wanted:
                for col in t.columns:
                    if col.references and col.references[0] not in wanted and any(
                            x.name == col.references[0] for x in schema.tables):
                        wanted.add(col.references[0])
                        changed = True
    return [t for t in schema.tables if t.name in wanted]


def group_sizes(queries: Sequence[str], dialect: str) -> tuple[tuple[int, ...], int]:
    """Table sizes around the counts the queries compare with (:func:`.values.size_thresholds`:
    ``t - 1``, ``t`` and ``t + 1`` rows), up to :data:`GROUP_ROWS_MAX`; and the largest count
    beyond that cap (0 when none is)."""
    counts = sorted({t for sql in queries for t in size_thresholds(sql, dialect)})
    sizes = sorted({n for t in counts for n in (t - 1, t, t + 1) if 2 <= n <= GROUP_ROWS_MAX})
    beyond = [t for t in counts if t > GROUP_ROWS_MAX]
    return tuple(sizes), max(beyond, default=0)


def _candidate(schema: DbSchema, tables: list[Table], pools: dict[tuple[str, str], list[Any]],
               rng: random.Random, realistic: bool = False,
               dated: frozenset[tuple[str, str]] = frozenset(),
               sizes: Sequence[int] = ()) -> Rows:
    """One candidate's rows; parents first, so a reference picks an existing key (a
    self-reference, an earlier row's). A key column also draws from the values its referencing
    columns are compared with (``ReportsTo = 1`` needs employees 0, 1 and 2), and any column
    may repeat a value of an earlier row (ties, duplicate names). A ``realistic`` candidate
    (realistic pools) makes up no word, and numbers only within a column's range; a ``dated``
    column (dates only) never gets a made-up value. With ``sizes`` (:func:`group_sizes`), half
    the candidates give a table one of those sizes and make most of its rows copies of its
    first (all but the key): one group of exactly the count a ``HAVING`` compares with. Without
    them a candidate draws exactly what it drew before they existed."""
    rows: Rows = {}
    keys: dict[tuple[str, str], list[Any]] = {}
    grouped = bool(sizes) and rng.random() < 0.5
    copies = rng.choice(GROUP_COPY_SHARES) if grouped else 0.0
    for table in tables:
        out: list[tuple[Any, ...]] = []
        integer_key = table.integer_key
        count = rng.choice(sizes) if grouped and rng.random() < 0.7 else rng.choice(ROW_CHOICES)
        for n in range(count):
            if grouped and out and rng.random() < copies:
                out.append(_copy(table, out, n, keys))
                continue
            row: list[Any] = []
            for i, col in enumerate(table.columns):
                earlier = [r[i] for r in out]
                if col.references is not None:
                    parent = (col.references[0], col.references[1].lower())
                    found = keys.get(parent, [])
                    if parent[0] == table.name:
                        key_at = [c.name.lower() for c in table.columns].index(parent[1]) \
                            if parent[1] in [c.name.lower() for c in table.columns] else None
                        found = [r[key_at] for r in out if key_at is not None]
                    if not found or (not col.not_null and rng.random() < 0.15):
                        row.append(None)
                    else:
                        row.append(rng.choice(found))
                elif earlier and rng.random() < REPEAT_SHARE:
                    row.append(rng.choice(earlier))
                elif col is integer_key or col.primary_key:
                    pool = [v for v in _key_pool(schema, table, col, pools) if isinstance(v, int)]
                    row.append(rng.choice(pool) if pool and rng.random() < 0.7 else n + 1)
                else:
                    row.append(_value(rng, pools.get((table.name, col.name), []), col.affinity,
                                      realistic or (table.name, col.name) in dated))
            out.append(tuple(row))
        rows[table.name] = out
        for i, col in enumerate(table.columns):
            keys[(table.name, col.name.lower())] = [r[i] for r in out if r[i] is not None]
    return rows


def _copy(table: Table, out: list[tuple[Any, ...]], n: int,
          keys: dict[tuple[str, str], list[Any]]) -> tuple[Any, ...]:
    """The table's first row again with a key of its own: one more row in the first row's
    group. Of a composite key only the last column changes (``PlaylistTrack``: the same
    playlist, another track); a key column that references a parent takes a parent key the
    column does not hold yet, another one past the largest so far."""
    row = list(out[0])
    key_at = [i for i, col in enumerate(table.columns) if col.primary_key]
    if not key_at:
        return tuple(row)
    i = key_at[-1]
    col = table.columns[i]
    used = {r[i] for r in out}
    if col.references is not None:
        free = [k for k in keys.get((col.references[0], col.references[1].lower()), [])
                if k not in used]
        row[i] = free[0] if free else row[i]
    else:
        taken = [v for v in used if isinstance(v, int) and not isinstance(v, bool)]
        fresh = max(taken) + 1 if taken else n + 1
        row[i] = fresh if col.affinity in ("INTEGER", "REAL", "NUMERIC") else str(fresh)
    return tuple(row)


def _key_pool(schema: DbSchema, table: Table, col: Column,
              pools: dict[tuple[str, str], list[Any]]) -> list[Any]:
    """A key column's own pool and the pools of the columns that reference it."""
    out = list(pools.get((table.name, col.name), []))
    for other in schema.tables:
        for ref in other.columns:
            if ref.references and ref.references[0] == table.name \
                    and ref.references[1].lower() == col.name.lower():
                out += pools.get((other.name, ref.name), [])
    return out


def _value(rng: random.Random, pool: list[Any], affinity: str, realistic: bool = False) -> Any:
    """A pool value, or now and then a made-up one: for a ``realistic`` candidate only a number
    within the range of the column's numbers (a total between two real totals), never a word."""
    if pool and rng.random() < POOL_SHARE:
        return rng.choice(pool)
    if realistic:
        numbers = [v for v in pool if isinstance(v, int | float) and not isinstance(v, bool)]
        if affinity == "INTEGER" and numbers:
            return rng.randint(int(min(numbers)), int(max(numbers)))
        if affinity in ("REAL", "NUMERIC") and numbers:
            return round(rng.uniform(min(numbers), max(numbers)), 2)
        if pool:
            return rng.choice(pool)
    if affinity == "INTEGER":
        return rng.randint(-2, 20)
    if affinity in ("REAL", "NUMERIC"):
        return round(rng.uniform(-2, 20), 2)
    return rng.choice(["", "a", "A", "b", "x y", "Zz"])


def _differs(eng: Engine[C], schema: DbSchema, rows: Rows, gold: str, predicted: str, same: Same,
             seconds: float, tied: Tied | None = None,
             ) -> tuple[bool, Rows, Failed | None] | Failed:
    """(whether they differ, the rows held, the prediction's failure) on one candidate, each
    query within its own ``seconds``; the gold's failure when the gold gives no result there
    (then the candidate tells nothing). A prediction that gives none where the gold does
    differs from it."""
    with eng.candidate(schema, rows, (gold, predicted)) as conn:
        g = eng.attempt(conn, gold, seconds)
        if isinstance(g, Failed):
            return g
        p = eng.attempt(conn, predicted, seconds)
        if isinstance(p, Failed):
            return True, _in_order(eng.held_rows(conn, schema, list(rows)), rows), p
        if not _apart(eng, conn, g, p, same, tied, seconds):
            return False, rows, None  # the rows held matter only where the queries differ
        return True, _in_order(eng.held_rows(conn, schema, list(rows)), rows), None


def _in_order(held: Rows, rows: Rows) -> Rows:
    """The rows the engine held, in the order they were inserted: the engine lists them by
    rowid, and a row referencing a later key of its own table (an employee whose manager was
    drawn first with a higher id) would be refused when they are inserted again in that order,
    so a shrink that rebuilds from them would start from a different database."""
    out: Rows = {}
    for name, kept in held.items():
        given = list(rows.get(name, []))
        used = [False] * len(given)
        placed: list[tuple[int, tuple[Any, ...]]] = []
        for row in kept:
            at = next((i for i, r in enumerate(given) if not used[i] and r == row), None)
            if at is None:
                placed.append((len(given), row))
            else:
                used[at] = True
                placed.append((at, row))
        out[name] = [row for _, row in sorted(placed, key=lambda x: x[0])]
    return out


def _apart(eng: Engine[C], conn: C, g: ResultTable, p: ResultTable, same: Same,
           tied: Tied | None, seconds: float) -> bool:
    if same(g, p):
        return False
    return tied is None or not tied(
        g, p, lambda sql: eng.run(conn, sql, time.monotonic() + seconds))


def _shrunk(eng: Engine[C], schema: DbSchema, rows: Rows, gold: str, predicted: str, same: Same,
            tied: Tied | None, seconds: float, until: float, realistic: Pools | None = None,
            ) -> Rows:
    """``rows`` shrunk (:mod:`.shrink`) until ``until`` (:data:`SHRINK_SECONDS`), then with
    its edge values replaced by ``realistic`` ones where the difference survives; an attempt
    cut short by that is no difference (only a query that ran out of its own full seconds
    counts as one)."""
    from .shrink import realise, shrink

    def still_differs(trial: Rows) -> bool:
        left = until - time.monotonic()
        if left <= 0:
            return False
        out = _differs(eng, schema, trial, gold, predicted, same, min(seconds, left), tied)
        if isinstance(out, Failed) or not out[0]:
            return False
        failure = out[2]
        return failure is None or failure.kind != "timeout" or failure.seconds >= seconds

    def keeps_every_row(trial: Rows) -> bool:
        """A replaced value must keep every row (one the engine refuses is no replacement)."""
        left = until - time.monotonic()
        if left <= 0:
            return False
        out = _differs(eng, schema, trial, gold, predicted, same, min(seconds, left), tied)
        if isinstance(out, Failed) or not out[0] or out[1] != trial:
            return False
        failure = out[2]
        return failure is None or failure.kind != "timeout" or failure.seconds >= seconds

    small = shrink(schema, rows, still_differs)
    if realistic is None:
        return small
    return realise(schema, small, realistic, is_realistic, keeps_every_row)


def prove(eng: Engine[C], schema: DbSchema, rows: Rows, gold: str, predicted: str, same: Same,
          tied: Tied | None = None, seconds: float = 30.0,
          ) -> tuple[ResultTable, ResultTable | Failed] | None:
    """Both results on a real file of ``rows`` whose constraints check clean, when they still
    differ there (the prediction's failure when it gives no result within ``seconds`` where
    the gold does); else None."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="queryeval-neighbour-") as tmp:
        path = Path(tmp) / f"counterexample.{eng.name}"
        eng.write(schema, rows, path)
        if not eng.checks_clean(path):
            return None
        conn = eng.open_written(path)
        try:
            g = eng.attempt(conn, gold, seconds)
            if isinstance(g, Failed):
                return None
            p = eng.attempt(conn, predicted, seconds)
            if isinstance(p, ResultTable) and not _apart(eng, conn, g, p, same, tied, seconds):
                return None
        finally:
            conn.close()
    return g, p
