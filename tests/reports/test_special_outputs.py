"""Reports are written only where they belong (issue 54, item 4).

Every writer renamed a temporary file over its path whatever it was: a FIFO or a device node
became a regular file (as root, ``--queryeval-json=/dev/null`` replaced the machine's
``/dev/null``), and ``queryeval view r.json -o r.json`` overwrote its own input. A FIFO and a
character device are now written to as a stream, in place; a block device is refused; an
output that is one of the inputs of ``queryeval merge`` or ``queryeval view`` is a usage error
before anything is written. The device nodes here are made in a temporary folder (a copy of
``/dev/null``'s numbers): the machine's own are never touched.
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest
from tests.support import dump, read_report, write_suite

from pytest_queryeval._util.safefile import UnsafeFile, write_atomic
from pytest_queryeval.conclude import load_writer
from pytest_queryeval.conclude.cli import main as queryeval
from pytest_queryeval.plugin.declare import REPORT_WRITERS

REPORT = Path(__file__).parent / "current.json"
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="os.mknod of a device needs root")


class _Reader:
    """A reader of a FIFO in a thread: what a ``cat fifo`` beside the run would get."""

    def __init__(self, path: Path) -> None:
        self.data = b""
        self.thread = threading.Thread(target=self._read, args=(path,), daemon=True)
        self.thread.start()

    def _read(self, path: Path) -> None:
        with open(path, "rb") as fh:
            self.data = fh.read()

    def result(self) -> bytes:
        self.thread.join(20)
        assert not self.thread.is_alive()
        return self.data


def _null_copy(directory: Path) -> Path:
    node = directory / "null"
    os.mknod(node, stat.S_IFCHR | 0o666, os.stat("/dev/null").st_rdev)
    return node


@pytest.mark.parametrize("name", list(REPORT_WRITERS))
def test_each_writer_streams_into_a_fifo(tmp_path: Path, name: str) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = _Reader(fifo)
    load_writer(REPORT_WRITERS[name])(read_report(REPORT), fifo, None)
    data = reader.result()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert os.listdir(tmp_path) == ["pipe"]  # no temporary beside it
    if name == "json":
        assert [c["id"] for c in __import__("json").loads(data)["cases"]] == [
            c["id"] for c in read_report(REPORT)["cases"]]
    elif name == "xlsx":
        assert data[:2] == b"PK" and len(data) > 1000  # a whole zip
    else:
        assert len(data) > 100


@root_only
@pytest.mark.parametrize("name", list(REPORT_WRITERS))
def test_each_writer_leaves_a_character_device_one(tmp_path: Path, name: str) -> None:
    node = _null_copy(tmp_path)
    rdev = os.stat(node).st_rdev
    load_writer(REPORT_WRITERS[name])(read_report(REPORT), node, None)
    st = os.lstat(node)
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == rdev
    assert sorted(os.listdir(tmp_path)) == ["null"]


@root_only
def test_a_block_device_is_refused_and_kept(tmp_path: Path) -> None:
    node = tmp_path / "disk"
    os.mknod(node, stat.S_IFBLK | 0o600, os.makedev(7, 250))  # a loop device's numbers
    with pytest.raises(UnsafeFile, match="a block device, not a regular file: never replaced"):
        write_atomic(node, "{}", special="stream")
    assert stat.S_ISBLK(os.lstat(node).st_mode)


def test_a_file_that_is_not_a_report_never_streams_into_a_fifo(tmp_path: Path) -> None:
    """A baseline, a pin file, a cache entry: refused at a FIFO (never replaced, never fed)."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(UnsafeFile, match="a FIFO"):
        write_atomic(fifo, "{}")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@root_only
def test_a_run_writes_its_reports_into_a_device_and_a_fifo(pytester: pytest.Pytester) -> None:
    write_suite(pytester.path, files={"test_q.yaml": {"kind": "json", "cases": [
        {"id": "a", "question": "q", "gold": {"x": 1}, "predicted": {"x": 1}}]}})
    node = _null_copy(pytester.path)
    fifo = pytester.path / "pipe"
    os.mkfifo(fifo)
    reader = _Reader(fifo)
    result = pytester.runpytest(f"--queryeval-json={fifo}", f"--queryeval-html={node}")
    assert result.ret == 0
    result.stdout.fnmatch_lines([f"JSON report: {fifo}", f"HTML report: {node}"])
    assert [c["id"] for c in __import__("json").loads(reader.result())["cases"]] == ["a"]
    assert stat.S_ISCHR(os.lstat(node).st_mode) and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_view_refuses_to_write_over_its_input(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "r.json"
    run.write_bytes(REPORT.read_bytes())
    (tmp_path / "link.json").symlink_to(run)
    for output in (run, tmp_path / "link.json"):
        assert queryeval(["view", str(REPORT), str(run), "-o", str(output)]) == 4
        err = capsys.readouterr().err
        assert f"-o {output}: is RUN.json 2 ({run}), which the page is made from" in err
    assert run.read_bytes() == REPORT.read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["link.json", "r.json"]


def test_merge_refuses_to_write_over_a_shard_or_the_baseline(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shard = tmp_path / "s1.json"
    shard.write_bytes(REPORT.read_bytes())
    base = tmp_path / "base.json"
    base.write_bytes(REPORT.read_bytes())
    status = queryeval(["merge", str(shard), "-o", str(shard), f"--queryeval-html={base}",
                        f"--queryeval-baseline={base}"])
    assert status == 4
    err = capsys.readouterr().err
    assert f"-o/--queryeval-json {shard}: is shard 1 ({shard}), which this merge reads" in err
    assert (f"--queryeval-html {base}: is the --queryeval-baseline file ({base}), which this "
            "merge reads") in err
    assert shard.read_bytes() == base.read_bytes() == REPORT.read_bytes()
    assert dump(sorted(os.listdir(tmp_path))) == dump(["base.json", "s1.json"])
