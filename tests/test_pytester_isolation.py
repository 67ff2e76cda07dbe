"""pytester's ``sys.modules`` and ``sys.meta_path`` restore must not unload torch & co.

A ``pytester`` test that imported sentence-transformers (``pytest.importorskip`` in
tests/hardening/test_interrupt_predictors.py) left torch's C extension loaded under module
names pytester then removed; the embedding tests that the same xdist worker ran next crashed
the worker or failed with "SystemError: bad call flags" (fresh clones and CI, order-dependent).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest
from _pytest.pytester import SysModulesSnapshot, SysPathsSnapshot

ROOT = Path(__file__).resolve().parent.parent


def test_module_snapshots_keep_compiled_packages() -> None:
    snapshot = SysModulesSnapshot()
    kept = types.ModuleType("numpy._queryeval_probe")
    dropped = types.ModuleType("_queryeval_probe_plain")
    sys.modules[kept.__name__] = kept
    sys.modules[dropped.__name__] = dropped
    try:
        snapshot.restore()
        assert sys.modules.get(kept.__name__) is kept
        assert dropped.__name__ not in sys.modules
    finally:
        sys.modules.pop(kept.__name__, None)
        sys.modules.pop(dropped.__name__, None)


def test_path_snapshots_keep_the_import_hooks_of_compiled_packages() -> None:
    class Finder:
        def find_spec(self, *args: object) -> None:
            return None

    class OtherFinder(Finder):
        pass

    Finder.__module__ = "sentence_transformers.util.deprecated_import"
    snapshot = SysPathsSnapshot()
    kept, dropped = Finder(), OtherFinder()
    sys.meta_path.extend([kept, dropped])
    try:
        snapshot.restore()
        assert kept in sys.meta_path
        assert dropped not in sys.meta_path
    finally:
        sys.meta_path[:] = [f for f in sys.meta_path if f not in (kept, dropped)]


@pytest.mark.slow
def test_torch_still_works_after_a_pytester_snapshot_dropped_it() -> None:
    """The real sequence, in a fresh interpreter: snapshot, import sentence-transformers,
    restore (as a pytester test's teardown does), then import and use it again."""
    if importlib.util.find_spec("sentence_transformers") is None:
        pytest.skip("sentence-transformers is not installed")
    script = textwrap.dedent("""
        import importlib
        from _pytest.pytester import SysModulesSnapshot, SysPathsSnapshot
        from tests.conftest import _keep_compiled_packages

        _keep_compiled_packages()
        modules, paths = SysModulesSnapshot(), SysPathsSnapshot()
        import sentence_transformers
        paths.restore()
        modules.restore()
        importlib.import_module("sentence_transformers.models")
        import torch
        print(float(torch.ones(3).sum()))
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "3.0"


def test_a_kind_kept_from_an_unloaded_module_is_made_anew() -> None:
    """In a fresh interpreter (this one may have the SQL kind imported for good): the SQL
    kind asked for inside a module snapshot, the snapshot restored (a pytester in-process
    run's end), then asked again. The kind kept from before ran the unloaded module's code
    beside the modules imported anew (the comparison deadline set in one copy of its module,
    read in another)."""
    script = textwrap.dedent("""
        from _pytest.pytester import SysModulesSnapshot
        from pytest_queryeval.kinds import get_kind, loaded_kinds

        snapshot = SysModulesSnapshot()
        first = get_kind("sql")
        snapshot.restore()
        print(sorted(loaded_kinds()))
        second = get_kind("sql")
        import pytest_queryeval.kinds.sql as now
        print(type(first) is now.SqlKind, type(second) is now.SqlKind, second is get_kind("sql"))
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines() == ["[]", "False True True"], done.stdout
