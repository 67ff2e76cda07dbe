"""Faults at the end of a run (issue 54, item 5): a full disk while the reports are written, the
temporaries a killed run leaves, a prediction cache that cannot be written.

The full disk is a real one: a 64 KiB tmpfs mounted for the test (root only; the test is skipped,
saying so, where mounting is not permitted), filled before the run, so the JSON report's write
fails with ENOSPC as it would on a full CI runner.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_queryeval.errors import QueryEvalWarning
from pytest_queryeval.predict import exchange
from pytest_queryeval.predict.base import Prediction
from pytest_queryeval.predict.cache import PredictionCache
from tests.support import make_case, write_suite

CASES = {"test_q.yaml": {"kind": "json", "cases": [
    {"id": "a", "question": "q", "gold": {"x": 1}, "predicted": {"x": 1}}]}}


def _mount(directory: Path, options: str) -> Iterator[Path]:
    directory.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(directory)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not permitted here: {done.stderr.strip()}")
    try:
        yield directory
    finally:
        subprocess.run(["umount", str(directory)], check=False)


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB file system with no space left."""
    for mounted in _mount(tmp_path / "full", "size=64k"):
        fd = os.open(mounted / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"x" * 4096):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        yield mounted


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_a_full_disk_names_the_report_and_keeps_the_others(pytester: pytest.Pytester,
                                                            full_disk: Path) -> None:
    write_suite(pytester.path, files=CASES)
    result = pytester.runpytest(f"--queryeval-json={full_disk}/r.json",
                                "--queryeval-markdown=r.md", "--queryeval-html=r.html")
    out = result.stdout.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out, out[-3000:]
    result.stdout.fnmatch_lines([
        f"error: JSON report NOT written: {full_disk}/r.json: No space left on device",
        f"HTML report: {pytester.path}/r.html", f"Markdown summary: {pytester.path}/r.md",
        "queryeval: PASSED"])
    assert result.ret == 0  # the run's own status, as the written reports state it
    assert "queryeval: PASSED" in (pytester.path / "r.md").read_text(encoding="utf-8")
    assert sorted(os.listdir(full_disk)) == ["filler"]  # its temporary removed


def test_a_killed_runs_temporaries_are_cleaned_by_the_next(pytester: pytest.Pytester) -> None:
    """A 0-byte workbook temporary and a JSON one of a process that is gone are removed when
    the next run writes those reports; a running process's, and files not named as the
    plugin names them, are kept."""
    write_suite(pytester.path, files=CASES)
    dead, alive = _dead_pid(), os.getpid()
    left = [f".r.{dead}-0123456789ab.xlsx", f".r.json.{dead}-0123456789ab.tmp"]
    kept = [f".r.{alive}-0123456789ab.xlsx", ".r.0123456789ab.xlsx", f".r.{dead}-x.xlsx"]
    for name in left + kept:
        (pytester.path / name).touch()
    result = pytester.runpytest("--queryeval-json=r.json", "--queryeval-xlsx=r.xlsx")
    assert result.ret == 0
    names = set(os.listdir(pytester.path))
    assert not names & set(left)
    assert set(kept) <= names
    assert {"r.json", "r.xlsx"} <= names


def test_a_killed_runs_empty_temporary_folders_are_cleaned() -> None:
    parent = Path(tempfile.gettempdir())
    dead = _dead_pid()
    empty = parent / f"queryeval-xdist-{dead}-abcd_123"
    full = parent / f"queryeval-xdist-{dead}-efgh_456"
    live = parent / f"queryeval-xdist-{os.getpid()}-ijkl_789"
    for folder in (empty, full, live):
        folder.mkdir()
    (full / "answer").touch()
    root = exchange.create_root()
    try:
        assert root.name.startswith(f"queryeval-xdist-{os.getpid()}-")
        assert not empty.exists()
        assert full.exists() and live.exists()  # a folder that holds something is kept
    finally:
        exchange.remove_root(root)
        (full / "answer").unlink()
        for folder in (full, live):
            folder.rmdir()


def test_a_read_only_prediction_cache_says_once_that_nothing_is_stored(tmp_path: Path) -> None:
    if os.geteuid() == 0:  # root writes through permission bits: a read-only file system
        folders = _mount(tmp_path / "ro", "ro,size=64k,mode=0755")
        directory = next(folders)
    else:
        directory = tmp_path / "ro"
        directory.mkdir(mode=0o555)
    cache = PredictionCache(directory, {"source": "http", "url": "http://127.0.0.1:1/"})
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        answers = [cache.answer(make_case(kind="json", id=f"c{i}"), {"q": i},
                                lambda: Prediction({"x": 1})) for i in range(3)]
    said = [str(w.message) for w in seen if issubclass(w.category, QueryEvalWarning)]
    assert len(said) == 1, said
    assert said[0].startswith(f"queryeval: prediction cache {directory}: nothing can be stored")
    assert [a.details["cache"] for a in answers] == ["not stored: OSError"] * 3
    if os.geteuid() == 0:
        next(folders, None)


def test_a_baseline_the_full_disk_refuses_is_named(pytester: pytest.Pytester,
                                                   full_disk: Path) -> None:
    write_suite(pytester.path, files=CASES)
    result = pytester.runpytest(f"--queryeval-baseline={full_disk}/b.json",
                                "--queryeval-update-baseline", "--queryeval-json=r.json")
    out = result.stdout.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out, out[-3000:]
    result.stdout.fnmatch_lines([f"JSON report: {pytester.path}/r.json",
                                 f"error: baseline NOT updated ({full_disk}/b.json): "
                                 "No space left on device"])
    assert sorted(os.listdir(full_disk)) == ["filler"]
