"""Reading input files that may be crafted or damaged: shards for ``queryeval merge`` and the
benchmark files of ``queryeval-import``.

``Path.read_text`` on ``/dev/zero`` or a FIFO never returns (or exhausts memory first), and the
json module's decoder ends a 100,000-deep array in a RecursionError; a report nested a few
hundred levels deep decodes, then breaks the recursive report writers. These helpers refuse such
files with a :class:`BoundedReadError` whose message names the problem, before any of that.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

#: The largest input file read whole (a 10,000-case report is a few tens of MB); the cap of
#: :mod:`.safefile`'s ``input`` purpose.
MAX_FILE_BYTES = 1 << 30
#: The deepest nesting of JSON arrays and objects accepted (a report nests about 10 levels;
#: the YAML loader's limit, ``yamlload.MAX_NESTING_DEPTH``, is the same).
MAX_JSON_DEPTH = 200
#: The deepest nesting the recursive walkers of untrusted data (the secret scrubber, the
#: record's cleaning and caps) descend into; below it a value is replaced by :data:`TOO_DEEP`.
#: Why: a source (python, http, command) hands over live objects no JSON decoder bounded, and
#: a walker one Python frame or two per level ends a 600-deep list in a RecursionError that
#: takes the case's whole test (and, in a report writer, the run's reports) with it.
MAX_WALK_DEPTH = 100
#: What a walker keeps of a value nested deeper than :data:`MAX_WALK_DEPTH`.
TOO_DEEP = f"… [cut: nested deeper than {MAX_WALK_DEPTH} levels]"


class BoundedReadError(ValueError):
    """An input file that is not read: not a regular file, too large, not UTF-8 text, not JSON,
    or nested too deeply. The message does not repeat the file's name (callers prefix it)."""


def read_bytes(path: Path) -> bytes:
    """The bytes of a regular file of at most :data:`MAX_FILE_BYTES`, through
    :mod:`.safefile` (the one place that opens a named file non-blocking and checks it on the
    open descriptor). OSError is left to the caller (it has its own message for a missing
    file); a device, a FIFO or a file over the cap is a :class:`BoundedReadError`."""
    from . import safefile

    try:
        return safefile.read_bytes(path, "input")
    except safefile.UnsafeFile as exc:
        raise BoundedReadError(str(exc)) from None


def read_text(path: Path) -> str:
    """:func:`read_bytes` decoded as UTF-8 (a BOM is not skipped: JSON has none)."""
    data = read_bytes(path)
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


def repeated_pairs(found: list[str]) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    """A ``json.loads`` ``object_pairs_hook`` that builds each object as the default does
    (the last of a repeated key wins) and appends to ``found`` each key an object gives
    twice: which of the two a reader took is its JSON parser's choice, so a reader that must
    see everything the text holds (an agent's record) can refuse it."""
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(items)
        if len(out) != len(items):
            seen: set[str] = set()
            for key, _ in items:
                if key in seen:
                    found.append(key)
                seen.add(key)
        return out
    return pairs


def repeated_key(text: str) -> str | None:
    """The first key an object of the JSON ``text`` gives twice, or None (None too for a
    text that is not JSON: its readers report that)."""
    found: list[str] = []
    try:
        json.loads(text, object_pairs_hook=repeated_pairs(found))
    except (ValueError, RecursionError):
        return None
    return found[0] if found else None


def depth_exceeds(value: object, max_depth: int) -> bool:
    """Whether lists and dicts nest more than ``max_depth`` levels (iterative: no recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterable[object] = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > max_depth:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


def shallow(value: object, max_depth: int = MAX_WALK_DEPTH) -> object:
    """``value`` itself when lists and dicts nest at most ``max_depth`` levels, else a copy
    whose containers below that level are :data:`TOO_DEEP` (its recursion is bounded by
    ``max_depth``): what the JSON encoder, recursive in C, can write without a
    RecursionError, with the shape of the top kept for the reader."""
    if not depth_exceeds(value, max_depth):
        return value

    def copy(item: object, depth: int) -> object:
        if not isinstance(item, dict | list | tuple):
            return item
        if depth >= max_depth:
            return TOO_DEEP
        if isinstance(item, dict):
            return {k: copy(v, depth + 1) for k, v in item.items()}
        return [copy(v, depth + 1) for v in item]

    return copy(value, 0)


def read_problem(exc: OSError | BoundedReadError) -> str:
    """Why a file was not read, for a message that names the file: an OSError's reason
    without its errno and path, or the bounded read's own words."""
    if isinstance(exc, OSError):
        return f"cannot read: {exc.strerror or exc}"
    return str(exc)


def load_json_file(path: Path, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """A JSON file read with :func:`read_text` and parsed with :func:`loads_json`."""
    return loads_json(read_text(path), max_depth)


def load_report_file(path: Path, option: str, name: str) -> dict[str, Any]:
    """A queryeval JSON report an option names (``--queryeval-resume``,
    ``--queryeval-shard-durations``); ValueError names the option, the file as given
    (``name``) and the problem: unreadable, too deep or large, or not a report."""
    try:
        data = load_json_file(path)
    except (OSError, BoundedReadError) as exc:
        raise ValueError(f"{option}: {name}: {read_problem(exc)}") from None
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        raise ValueError(f"{option}: {name}: not a queryeval JSON report")
    return data
