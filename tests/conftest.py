"""Shared test configuration: where the reference data lives, and the server fixtures."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: Real data and reference outputs, kept beside the repository (not copied into it).
SHARED_DATA = Path(os.environ.get("QUERYEVAL_SHARED_DATA", ROOT.parent / "shared" / "data")).resolve()

pytest_plugins = ["tests.fixtures.postgres", "tests.fixtures.oxigraph"]


def pytest_configure(config: pytest.Config) -> None:
    """Import the C-extension libraries before any in-process pytester run.

    pytester restores ``sys.modules`` after each inner run; a library first imported inside
    one is then imported a second time over its still-loaded extension modules, which breaks
    SQLAlchemy's and numpy's compiled parts for the rest of the session.
    """
    import importlib

    for name in ("numpy", "sqlalchemy", "sqlalchemy.dialects.postgresql.psycopg", "psycopg",
                 "pyoxigraph", "yaml"):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"reference data not found at {SHARED_DATA} (set QUERYEVAL_SHARED_DATA)")
    return SHARED_DATA
