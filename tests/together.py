"""One xdist worker for all the tests that share one module-scoped fixture value.

``make test`` runs ``-n 2`` with xdist's default ``load`` scheduling, which deals tests out
one by one: the tests of one module go to both workers, so a module-scoped fixture is made
once per worker. For most modules that costs nothing; for the modules whose module fixture
runs whole suites (a conformance artifact's six runs, the example suite's, the SLURM
preemption) it doubled the largest costs of the run. xdist's own answer, ``--dist loadgroup``
with ``xdist_group`` marks, silently does nothing on pytest 9.2 (pytest-dev/pytest-xdist#1386:
it renames the node id, which pytest 9.2 no longer reads), and a mark on a fixture's
``pytest.param`` never reached it anyway.

So the grouping is computed where the fixtures are known, on each worker after collection:
a test marked ``xdist_group`` (the modules whose module fixtures run whole suites) that uses a
module-scoped fixture belongs with the other tests of its group that use the
same parameters of the module-scoped fixtures. Only marked modules: a module fixture that is
cheap (a loopback stand-in) is better made twice than a module's slow tests kept on one worker. The worker writes those
keys to a file the controller named in the environment; the controller's scheduler (xdist's
``loadscope`` with this key as the scope) reads them. A test with no key is a scope of its own,
dealt out as ``load`` deals it; without the file every test is, which is ``load``.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

#: The file prefix the controller names; each worker writes ``<prefix>.<worker id>``.
TOGETHER_ENV = "QUERYEVAL_TEST_TOGETHER"


def name_the_file(config: pytest.Config) -> None:
    """On the controller of an ``-n`` run: the prefix of the workers' key files."""
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        return
    folder = tempfile.mkdtemp(prefix="queryeval-test-together-")
    os.environ[TOGETHER_ENV] = str(Path(folder) / "keys")

    def remove() -> None:
        os.environ.pop(TOGETHER_ENV, None)
        for path in Path(folder).iterdir():
            path.unlink()
        Path(folder).rmdir()

    config.add_cleanup(remove)


def key(item: pytest.Item) -> str | None:
    """For a test marked ``xdist_group`` that uses a module fixture: the group and
    the parameters of the module-scoped fixtures it uses (each artifact its own group)."""
    mark = item.get_closest_marker("xdist_group")
    info = getattr(item, "_fixtureinfo", None)
    if mark is None or info is None:
        return None
    module_scoped = {name for name, defs in info.name2fixturedefs.items()
                     if defs and defs[-1].scope == "module"}
    if not module_scoped:
        return None
    callspec = getattr(item, "callspec", None)
    indices = callspec.indices if callspec is not None else {}
    chosen = ",".join(f"{name}={indices[name]}" for name in sorted(module_scoped & set(indices)))
    group = mark.args[0] if mark.args else mark.kwargs.get("name", "default")
    return f"{group}::{chosen}"


def write_keys(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a worker: the keys of this collection, written whole (a rename) for the controller."""
    prefix = os.environ.get(TOGETHER_ENV)
    worker = getattr(config, "workerinput", {}).get("workerid")
    if not prefix or not worker:
        return
    keys = {item.nodeid: k for item in items if (k := key(item)) is not None}
    target = Path(f"{prefix}.{worker}")
    partial = Path(f"{prefix}.{worker}.partial")
    partial.write_text(json.dumps(keys), encoding="utf-8")
    partial.replace(target)


def read_keys() -> dict[str, str]:
    """On the controller, once every worker has collected: any worker's keys (they collected
    the same tests, or xdist stops the run)."""
    prefix = os.environ.get(TOGETHER_ENV)
    if not prefix:
        return {}
    for path in sorted(Path(prefix).parent.glob(Path(prefix).name + ".gw*")):
        if path.suffix != ".partial":
            keys: dict[str, str] = json.loads(path.read_text(encoding="utf-8"))
            return keys
    return {}


def scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's ``loadscope`` with each test's scope its key, or the test itself."""
    from xdist.scheduler import LoadScopeScheduling

    class Together(LoadScopeScheduling):  # type: ignore[misc]
        keys: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.keys is None:
                self.keys = read_keys()
            return self.keys.get(nodeid, nodeid)

    return Together(config, log)
