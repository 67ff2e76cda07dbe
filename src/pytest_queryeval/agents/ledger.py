"""The database side's count of what an agent did: queries executed, rows read, write
attempts, forbidden tables touched, repeated identical calls, budget exceeded.

Why a ledger the tool executor writes into, and not the agent's own report: an agent may
say it ran two read-only queries and have run nine, one of them an ``UPDATE``. The plugin's
tool loop (the openai source) passes every tool call through :meth:`Ledger.call` and every
query through :meth:`Ledger.run_query`, which runs it on the case's sandboxed source; a
trajectory from outside the plugin is replayed the same way (:func:`replay`), read-only, so
its counts come from the database too. A write is refused before it reaches the source (the
source's guard would refuse it as well) and counted: a finding, never silent.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import QueryRefused
from .trajectory import Step, Trajectory, call_key, step_query, step_sample_query

if TYPE_CHECKING:
    from ..results import ResultTable
    from ..sources.base import DataSource

#: The metric names of the counts (``budget_exceeded`` is 1 when the loop was stopped).
COUNT_METRICS = ("queries_executed", "rows_read", "write_attempts", "forbidden_tables",
                 "repeated_calls", "budget_exceeded")

#: Statement heads that change data or schema (checked when sqlglot cannot parse the text).
_WRITE_HEAD = re.compile(
    r"\s*(?:insert|update|delete|merge|upsert|replace|create|drop|alter|truncate|grant|"
    r"revoke|attach|detach|vacuum|copy|call|exec|execute|rename|comment|set|reindex|"
    r"analyze|lock|load|install|import|export|begin|commit|rollback|savepoint|release)\b",
    re.IGNORECASE)


class WriteRefused(QueryRefused):
    """An agent's query would change the database: refused unexecuted and counted."""

    prefix = "write refused"


@dataclass
class Ledger:
    """Counts for one case's agent run. Safe to share between the threads of one case."""

    #: Tables the suite forbids the agent to read (compared case-insensitively).
    forbidden: frozenset[str] = frozenset()
    queries_executed: int = 0
    rows_read: int = 0
    write_attempts: int = 0
    repeated_calls: int = 0
    #: The budget the loop ran out of (``tool_calls``, ``rows``, ``seconds``, ``tokens``,
    #: ``cost``), or None.
    budget_exceeded: str | None = None
    touched: set[str] = field(default_factory=set)
    #: What the database side saw that a reader must know (writes refused, forbidden tables).
    findings: list[str] = field(default_factory=list)
    _seen: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def for_tables(cls, forbidden: Iterable[str]) -> Ledger:
        return cls(forbidden=frozenset(t.lower() for t in forbidden))

    def call(self, step: Step) -> None:
        """Every tool call the agent makes, before it runs: a second call with the same name
        and arguments is counted as repeated."""
        key = call_key(step)
        with self._lock:
            if key in self._seen:
                self.repeated_calls += 1
            else:
                self._seen.add(key)

    def exceeded(self, budget: str) -> None:
        """The tool loop stopped because ``budget`` ran out."""
        with self._lock:
            if self.budget_exceeded is None:
                self.budget_exceeded = budget
                self.findings.append(f"budget exceeded: {budget}")

    def run_query(self, source: DataSource, sql: str, *, max_rows: int,
                  timeout: float | None = None) -> ResultTable:
        """Run an agent's query on the sandboxed ``source`` and count it.

        A write is refused unexecuted (:class:`WriteRefused`, counted in ``write_attempts``);
        the source's own refusals, timeouts and failures are raised as they come, after the
        forbidden tables the text names are counted. Rows read are the rows returned.
        """
        dialect = getattr(source, "dialect", None)
        if is_write(sql, dialect):
            with self._lock:
                self.write_attempts += 1
                self.findings.append(f"write attempt refused: {_short(sql)}")
            raise WriteRefused("the agent's query would change the database; agent tools are "
                               "read-only")
        touched = tables_of(sql, dialect) & self.forbidden if self.forbidden else set()
        with self._lock:
            for name in sorted(touched - self.touched):
                self.findings.append(f"forbidden table touched: {name}")
            self.touched |= touched
        kwargs: dict[str, Any] = {"max_rows": max_rows}
        if timeout is not None:
            kwargs["timeout"] = timeout
        table = source.execute(sql, **kwargs)
        with self._lock:
            self.queries_executed += 1
            self.rows_read += len(table.rows)
        return table

    def metrics(self) -> dict[str, float]:
        with self._lock:
            return {
                "queries_executed": float(self.queries_executed),
                "rows_read": float(self.rows_read),
                "write_attempts": float(self.write_attempts),
                "forbidden_tables": float(len(self.touched)),
                "repeated_calls": float(self.repeated_calls),
                "budget_exceeded": 1.0 if self.budget_exceeded else 0.0,
            }

    def details(self) -> dict[str, Any]:
        with self._lock:
            out: dict[str, Any] = {"findings": list(self.findings)}
            if self.touched:
                out["forbidden_touched"] = sorted(self.touched)
            if self.budget_exceeded:
                out["budget_exceeded"] = self.budget_exceeded
            return out


def is_write(sql: str, dialect: str | None = None) -> bool:
    """Whether any statement of ``sql`` would change data or schema: sqlglot's parse (a
    data-modifying CTE and ``SELECT ... INTO`` included; ``PRAGMA`` only with an assignment;
    ``EXPLAIN`` judged by the statement it explains, which ``EXPLAIN ANALYZE`` runs), and the
    head keyword of what sqlglot cannot parse."""
    import sqlglot
    from sqlglot import exp

    try:
        trees = sqlglot.parse(sql, read=dialect)
    except Exception:  # sqlglot raises several error types; the keyword check decides
        return any(_head_writes(part, dialect) for part in sql.split(";") if part.strip())
    writes = (exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop, exp.Alter,
              exp.TruncateTable)
    for tree in trees:
        if tree is None:
            continue
        if isinstance(tree, exp.Command | exp.Pragma):
            # sqlglot renders PRAGMA f(x) as f = x: the text written is judged instead
            text = sql if len(trees) == 1 else tree.sql(dialect=dialect)
            if _head_writes(text, dialect):
                return True
            continue
        if not isinstance(tree, exp.Select | exp.SetOperation | exp.Subquery | exp.Values
                          | exp.Describe | exp.Show):
            return True
        if any(True for _ in tree.find_all(*writes)):
            return True
        if any(node.args.get("into") is not None for node in tree.find_all(exp.Select)):
            return True
    return False


_EXPLAIN = re.compile(r"\s*explain\b(?:\s+query\s+plan\b)?", re.IGNORECASE)


def _head_writes(text: str, dialect: str | None) -> bool:
    """The keyword test of one statement sqlglot read as a bare command (or could not read)."""
    explained = _EXPLAIN.match(text)
    if explained:
        rest = re.sub(r"^\s*(?:analyze|verbose|\([^)]*\))\s*", "", text[explained.end():],
                      flags=re.IGNORECASE)
        return bool(rest.strip()) and is_write(rest, dialect)
    if re.match(r"\s*pragma\b", text, re.IGNORECASE):
        return "=" in text
    return _WRITE_HEAD.match(text) is not None


def tables_of(sql: str, dialect: str | None = None) -> set[str]:
    """The tables ``sql`` names, lower-cased (CTE names left out); a word match on the text
    when sqlglot cannot parse it, so a forbidden table is never missed for a parse error."""
    import sqlglot
    from sqlglot import exp

    try:
        trees = [t for t in sqlglot.parse(sql, read=dialect) if t is not None]
    except Exception:
        return {w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", sql)}
    out: set[str] = set()
    for tree in trees:
        ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
        for table in tree.find_all(exp.Table):
            name = table.name.lower()
            if name and name not in ctes:
                out.add(name)
    return out


def replay(trajectory: Trajectory, source: DataSource, ledger: Ledger, *,
           max_rows: int, timeout: float | None = None) -> None:
    """Count an outside trajectory from the database side: every call goes through
    :meth:`Ledger.call`, and every :data:`~.trajectory.TOOL_QUERY` call's query and every
    :data:`~.trajectory.TOOL_SAMPLE` call's read (:func:`~.trajectory.step_sample_query`)
    is run again on the sandboxed ``source`` (read-only; a write is refused and counted). Errors
    of the replayed queries are the agent's, not the run's: they are counted, not raised."""
    from ..errors import QueryEvalError

    for step in trajectory.steps:
        ledger.call(step)
        sql = step_query(step) or step_sample_query(step)
        if sql is None:
            continue
        try:
            ledger.run_query(source, sql, max_rows=max_rows, timeout=timeout)
        except QueryEvalError:
            continue


def _short(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) <= 120 else one[:117] + "..."
