"""The hooks that register ``kind: cypher``, ``type: ladybug`` and ``type: bolt``: the
package's only contact with the plugin, registered by one line (``pytest_plugins`` of
:mod:`pytest_queryeval.plugin.builtins`), as an installed package's ``pytest11`` entry point
would be.

Imported in every run where the plugin is installed, so it imports nothing at module level;
the kind and the source are imported when a case of theirs is read or opened.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

    from ..sources import SourceType


def pytest_queryeval_kinds(config: pytest.Config) -> Mapping[str, str]:
    return {"cypher": "pytest_queryeval.cypher.kind:CypherKind"}


def pytest_queryeval_source_types(config: pytest.Config) -> Mapping[str, SourceType]:
    from ..sources import SourceType, Walls
    from . import bolt, source

    return {source.TYPE: SourceType("pytest_queryeval.cypher.source:LadybugSource", source.KEYS,
                                   ddl=True, walls=Walls(**LADYBUG_WALLS)),
            bolt.TYPE: SourceType("pytest_queryeval.cypher.bolt:BoltSource", bolt.KEYS,
                                  walls=Walls(**BOLT_WALLS))}


#: What an embedded ladybug graph holds today (docs/cypher.md, "The walls"): it runs in the
#: pytest process, so what crashes or runs away in the engine takes the run with it.
LADYBUG_WALLS = dict(
    process="cannot: queries run in the pytest process; a crash of the engine (a list "
            "literal nested 3,000 deep, CALL READ_CSV_SERIAL(...)) ends the whole run",
    file_access="cannot: the lexical guard misses LOAD FROM after WITH * "
                "(WITH * LOAD FROM '/etc/passwd' ... returns the file's lines)",
    time_limit="cannot: ladybug's query timeout does not stop one expression that builds a "
               "huge value before the pipeline starts (UNWIND range(1, 1000000000) ran 56 s "
               "past a 0.05 s timeout), nor a parse that crashes",
    memory_bound="cannot: max_memory bounds the buffer pool, not a value a query builds in "
                 "the pytest process")

#: What a Bolt server holds (docs/cypher.md, "The walls"): the plugin bounds the exchange's
#: time; whether the engine refuses writes, or survives a query, is the server's.
BOLT_WALLS = dict(
    process="cannot: the server is its own process, but a query that crashes it (FalkorDB "
            "4.16: parentheses nested 100,000 deep) takes it down for every later case, and "
            "nothing restarts it",
    read_only="cannot: whether the server refuses a write is the server's (Neo4j refuses one "
              "in a READ session; FalkorDB's Bolt listener honours neither the access mode "
              "nor the rollback): the lexical guard is the layer that holds on any server",
    memory_bound="cannot: rows are capped (max_rows), not their size: one huge value is "
                 "received whole")
