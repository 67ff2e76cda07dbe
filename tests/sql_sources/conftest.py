"""Fixtures for the SQL source tests: a writable copy of Chinook, so read-only is proven."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def chinook_sqlite(shared_data: Path, tmp_path: Path) -> Path:
    """A private, writable copy: a read-only source must keep it byte-for-byte unchanged."""
    dst = tmp_path / "chinook.sqlite"
    shutil.copyfile(shared_data / "chinook" / "Chinook_Sqlite.sqlite", dst)
    dst.chmod(0o644)
    return dst
