"""YAML loading that remembers where every mapping, key and list item came from.

Validation errors must name ``file:line`` and a key path; PyYAML's plain dicts forget lines,
so mappings load as :class:`LocDict` and sequences as :class:`LocList`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from .._util import safefile
from ..errors import ConfigError


class LocDict(dict[Any, Any]):
    """A dict that knows its own line and the line of each key (1-based)."""

    line: int = 0
    key_lines: dict[Any, int]

    def line_of(self, key: object) -> int:
        return self.key_lines.get(key, self.line)


class LocList(list[Any]):
    """A list that knows its own line and the line of each item (1-based)."""

    line: int = 0
    item_lines: list[int]

    def line_of(self, index: int) -> int:
        return self.item_lines[index] if 0 <= index < len(self.item_lines) else self.line


class _Loader(yaml.SafeLoader):
    """SafeLoader building located containers and refusing duplicate keys."""


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> LocDict:
    loader.flatten_mapping(node)
    out = LocDict()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "a mapping key must be a scalar", key_node.start_mark
            ) from None
        if key in out:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = key_node.start_mark.line + 1
    return out


def _construct_sequence(loader: _Loader, node: yaml.SequenceNode) -> LocList:
    out = LocList(loader.construct_object(child, deep=True) for child in node.value)
    out.line = node.start_mark.line + 1
    out.item_lines = [child.start_mark.line + 1 for child in node.value]
    return out


#: libyaml's parser when PyYAML was built with it: parsing is most of collecting a large suite
#: and the C parser is several times faster (same nodes and line marks). A document it rejects
#: is parsed again by the pure-Python loader, whose messages and marks are the reference.
_FAST: type[yaml.SafeLoader] | type[yaml.CSafeLoader] = _Loader
if getattr(yaml, "__with_libyaml__", False):
    class _CLoader(yaml.CSafeLoader):
        """The same loader on libyaml."""

    _FAST = _CLoader

#: The most digits a YAML integer may have: Python refuses to convert longer ones
#: (``sys.get_int_max_str_digits``), and no count, limit or id in a suite is that long.
MAX_INT_DIGITS = 4300
_MAX_INT_BITS = (10 ** MAX_INT_DIGITS - 1).bit_length()


def _construct_int(loader: yaml.SafeLoader | yaml.CSafeLoader, node: yaml.ScalarNode) -> int:
    """SafeLoader's int, refusing an over-long literal as a located error.

    ``int("9" * 5000)`` raised a bare ValueError from inside the constructor, which ended the
    whole session at collection; a 5,000-digit hexadecimal literal converts, but every message
    that shows it (``{value!r}``) raises the same error later. Both are YAML errors at their line.
    """
    too_long = yaml.constructor.ConstructorError(
        None, None, f"an integer longer than {MAX_INT_DIGITS:,} digits", node.start_mark)
    literal = str(node.value).lstrip("+-").replace("_", "")
    if literal[:2].lower() in ("0x", "0o", "0b"):
        literal = literal[2:]
    if len(literal) > MAX_INT_DIGITS:
        raise too_long
    value: int = yaml.constructor.SafeConstructor.construct_yaml_int(loader, node)
    if value.bit_length() > _MAX_INT_BITS:
        raise too_long
    return value


for _cls in {_Loader, _FAST}:
    _cls.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
    _cls.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)
    _cls.add_constructor("tag:yaml.org,2002:int", _construct_int)


#: Nodes an alias-expanded document may hold beyond its own: anchors and merge keys are fine,
#: a "billion laughs" document (aliases of aliases, 2**n nodes) is refused before it is built.
MAX_ALIAS_EXPANSION = 1_000_000


def _expanded_size(node: yaml.Node, file: str, memo: dict[int, int], unique: set[int],
                   active: set[int]) -> int:
    key = id(node)
    if key in memo:
        return memo[key]
    if key in active:
        raise ConfigError("YAML error: a recursive alias (a node that contains itself)", file,
                          node.start_mark.line + 1)
    unique.add(key)
    size = 1
    if isinstance(node, yaml.SequenceNode | yaml.MappingNode):
        active.add(key)
        children = node.value if isinstance(node, yaml.SequenceNode) \
            else [n for pair in node.value for n in pair]
        for child in children:
            size += _expanded_size(child, file, memo, unique, active)
            if size > MAX_ALIAS_EXPANSION + len(unique):
                raise ConfigError(f"YAML error: aliases expand to more than "
                                  f"{MAX_ALIAS_EXPANSION:,} nodes", file,
                                  node.start_mark.line + 1)
        active.discard(key)
    memo[key] = size
    return size


#: Where YAML alias syntax could be (``*name`` after a line start, blank or flow indicator);
#: ``count(*)`` and ``SELECT * FROM`` do not match, so most suites skip the expansion walk.
_MAYBE_ALIAS = re.compile(r"(?:^|[\s\[{,])\*[^\s,\]}]", re.MULTILINE)


def _parse(text: str, file: str, loader_class: type[yaml.SafeLoader] | type[yaml.CSafeLoader],
           ) -> Any:
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _MAYBE_ALIAS.search(text):
            _expanded_size(node, file, {}, set(), set())
        return loader.construct_document(node)
    finally:
        loader.dispose()


class _Decline(Exception):
    """The event builder met something only the node path handles (anchors, tags, errors).

    ``opened`` is 1 when it was raised on a mapping or list start it did not push.
    """

    def __init__(self, opened: int = 0) -> None:
        super().__init__()
        self.opened = opened


_STR_TAG = "tag:yaml.org,2002:str"
#: Tags the event builder constructs itself (str) or hands to SafeLoader's constructor.
_SIMPLE_TAGS = frozenset({
    _STR_TAG, "tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null", "tag:yaml.org,2002:timestamp",
})
#: Deeper documents take the node path (recursive, in C with libyaml), after the rest of the
#: stream's depth was checked against :data:`MAX_NESTING_DEPTH`.
_MAX_EVENT_DEPTH = 100

#: The deepest nesting of mappings and lists a YAML file may have. libyaml's composer recurses
#: in C, so a 30,000-deep file (60 KB) crashed the whole process (exit 139) instead of raising
#: RecursionError; the depth is counted on the flat event stream before any node is composed.
MAX_NESTING_DEPTH = 200


def _check_depth(get: Callable[[], Any], depth: int, file: str) -> None:  # events: untyped in the stubs
    """Consume the rest of the event stream, refusing nesting beyond MAX_NESTING_DEPTH. A
    parser past its stream's end gives None from then on: where the event builder had read the
    end before it declined, this loop waited for a StreamEndEvent forever, and a collection
    spun at full CPU in ``load_file`` (the thirty-fourth re-probe, two suites in one
    process)."""
    while True:
        event = get()
        if event is None:
            return
        kind = type(event)
        if kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
            depth += 1
            if depth > MAX_NESTING_DEPTH:
                raise ConfigError(f"YAML error: nesting deeper than {MAX_NESTING_DEPTH} levels "
                                  f"of mappings and lists", file, event.start_mark.line + 1)
        elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
            depth -= 1
        elif kind is yaml.StreamEndEvent:
            return


def _libyaml_too_deep(exc: yaml.YAMLError) -> bool:
    """libyaml's own nesting bound of 1,000 (PyYAML 6.0.4's wheels on): it scans ahead of the
    events, so it stops a deep file before :func:`_events_to_document` counts its depth."""
    return "maximum nesting depth" in str(getattr(exc, "problem", "") or "")


def _build_from_events(text: str, loader_class: type[yaml.SafeLoader] | type[yaml.CSafeLoader],
                       file: str = "<yaml>") -> Any:
    """Build the located document straight from parser events, without a node tree.

    Composing nodes and then constructing them is most of the cost of collecting a large suite;
    this single pass gives the same containers, values and lines for the documents it accepts
    and raises :class:`_Decline` for anything else (anchors, aliases, explicit tags, merge keys,
    duplicate or non-scalar keys, several documents), which then takes the node path once the
    rest of the stream was found no deeper than :data:`MAX_NESTING_DEPTH`.
    """
    loader = loader_class(text)
    stack: list[Any] = []
    try:
        return _events_to_document(loader, stack)
    except _Decline as exc:
        _check_depth(loader.get_event, len(stack) + exc.opened, file)
        raise
    except TypeError:
        _check_depth(loader.get_event, len(stack), file)
        raise
    except yaml.YAMLError as exc:
        if _libyaml_too_deep(exc):  # where the file first nests past our bound: Python's parser
            python = _Loader(text)
            try:
                _check_depth(python.get_event, 0, file)
            finally:
                python.dispose()
        raise
    finally:
        loader.dispose()


def _events_to_document(loader: Any, stack: list[Any]) -> Any:
    """The event builder's loop; ``stack`` is the caller's, to know the depth at a decline."""
    get = loader.get_event
    get()  # StreamStartEvent
    event = get()
    if type(event) is yaml.StreamEndEvent:
        return None
    root: object = None
    key: object = _NO_KEY  # the key the innermost open mapping waits to fill
    plains: dict[str, Any] = {}
    quoted: dict[str, str] = {}
    while True:
        event = get()
        kind = type(event)
        if kind is yaml.ScalarEvent:
            if event.anchor is not None or event.tag is not None:
                raise _Decline
            raw = event.value
            if event.implicit[0]:  # plain: the resolver decides (and values are immutable)
                value = plains.get(raw, _NO_KEY)
                if value is _NO_KEY:
                    value = plains[raw] = _plain_value(loader, event)
            else:  # quoted: a string, one object per text (JSON-style suites quote every
                value = quoted.setdefault(raw, raw)  # key and value: 14 copies per case)
        elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
            value = _open_container(event, len(stack))
        elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
            stack.pop()
            key = _NO_KEY
            if not stack:
                break
            continue
        else:  # an alias
            raise _Decline
        if not stack:
            root = value
            if kind is yaml.ScalarEvent:
                break
        else:
            parent = stack[-1]
            if type(parent) is LocList:
                parent.append(value)
                parent.item_lines.append(event.start_mark.line + 1)
            elif key is _NO_KEY:
                if kind is not yaml.ScalarEvent or value in parent:
                    raise _Decline
                key = value
                parent.key_lines[key] = event.start_mark.line + 1
                continue
            else:
                parent[key] = value
                key = _NO_KEY
        if kind is not yaml.ScalarEvent:
            stack.append(value)
    if type(get()) is not yaml.DocumentEndEvent or type(get()) is not yaml.StreamEndEvent:
        raise _Decline  # another document follows: the node path says so precisely
    return root


def _plain_value(loader: Any, event: Any) -> Any:
    """A plain scalar's value as SafeLoader constructs it: the resolver picks its tag. Asked
    once per distinct text (values are immutable, the builder caches them)."""
    raw = event.value
    tag = loader.resolve(yaml.ScalarNode, raw, (True, False))
    if tag == _STR_TAG:
        return raw
    if tag in _SIMPLE_TAGS:
        return loader.yaml_constructors[tag](loader, yaml.ScalarNode(
            tag, raw, event.start_mark, event.end_mark, event.style))
    raise _Decline


def _open_container(event: Any, depth: int) -> LocDict | LocList:
    """The located mapping or list a start event opens; an anchored or tagged one, or one
    too deep for the loop, is left to the node path."""
    if event.anchor is not None or not event.implicit or depth >= _MAX_EVENT_DEPTH:
        raise _Decline(1)
    value: LocDict | LocList
    if type(event) is yaml.MappingStartEvent:
        value = LocDict()
        value.key_lines = {}
    else:
        value = LocList()
        value.item_lines = []
    value.line = event.start_mark.line + 1
    return value


class _NoKey:
    """Marks a mapping that waits for its next key."""


_NO_KEY = _NoKey()


def load_text(text: str, file: str) -> Any:
    """Parse one YAML document; syntax errors become a located :class:`ConfigError`."""
    try:
        try:
            try:
                return _build_from_events(text, _FAST, file)
            except (_Decline, yaml.YAMLError, TypeError):
                pass
            return _parse(text, file, _FAST)
        except yaml.YAMLError:
            if _FAST is _Loader:
                raise
            return _parse(text, file, _Loader)
    except RecursionError:
        raise ConfigError("YAML error: nesting too deep", file, 1) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        if exc.context_mark and exc.context and "end of stream" in problem:
            # an unterminated quote: where it opened, not the end of the file
            mark = exc.context_mark
            end = f" at line {exc.problem_mark.line + 1}" if exc.problem_mark else ""
            problem = f"{exc.context.removeprefix('while ')} that never ends ({problem}{end})"
        line = mark.line + 1 if mark else None
        col = f", column {mark.column + 1}" if mark else ""
        raise ConfigError(f"YAML syntax error{col}: {problem}", file, line) from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (control chars)
        line = text[: exc.position].count("\n") + 1
        char = chr(exc.character) if isinstance(exc.character, int) else exc.character
        raise ConfigError(f"YAML error: character {char!r} is not allowed", file, line) \
            from None
    except yaml.YAMLError as exc:  # pragma: no cover - other non-marked errors are rare
        raise ConfigError(f"YAML error: {exc}", file, 1) from None


def load_file(path: Path, display: str | None = None) -> Any:
    """Read and parse a YAML file (UTF-8); unreadable files are located errors too, and so are
    a device, a FIFO or a file over its cap (``safefile``: ``/dev/zero`` never ends)."""
    name = display or str(path)
    try:
        data = safefile.read_bytes(path, "yaml")
    except OSError as exc:  # safefile.UnsafeFile too: a FIFO, a device, over the cap
        raise ConfigError(f"cannot read file: {exc}", name, 1) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"not UTF-8 text: {exc.reason} (byte {exc.start})", name, line) \
            from None
    return load_text(text, name)


_LEAVES = frozenset({str, int, float, bool, type(None)})


def plain(value: Any) -> Any:
    """Strip location wrappers (for JSON output and for handing data to user code)."""
    t = type(value)
    if t is LocDict or t is dict:
        return {k: v if type(v) in _LEAVES else plain(v) for k, v in value.items()}
    if t is LocList or t is list:
        return [v if type(v) in _LEAVES else plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value
