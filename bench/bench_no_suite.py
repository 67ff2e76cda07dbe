"""Benchmark: what the plugin costs a project without a suite (target: within 5 %).

Run: ``.venv/bin/python bench/bench_no_suite.py [--tests 200] [--runs 15]``.

A plain project of ``--tests`` trivial tests in 20 modules, with a data file named like a case
file (``tests/test_config.yaml``, no ``queryeval.yaml`` anywhere), is run by pytest with the
plugin installed and with ``-p no:queryeval``, alternately in the same run (so both see the
same machine load), ``--runs`` times each:

* bytecode cached: the ordinary run, ``.pyc`` files written once by a warm-up run;
* no bytecode cache: every run compiles every module it imports (``PYTHONPYCACHEPREFIX`` a
  fresh empty folder, nothing written), as a fresh CI container or a new virtualenv does.

Prints both medians and their ratio (plugin / ``-p no:queryeval``) per mode, with the median of
the ratios of each repetition's two back-to-back runs (steadier on a shared machine), and which
of the package's modules the plugin run imported (the hook module and two small ones: the rest is
imported only once a case file is found).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import check, machine, median, run_pytest, spread

MODULES = 20
#: A plugin module, loaded with ``-p``, that writes the package's imported modules.
PROBE = """
import json, os, sys

def pytest_unconfigure(config):
    names = sorted(m for m in sys.modules if m.split(".")[0] == "pytest_queryeval")
    with open(os.environ["QUERYEVAL_BENCH_MODULES"], "w") as f:
        json.dump(names, f)
"""


def write_project(root: Path, n: int) -> None:
    tests = root / "tests"
    tests.mkdir()
    (root / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n")
    (tests / "test_config.yaml").write_text("name: demo\nretries: 3\n")
    per = (n + MODULES - 1) // MODULES
    for m in range(MODULES):
        count = max(0, min(per, n - m * per))
        body = "".join(f"def test_{m:02d}_{i:03d}():\n    assert {i} + 1 > {i}\n\n"
                       for i in range(count))
        (tests / f"test_mod{m:02d}.py").write_text(body or "")


def imported_modules(root: Path, env: dict[str, str]) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="qe-probe-") as tmp:
        (Path(tmp) / "_qe_modules_probe.py").write_text(PROBE)
        out = Path(tmp) / "modules.json"
        probe_env = {**env, "QUERYEVAL_BENCH_MODULES": str(out),
                     "PYTHONPATH": os.pathsep.join(p for p in (tmp, env.get("PYTHONPATH"))
                                                   if p)}
        _, text, rc = run_pytest(root, "-q", "-p", "no:cacheprovider", "-p", "_qe_modules_probe",
                                 env=probe_env)
        check(rc, text, {0}, "plugin run with the module probe")
        names: list[str] = json.loads(out.read_text())
        return names


def measure(root: Path, n: int, runs: int, env_for_run: dict[str, str] | None,
            fresh_cache: bool) -> tuple[list[float], list[float]]:
    plugin: list[float] = []
    without: list[float] = []
    arms: list[tuple[list[float], tuple[str, ...]]] = [(plugin, ()),
                                                       (without, ("-p", "no:queryeval"))]
    for i in range(runs):
        for arm, args in arms if i % 2 == 0 else arms[::-1]:  # alternate which goes first
            env = dict(os.environ if env_for_run is None else env_for_run)
            with tempfile.TemporaryDirectory(prefix="qe-pyc-") as cache:
                if fresh_cache:
                    env.update(PYTHONPYCACHEPREFIX=cache, PYTHONDONTWRITEBYTECODE="1")
                seconds, text, rc = run_pytest(root, "-q", "-p", "no:cacheprovider", *args,
                                               env=env)
            check(rc, text, {0}, "plain project run")
            if f"{n} passed" not in text:
                raise SystemExit(f"expected {n} passed:\n{text[-2000:]}")
            arm.append(seconds)
    return plugin, without


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tests", type=int, default=200)
    ap.add_argument("--runs", type=int, default=15, help="repetitions of each arm per mode")
    args = ap.parse_args()
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory(prefix="qe-no-suite-") as tmp:
        root = Path(tmp)
        write_project(root, args.tests)
        env = dict(os.environ)
        modules = imported_modules(root, env)
        print(f"plain project: {args.tests} tests in {MODULES} modules, tests/test_config.yaml, "
              "no queryeval.yaml")
        print(f"modules of pytest_queryeval imported by a plugin run: {len(modules)} "
              f"({', '.join(modules)})")
        if not modules:
            raise SystemExit("the plugin was not loaded (is it installed, autoload enabled?)")
        run_pytest(root, "-q", "-p", "no:cacheprovider", env=env)  # warm-up: .pyc written
        for label, fresh in (("bytecode cached", False), ("no bytecode cache", True)):
            plugin, without = measure(root, args.tests, args.runs, env, fresh)
            ratio = median(plugin) / median(without)
            # each repetition's two runs are back to back: their ratio sees one machine load
            paired = median([p / w for p, w in zip(plugin, without, strict=True)])
            print(f"{label}:")
            print(f"  with the plugin     {spread(plugin)}")
            print(f"  -p no:queryeval     {spread(without)}")
            print(f"  ratio {ratio:.3f} ({(ratio - 1) * 100:+.1f} %; target within 5 %), "
                  f"median of the paired ratios {paired:.3f}")


if __name__ == "__main__":
    main()
