"""Benchmark: the cost per case of the journal beside the JSON report (``r.json.journal``,
issue 54 item 1: each finished record written, and fsynced, as it arrives).

Run: ``.venv/bin/python bench/bench_journal.py [--cases 1000] [--runs 3]``.

* a trivial suite of ``--cases`` SDMX cases with inline predictions (no data source, no model:
  only the plugin works) run with ``--queryeval-json``, which journals every record: the wall
  time per case of the whole run, for scale;
* the journal alone: the run's own records, read back from its report, appended to a journal
  one line at a time as the controller does (a write per line, an ``fsync`` at most once a
  second), and with an ``fsync`` after every line: milliseconds per case of each.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from _common import check, machine, median, run_pytest

TARGET = {"indicator_selection": [{"dataset_id": "IMF.RES:WEO", "dimensions": [
    {"dimension_name": "INDICATOR", "values": [{"id": "NGDP", "name": "GDP"}]}]}]}


def write_suite(root: Path, n: int) -> None:
    (root / "pytest.ini").write_text("[pytest]\nqueryeval_files = test_*.yaml\n")
    (root / "queryeval.yaml").write_text("{}\n")
    cases = [{"id": f"c{i:05d}", "conversation": [
        {"role": "user", "content": f"question {i}", "target": TARGET, "predicted": TARGET}]}
        for i in range(n)]
    (root / "test_cases.yaml").write_text(json.dumps({"kind": "sdmx", "cases": cases}))


def journal_ms(records: list[dict], folder: Path, every: float) -> float:
    """Milliseconds per record appended, with an fsync at most every ``every`` seconds."""
    from pytest_queryeval.plugin.journal import Journal

    path = folder / "j.json.journal"
    journal = Journal.start(path)
    journal._sync_every = every
    t0 = time.perf_counter()
    for record in records:
        journal.record(record)
    took = time.perf_counter() - t0
    journal.close()
    path.unlink()
    return took * 1000 / len(records)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_suite(root, args.cases)
        walls = []
        for _ in range(args.runs):
            wall, out, rc = run_pytest(root, "-q", "-p", "no:cacheprovider",
                                       "--queryeval-json=r.json")
            check(rc, out, {0}, "journaled run")
            walls.append(wall)
        from pytest_queryeval.plugin.journal import journal_path

        assert not journal_path(root / "r.json").exists(), "a finished run removes its journal"
        records = json.loads((root / "r.json").read_text())["cases"]
        from pytest_queryeval.plugin.journal import SYNC_EVERY

        used = [journal_ms(records, root, SYNC_EVERY) for _ in range(args.runs)]
        synced = [journal_ms(records, root, 0.0) for _ in range(args.runs)]
    n = args.cases
    print(f"{n} cases, --queryeval-json (journal on): run {median(walls):.2f} s, "
          f"{median(walls) * 1000 / n:.2f} ms per case (start-up included)")
    print(f"journal alone: {median(used):.3f} ms per case as the plugin writes it (a write per "
          f"line, fsync at most every {SYNC_EVERY:g} s), {median(synced):.3f} ms with an fsync "
          f"per line (n={args.runs})")
    print(f"journal share of the run: {median(used) * n / 1000 / median(walls) * 100:.1f} % "
          f"(fsync per line: {median(synced) * n / 1000 / median(walls) * 100:.1f} %)")


if __name__ == "__main__":
    main()
