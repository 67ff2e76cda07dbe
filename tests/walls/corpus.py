"""The shared hostile corpus: what every datasource type is run against, per language family,
and which wall each category of input tests (``src/pytest_queryeval/sources/walls.py``).

A query may hold ``{file}`` (a host file whose content and name carry a token that must never
come back), ``{dir}`` (its folder) and ``{out}`` (a path that must never be created).

Categories and what each expects:

- ``writes``: a write as a prediction sends it: a case error, the data unchanged (every type:
  the guard's contract, no wall).
- ``config``: a change of the connection's settings: whatever it ends in, the settings the
  next query sees are those before it (every type).
- ``engine_writes``: a write with the guard bypassed (``trusted=True``, or the type's guard
  switched off): the ``read_only`` wall.
- ``files``: a read or write of a host file: the token never in a result or a reason, ``{out}``
  never created: the ``file_access`` wall.
- ``deep``: deep or long literals: a case error within the time limit (parsing included): the
  ``time_limit`` wall.
- ``huge_range``: a runaway: a case error within the time limit: the ``time_limit`` wall.
- ``huge_value``: a value that takes gigabytes: within the time limit, and the pytest process
  does not grow: the ``memory_bound`` wall.
- ``crash``: inputs that crashed an engine of the family: a case error, and the next query
  answers: the ``process`` wall (which also holds that a runaway burns no CPU of the pytest
  process).

Beside the categories, ``unfinished_writes`` (a family may give none): writes an engine may
crash on or outlive its deadline with before it can refuse them; through an agent's tools each
is counted as a write attempt (``test_agent_tools``, on a type that holds the ``process`` wall).
"""

from __future__ import annotations

#: The wall each category tests (None: every type must hold it).
CATEGORY_WALL: dict[str, str | None] = {
    "writes": None, "config": None, "engine_writes": "read_only", "files": "file_access",
    "deep": "time_limit", "huge_range": "time_limit", "huge_value": "memory_bound",
    "crash": "process",
}
#: Categories that may crash or hang the process that runs the engine: never run in-process
#: (a type whose ``process`` wall does not hold), whatever its other walls say.
IN_PROCESS_UNSAFE = frozenset({"deep", "huge_range", "huge_value", "crash"})
#: Categories that change data when their wall does not hold: never run then (the live
#: instance is shared by the session's other tests).
DAMAGING = frozenset({"engine_writes"})

#: How deep (or long) the deep literals go: twice that in characters stays under the default
#: ``max_query_bytes`` (65,536), so a prediction can send each of them.
DEEP = 30_000


def families() -> dict[str, dict[str, list[str]]]:
    """The corpus of each language family a live instance names."""
    from .corpus_cypher import CYPHER
    from .corpus_sparql import SPARQL
    from .corpus_sql import SQL

    return {"sql": SQL, "sparql": SPARQL, "cypher": CYPHER}
