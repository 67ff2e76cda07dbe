"""``--queryeval-gold-cache DIR``: gold results computed once for every shard of a run.

pytest's own cache (``.pytest_cache``) is per checkout: ten runners of one suite each execute
every gold again. A directory the runners share (an NFS or cluster file system mount, a CI cache
restored and saved around the job) holds each gold result once, as one file addressed by its
content: the SHA-256 of ``[namespace, key]``, where the key names the engine, the datasource's
fingerprint (the identity of its data) and the gold text, so a changed database or gold is a
new entry and never a stale hit. Entries are written to a temporary file in the same
directory and renamed into place (``os.replace``), so a reader on another runner sees a whole
entry or none; an entry that cannot be read is a miss and is written again.

Trust (issue 39): a gold result decides whether a prediction passes, so an entry someone else
could write is a way to pass a wrong prediction. An entry is used only when it is a regular
file (neither it nor its folder a link) owned by the user running the tests, not writable
by group or others, and its stored ``digest`` (SHA-256 of the namespace, the key and the
value) matches what it holds; any other entry is ignored with a
:class:`~..errors.QueryEvalWarning` naming it, the gold is executed and the entry written
again. A directory writable by group or others, or owned by
another user, is used (the checks above hold each entry) with one warning naming it. Entries
and directories this module creates are never writable by group or others, whatever the umask.
The digest binds an entry to its content against an edit or a damaged copy; against another
user, who can compute the digest too, the owner and mode checks are what hold. The checks, the
digest and the writes are :mod:`.._util.ownedfiles`', shared with the prediction cache.

Importable without pytest.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any

from .._util import ownedfiles

#: The cache namespaces the directory holds: gold results only (what every shard shares).
SHARED = frozenset({"sql-gold", "sparql-gold"})
#: 2: entries carry the digest of their content (an entry of version 1 is a miss).
VERSION = 2
#: Mode bits that let someone other than the owner change a file or a directory's entries.
OTHERS_WRITE = ownedfiles.OTHERS_WRITE
#: The largest entry read (a gold result the codec keeps; far above any real one).
MAX_ENTRY_BYTES = 256 << 20


def address(namespace: str, key: str) -> str:
    """The entry's content address (hex SHA-256 of ``[namespace, key]`` as compact JSON)."""
    text = json.dumps([namespace, key], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def content_digest(namespace: str, key: str, value: object) -> str:
    """SHA-256 of ``[namespace, key, value]`` as canonical JSON (sorted keys, ASCII): what a
    stored entry must still hold when it is read."""
    return ownedfiles.content_digest(namespace, key, value)


class GoldCache:
    """The shared directory: ``DIR/ab/abcdef....json`` per entry."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        #: What was already warned about (each directory and entry once a session).
        self._warned: set[str] = set()
        #: Directories already looked at (each is checked once a session).
        self._checked: set[str] = set()
        #: SHA-256 of the text of each entry whose digest this session checked or wrote: the
        #: same text read again is not re-serialised and hashed value by value (issue 53:
        #: every read of an entry did that, twice per case).
        self._verified: dict[str, bytes] = {}

    def path(self, namespace: str, key: str) -> Path:
        digest = address(namespace, key)
        return self.root / digest[:2] / f"{digest}.json"

    def get(self, namespace: str, key: str) -> Any | None:
        """The stored value, or None (not a shared namespace, no entry, an entry that cannot
        be read, or one that is not to be trusted: executed and written again)."""
        from .._util.boundedio import BoundedReadError, loads_json

        if namespace not in SHARED:
            return None
        target = self.path(namespace, key)
        self._check_directories(target.parent)
        try:
            text, problem = ownedfiles.read_own(target, MAX_ENTRY_BYTES)
            if problem is not None:
                self._warn(target, f"the gold cache entry {self._shown(target)} is ignored: "
                                   f"{problem}; the gold is executed again and the entry "
                                   "rewritten")
                return None
            entry = loads_json(text)
        except (OSError, UnicodeDecodeError, BoundedReadError):
            return None
        if not isinstance(entry, dict) or entry.get("version") != VERSION \
                or entry.get("namespace") != namespace or entry.get("key") != key:
            return None
        value = entry.get("value")
        seen = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
        if self._verified.get(target.name) == seen:
            return value
        if entry.get("digest") != content_digest(namespace, key, value):
            self._warn(target, f"the gold cache entry {self._shown(target)} is ignored: its "
                               "content does not match its digest (edited or damaged); the "
                               "gold is executed again and the entry rewritten")
            return None
        self._verified[target.name] = seen
        return value

    def set(self, namespace: str, key: str, value: object) -> None:
        """Store atomically (temporary file + rename); a directory that cannot be written
        costs the next runner a gold execution, never the run."""
        if namespace not in SHARED:
            return
        target = self.path(namespace, key)
        try:
            text = json.dumps({"version": VERSION, "namespace": namespace, "key": key,
                               "digest": content_digest(namespace, key, value),
                               "value": value}, ensure_ascii=False)
        except (TypeError, ValueError):
            return
        with contextlib.suppress(OSError, UnicodeEncodeError):
            data = text.encode("utf-8")
            ownedfiles.write_private(target, data)
            self._verified[target.name] = hashlib.sha256(data).digest()

    def _check_directories(self, sub: Path) -> None:
        """One warning for the root or an entry's directory that others may write to."""
        for directory in (self.root, sub):
            name = str(directory)
            if name in self._checked:
                continue
            self._checked.add(name)
            problem = ownedfiles.directory_problem(directory,
                                                   link_allowed=directory == self.root)
            if problem:
                self._warn(directory, f"the gold cache directory {self._shown(directory)} is "
                                      f"{problem}: whoever can write there can plant a gold "
                                      "result that makes a wrong prediction pass; only "
                                      "entries written by this user, not writable by others, "
                                      "with a matching digest are used (chmod go-w, or a "
                                      "directory of your own)", stacklevel=4)

    def _shown(self, path: Path) -> str:
        """The entry relative to the cache directory (no machine path in a warning), the
        directory itself by its name."""
        if path == self.root:
            return repr(self.root.name or str(self.root))
        try:
            return repr(path.relative_to(self.root).as_posix())
        except ValueError:
            return repr(path.name)

    def _warn(self, path: Path, message: str, stacklevel: int = 3) -> None:
        import warnings

        from ..errors import QueryEvalWarning

        if str(path) in self._warned:
            return
        self._warned.add(str(path))
        with contextlib.suppress(Warning):  # -W error: a report, not a failure
            warnings.warn(QueryEvalWarning(message), stacklevel=stacklevel)
