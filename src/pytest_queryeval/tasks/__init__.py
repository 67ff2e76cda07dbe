"""Stateful tasks: a prediction that writes (DML, DDL), scored on throwaway copies (issue 28).

Why copies, and why checks: a statement that changes a database can only be judged by what it
left behind, and it must never touch the real database. So the gold runs on one copy and the
prediction on another, and *checks* then look at each copy: a query with expected rows, the
same verification query on both copies compared (``compare: gold``), a schema expectation, or
a Python check. A task without a check is an error, never a vacuous pass (LiveSQLBench passes a
task without test cases whenever the prediction executes).

API (everything else here is private)::

    from pytest_queryeval.tasks import Task, Check, run_task
    outcome = run_task(Task(engine="sqlite", path=Path("chinook.sqlite"), setup=[...],
                            gold=["UPDATE ..."], predicted=["UPDATE ..."],
                            checks=[Check(query="SELECT ...", compare="gold")]), timeout=10)
    outcome.passed, outcome.checks[0].reason, outcome.copy_seconds

``run_task`` runs the whole task (copies, setup, both statement lists, every check, Python
checks included) in a sandbox worker under the task's deadline and memory cap, never in the
pytest process; the copies live in the worker's own temporary directory, removed with it.
"""

from __future__ import annotations

from .run import Check, CheckResult, Task, TaskOutcome, run_task

__all__ = ["Check", "CheckResult", "Task", "TaskOutcome", "run_task"]
