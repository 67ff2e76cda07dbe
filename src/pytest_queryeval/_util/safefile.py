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
import errno
import io
import os
import re
import secrets
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Literal

from .fifo import FIFO, Pipe, open_fifo

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
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, FIFO),
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
    kind = special_output(path)
    return f"{kind}, not a regular file" if kind else None


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


def located_utf8(data: bytes) -> str:
    """``data`` decoded as UTF-8; a byte that is not raises ValueError naming its line and
    column (``3: not UTF-8 text: byte 0xff at column 34``), for the readers of files a user
    hands the plugin, which locate their errors by line."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[:exc.start].decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
        line = before.count("\n") + 1
        column = len(before) - before.rfind("\n")
        raise ValueError(f"{line}: not UTF-8 text: byte 0x{data[exc.start]:02x} at column "
                         f"{column}") from None


def read_text(path: str | os.PathLike[str], purpose: str) -> str:
    """:func:`read_bytes` decoded as UTF-8 (UnicodeDecodeError as ``Path.read_text``)."""
    return read_bytes(path, purpose).decode("utf-8")


def open_append(path: str | os.PathLike[str], *, truncate: bool = False) -> int:
    """A descriptor appending to ``path`` (created if missing), refused with :class:`UnsafeFile`
    unless it is a regular file: opened without waiting (``O_NONBLOCK``: a FIFO there blocked
    ``open`` until a reader came, an xdist worker's journal forever) and checked on the open
    descriptor before a byte is written."""
    problem = path_problem(path)
    if problem:
        raise UnsafeFile(problem)
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags | (os.O_TRUNC if truncate else 0), 0o666)
    except OSError as exc:
        if exc.errno != errno.ENXIO:  # a FIFO with no reader, a socket: named below
            raise
        kind = special_output(path)
        raise UnsafeFile(f"{kind}, not a regular file" if kind else "not a regular file") \
            from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise UnsafeFile(f"{kind_of(mode)}, not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def sha256(paths: Iterable[str | os.PathLike[str]], purpose: str) -> str:
    """The sha256 of the files' contents one after the other, read in chunks (fingerprints)."""
    import hashlib

    h = hashlib.sha256()
    for path in paths:
        with open_binary(path, purpose) as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def process_alive(pid: int) -> bool:
    """Whether a process of ``pid`` runs (another user's counts): what decides that a
    temporary named after it, or a database copy, is a killed run's."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def _stale(entry: os.DirEntry[str], pattern: re.Pattern[str]) -> bool:
    """A temporary of this package whose process is gone: its name (``pattern``, with the pid
    of the process that made it) and owner (this user) say so; a process of that pid still
    running (even another program that took the pid) keeps it."""
    match = pattern.fullmatch(entry.name)
    if match is None:
        return False
    try:
        owner = entry.stat(follow_symlinks=False).st_uid
    except OSError:
        return False
    return owner == os.geteuid() and not process_alive(int(match.group(1)))


def clean_stale_temps(directory: Path, prefix: str, suffix: str) -> list[str]:
    """Remove the temporaries :func:`create_temp` made with ``prefix`` and ``suffix`` in
    ``directory`` for a process that no longer runs (a run killed while it wrote a report left
    ``.report.xlsx`` temporaries of 0 bytes); the names removed."""
    pattern = re.compile(re.escape(prefix) + r"(\d+)-[0-9a-f]{12}" + re.escape(suffix))
    removed = []
    with contextlib.suppress(OSError), os.scandir(directory) as entries:
        for entry in entries:
            if entry.is_file(follow_symlinks=False) and _stale(entry, pattern):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
                    removed.append(entry.name)
    return removed


def private_tempdir(prefix: str, *, parent: str | None = None, whole: bool = False) -> str:
    """``tempfile.mkdtemp`` named with this process's pid (``queryeval-xdist-PID-...``), in
    ``parent`` (the temporary folder by default), after removing the folders of that prefix
    whose process no longer runs: a killed run could not remove its own, and every later run
    left them in the temporary folder. Only empty ones are removed, unless ``whole`` (a
    folder whose content is nobody's once its process is gone: the rehearsal's snapshot of a
    graph)."""
    import shutil
    import tempfile

    parent = tempfile.gettempdir() if parent is None else parent
    pattern = re.compile(re.escape(prefix) + r"(\d+)-[a-z0-9_]{8}")
    with contextlib.suppress(OSError), os.scandir(parent) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and _stale(entry, pattern):
                if whole:
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    with contextlib.suppress(OSError):
                        os.rmdir(entry.path)  # only an empty one: nothing of a run is lost
    return tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent)


def create_temp(directory: Path, prefix: str, suffix: str) -> tuple[int, str]:
    """A new temporary file in ``directory``, created with the user's umask (as ``open`` and
    pytest's junit writer do): ``tempfile.mkstemp`` makes it 0600, and a report renamed from
    it stays unreadable to the team or the CI step that publishes it. Its name carries this
    process's pid, so a later run knows a killed run's (:func:`clean_stale_temps`)."""
    for _ in range(100):
        name = os.path.join(directory, f"{prefix}{os.getpid()}-{secrets.token_hex(6)}{suffix}")
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), name
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name in {directory}")


def _descriptor(path: str) -> int | None:
    """The descriptor number when ``path`` is, or links to, one of this process's own
    descriptors (``/dev/stdout``, ``/dev/fd/3``, ``/proc/self/fd/1``): writing there means
    writing to that descriptor, not reopening what it points to."""
    here = os.path.abspath(path)
    own = ("/dev/fd/", "/proc/self/fd/", f"/proc/{os.getpid()}/fd/")
    for _ in range(40):
        for prefix in own:
            if here.startswith(prefix) and here[len(prefix):].isdigit():
                return int(here[len(prefix):])
        if not os.path.islink(here):
            return None
        here = os.path.normpath(os.path.join(os.path.dirname(here), os.readlink(here)))
    return None


def special_output(path: str | os.PathLike[str]) -> str | None:
    """What an existing output path is when it is no regular file (symlinks followed; None for a
    regular file, a missing one, or a directory, which the writer reports in its own words):
    a FIFO or a character device (``/dev/null``, a terminal, a pipe behind ``/dev/stdout``) is
    written to as a stream; anything else (a block device, a socket) is refused."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return kind_of(mode)


def streamable(path: str | os.PathLike[str]) -> bool:
    """An output path a report is written to as a stream: an existing FIFO or character device
    (symlinks followed), or a descriptor of this process (``/dev/stdout``)."""
    if _descriptor(os.fspath(path)) is not None:
        return True
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)


def output_path(path: str | os.PathLike[str]) -> Path:
    """The absolute path an output option names: resolved (symlinks followed), except a path to
    a special file or a descriptor (``/dev/stdout`` resolves to ``/proc/PID/fd/pipe:[N]``, a
    name that does not exist), which is written to where it is."""
    text = os.path.abspath(path)
    if _descriptor(text) is not None or special_output(text) is not None:
        return Path(text)
    return Path(text).resolve()


def temp_prefix(path: Path, suffix: str) -> str:
    """The prefix of ``path``'s temporaries: ``.NAME.`` (``.NAME.PID-HEX.tmp``), or ``.STEM.``
    for a suffix of its own (a workbook's ``.report.PID-HEX.xlsx``, which a reader of the
    folder takes for a workbook)."""
    return f".{path.name}." if suffix == ".tmp" else f".{path.stem}."


#: What a writer does with a special file at its path (:func:`atomic_output`).
Special = Literal["stream", "refuse", "replace"]


class NotReplaced(UnsafeFile):
    """An output path that names a special file, which a write never replaces."""


@contextmanager
def atomic_output(path: Path, *, suffix: str = ".tmp", special: Special = "refuse",
                  sync: bool = True) -> Iterator[BinaryIO]:
    """A binary file to write ``path``'s new content to, put in place only when the block ends
    without an exception: a temporary file beside it (:func:`create_temp`), synced and renamed
    over it, removed on any failure, so readers never see a partial file.

    A path the user named is never replaced when it is a special file (as root, a report
    written to ``/dev/null`` by rename replaced the machine's ``/dev/null`` for every later
    process): ``special="stream"`` (the report writers) writes a FIFO or character device as a
    stream, in place, and a descriptor of this process (``/dev/stdout``) through that
    descriptor; ``"refuse"`` (the default), or a block device or a socket, raises
    :class:`NotReplaced` before anything is written. ``"replace"`` is for a path inside a
    folder the writer owns (a prediction cache entry), where a special file is a planted entry
    that the new one replaces. ``sync=False`` skips the ``fsync`` for a file that lives no
    longer than the session writing it (the answers xdist workers exchange): a crash ends its
    readers too, and an fsync per answer is a disk flush per case.

    The package's one atomic write (``tests/architecture/test_one_atomic_write.py``): every
    other writer that must not leave a partial file goes through here."""
    path = Path(path)
    kind = special_output(path)
    number = _descriptor(os.fspath(path))
    if special != "replace" and (kind is not None or number is not None):
        stream = special == "stream"
        if not stream or not streamable(path):
            raise NotReplaced(f"{kind or 'a descriptor'}, not a regular file: never replaced"
                              + ("" if stream else ", and this file is not written as a stream"))
        if number is None and kind == FIFO:
            with io.BufferedWriter(Pipe(open_fifo(path))) as pipe:
                yield pipe
            return
        fd = os.dup(number) if number is not None else os.open(path, os.O_WRONLY | os.O_CLOEXEC)
        with os.fdopen(fd, "wb") as fh:
            yield fh
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = temp_prefix(path, suffix)
    if special == "stream":  # a report: one look at its folder for what a killed run left
        clean_stale_temps(path.parent, prefix, suffix)
    fd, tmp = create_temp(path.parent, prefix, suffix)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            if sync:
                os.fsync(fh.fileno())  # a baseline is committed: it must survive a crash whole
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_atomic(path: Path, text: str | bytes, *, special: Special = "refuse",
                 sync: bool = True) -> None:
    """Write via a temporary file and rename: readers never see a partial file (a report, a
    baseline, a pin file, a shared gold entry, a saved counterexample), and it is created with
    the user's umask (:func:`create_temp`). What becomes of a special file at ``path``:
    ``special``; ``sync``: :func:`atomic_output`'s."""
    with atomic_output(path, special=special, sync=sync) as fh:
        fh.write(text.encode("utf-8") if isinstance(text, str) else text)


def same_file(output: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]]
              ) -> int | None:
    """The index of the first of ``inputs`` that is the very file ``output`` names (same
    device and inode, symlinks followed), or None: a command must not write over what it
    reads."""
    try:
        out = os.stat(output)
    except (OSError, ValueError):
        return None
    for index, path in enumerate(inputs):
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            continue
        if (st.st_dev, st.st_ino) == (out.st_dev, out.st_ino):
            return index
    return None
