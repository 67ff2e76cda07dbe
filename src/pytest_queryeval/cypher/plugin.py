"""The hooks that register ``kind: cypher``, ``type: ladybug`` and ``type: bolt``: the
package's only contact with the plugin, registered by one line (``pytest_plugins`` of
:mod:`pytest_queryeval.plugin.builtins`), as an installed package's ``pytest11`` entry point
would be.

Imported in every run where the plugin is installed, so it imports nothing at module level;
the kind and the source are imported when a case of theirs is read or opened.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

    from ..sources import SourceType


def pytest_queryeval_kinds(config: pytest.Config) -> Mapping[str, str]:
    return {"cypher": "pytest_queryeval.cypher.kind:CypherKind"}


def pytest_queryeval_source_types(config: pytest.Config) -> Mapping[str, SourceType]:
    from ..sources import SourceType, Walls
    from .sourcekeys import BOLT, BOLT_KEYS, LADYBUG, LADYBUG_KEYS

    return {LADYBUG: SourceType("pytest_queryeval.cypher.source:LadybugSource", LADYBUG_KEYS,
                                ddl=True, walls=Walls(**LADYBUG_WALLS)),
            BOLT: SourceType("pytest_queryeval.cypher.bolt:BoltSource", BOLT_KEYS,
                             walls=Walls(**BOLT_WALLS, given_up=(
                                 ("rehearse", False, UNREHEARSED_WALLS),)))}


#: What an embedded ladybug graph holds (docs/cypher.md, "The walls"): it runs in a sandbox
#: worker (cypher/worker.py) that confines itself with Landlock to the database file, opens the
#: graph read-only, plans a prediction before it runs it, is killed 1 s past the case's timeout
#: (parsing included) and past its resident-memory bound; a crash is that query's error.
LADYBUG_WALLS: dict[str, Any] = dict(  # Walls' keywords: True or "cannot: ..."
    process=True, read_only=True, file_access=True, time_limit=True, memory_bound=True)

#: What a Bolt server holds (docs/cypher.md, "The walls"): the plugin bounds the exchange's
#: time; whether the engine refuses writes, or survives a query, is the server's, but a
#: FalkorDB server's suite is scored on the plugin's own copy (cypher/rehearsal.py), and the
#: server is only read, once, to make it.
BOLT_WALLS: dict[str, Any] = dict(
    process="cannot: a query that crashes a Neo4j server takes it down for every later case; "
            "a FalkorDB server never runs a suite's query: the suite is scored on the "
            "plugin's own copy of its graph, whose crash is that query's error",
    read_only="cannot: whether a Neo4j server refuses a write is the server's (it refuses one "
              "in a READ session with a role that cannot write); on a FalkorDB server's copy "
              "each query is rehearsed as GRAPH.RO_QUERY and its change count checked",
    memory_bound="cannot: a Neo4j server's memory is its own; a FalkorDB server's copy has "
                 "its address space capped")

#: What ``rehearse: false`` gives up on a FalkorDB server (docs/cypher.md, "Without the
#: rehearsal"): predictions run on the server itself, which checks its timeout between rows
#: only, so the time limit of one expression is the lexical cost bounds' estimate, not a wall
#: (the twenty-sixth to thirty-third re-probes each found a form they under-counted). The
#: walls the copy held for a FalkorDB server are the server's again, and their warnings say so
#: (they spoke of the copy, which does not run: the thirty-sixth re-probe's L2).
UNREHEARSED_WALLS = dict(
    process="cannot: with rehearse: false every query runs on the server itself, and a query "
            "that crashes it takes it down for every later case",
    read_only="cannot: with rehearse: false a prediction reaches the FalkorDB server, whose "
              "Bolt listener runs every query read-write: the guard's refusal before sending "
              "is the only layer",
    memory_bound="cannot: with rehearse: false a query's memory is the server's own (its "
                 "QUERY_MEM_CAPACITY, which it checks between rows only)",
    time_limit="cannot: with rehearse: false a prediction runs on the FalkorDB server itself, "
               "which checks its timeout only between rows: inside one expression the bound "
               "is the lexical cost estimate, and a form it misses keeps the server busy past "
               "the timeout, so that later cases may time out (rehearse: true holds it)")
