"""Spider dev, whole process: ``pytest`` on the imported suite against the official evaluator.

Run: ``.venv/bin/python bench/bench_spider_run.py --evaluator DIR --evaluator-python PY [--runs 5]``

* official: ``taoyds/spider``'s ``evaluation.py --etype match`` on ``gold_example.txt`` /
  ``pred_example.txt`` (the 1,034 dev pairs), as research/sql-anchors.md ran it: schema-only
  SQLite files built from ``tables.json`` and nltk's punkt model replaced by an empty one (it
  cannot be downloaded here; SQL strings hold no sentence boundaries). ``DIR`` is a checkout of
  taoyds/spider, ``PY`` a Python with nltk and sqlparse (the evaluator's own dependencies; they
  are not the plugin's). Its stdout is checked against the shared oracle.
* plugin: ``queryeval-import spider`` of the same files (a ``spider-schema`` source), then
  ``python -m pytest suite -q --queryeval-spider-table`` (the same table printed), with the
  plugin's exact-match "all" figure checked against the official one.

Both are whole processes, interleaved run by run, with bytecode caches on as a user's Python
has them (``PYTHONDONTWRITEBYTECODE`` removed) and the dev extra's ``hypothesis`` pytest plugin
off (it is not the plugin's dependency, and it imports all of hypothesis at the end of every
session). Prints the medians and the ratio plugin / official (target: at most 1.2x of CPU,
issue 53; it was 1.0x on wall).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import SHARED, machine, median, print_sides, timed


def schema_dbs(tables: Path, out: Path) -> None:
    """One schema-only SQLite file per db_id (the official evaluator reads each schema from
    its database file; no Spider databases ship here)."""
    for db in json.loads(tables.read_text()):
        d = out / db["db_id"]
        d.mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(d / f"{db['db_id']}.sqlite")
        cols: dict[int, list[str]] = {}
        for ti, c in db["column_names_original"]:
            if ti >= 0:
                cols.setdefault(ti, []).append(c)
        for ti, t in enumerate(db["table_names_original"]):
            if t == "sqlite_sequence":  # SQLite makes it for an AUTOINCREMENT table
                con.execute('CREATE TABLE "_seq" (x INTEGER PRIMARY KEY AUTOINCREMENT)')
                con.execute('INSERT INTO "_seq" DEFAULT VALUES')
                con.execute('DROP TABLE "_seq"')
                continue
            names = ", ".join(f'"{c}"' for c in cols.get(ti, ["x"]))
            con.execute(f'CREATE TABLE "{t}" ({names})')
        con.commit()
        con.close()


def empty_punkt(root: Path) -> Path:
    english = root / "tokenizers" / "punkt_tab" / "english"
    english.mkdir(parents=True)
    for name in ("collocations.tab", "sent_starters.txt", "abbrev_types.txt",
                 "ortho_context.tab"):
        (english / name).write_text("")
    return root



def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--evaluator", default=os.environ.get("QUERYEVAL_SPIDER_EVALUATOR"),
                    help="checkout of taoyds/spider (evaluation.py, process_sql.py)")
    ap.add_argument("--evaluator-python", default=os.environ.get("QUERYEVAL_SPIDER_PYTHON"),
                    help="a Python with nltk and sqlparse for the official evaluator")
    args = ap.parse_args()
    if not args.evaluator or not args.evaluator_python:
        print("skipped: give --evaluator (a taoyds/spider checkout) and --evaluator-python "
              "(a Python with nltk and sqlparse), or QUERYEVAL_SPIDER_EVALUATOR / _PYTHON")
        return 0
    spider = SHARED / "spider"
    gold, pred, tables = (spider / "gold_example.txt", spider / "pred_example.txt",
                          spider / "tables.json")
    oracle = (spider / "oracle" / "spider_head_match__gold_example.txt").read_text()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory(prefix="qe-bench-spider-") as tmp:
        base = Path(tmp)
        schema_dbs(tables, base / "dbs")
        off_env = {**env, "NLTK_DATA": str(empty_punkt(base / "punkt"))}
        subprocess.run([sys.executable, "-m", "pytest_queryeval.importers.cli", "spider",
                        "--gold", str(gold), "--pred", str(pred), "--tables", str(tables),
                        "--out", str(base / "suite")], check=True, capture_output=True, env=env)
        official = [args.evaluator_python, str(Path(args.evaluator) / "evaluation.py"),
                    "--gold", str(gold), "--pred", str(pred), "--etype", "match",
                    "--db", str(base / "dbs"), "--table", str(tables)]
        flags = ["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:hypothesispytest"]
        plugin = [sys.executable, "-m", "pytest", "suite", *flags, "--queryeval-spider-table"]
        (base / "plain").mkdir()
        (base / "plain" / "test_plain.py").write_text(
            "import pytest\n\n@pytest.mark.parametrize('i', range(1034))\n"
            "def test_trivial(i):\n    assert i >= 0\n")
        plain = [sys.executable, "-m", "pytest", "plain", *flags]
        # one unmeasured warm-up each: bytecode caches written, files in the OS cache
        timed(official, base, off_env)
        timed(plugin, base, env)
        timed(plain, base, env)
        times: dict[str, list[float]] = {k: [] for k in ("official", "plugin", "plain",
                                                          "official_cpu", "plugin_cpu",
                                                          "plain_cpu")}
        loads = [os.getloadavg()[0]]
        for _ in range(args.runs):
            t, cpu, out, rc = timed(official, base, off_env)
            if rc != 0 or out != oracle:
                raise SystemExit(f"official evaluator: rc {rc}, output differs from the "
                                 f"oracle\n{out[-2000:]}")
            times["official"].append(t)
            times["official_cpu"].append(cpu)
            t, cpu, plain_out, rc = timed(plain, base, env)
            if rc != 0:
                raise SystemExit(f"plain pytest: rc {rc}\n{plain_out[-3000:]}")
            times["plain"].append(t)
            times["plain_cpu"].append(cpu)
            t, cpu, out, rc = timed(plugin, base, env)
            if rc != 0:
                raise SystemExit(f"plugin run: rc {rc}\n{out[-3000:]}")
            times["plugin"].append(t)
            times["plugin_cpu"].append(cpu)
            loads.append(os.getloadavg()[0])
    official_all = re.search(r"exact match\s+(?:[\d.]+\s+){4}([\d.]+)", oracle)
    plugin_all = re.search(r"exact match\s+(?:[\d.]+\s+){4}([\d.]+)", out)
    same = bool(official_all and plugin_all and official_all[1] == plugin_all[1])
    print(f"\n1,034 Spider dev pairs, --etype match, {args.runs} interleaved runs each "
          f"(whole process; load average {min(loads):.1f}-{max(loads):.1f} during the runs)")
    print_sides(times, [("official", "official evaluation.py"),
                        ("plugin", "pytest + queryeval (spider-schema)"),
                        ("plain", "plain pytest, 1,034 trivial tests")], 36)
    ratio = median(times["plugin"]) / median(times["official"])
    cpu_ratio = median(times["plugin_cpu"]) / median(times["official_cpu"])
    floor = median(times["plain_cpu"]) / median(times["official_cpu"])
    print(f"exact match (all): official {official_all[1] if official_all else '?'}, "
          f"plugin {plugin_all[1] if plugin_all else '?'} ({'same' if same else 'DIFFERENT'})")
    print(f"ratio plugin / official: wall {ratio:.2f}x, cpu {cpu_ratio:.2f}x (target at most "
          f"1.2x cpu: {'MET' if cpu_ratio <= 1.2 else 'NOT MET'}); plain pytest's own cost for as "
          f"many tests is {floor:.2f}x the official's cpu")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
