"""Spider's dev pairs through the plugin print the official evaluator's table, line for line."""

from __future__ import annotations

import subprocess
import sys


def test_the_1034_dev_pairs_print_the_official_table(tmp_path, shared_data):
    spider = shared_data / "spider"
    suite = tmp_path / "suite"
    rc = subprocess.run([sys.executable, "-m", "pytest_queryeval.importers.cli", "spider",
                         "--gold", str(spider / "gold_example.txt"), "--pred", str(spider / "pred_example.txt"),
                         "--tables", str(spider / "tables.json"), "--out", str(suite)],
                        capture_output=True, text=True, check=False)
    assert rc.returncode == 0, rc.stderr
    proc = subprocess.run([sys.executable, "-m", "pytest", str(suite), "-q", "-p", "no:randomly",
                           "-p", "no:cacheprovider", "--queryeval-spider-table", "--rootdir", str(suite)],
                          capture_output=True, text=True, cwd=tmp_path, check=False, timeout=900)
    oracle = (spider / "oracle" / "spider_head_match__gold_example.txt").read_text().splitlines()
    start = next(i for i, line in enumerate(oracle) if line.split() == ["easy", "medium", "hard", "extra", "all"])
    expected = [line.rstrip() for line in oracle[start:] if line.strip()]
    out = [line.rstrip() for line in proc.stdout.splitlines()]
    first = out.index(expected[0])
    got = [line for line in out[first:first + 2 * len(expected)] if line.strip()][: len(expected)]
    assert got == expected
