"""Shared test configuration: where the reference data lives, and the server fixtures."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import shutil
import sys
from pathlib import Path

import pytest

from tests import together
from tests.support import write_suite

ROOT = Path(__file__).resolve().parent.parent
#: Real data and reference outputs the tests need, in the repository (see tests/data/README.md).
DATA = ROOT / "tests" / "data"
#: Files the example suite already holds byte for byte: the test layout name -> the file.
FROM_EXAMPLE_SUITE = {
    "chinook/Chinook_Sqlite.sqlite": "example_suite/data/chinook.sqlite",
    "brick/soda_brick.ttl": "example_suite/data/soda_brick.ttl",
    "buildingqa/eval_buildings/soda.ttl": "example_suite/data/soda_brick.ttl",
    "sdmx/imf": "example_suite/data/sdmx",
}
#: Optional bigger reference data beside the clone, for extra cross-checks only (never needed).
EXTRA_DATA = Path(os.environ.get("QUERYEVAL_SHARED_DATA", ROOT.parent / "shared" / "data")).resolve()

pytest_plugins = ["tests.fixtures.postgres", "tests.fixtures.oxigraph",
                  "tests.fixtures.sparql_standin", "tests.fixtures.openai_standin",
                  "tests.fixtures.llm_server", "tests.fixtures.agent_standin",
                  "tests.fixtures.bolt_server"]


#: Packages with compiled parts that cannot be imported twice in one process: pytester must
#: never drop them from ``sys.modules`` (see ``_keep_compiled_packages``).
COMPILED_PACKAGES = frozenset({
    "torch", "torchgen", "functorch", "sentence_transformers", "transformers", "tokenizers",
    "safetensors", "huggingface_hub", "numpy", "scipy", "sklearn", "duckdb", "pyoxigraph",
    "sqlalchemy", "psycopg", "psycopg_binary", "yaml", "rdflib", "openpyxl", "pandas", "openai",
    "pydantic", "pydantic_core",
    # sqlglot's compiled build (sqlglotc, the ``fast`` extra): its compiled parser keeps the
    # classes of the first import, and a re-imported ``Dialect`` is not theirs ("Invalid
    # dialect type for '<...SQLite object>'")
    "sqlglot",
})


def _keep_compiled_packages() -> None:
    """Make every pytester ``sys.modules`` snapshot keep the compiled packages.

    pytester restores ``sys.modules`` when a ``pytester`` test ends, removing every module
    imported since it started, its own test code included (``pytest.importorskip`` in a test
    that uses ``pytester``). torch imported there is then imported a second time over its
    still-loaded C extension: the xdist worker crashed, or ``import torch`` failed with
    "SystemError: bad call flags", in whichever embedding test that worker ran next.
    Importing the packages up front is not enough: their submodules imported later (torch
    loads many lazily) would still be removed, so the snapshot keeps them by package name.
    """
    from _pytest import pytester

    snapshot = pytester.SysModulesSnapshot
    if getattr(snapshot, "_queryeval_keeps_compiled", False):
        return
    original = snapshot.__init__

    def init(self: object, preserve: object = None) -> None:
        def keep(name: str) -> bool:
            return name.partition(".")[0] in COMPILED_PACKAGES or bool(
                preserve is not None and preserve(name))  # type: ignore[operator]

        original(self, preserve=keep)  # type: ignore[arg-type]

    snapshot.__init__ = init  # type: ignore[method-assign]
    snapshot._queryeval_keeps_compiled = True  # type: ignore[attr-defined]

    # The kept packages' import hooks stay too: sentence-transformers and transformers add
    # finders to ``sys.meta_path`` for their module aliases (``sentence_transformers.models``),
    # and pytester's path snapshot would drop them while the packages stay imported.
    paths = pytester.SysPathsSnapshot
    restore_paths = paths.restore

    def restore(self: object) -> None:
        hooks = [f for f in sys.meta_path
                 if type(f).__module__.partition(".")[0] in COMPILED_PACKAGES]
        restore_paths(self)  # type: ignore[arg-type]
        sys.meta_path.extend(f for f in hooks if f not in sys.meta_path)

    paths.restore = restore  # type: ignore[method-assign]


def pytest_configure(config: pytest.Config) -> None:
    """Import the C-extension libraries before any in-process pytester run.

    pytester restores ``sys.modules`` after each inner run; a library first imported inside
    one is then imported a second time over its still-loaded extension modules, which breaks
    SQLAlchemy's and numpy's compiled parts for the rest of the session.

    The plugin's own internals too: in this outer session, which has no case file, the plugin
    sleeps (imports only its hook module); a module of it first imported in an inner run would
    be dropped after it and imported afresh by the next, while modules imported before keep
    its former classes and sentinels (``Missing``: "expected predicted SQL text, got Missing").
    """
    import importlib

    _keep_compiled_packages()
    _share_embeddings_cache(config)
    together.name_the_file(config)

    for name in ("numpy", "sqlalchemy", "sqlalchemy.dialects.postgresql.psycopg", "psycopg",
                 "pyoxigraph", "yaml", "pytest_queryeval.plugin.runner", "pytest_queryeval.plugin.controller",
                 "pytest_queryeval.plugin.xdist"):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker: which tests share a module fixture's value (:mod:`tests.together`)."""
    together.write_keys(config, items)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """``-n`` with the default ``load``: tests sharing a module fixture's value on one worker."""
    if config.getvalue("dist") != "load":
        return None
    return together.scheduler(config, log)


#: Set by this session's controller: the embeddings cache every run of the session shares.
EMBEDDINGS_CACHE_ENV = "QUERYEVAL_EMBEDDINGS_CACHE"


def _share_embeddings_cache(config: pytest.Config) -> None:
    """One embeddings cache for every suite this test session runs, unless the caller set one.

    The suites run as subprocesses (``-p no:cacheprovider``: no pytest cache, so no vector
    cache) and each run holding a JSON case imported torch and loaded the packaged model again
    (10 to 50 s on this 2-core machine; the example suite alone runs over twenty times). The
    vectors are still the packaged model's, encoded by the first run that needs a text; this is
    the plugin's documented cache, as a user's CI keeps it. The controller makes the folder and
    xdist workers and every subprocess inherit it from the environment. Tests of the model, of
    the cache and of loading set their own ``QUERYEVAL_EMBEDDINGS_CACHE`` with monkeypatch.
    """
    import tempfile

    if EMBEDDINGS_CACHE_ENV in os.environ or hasattr(config, "workerinput"):
        return
    folder = tempfile.mkdtemp(prefix="queryeval-test-embeddings-")
    os.environ[EMBEDDINGS_CACHE_ENV] = folder

    def remove() -> None:
        os.environ.pop(EMBEDDINGS_CACHE_ENV, None)
        shutil.rmtree(folder, ignore_errors=True)

    config.add_cleanup(remove)


def materialise_data(dest: Path) -> Path:
    """Lay out tests/data (``*.gz`` decompressed) plus the example suite's files under ``dest``.

    A copy, not the repository's files: a test that writes to its data cannot change the
    repository, and ``SHA256SUMS`` proves each file is the one its PROVENANCE.md names.
    """
    for src in sorted(DATA.rglob("*")):
        if src.is_dir() or src.name == "SHA256SUMS":
            continue
        rel = src.relative_to(DATA)
        target = dest / (rel.with_suffix("") if src.suffix == ".gz" else rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.suffix == ".gz":
            with gzip.open(src, "rb") as fin, target.open("wb") as fout:
                shutil.copyfileobj(fin, fout)
        else:
            shutil.copyfile(src, target)
    for rel, origin in FROM_EXAMPLE_SUITE.items():
        if (ROOT / origin).is_dir():
            shutil.copytree(ROOT / origin, dest / rel)
        else:
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / origin, dest / rel)
    bad = []
    for line in (DATA / "SHA256SUMS").read_text(encoding="utf-8").splitlines():
        digest, rel = line.split(maxsplit=1)
        path = dest / rel
        if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            bad.append(rel)
    if bad:
        raise RuntimeError(f"reference data differs from tests/data/SHA256SUMS: {', '.join(bad)}")
    return dest


@pytest.fixture(scope="session")
def shared_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reference data of tests/data, decompressed into a session temp dir."""
    return materialise_data(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="session")
def extra_data() -> Path:
    """Bigger reference data beside the clone (``QUERYEVAL_SHARED_DATA``), for extra cross-checks.

    Absent in a fresh clone: the tests that need it are skipped, never failed.
    """
    if not EXTRA_DATA.is_dir():
        pytest.skip(f"extra cross-check: optional reference data not found at {EXTRA_DATA} "
                    "(set QUERYEVAL_SHARED_DATA to run it)")
    return EXTRA_DATA


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    """pytester's directory as a suite: ``test_*.yaml`` case files and a ``{}`` queryeval.yaml
    (tests/support.py ``write_suite``); a test writes its own cases and config over it, and
    removes that queryeval.yaml when it moves its suite into a sub-directory (the baseline is
    written beside the top-most one)."""
    write_suite(pytester.path)
    return pytester
