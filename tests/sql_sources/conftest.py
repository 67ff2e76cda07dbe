"""Fixtures for the SQL source tests: a writable copy of Chinook, so read-only is proven."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.engine import Evaluator
from pytest_queryeval.model import Case
from tests import support


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def chinook_sqlite(shared_data: Path, tmp_path: Path) -> Path:
    """A private, writable copy: a read-only source must keep it byte-for-byte unchanged."""
    dst = tmp_path / "chinook.sqlite"
    shutil.copyfile(shared_data / "chinook" / "Chinook_Sqlite.sqlite", dst)
    dst.chmod(0o644)
    return dst


def write_chinook_suite(root: Path, shared_data: Path, config: dict[str, Any],
                        files: dict[str, str]) -> None:
    """A suite in ``root`` on a writable copy of Chinook (``data/chinook.sqlite``, the
    ``chinook`` datasource), with ``config`` added to its queryeval.yaml and ``files``."""
    db = root / "data" / "chinook.sqlite"
    db.parent.mkdir()
    shutil.copyfile(shared_data / "chinook" / "Chinook_Sqlite.sqlite", db)
    db.chmod(0o644)
    support.write_suite(root, {"datasources": {"chinook": {"type": "sqlite",
                                                         "path": "data/chinook.sqlite"}},
                               **config}, files)


def write_file_and_inline_suite(root: Path, shared_data: Path, cases: dict[str, Any]) -> None:
    """A Chinook suite of ``cases`` whose case ``from-file`` takes its prediction from a
    predictions file and every other case inline: a run that reads both sources."""
    write_chinook_suite(
        root, shared_data,
        {"predictions": {"source": "file", "path": "predictions.jsonl"}},
        {"test_chinook.yaml": json.dumps(cases, indent=1),
         "predictions.jsonl": json.dumps({"id": "from-file", "predicted": "SELECT count(*) "
                                          "FROM track WHERE genreid <= 1"}) + "\n"})


class JsonCache:
    """pytest's cache stores JSON: round-trip every value through it, as the real one does."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}

    def get(self, key: str, default: Any) -> Any:
        return json.loads(self.data[key]) if key in self.data else default

    def set(self, key: str, value: Any) -> None:
        self.data[key] = json.dumps(value)


@pytest.fixture
def session() -> Iterator[Evaluator]:
    """The core's real Context, with an in-memory JSON cache."""
    s = Evaluator(cache=JsonCache())
    yield s
    s.close()


def make_case(gold: Any, *, spec: dict[str, Any] | None = None, name: str = "db",
              **kw: Any) -> Case:
    return support.make_case("sql", id=kw.pop("id", "case"), file=Path("test_cases.yaml"),
                             gold=gold, datasource=name if spec else None, source_spec=spec, **kw)


def run_bounded(fn: Any, limit: float = 120.0) -> Any:
    """Run ``fn`` in a thread and fail if it has not finished after ``limit`` seconds: a
    generous outer guard proving a runaway query *ends* (never a timing assertion)."""
    import threading

    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:
            box["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(limit)
    assert not t.is_alive(), f"query still running after {limit:g} s"
    if "error" in box:
        raise box["error"]
    return box.get("value")
