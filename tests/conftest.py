"""Shared test configuration: where the reference data lives, and the server fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: Real data and reference outputs, kept beside the repository (not copied into it).
SHARED_DATA = Path(os.environ.get("QUERYEVAL_SHARED_DATA", ROOT.parent / "shared" / "data")).resolve()

pytest_plugins = ["tests.fixtures.postgres", "tests.fixtures.oxigraph"]


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"reference data not found at {SHARED_DATA} (set QUERYEVAL_SHARED_DATA)")
    return SHARED_DATA
