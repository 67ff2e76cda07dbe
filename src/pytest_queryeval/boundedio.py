"""Reading input files that may be crafted or damaged: shards for ``queryeval merge`` and the
benchmark files of ``queryeval-import``.

``Path.read_text`` on ``/dev/zero`` or a FIFO never returns (or exhausts memory first), and the
json module's decoder ends a 100,000-deep array in a RecursionError; a report nested a few
hundred levels deep decodes, then breaks the recursive report writers. These helpers refuse such
files with a :class:`BoundedReadError` whose message names the problem, before any of that.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

#: The largest input file read whole (a 10,000-case report is a few tens of MB).
MAX_FILE_BYTES = 1 << 30
#: The deepest nesting of JSON arrays and objects accepted (a report nests about 10 levels;
#: the YAML loader's limit, ``yamlload.MAX_NESTING_DEPTH``, is the same).
MAX_JSON_DEPTH = 200


class BoundedReadError(ValueError):
    """An input file that is not read: not a regular file, too large, not UTF-8 text, not JSON,
    or nested too deeply. The message does not repeat the file's name (callers prefix it)."""


def read_bytes(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes.

    The type is checked on the opened descriptor, opened non-blocking so a FIFO with no writer
    does not hang the open; a file that grows past ``limit`` while it is read is refused too.
    OSError is left to the caller (it has its own message for a missing file).
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            if stat.S_ISDIR(info.st_mode):
                raise BoundedReadError("is a directory")
            raise BoundedReadError("not a regular file (a device, FIFO or socket is not read)")
        if info.st_size > limit:
            raise BoundedReadError(f"{info.st_size} bytes: larger than the {limit}-byte limit")
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise BoundedReadError(f"larger than the {limit}-byte limit")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(path: Path, limit: int = MAX_FILE_BYTES) -> str:
    """:func:`read_bytes` decoded as UTF-8 (a BOM is not skipped: JSON has none)."""
    data = read_bytes(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise BoundedReadError(f"line {line}: not UTF-8 text: {exc.reason} "
                               f"(byte {exc.start})") from None


def loads_json(text: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` with the nesting bounded and every failure a BoundedReadError."""
    try:
        data = json.loads(text)
    except RecursionError:
        raise BoundedReadError(f"not JSON: nested deeper than {max_depth} levels") from None
    except ValueError as exc:  # JSONDecodeError, or an integer of more than 4300 digits
        raise BoundedReadError(f"not JSON: {exc}") from None
    if depth_exceeds(data, max_depth):
        raise BoundedReadError(f"not JSON: nested deeper than {max_depth} levels")
    return data


def depth_exceeds(value: Any, max_depth: int) -> bool:
    """Whether lists and dicts nest more than ``max_depth`` levels (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > max_depth:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


def load_json_file(path: Path, limit: int = MAX_FILE_BYTES,
                   max_depth: int = MAX_JSON_DEPTH) -> Any:
    """A JSON file read with :func:`read_text` and parsed with :func:`loads_json`."""
    return loads_json(read_text(path, limit), max_depth)
