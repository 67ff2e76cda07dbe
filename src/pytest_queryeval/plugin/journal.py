"""The journal beside the JSON report: what a run finished, kept as it is finished, so that a
run killed before its end (SIGKILL, the out-of-memory killer, a node lost) has not lost what
it paid for.

A scheduler stops work without warning (SLURM preemption, a Kubernetes eviction after its
grace period, a CI job's timeout); the JSON report is written only when the session ends, so
without this a killed shard kept nothing, and its retry asked the model again for every case.
``--queryeval-json r.json`` therefore appends to ``r.json.journal``, one JSON line per
finished case record (the controller's, the one process that holds every record, under
xdist too) and per live answer received (each process that asks a model: ``r.json.journal``
in a serial run, ``r.json.journal.gw0`` ... for each xdist worker, one writer per file).
Each line is written by one ``write`` of an ``O_APPEND`` descriptor as soon as its record or
answer exists: a killed process (SIGKILL, the out-of-memory killer) loses at most what it had
not finished, since what was written is the kernel's. Against the host itself going down
(power, a kernel panic: a SLURM node failure) the file is ``fsync``-ed at most once a second
(:data:`SYNC_EVERY`) and when it is closed: an ``fsync`` per line cost 5-6 ms per case (half
a 1,000-case trivial run's time, ``bench/bench_journal.py``), the line alone 0.07 ms (1 %).

``--queryeval-resume r.json`` reads the report when it exists, and the journal files; each
line carries the digest of its own text (as a report's record does) and a line whose digest
does not match is refused. A retry starts its journal from what it carries (rewritten whole,
then appended to), and a run without ``--queryeval-resume`` starts an empty one. Once the JSON
report is written by a run that was not interrupted, the report supersedes the journal and
its files are removed; an interrupted run keeps them (answers received for cases not scored
yet are only there).

Importable without pytest.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..model import Case
    from ..predict.base import Prediction

#: The first line of a journal: what the file is, and the layout of its lines.
HEADER = {"journal": "pytest-queryeval", "version": 1}
#: Seconds between two ``fsync`` of a journal file (the lines between are written, not yet
#: forced to the disk: lost only if the host itself goes down).
SYNC_EVERY = 1.0
#: What a journal's name adds to its report's.
SUFFIX = ".journal"


def journal_path(report: Path) -> Path:
    """The journal of the JSON report at ``report`` (the controller's, or a serial run's)."""
    return report.with_name(report.name + SUFFIX)


def journal_files(report: Path) -> list[Path]:
    """Every journal file of ``report`` that exists: the controller's, then the workers'."""
    main = journal_path(report)
    out = [main] if main.is_file() else []
    with contextlib.suppress(OSError):  # not glob(): a report's name may hold "[" or "*"
        out.extend(sorted(report.parent / name for name in os.listdir(report.parent)
                          if name.startswith(f"{main.name}.") and not name.endswith(".tmp")
                          and (report.parent / name).is_file()))
    return out


def remove(report: Path) -> None:
    """The report supersedes its journal: every journal file of ``report`` removed."""
    for path in journal_files(report):
        with contextlib.suppress(OSError):
            path.unlink()


def answer_key(identity: str, repeat: int) -> str:
    """What a journaled answer is found by: the case's identity (:func:`.resume.identity`: the
    same case asked of the same source) and the run's index among its repeats."""
    return f"{identity}#{repeat}"


def _line(kind: str, data: Mapping[str, Any]) -> bytes:
    """One journal line: ``{"record": {...}}`` or ``{"answer": {...}}``, the mapping carrying
    the digest of its own text as its last key (:func:`..report.json_report.case_line`)."""
    from ..report.json_report import case_line

    return ('{"' + kind + '": ' + case_line(dict(data)) + "}\n").encode("utf-8",
                                                                         "surrogatepass")


@dataclass
class Read:
    """What the journal files of one report hold."""

    #: Carriable or not, the records by case id (a later line wins).
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Live answers by :func:`answer_key`: the :func:`..predict.cache.answer_data` mapping.
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Located notes: a truncated last line dropped, a damaged line skipped, a case twice.
    warnings: list[str] = field(default_factory=list)
    #: Located refusals: a line whose digest is not that of its content (edited).
    errors: list[str] = field(default_factory=list)


def read(paths: Iterable[Path], shown: str) -> Read:
    """The lines of the journal files ``paths`` (``shown``: the journal as the user named its
    report); never raises for what a file holds: each problem is one located warning or
    error."""
    from .._util.safefile import read_bytes

    out = Read()
    for path in paths:
        name = f"{shown}{path.name[len(path.name.split(SUFFIX, 1)[0]):]}"
        try:  # a regular file of at most 1 GiB, as a report a shard merge reads
            data = read_bytes(path, "input")
        except OSError as exc:
            out.errors.append(f"{name}: cannot read: {exc.strerror or exc}")
            continue
        _read_lines(out, data.split(b"\n"), name)
    return out


def _read_lines(out: Read, lines: list[bytes], name: str) -> None:
    """One journal file's lines into ``out``. One loop, no call per line but for a damaged
    one: it reads every record of a 1,000-case run that a resume carries."""
    from ..report.json_report import digest_problem
    from ..report.shardcheck import case_problems

    last = len(lines) - 1  # after the final newline: b"" for a whole file
    first: dict[str, int] = {}
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        where = f"{name}:{number}"
        try:
            line = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            if _unreadable_line(out, where, number, last):
                break
            continue
        if number == 1:
            if line != HEADER:
                out.errors.append(f"{where}: not a queryeval journal (its first line is "
                                  f"not {json.dumps(HEADER)})")
                break
            continue
        kind = next(iter(line), None) if isinstance(line, dict) and len(line) == 1 else None
        body = line.get(kind) if kind in ("record", "answer") else None
        if not isinstance(body, dict):
            out.warnings.append(f"{where}: not a record or an answer of a queryeval "
                                "journal: skipped")
            continue
        problem = digest_problem(body)
        if problem:
            out.errors.append(f"{where}: {problem}")
            continue
        if kind == "answer":
            key, answer = body.get("key"), body.get("answer")
            if isinstance(key, str) and isinstance(answer, dict):
                out.answers[key] = answer
            else:
                out.warnings.append(f"{where}: an answer without its key: skipped")
            continue
        damaged = case_problems(body, where)
        if damaged:
            out.errors.extend(damaged)
            continue
        cid = str(body.get("id"))
        if cid in first:
            out.warnings.append(f"{where}: case {cid!r} again (first at line "
                                f"{first[cid]}): the later record is kept")
        first.setdefault(cid, number)
        out.records[cid] = body


def _unreadable_line(out: Read, where: str, number: int, last: int) -> bool:
    """A line that is not JSON: a file that is no journal at all (True: stop reading it), a
    last line a killed run cut short, or a damaged line; only the first is an error."""
    if number == 1 and number != last + 1:
        out.errors.append(f"{where}: not a queryeval journal (its first line is "
                          "not JSON)")
        return True
    if number == last + 1:  # no newline after it: the write was cut short
        out.warnings.append(f"{where}: a truncated last line (the run was stopped "
                            "while writing it) is dropped")
    else:
        out.warnings.append(f"{where}: not a JSON line (damaged): skipped")
    return False


class Journal:
    """One process's journal file, appended to a line at a time (thread-safe: the prediction
    pool's threads write answers while the main thread writes records)."""

    def __init__(self, path: Path, *, sync_every: float = SYNC_EVERY) -> None:
        self.path = path
        self._sync_every = sync_every
        self._synced = time.monotonic()
        self._lock = threading.Lock()
        self._fd: int | None = None
        #: Why the file could not be written (the run goes on without it), or None.
        self.problem: str | None = None

    @classmethod
    def start(cls, path: Path, records: Iterable[Mapping[str, Any]] = (),
              answers: Mapping[str, Mapping[str, Any]] | None = None) -> Journal:
        """A fresh journal at ``path`` holding ``records`` and ``answers`` (what a retry
        carries), written whole and renamed into place, then opened for appending."""
        from .._util.safefile import write_atomic

        out = cls(path)
        try:
            text = [json.dumps(HEADER).encode() + b"\n"]
            text.extend(_line("record", _public(r)) for r in records)
            text.extend(_line("answer", {"key": k, "answer": dict(a)})
                        for k, a in (answers or {}).items())
            write_atomic(path, b"".join(text))
            for stale in journal_files(path.with_name(path.name[:-len(SUFFIX)]))[1:]:
                stale.unlink()  # the earlier workers' answers: carried above
            out._open(truncate=False)
        except OSError as exc:
            out.problem = f"cannot write the journal {path.name}: {exc.strerror or exc}"
        return out

    @classmethod
    def worker(cls, path: Path) -> Journal:
        """An xdist worker's own file of answers (emptied: its controller started the run's
        journal, and carried what the earlier workers' files held)."""
        out = cls(path)
        try:
            out._open(truncate=True)
            out._write(json.dumps(HEADER).encode() + b"\n")
        except OSError as exc:
            out.problem = f"cannot write the journal {path.name}: {exc.strerror or exc}"
        return out

    def _open(self, truncate: bool) -> None:
        """Appending to a regular file only: a FIFO or a device at the path is refused (the
        run goes on without this journal, :attr:`problem` names it) rather than waited on."""
        from .._util.safefile import open_append

        self._fd = open_append(self.path, truncate=truncate)

    def _write(self, data: bytes) -> None:
        with self._lock:
            fd = self._fd
            if fd is None:
                return
            try:
                os.write(fd, data)  # one write: a reader sees whole lines, or a cut last one
                if time.monotonic() - self._synced >= self._sync_every:
                    os.fsync(fd)
                    self._synced = time.monotonic()
            except OSError as exc:  # a full disk: the run goes on, its report still written
                self.problem = f"cannot write the journal {self.path.name}: " \
                               f"{exc.strerror or exc}"
                with contextlib.suppress(OSError):
                    os.close(fd)
                self._fd = None

    def record(self, record: Mapping[str, Any]) -> None:
        """A finished case's record, as the report will hold it."""
        self._write(_line("record", _public(record)))

    def answer(self, key: str, answer: Mapping[str, Any]) -> None:
        """A live answer received (:func:`answer_key`)."""
        self._write(_line("answer", {"key": key, "answer": dict(answer)}))

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                with contextlib.suppress(OSError):
                    os.fsync(self._fd)
                with contextlib.suppress(OSError):
                    os.close(self._fd)
                self._fd = None


def _public(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record as the report writes it: without its absolute ``path`` (internal) and the
    digest of another text."""
    return {k: v for k, v in record.items() if k not in ("path", "digest")}


class AnswerLog:
    """Live answers of earlier attempts, and this process's journal of the answers it
    receives: the evaluator asks it before a live source is asked (see
    :class:`..predict.base.AnswerLog`)."""

    def __init__(self, known: Mapping[str, Mapping[str, Any]], journal: Journal | None,
                 identity: Callable[[Case], str]) -> None:
        self.known = dict(known)
        self.journal = journal
        #: The case's identity (:func:`.resume.identity` with the run's predictions option).
        self.identity = identity

    def _key(self, case: Case, repeat: int) -> str:
        return answer_key(self.identity(case), repeat)

    def get(self, case: Case, repeat: int) -> Prediction | None:
        """The answer an earlier attempt received for this run of ``case`` (None: ask)."""
        if not self.known:
            return None
        data = self.known.get(self._key(case, repeat))
        if data is None:
            return None
        from ..predict.cache import prediction_of

        try:
            return prediction_of(data)
        except ValueError:
            return None

    def put(self, case: Case, repeat: int, prediction: Prediction) -> None:
        """Journal an answer just received (scrubbed of the case's secrets, as the
        prediction cache stores one)."""
        if self.journal is None:
            return
        from .._util.secrets import Scrubber
        from ..predict.cache import answer_data

        data = Scrubber(case.secrets).data(answer_data(prediction))
        assert isinstance(data, dict)
        self.journal.answer(self._key(case, repeat), data)

