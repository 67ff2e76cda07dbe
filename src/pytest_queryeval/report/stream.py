"""Reading a JSON report case by case, for ``queryeval merge`` of huge shards.

A 200,000-case shard is hundreds of MB of JSON; ``json.loads`` of it holds the text, every
record in full and the merged copy at once (4.7 GB for a 472 MB shard). :func:`scan` decodes
the top-level object one value at a time and the ``cases`` array one record at a time, checks
each as :mod:`.shardcheck` does, and keeps of each record only what the aggregates, gates and
summaries read (:func:`slim`), with where its full text lies in the file. The merged JSON and
the rows the HTML and Excel reports show re-read the full records from there
(:class:`StoredCases`), one at a time.

Any JSON layout is read (not only the one-case-per-line layout the plugin writes); the bounds
of :mod:`.._util.boundedio` hold (a regular file of at most 1 GiB, nesting of at most 200 levels).
"""

from __future__ import annotations

import codecs
import contextlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, overload

from .._util.boundedio import MAX_JSON_DEPTH, BoundedReadError, depth_exceeds
from ..figures.by_turn import slim_turns
from ..model import RecordLike

#: Case fields no aggregate, gate or summary line reads: left on disk until a report needs them.
HEAVY = ("predicted", "gold", "question", "diff")
#: ``details`` entries only the per-case views show, which can be long (texts, per-row or
#: per-term lists): left on disk. Every other entry is kept, so an aggregate that starts
#: reading a detail gets it from a merge too (an allowlist dropped new ones silently).
HEAVY_DETAILS = frozenset({
    "prediction", "prediction_failure", "prediction_shape", "sdmx_details", "invalid_terms",
    "name_mismatches", "structure_files", "alignment_mapping", "ties", "spider2_sql",
    "spider2_reason", "clock", "gold_dialect", "column_mapping", "compare", "efficiency",
    "efficiency_error", "soft_ex", "checks", "execution_accuracy_on", "near_miss_error",
})
#: A record :func:`slim` made: a shard's record read back, what only the per-case views show
#: left on disk (a :class:`..model.CaseRecord` without its :data:`HEAVY` fields); the full one
#: is :meth:`StoredCases.full`'s, and a report writer's :func:`.document.full_records`'.
SlimRecord = dict[str, Any]
#: The fields :func:`slim` cuts or drops: a full record keeps its own.
_CUT = (*HEAVY, "details", "error", "reason")
#: A case's error or reason is kept up to this many characters (the summary shows 110).
REASON_CHARS = 2000
_CHUNK = 1 << 20
_WS = " \t\n\r"


def slim(record: RecordLike) -> SlimRecord:
    """The record without what only the per-case views show (see :data:`HEAVY`)."""
    out: SlimRecord = {k: v for k, v in record.items() if k not in HEAVY}
    details = record.get("details")
    if isinstance(details, dict):
        out["details"] = {k: v for k, v in details.items() if k not in HEAVY_DETAILS}
        pred = details.get("prediction")
        if isinstance(pred, dict) and "cache" in pred:  # counted by predict.cache.summary
            out["details"]["prediction"] = {k: pred[k] for k in ("cache", "cache_ignored")
                                            if k in pred}
        if "turns" in details:  # a conversation's turns: their outcomes and metrics
            out["details"]["turns"] = slim_turns(details["turns"])
    for key in ("error", "reason"):
        text = out.get(key)
        if isinstance(text, str) and len(text) > REASON_CHARS:
            out[key] = text[:REASON_CHARS] + " … [the JSON report has it whole]"
    return out


@dataclass
class Span:
    """Where one record's JSON text lies: the file, its first byte and its length."""

    path: Path
    start: int
    length: int

    def read(self, files: _Files | None = None) -> Any:
        """The record; ``files`` keeps the shard files open across reads."""
        from .._util.safefile import open_binary

        if files is not None:
            return self._read(files.get(self.path))
        with open_binary(self.path, "input") as fh:
            return self._read(fh)

    def _read(self, fh: BinaryIO) -> Any:
        fh.seek(self.start)
        return json.loads(fh.read(self.length).decode("utf-8", "surrogatepass"))


class _Files:
    """The shard files :meth:`StoredCases.iter_full` has opened, each once."""

    def __init__(self, stack: contextlib.ExitStack) -> None:
        self.stack = stack
        self.opened: dict[Path, BinaryIO] = {}

    def get(self, path: Path) -> BinaryIO:
        from .._util.safefile import open_binary

        fh = self.opened.get(path)
        if fh is None:
            fh = self.opened[path] = self.stack.enter_context(open_binary(path, "input"))
        return fh


class StoredCases(list[SlimRecord]):
    """Slim records (a list, for every reader of ``report["cases"]``) whose full records are
    read back from their files on demand: the JSON report is written from :meth:`full`."""

    def __init__(self, records: list[SlimRecord], spans: list[Span]) -> None:
        super().__init__(records)
        self.spans = spans

    def full(self, index: int, files: _Files | None = None) -> dict[str, Any]:
        """The record as its shard wrote it, with the merge's own fields (those the slim record
        has that the stored one lacks or changed, e.g. ``superseded``) laid over it."""
        stored = self.spans[index].read(files)
        slim_rec = self[index]
        if isinstance(stored, dict):
            # every field of the slim record laid over, but the stored record's own of those
            # the slim one cut (one update in C instead of a loop over the fields)
            own = {key: stored[key] for key in _CUT if key in stored}
            stored.update(slim_rec)
            stored.update(own)
        return stored if isinstance(stored, dict) else dict(slim_rec)

    def iter_full(self) -> Iterator[dict[str, Any]]:
        """Every full record in order, each shard file opened once."""
        with contextlib.ExitStack() as stack:
            files = _Files(stack)
            for i in range(len(self)):
                yield self.full(i, files)

    def whole(self) -> FullCases:
        """These cases as full records, for a report writer that reads ``report["cases"]``
        as a run's list (:class:`FullCases`)."""
        return FullCases(self)

    def sort_by(self, key: Callable[[dict[str, Any]], tuple[str, int, str]]) -> None:
        order = sorted(range(len(self)), key=lambda i: key(self[i]))
        records = [self[i] for i in order]
        self.spans = [self.spans[i] for i in order]
        self[:] = records


class FullCases(Sequence[dict[str, Any]]):
    """A merge's cases as a run has them: every item the full record (read back from its
    shard when it is reached), so a report writer of another package gets after ``queryeval
    merge`` the records it gets from a run (``predicted``, ``gold``, ``question``, ``diff``
    and all), not the slim ones the merge keeps. ``full`` and ``iter_full`` are the
    package's own writers' way in (:class:`StoredCases`), kept."""

    def __init__(self, stored: StoredCases) -> None:
        self.stored = stored

    def __len__(self) -> int:
        return len(self.stored)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self.stored.full(i) for i in range(len(self.stored))[index]]
        return self.stored.full(range(len(self.stored))[index])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self.stored.iter_full()

    def full(self, index: int, files: _Files | None = None) -> dict[str, Any]:
        return self.stored.full(index, files)

    def iter_full(self) -> Iterator[dict[str, Any]]:
        return self.stored.iter_full()


@dataclass
class Scanned:
    """A report read by :func:`scan`: every top-level field but ``cases``, and the cases."""

    header: dict[str, Any] = field(default_factory=dict)
    cases: list[dict[str, Any]] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    #: the problems :mod:`.shardcheck` finds in the cases (the header is checked by the caller)
    problems: list[str] = field(default_factory=list)


class _Reader:
    """A UTF-8 text buffer over a binary file that knows the byte offset of its position."""

    def __init__(self, fh: BinaryIO) -> None:
        self.fh = fh
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.buf = ""
        self.pos = 0
        self.byte = 0  # byte offset of buf[pos] in the file
        self.ascii = True
        self.eof = False
        self.json = json.JSONDecoder()
        self.last = (0, 0)

    def more(self, size: int = _CHUNK) -> bool:
        if self.eof:
            return False
        chunk = self.fh.read(size)
        try:
            text = self.decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError as exc:
            raise BoundedReadError(f"not UTF-8 text: {exc.reason}") from None
        if not chunk:
            self.eof = True
        self.buf = self.buf[self.pos:] + text
        self.pos = 0
        self.ascii = self.buf.isascii()  # kept by the string: no scan
        return bool(chunk) or bool(text)

    def advance(self, to: int) -> None:
        if self.ascii:  # a character is a byte: no copy of the record's text to count them
            self.byte += to - self.pos
        else:
            self.byte += len(self.buf[self.pos:to].encode("utf-8", "surrogatepass"))
        self.pos = to

    def containers(self, start: int, end: int) -> int:
        """How many ``{`` and ``[`` ``buf[start:end]`` holds (in strings too): no value in it
        nests deeper than that."""
        return self.buf.count("{", start, end) + self.buf.count("[", start, end)

    def peek(self) -> str:
        """The next non-blank character ("" at the end), not consumed."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                self.advance(self.pos + 1)
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return ""

    def expect(self, chars: str) -> str:
        ch = self.peek()
        if not ch or ch not in chars:
            raise BoundedReadError(f"not JSON: expected {' or '.join(repr(c) for c in chars)} "
                                   f"at byte {self.byte}, got {ch or 'the end'!r}")
        self.advance(self.pos + 1)
        return ch

    def value(self) -> tuple[Any, int, int]:
        """The next JSON value, its first byte and its length in bytes (:attr:`last` its
        characters in :attr:`buf`)."""
        self.peek()
        size = _CHUNK
        while True:
            try:
                obj, end = self.json.raw_decode(self.buf, self.pos)
            except RecursionError:
                raise BoundedReadError(
                    f"not JSON: nested deeper than {MAX_JSON_DEPTH} levels") from None
            except json.JSONDecodeError as exc:
                if self.eof or (exc.pos < len(self.buf) - 1 and not _cut(self.buf, exc.pos)):
                    raise BoundedReadError(f"not JSON: {exc.msg} (byte {self.byte})") from None
                self.more(size)
                size *= 2  # a big value: read faster than it is retried
                continue
            except ValueError as exc:  # an integer of more than 4300 digits
                raise BoundedReadError(f"not JSON: {exc}") from None
            if end == len(self.buf) and not self.eof:  # a number may go on in the next chunk
                self.more(size)
                continue
            start = self.byte
            self.last = (self.pos, end)
            self.advance(end)
            return obj, start, self.byte - start


def _cut(buf: str, pos: int) -> bool:
    """Whether a decoding error at ``pos`` may only mean that the buffer ends too early."""
    return pos >= len(buf) - 64 or buf.find("\n", pos) == -1


def scan(path: Path) -> Scanned:
    """Read the report at ``path`` case by case. OSError and BoundedReadError are the
    caller's to word (as :func:`.._util.boundedio.load_json_file`'s)."""
    from .._util.safefile import UnsafeFile, open_binary
    from .shardcheck import SeenCases, case_problems

    out = Scanned()
    seen = SeenCases()
    with contextlib.ExitStack() as stack:
        try:
            fh = stack.enter_context(open_binary(path, "input"))
        except UnsafeFile as exc:
            raise BoundedReadError(str(exc)) from None
        r = _Reader(fh)
        if r.peek() != "{":  # JSON or not, no report: the caller says so
            return out
        r.expect("{")
        if r.peek() == "}":
            return out
        while True:
            key, _, _ = r.value()
            if not isinstance(key, str):
                raise BoundedReadError("not JSON: an object key that is not a string")
            r.expect(":")
            if key == "cases" and r.peek() == "[":
                r.expect("[")
                index = 0
                while r.peek() != "]":
                    if index:
                        r.expect(",")
                    rec, start, length = r.value()
                    if r.containers(*r.last) > MAX_JSON_DEPTH - 2 and \
                            depth_exceeds(rec, MAX_JSON_DEPTH - 2):
                        raise BoundedReadError(
                            f"not JSON: nested deeper than {MAX_JSON_DEPTH} levels")
                    out.problems.extend(case_problems(rec, f"cases[{index}]"))
                    out.problems.extend(seen.problems(rec, index))
                    if isinstance(rec, dict):
                        out.cases.append(slim(rec))
                        out.spans.append(Span(path, start, length))
                    index += 1
                r.expect("]")
                out.header["cases"] = None  # present (the list is out.cases)
            else:
                value, _, _ = r.value()
                if depth_exceeds(value, MAX_JSON_DEPTH - 1):
                    raise BoundedReadError(f"not JSON: nested deeper than {MAX_JSON_DEPTH} levels")
                out.header[key] = value
            if r.expect(",}") == "}":
                break
        if r.peek():
            raise BoundedReadError("not JSON: extra data after the report")
    return out
