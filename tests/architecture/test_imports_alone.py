"""Every module of the package imports on its own, first, in a fresh interpreter.

Why: the import-graph test reads edges module to module, but importing ``a.b`` runs ``a``'s
``__init__`` first, so a cycle can pass through a package's ``__init__`` that no edge shows.
One did: ``import pytest_queryeval.report.terminal`` as a program's first import raised
ImportError (report.denominators -> conclude.aggregate -> conclude/__init__ ->
report.terminal), hidden because the plugin always happened to import in another order; a
script calling ``pytest_queryeval.check`` met it. One child process per module (forked from an
interpreter that has imported nothing of the package) keeps this to a few seconds.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest_queryeval

ROOT = Path(pytest_queryeval.__file__).parent

SCRIPT = r"""
import os, sys, importlib, json
# third-party libraries loaded once before the forks (the package's own modules are not:
# that is what each child imports first)
for lib in ("pytest", "yaml", "sqlglot", "sqlglot.optimizer", "duckdb", "sqlalchemy", "psycopg",
            "httpx", "rdflib", "pyoxigraph", "numpy", "xlsxwriter", "openpyxl", "jinja2"):
    try:
        importlib.import_module(lib)
    except Exception:
        pass
failed = {}
for name in sys.argv[1:]:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            importlib.import_module(name)
            os._exit(0)
        except BaseException as exc:
            os.write(w, f"{type(exc).__name__}: {exc}".encode()[:2000])
            os._exit(1)
    os.close(w)
    message = os.read(r, 4096).decode(errors="replace")
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if status:
        failed[name] = message
print(json.dumps(failed))
"""


def _modules() -> list[str]:
    out = []
    for path in sorted(ROOT.rglob("*.py")):
        parts = ["pytest_queryeval", *path.relative_to(ROOT).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        elif parts[-1] == "__main__":
            continue  # a program, run with -m, not imported
        out.append(".".join(parts))
    return out


def test_every_module_imports_first() -> None:
    import json

    modules = _modules()
    assert len(modules) > 150
    run = subprocess.run([sys.executable, "-c", SCRIPT, *modules], capture_output=True,
                         text=True, check=False, cwd=ROOT.parent)
    assert run.returncode == 0, run.stderr[-3000:]
    failed = json.loads(run.stdout.strip().splitlines()[-1])
    # optional back-ends absent from this install are not import-order bugs
    failed = {k: v for k, v in failed.items() if not v.startswith("ModuleNotFoundError")}
    assert failed == {}
