"""What the benchmark importers share: provenance headers, YAML output, datasource specs."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class ImportProblem(ValueError):
    """A problem of the input files (reported as ``queryeval-import <name>: ...``, exit 2)."""


#: The command the importers were reached through, innermost last: ``queryeval-import`` or
#: ``queryeval import``; their usage and messages name it as the user typed it.
_COMMAND = ["queryeval-import"]


def command() -> str:
    """``queryeval-import`` or ``queryeval import``: how the user ran the importer."""
    return _COMMAND[-1]


@contextmanager
def invoked_as(name: str) -> Iterator[None]:
    """Name the importers' command ``name`` while they run."""
    _COMMAND.append(name)
    try:
        yield
    finally:
        _COMMAND.pop()


def tag(text: str) -> str:
    """A marker-safe tag: lower case, runs of other characters become ``_``."""
    t = re.sub(r"[^a-z0-9_.+-]+", "_", text.strip().lower()).strip("_")
    if not t or t[0].isdigit():
        t = "t_" + t
    return t


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def provenance(tool: str, sources: list[Path], note: str = "") -> str:
    """A YAML comment block naming the importer and each input file with its SHA-256, so a
    suite says where its cases came from (file names only: no machine paths)."""
    lines = [f"# Written by `queryeval-import {tool}` from:"]
    lines += [f"#   {p.name} (sha256 {sha256(p)})" for p in sources]
    if note:
        lines += [f"# {line}" if line else "#" for line in note.splitlines()]
    return "\n".join(lines) + "\n"


def write_jsonl(path: Path, records: list[Any], *, ensure_ascii: bool = False) -> None:
    """One JSON object a line, the predictions file the plugin reads (``ensure_ascii``: as
    the Spider importers have always written theirs)."""
    path.write_text("".join(json.dumps(r, ensure_ascii=ensure_ascii) + "\n" for r in records),
                    encoding="utf-8")


def dump_yaml(data: object, header: str = "") -> str:
    """YAML with multi-line strings as literal blocks (SQL stays readable)."""
    import yaml

    class _Literal(yaml.SafeDumper):
        pass

    def text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        style = "|" if "\n" in value and not value.endswith((" ", "\t")) else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    _Literal.add_representer(str, text)
    out: str = yaml.dump(data, Dumper=_Literal, sort_keys=False, allow_unicode=True,
                         width=10_000)
    return header + out


def suite_relative(path: Path, out: Path) -> str:
    """``path`` relative to the suite folder ``out``, with ``..`` where it lies outside it:
    the plugin resolves a path against the ``queryeval.yaml`` (or case file) that names it,
    and a suite is committed, so it must name no path of this machine (an absolute path was
    written for a database outside the folder). Only a path on another drive, which no
    relative path reaches, stays absolute."""
    resolved = path.resolve()
    try:
        return Path(os.path.relpath(resolved, out.resolve())).as_posix()
    except ValueError:  # Windows: another drive
        return resolved.as_posix()


def datasource_spec(pattern: str, db: str, out: Path) -> dict[str, Any]:
    """The datasource of database ``db``: ``pattern`` with ``{db}`` replaced is an SQLAlchemy
    URL when it has ``://``, else an SQLite file path, relative to the suite folder
    (:func:`suite_relative`)."""
    target = pattern.replace("{db}", db)
    if "://" in target:
        return {"type": "sqlalchemy", "url": target}
    return {"type": "sqlite", "path": suite_relative(Path(target), out)}
