"""Reading the files a suite names: only a regular file, and only up to a cap for its purpose.

Why: a case file or ``queryeval.yaml`` names files that the plugin then reads (result CSVs,
predictions files, graph and structure files, database files it fingerprints). A name can point
anywhere: ``predicted_result: /dev/zero`` was read until memory ran out, a FIFO made collection
wait forever in ``open``, a 5 GB sparse file was read whole. Every such file is opened here with
``O_NONBLOCK`` (opening a FIFO never waits for a writer) and checked with ``fstat`` on the open
descriptor (nothing can be swapped in between the check and the read) before a byte is read; a
file that grows while it is read is cut at the cap and refused.

The errors are :class:`OSError` subclasses so that the callers' existing ``except OSError``
turn them into their own located messages (``file:line: key: 'name': ...``); they do not repeat
the path, which would put a machine path into the reports. The caps are documented in
``docs/suite-files.md``.

Writing lives here too (:func:`write_atomic`, :func:`create_temp`): the reports, the baseline,
pin files, the shared gold cache and saved counterexamples all write through it, and a utility
at the bottom keeps those modules from importing the report package for it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

MiB = 1024 * 1024
GiB = 1024 * MiB

#: The largest file read for each purpose, in bytes (None: no size cap, a regular file only).
LIMITS: dict[str, int | None] = {
    "yaml": 64 * MiB,  # a case file, queryeval.yaml, a predictions file in YAML
    "csv": 64 * MiB,  # gold_result / predicted_result CSV files
    "predictions": 256 * MiB,  # predictions: {source: file} (JSON, JSONL)
    "structure": 64 * MiB,  # SDMX-ML structure messages, a Spider tables.json
    "graph": 4 * GiB,  # an RDF graph file loaded into a store
    "database": None,  # a SQLite or DuckDB file: the engine reads it; it is hashed in chunks
    "input": GiB,  # a report shard for queryeval merge, a benchmark file for queryeval-import
    "judge": 64 * MiB,  # the judge's pin file and labels file (a verdict is ~200 bytes)
}

#: What each purpose is called in messages.
LABELS = {
    "yaml": "a YAML file", "csv": "a result CSV file", "predictions": "a predictions file",
    "structure": "a structure file", "graph": "a graph file", "database": "a database file",
    "input": "an input file", "judge": "a judge pins or labels file",
}


class UnsafeFile(OSError):
    """A named file that is not a regular file, is too large, or has no usable path."""


def _size(n: int) -> str:
    if n < MiB:
        return f"{n:,} bytes"
    return f"{n / GiB:g} GiB" if n >= GiB and n % GiB == 0 else f"{n / MiB:g} MiB"


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def path_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot name a file at all (a NUL byte, a lone surrogate), or None.

    YAML allows ``"\\ud800"`` and ``"\\0"`` in a string; the operating system takes neither, and
    Python raises ``ValueError``/``UnicodeEncodeError`` deep inside ``open`` or ``resolve``.
    """
    text = os.fspath(path)
    if "\0" in text:
        return "a path cannot contain a NUL character"
    try:
        os.fsencode(text)
    except UnicodeEncodeError as exc:
        return (f"a path cannot contain the lone surrogate {text[exc.start]!r} "
                f"(at character {exc.start + 1})")
    return None


def unreadable(path: str | os.PathLike[str]) -> str | None:
    """Why a path a suite names can never be read as a file (bad characters; an existing FIFO,
    device or socket), or None: a regular file, a directory, or nothing there yet (the reader
    says "not found" in its own words)."""
    problem = path_problem(path)
    if problem:
        return problem
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return f"{kind_of(mode)}, not a regular file"


def _checked(st: os.stat_result, path: str | os.PathLike[str], purpose: str) -> os.stat_result:
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeFile(f"{kind_of(st.st_mode)}, not a regular file "
                         f"({LABELS[purpose]} must be one)")
    cap = LIMITS[purpose]
    if cap is not None and st.st_size > cap:
        raise UnsafeFile(f"{st.st_size:,} bytes, over the {_size(cap)} limit for "
                         f"{LABELS[purpose]}")
    return st


def check(path: str | os.PathLike[str], purpose: str) -> os.stat_result:
    """``os.stat`` of ``path`` if it is a regular file under the cap (UnsafeFile otherwise).

    For files an engine opens itself (databases) or that are only located, not read; a missing
    file raises FileNotFoundError as ``os.stat`` does.
    """
    problem = path_problem(path)
    if problem:
        raise UnsafeFile(problem)
    return _checked(os.stat(path), path, purpose)


@contextmanager
def open_binary(path: str | os.PathLike[str], purpose: str) -> Iterator[BinaryIO]:
    """The file opened for reading once it is known to be a regular file under the cap."""
    problem = path_problem(path)
    if problem:
        raise UnsafeFile(problem)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        _checked(os.fstat(fd), path, purpose)
        os.set_blocking(fd, True)
        fh = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with fh:
        yield fh


def read_bytes(path: str | os.PathLike[str], purpose: str) -> bytes:
    """The whole file, refused when it is not a regular file or larger than the cap."""
    cap = LIMITS[purpose]
    with open_binary(path, purpose) as fh:
        data = fh.read() if cap is None else fh.read(cap + 1)
    if cap is not None and len(data) > cap:  # it grew after the check
        raise UnsafeFile(f"over the {_size(cap)} limit for {LABELS[purpose]}")
    return data


def read_text(path: str | os.PathLike[str], purpose: str) -> str:
    """:func:`read_bytes` decoded as UTF-8 (UnicodeDecodeError as ``Path.read_text``)."""
    return read_bytes(path, purpose).decode("utf-8")


def sha256(paths: Iterable[str | os.PathLike[str]], purpose: str) -> str:
    """The sha256 of the files' contents one after the other, read in chunks (fingerprints)."""
    import hashlib

    h = hashlib.sha256()
    for path in paths:
        with open_binary(path, purpose) as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def create_temp(directory: Path, prefix: str, suffix: str) -> tuple[int, str]:
    """A new temporary file in ``directory``, created with the user's umask (as ``open`` and
    pytest's junit writer do): ``tempfile.mkstemp`` makes it 0600, and a report renamed from
    it stays unreadable to the team or the CI step that publishes it."""
    for _ in range(100):
        name = os.path.join(directory, f"{prefix}{secrets.token_hex(6)}{suffix}")
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), name
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name in {directory}")


def write_atomic(path: Path, text: str | bytes) -> None:
    """Write via a temporary file and rename: readers never see a partial file (a report, a
    baseline, a pin file, a shared gold entry, a saved counterexample), and it is created with
    the user's umask (:func:`create_temp`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = create_temp(path.parent, f".{path.name}.", ".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8") if isinstance(text, str) else text)
            fh.flush()
            os.fsync(fh.fileno())  # a baseline is committed: it must survive a crash whole
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
