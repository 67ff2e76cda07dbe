"""Pinned verdicts: a judge's answer stored by the content it judged, so a rerun is
deterministic (issue 26 item 4).

Why pin: the same model flips about one verdict in ten between runs (ROSE's measurement), so a
CI gate on an unpinned judge would go red and green by chance. The key is a SHA-256 over the
judge model, the prompt template, the gold, the prediction and both results' digests: any change
to what the judge saw asks it again, nothing else does. The file is JSON Lines, one verdict a
line, sorted by key, so a team commits it and a refresh reads as a diff. Each line also names
the case it was answered for (``case``: its id, ``question``), for the reviewer of that diff:
a key alone says nothing of which case's verdict changed. They are labels, never part of the
key: the same judgement shared by two cases is one pin, named after the case that asked last.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from .verdict import CATEGORIES, Verdict

#: The nesting a pin line may have: one object of strings (a deeper line is refused at once).
MAX_PIN_DEPTH = 4
#: The keys of a pin line that name its case for a reviewer; not part of the pin's key.
LABELS = ("case", "question")


def pin_key(*, model: str, template: str, gold: str, predicted: str, gold_digest: str,
            predicted_digest: str) -> str:
    """The content hash that names one judgement."""
    payload = json.dumps([model, hashlib.sha256(template.encode()).hexdigest(), gold, predicted,
                          gold_digest, predicted_digest], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class PinStore:
    """The verdicts of one pin file, loaded once, written once at the end of the session."""

    path: Path
    pins: dict[str, Verdict] = field(default_factory=dict)
    #: Keys answered in this session (written back); the others are kept as they were.
    fresh: set[str] = field(default_factory=set)
    #: Each pin's labels for the reader of the file (``case``, ``question``); a pin file
    #: written before them has none, and is read all the same.
    labels: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path, display: str | None = None) -> PinStore:
        """The pins of ``path`` (none when it does not exist); any other problem is a
        ValueError naming the file (``display``, else the path) and, for its content, the line.

        Read as every input file a suite names is (issue 39 item 5): through
        :mod:`.._util.safefile` (opened non-blocking and checked on the descriptor: a FIFO, a device
        or a directory is refused before a byte is read, a file over the 64 MiB of its ``judge``
        purpose is never read) and each line through :func:`.._util.boundedio.loads_json` (a line of
        100,000 ``[`` is a located error, not a RecursionError)."""
        from .._util import boundedio, safefile

        store = cls(path)
        name = display or str(path)
        try:
            data = safefile.read_bytes(path, "judge")
        except FileNotFoundError:
            return store
        except safefile.UnsafeFile as exc:
            raise ValueError(f"{name}: {exc}") from None
        except OSError as exc:
            raise ValueError(f"{name}: cannot read: {exc.strerror or exc}") from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            at = data[: exc.start].count(b"\n") + 1
            raise ValueError(f"{name}:{at}: not UTF-8 text ({exc.reason})") from None
        # split on \n only: a reason may hold U+2028 or \x1c, which str.splitlines splits on
        for lineno, line in enumerate(text.split("\n"), 1):
            if not line.strip():
                continue
            try:
                item = boundedio.loads_json(line, MAX_PIN_DEPTH)
            except boundedio.BoundedReadError as exc:
                raise ValueError(f"{name}:{lineno}: not a pinned verdict: {exc}") from None
            try:
                key, category = item["key"], item["category"]
                reason = item.get("reason", "")
                if category not in CATEGORIES or not isinstance(key, str) \
                        or not isinstance(reason, str):
                    raise ValueError(category)
            except (ValueError, KeyError, TypeError, AttributeError):
                raise ValueError(f"{name}:{lineno}: not a pinned verdict "
                                 "({\"key\", \"category\", \"reason\"})") from None
            store.pins[key] = Verdict(category, reason)
            store.labels[key] = {k: item[k] for k in LABELS if isinstance(item.get(k), str)}
        return store

    def get(self, key: str) -> Verdict | None:
        return self.pins.get(key)

    def put(self, key: str, verdict: Verdict, *, case: str | None = None,
            question: str | None = None) -> None:
        """Pin ``verdict`` under ``key``, labelled with the case that asked (its id and
        question) for whoever reads the file."""
        self.pins[key] = verdict
        self.fresh.add(key)
        self.labels[key] = {k: v for k, v in (("case", case), ("question", question))
                            if isinstance(v, str)}

    def write(self) -> None:
        """Write every pin, sorted by key, atomically (a reader never sees half a file); each
        line's keys in order: ``case``, ``category``, ``key``, ``question``, ``reason``."""
        lines = [json.dumps({**self.labels.get(k, {}), "key": k, "category": v.category,
                             "reason": v.reason}, ensure_ascii=False, sort_keys=True)
                 for k, v in sorted(self.pins.items())]
        from .._util.safefile import write_atomic

        write_atomic(self.path, "".join(line + "\n" for line in lines))
