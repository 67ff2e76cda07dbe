"""Benchmark: the size of a baseline file, in bytes per case (issue 24, item 7; target < 400).

A baseline is committed on every refresh, so its size is what a suite pays in git. Two suites
are refreshed with ``--queryeval-update-baseline``, each with ``--queryeval-json`` too, whose
whole report is what a baseline held before the compact form:

* ``example_suite``: the repository's example suite as shipped (88 cases of four kinds);
* a generated suite of ``--cases`` cases (default 2,000) on a generated SQLite database: three
  SQL cases in four (every SQL metric: the result metrics, the Spider structure and its 30
  component scores, the timings), one SDMX case in four; about one answer in five is wrong.

For each it prints the bytes per case of the compact baseline (the whole file over the cases,
header included) and of the whole report, and whether the target holds.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, check, machine, run_pytest

TARGET = 400  #: bytes per case
PER_FILE = 500


def write_generated(root: Path, n: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    with sqlite3.connect(root / "shop.sqlite") as conn:
        conn.execute("CREATE TABLE orders (id INTEGER, customer TEXT, total REAL, region TEXT)")
        conn.executemany("INSERT INTO orders VALUES (?, ?, ?, ?)", [
            (i, f"c{rng.randrange(40)}", round(rng.uniform(1, 500), 2),
             rng.choice(["north", "south", "east", "west"])) for i in range(400)])
    conn.close()
    (root / "pytest.ini").write_text("[pytest]\nqueryeval_files = test_*.yaml\n")
    (root / "queryeval.yaml").write_text(json.dumps({
        "datasources": {"shop": {"type": "sqlite", "path": "shop.sqlite"}},
        "predictions": {"source": "file", "path": "predictions.jsonl"}}))
    predictions: list[str] = []
    sql: list[dict[str, object]] = []
    sdmx: list[dict[str, object]] = []
    for i in range(n):
        wrong = rng.random() < 0.2
        if i % 4 == 3:
            codes = ["NGDP", "NGDPPC", "NGDP_R", "PCPI", "LUR"]
            gold = rng.sample(codes, 2)
            pred = gold if not wrong else gold[:1] + rng.sample(codes, 1)
            sdmx.append({"id": f"s{i:05d}", "conversation": [
                {"role": "user", "content": f"question {i}", "target": _selection(gold)}]})
            predictions.append(json.dumps({"id": f"s{i:05d}", "predicted": _selection(pred),
                                           "latency": round(rng.uniform(0.3, 3), 3)}))
            continue
        limit = rng.randrange(10, 400)
        region = rng.choice(["north", "south", "east", "west"])
        gold_sql = (f"SELECT customer, sum(total) FROM orders WHERE region = '{region}' "
                    f"AND total > {limit} GROUP BY customer ORDER BY customer")
        pred_sql = gold_sql if not wrong else gold_sql.replace(f"> {limit}", f">= {limit + 7}")
        sql.append({"id": f"q{i:05d}", "question": f"question {i}", "gold": gold_sql})
        predictions.append(json.dumps({"id": f"q{i:05d}", "predicted": pred_sql,
                                       "latency": round(rng.uniform(0.3, 3), 3)}))
    for name, kind, cases in (("sql", "sql", sql), ("sdmx", "sdmx", sdmx)):
        for f in range(0, len(cases), PER_FILE):
            header = {"kind": kind, **({"datasource": "shop"} if kind == "sql" else {})}
            (root / f"test_{name}_{f // PER_FILE:02d}.yaml").write_text(json.dumps(
                {**header, "cases": cases[f:f + PER_FILE]}))
    (root / "predictions.jsonl").write_text("\n".join(predictions) + "\n")


def _selection(codes: list[str]) -> dict[str, object]:
    return {"indicator_selection": [{"dataset_id": "IMF.RES:WEO", "dimensions": [
        {"dimension_name": "INDICATOR", "values": [{"id": c, "name": c} for c in codes]}]}]}


def measure(label: str, suite: Path, timeout: float) -> bool:
    seconds, out, rc = run_pytest(suite.parent, str(suite.name), "-p", "no:cacheprovider", "-q",
                                  "--queryeval-update-baseline",
                                  f"--queryeval-json={suite.parent / 'full.json'}",
                                  timeout=timeout)
    check(rc, out, {0, 1}, label)
    baseline = next(suite.parent.rglob("queryeval-baseline.json"), None)
    if baseline is None or "baseline updated" not in out:
        raise SystemExit(f"{label}: no baseline written\n{out[-3000:]}")
    cases = len(json.loads((suite.parent / "full.json").read_text())["cases"])
    compact = baseline.stat().st_size
    whole = (suite.parent / "full.json").stat().st_size
    ok = compact / cases < TARGET
    print(f"{label}: {cases} cases, refreshed in {seconds:.1f} s")
    print(f"  baseline (compact): {compact:,} bytes, {compact / cases:.0f} bytes per case "
          f"(target < {TARGET}: {'met' if ok else 'MISSED'})")
    print(f"  whole JSON report (the baseline before): {whole:,} bytes, "
          f"{whole / cases:.0f} bytes per case ({whole / compact:.0f}x)")
    return ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=2000, help="cases of the generated suite")
    ap.add_argument("--timeout", type=float, default=1800)
    args = ap.parse_args()
    print(machine())
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        example = base / "example" / "example_suite"
        shutil.copytree(ROOT / "example_suite", example)
        (example / "queryeval-baseline.json").unlink()
        ok &= measure("example_suite", example, args.timeout)
        generated = base / "generated" / "suite"
        generated.mkdir(parents=True)
        write_generated(generated, args.cases)
        ok &= measure(f"generated suite ({args.cases:,} cases)", generated, args.timeout)
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
