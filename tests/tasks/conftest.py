"""Fixtures the task tests share."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def chinook(tmp_path: Path) -> Path:
    """A copy of the example suite's Chinook file the test may write through."""
    path = tmp_path / "chinook.sqlite"
    shutil.copyfile(ROOT / "example_suite" / "data" / "chinook.sqlite", path)
    return path
