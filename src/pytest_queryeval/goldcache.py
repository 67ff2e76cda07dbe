"""``--queryeval-gold-cache DIR``: gold results computed once for every shard of a run.

pytest's own cache (``.pytest_cache``) is per checkout: ten runners of one suite each execute
every gold again. A directory the runners share (an NFS or cluster file system mount, a CI cache
restored and saved around the job) holds each gold result once, as one file addressed by its
content: the SHA-256 of ``[namespace, key]``, where the key names the engine, the datasource's
fingerprint (the identity of its data) and the gold text, so a changed database or gold is a
new entry and never a stale hit. Entries are written to a temporary file in the same
directory and renamed into place (``os.replace``), so a reader on another runner sees a whole
entry or none; an entry that cannot be read is a miss and is written again.

Importable without pytest.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any

#: The cache namespaces the directory holds: gold results only (what every shard shares).
SHARED = frozenset({"sql-gold", "sparql-gold"})
VERSION = 1


def address(namespace: str, key: str) -> str:
    """The entry's content address (hex SHA-256 of ``[namespace, key]`` as compact JSON)."""
    text = json.dumps([namespace, key], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class GoldCache:
    """The shared directory: ``DIR/ab/abcdef....json`` per entry."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def path(self, namespace: str, key: str) -> Path:
        digest = address(namespace, key)
        return self.root / digest[:2] / f"{digest}.json"

    def get(self, namespace: str, key: str) -> Any | None:
        """The stored value, or None (not a shared namespace, no entry, or one that cannot be
        read: written again)."""
        from .boundedio import BoundedReadError, load_json_file

        if namespace not in SHARED:
            return None
        try:
            entry = load_json_file(self.path(namespace, key))
        except (OSError, BoundedReadError):
            return None
        if not isinstance(entry, dict) or entry.get("version") != VERSION \
                or entry.get("namespace") != namespace or entry.get("key") != key:
            return None
        return entry.get("value")

    def set(self, namespace: str, key: str, value: Any) -> None:
        """Store atomically (temporary file + rename); a directory that cannot be written
        costs the next runner a gold execution, never the run."""
        from .report.json_report import write_atomic

        if namespace not in SHARED:
            return
        target = self.path(namespace, key)
        text = json.dumps({"version": VERSION, "namespace": namespace, "key": key,
                           "value": value}, ensure_ascii=False)
        with contextlib.suppress(OSError):
            write_atomic(target, text)
