"""``--queryeval-write-transpiled``: a transpiled gold the audit checked becomes an explicit one.

Why: sqlglot's transpile is an authoring aid (84 % of 87 Spider golds gave the same result on
DuckDB, 75 % on PostgreSQL), so a transpiled gold is trusted only once the gold audit saw its
result equal the gold it came from (:mod:`.transpiled`). Writing it into the case file as that
dialect's own ``gold:`` entry turns the checked transpile into a reviewed line of the suite and
stops it being re-transpiled (and re-trusted) on every run.

Why an edit of the text rather than a YAML round trip: PyYAML, the project's YAML library,
forgets comments, quoting and layout, so dumping the loaded file would rewrite all of it. The
file is composed once more (PyYAML's nodes carry character offsets), one line or one
``, key: value`` is inserted after the last entry of the case's ``gold:`` mapping, and the
result is loaded again: it must equal the old file's data with exactly that entry added, or
nothing is written. Every other byte (comments, order, quoting, line endings) stays as it was.

Only a gold whose every audited item ``matched`` is written; a mismatch, an unchecked transpile
(no source of the original dialect), an entry already present with another text, or a
``gold:`` not written in the case's own entry is listed with the reason and left alone.
Independent of pytest: :func:`write_transpiled` takes the run's case records.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .._yaml.yamlload import load_text, plain
from ..errors import ConfigError

#: Why a transpiled gold was not written, by its audit's ``checked``.
_NOT_CHECKED = {
    "mismatch": "its result differs from the {src} gold's (transpile-mismatch)",
    "unchecked": "no {src} datasource to compare its result with (transpile-unchecked)",
}


@dataclass(frozen=True)
class _Entry:
    """One dialect's transpiled gold of one case as written, over all its audited items."""

    path: str
    file: str
    line: int
    case: str
    dialect: str
    source_dialect: str
    source: object  # the audited gold text (a query, or a list of acceptable ones)
    gold: object
    items: tuple[str, ...]


class _Refused(Exception):
    """The edit of one entry cannot be made safely (the reason is the message)."""


def write_transpiled(records: Iterable[Mapping[str, Any]]) -> dict[str, list[dict[str, object]]]:
    """Write every checked transpiled gold of the run's records (with their absolute
    ``path``) into its case file; ``{"written": [...], "not_written": [...]}``, each item
    ``{id, file, line, dialect}`` (``reason`` for the others), in file and line order."""
    groups: dict[tuple[str, int, str, str], list[Mapping[str, Any]]] = {}
    for rec in records:
        check = ((rec.get("details") or {}).get("audit") or {}).get("transpiled")
        if isinstance(check, Mapping) and rec.get("path"):
            key = (str(rec["path"]), int(rec.get("line") or 0), str(check.get("case")),
                   str(check.get("dialect")))
            groups.setdefault(key, []).append(rec)
    written: list[dict[str, object]] = []
    refused: list[dict[str, object]] = []
    by_file: dict[str, list[_Entry]] = {}
    for (path, line, case, dialect), recs in sorted(groups.items()):
        first = recs[0]
        check = first["details"]["audit"]["transpiled"]
        ids = tuple(sorted(str(r.get("id")) for r in recs))
        entry = _Entry(path, str(first.get("file")), line, case, dialect, str(check["from"]),
                       check.get("source"), check.get("gold"), ids)
        states = {str(r["details"]["audit"]["transpiled"].get("checked")) for r in recs}
        golds = {json.dumps(r["details"]["audit"]["transpiled"].get("gold")) for r in recs}
        if states != {"matched"} or len(golds) > 1:
            bad = sorted(states - {"matched"})
            why = _NOT_CHECKED.get(bad[0], "it was not checked") if bad else \
                "its items ran different texts"
            refused.append(_item(entry, why.format(src=entry.source_dialect)))
            continue
        by_file.setdefault(path, []).append(entry)
    for path, entries in sorted(by_file.items()):
        done, problems = _write_file(Path(path).resolve(), entries)  # a link's target
        written.extend(_item(e) for e in done)
        refused.extend(_item(e, why) for e, why in problems)
    return {"written": sorted(written, key=_order), "not_written": sorted(refused, key=_order)}


def _order(item: Mapping[str, Any]) -> tuple[str, int, str, str]:
    return str(item["file"]), int(item["line"]), str(item["id"]), str(item["dialect"])


def summary_lines(result: Mapping[str, Any]) -> list[str]:
    """The terminal's account of the write-back: what was written, what was not and why."""
    written, refused = result.get("written") or [], result.get("not_written") or []
    lines = [f"transpiled golds written into their case files: {len(written)}, "
             f"not written: {len(refused)}"]
    lines += [f"  written     {i['file']}:{i['line']} {i['id']}: gold.{i['dialect']}"
              for i in written]
    lines += [f"  not written {i['file']}:{i['line']} {i['id']}: gold.{i['dialect']}: "
              f"{i['reason']}" for i in refused]
    return lines


def _item(entry: _Entry, reason: str | None = None) -> dict[str, object]:
    out: dict[str, object] = {"id": entry.case, "file": entry.file, "line": entry.line,
                           "dialect": entry.dialect, "items": list(entry.items)}
    if reason is not None:
        out["reason"] = reason
    return out


def _write_file(path: Path, entries: list[_Entry]) -> tuple[list[_Entry],
                                                             list[tuple[_Entry, str]]]:
    """Apply each entry's edit to the file's text in turn; one atomic write at the end."""
    from .._util.safefile import write_atomic

    try:
        original = path.read_bytes().decode("utf-8")
        mode = path.stat().st_mode & 0o7777
    except (OSError, UnicodeDecodeError) as exc:
        return [], [(e, f"cannot read the case file: {exc}") for e in entries]
    text = original
    done: list[_Entry] = []
    problems: list[tuple[_Entry, str]] = []
    # from the last case up: an entry added to one case never moves the lines of the ones
    # above it, which are found by the line their records name
    for entry in sorted(entries, key=lambda e: (-e.line, e.dialect)):
        try:
            changed = _insert(text, entry)
        except _Refused as exc:
            problems.append((entry, str(exc)))
            continue
        if changed is not None:
            text = changed
        done.append(entry)
    if text != original:
        try:
            write_atomic(path, text)
            os.chmod(path, mode)  # a case file keeps its permissions
        except OSError as exc:
            return [], [*problems, *((e, f"cannot write the case file: {exc}") for e in done)]
    return done, problems


def _insert(text: str, entry: _Entry) -> str | None:
    """The text with ``entry`` added to its case's ``gold:`` mapping (None: the same entry is
    already there); raises :class:`_Refused` when that cannot be done safely."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        before = plain(load_text(text, entry.file))
    except (yaml.YAMLError, ConfigError) as exc:
        raise _Refused(f"the case file no longer parses: {exc}") from None
    index, node = _case_node(root, entry)
    gold = _value(node, "gold")
    if not isinstance(gold, yaml.MappingNode):
        raise _Refused("its gold: mapping is not written in the case's own entry")
    case_data = _case_data(before, index)
    mapping = case_data.get("gold") if isinstance(case_data, dict) else None
    if not isinstance(mapping, dict) or mapping.get(entry.source_dialect) != entry.source:
        raise _Refused(f"its {entry.source_dialect} gold changed since it was audited")
    if entry.dialect in mapping:
        if mapping[entry.dialect] == entry.gold:
            return None
        raise _Refused(f"the case already has a {entry.dialect} gold")
    new = _edited(text, gold, entry)
    try:
        after = plain(load_text(new, entry.file))
    except ConfigError as exc:  # pragma: no cover - the verification below is the guard
        raise _Refused(f"the edit would not parse: {exc}") from None
    mapping[entry.dialect] = entry.gold
    if after != before:
        raise _Refused("the edit would change more than this entry (an anchor or an unusual "
                       "layout): write it by hand")
    return new


def _case_node(root: yaml.Node | None, entry: _Entry) -> tuple[int | None, yaml.MappingNode]:
    """(its index in the case list or None for a one-case file, the case's mapping node)."""
    candidates: list[tuple[int | None, yaml.Node | None]]
    if isinstance(root, yaml.MappingNode) and _value(root, "cases") is not None:
        items = _value(root, "cases")
        candidates = list(enumerate(items.value)) if isinstance(items, yaml.SequenceNode) \
            else []
    elif isinstance(root, yaml.SequenceNode):
        candidates = list(enumerate(root.value))
    else:
        candidates = [(None, root)]
    for index, node in candidates:
        if isinstance(node, yaml.MappingNode) and node.start_mark.line + 1 == entry.line:
            case_id = _value(node, "id")
            if case_id is None or (isinstance(case_id, yaml.ScalarNode)
                                   and case_id.value == entry.case):
                return index, node
    raise _Refused(f"the case is no longer at line {entry.line} of its file")


def _case_data(data: dict[str, Any] | list[Any], index: int | None) -> Any:
    if index is None:
        return data
    cases = data["cases"] if isinstance(data, dict) else data
    return cases[index]


def _value(node: yaml.Node, key: str) -> yaml.Node | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    return next((v for k, v in node.value
                 if isinstance(k, yaml.ScalarNode) and k.value == key), None)


def _edited(text: str, gold: yaml.MappingNode, entry: _Entry) -> str:
    """The text with ``dialect: value`` after the last entry of the ``gold:`` mapping."""
    newline = "\r\n" if "\r\n" in text else "\n"
    last_key, last_value = gold.value[-1]
    quoted = last_key.style == '"'  # a JSON file stays JSON
    key = json.dumps(entry.dialect) if quoted else entry.dialect
    flow = bool(gold.flow_style)
    value = _render(entry.gold, flow=flow, quoted=quoted or (
        isinstance(last_value, yaml.ScalarNode) and last_value.style in ("'", '"')))
    if flow:
        end = last_value.end_mark.index
        closing = gold.end_mark.index - 1  # the mapping's "}"
        if "\n" in text[end:closing]:  # one entry per line: the new one on its own line too
            pad = " " * last_key.start_mark.column
            return f"{text[:end]},{newline}{pad}{key}: {value}{text[end:]}"
        return f"{text[:end]}, {key}: {value}{text[end:]}"
    pad = " " * gold.value[0][0].start_mark.column
    tail = last_value
    while isinstance(tail, yaml.MappingNode | yaml.SequenceNode) and not tail.flow_style \
            and tail.value:
        last = tail.value[-1]
        tail = last[1] if isinstance(tail, yaml.MappingNode) else last
    mark = tail.end_mark
    if mark.column == 0 and mark.index > 0:  # a block scalar ends at the next line's start
        return f"{text[:mark.index]}{pad}{key}: {value}{newline}{text[mark.index:]}"
    stop = text.find("\n", mark.index)
    if stop < 0:
        stop = len(text)
    elif stop > 0 and text[stop - 1] == "\r":
        stop -= 1
    return f"{text[:stop]}{newline}{pad}{key}: {value}{text[stop:]}"


def _render(gold: object, *, flow: bool, quoted: bool) -> str:
    """A gold (a query, or a list of acceptable ones) as a YAML value: a plain scalar where it
    reads back unchanged (unless the entry before it is ``quoted``), else a double-quoted
    (JSON) string; a list as a flow sequence."""
    if isinstance(gold, list):
        return "[" + ", ".join(_render(g, flow=True, quoted=True) for g in gold) + "]"
    sql = str(gold)
    if not quoted and sql and sql == sql.strip() and "\n" not in sql:
        probe = f"{{k: {sql}}}" if flow else f"k: {sql}"
        try:
            if yaml.safe_load(probe) == {"k": sql}:
                return sql
        except yaml.YAMLError:
            pass
    return json.dumps(sql, ensure_ascii=False)
