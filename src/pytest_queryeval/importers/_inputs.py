"""Reading a benchmark's files as untrusted input: bounded, and every problem an ImportProblem.

A downloaded benchmark file may be damaged or crafted: a 100,000-deep JSON or YAML document, a
path to ``/dev/zero``, a ``db_id`` of ``../../../../etc``. Each importer reads through these
helpers, so such a file ends in ``queryeval-import <name>: <file>: <problem>`` (exit 2), not a
traceback, a hang, or a datasource written outside the suite.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .._util.boundedio import BoundedReadError, load_json_file, loads_json
from .._util.boundedio import read_text as _read_text
from ._common import ImportProblem

#: A database name as the benchmarks spell them (``california_schools``, ``E_commerce``):
#: it becomes a file name (``{db}.sqlite``) and a datasource key, so no separators, no ``..``.
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@+-]*")


def read_text(path: Path) -> str:
    """A regular UTF-8 text file of bounded size."""
    try:
        return _read_text(path)
    except BoundedReadError as exc:
        raise ImportProblem(f"{path.name}: {exc}") from None


def load_json(path: Path) -> Any:
    """A JSON file, bounded in size and nesting."""
    try:
        return load_json_file(path)
    except BoundedReadError as exc:
        raise ImportProblem(f"{path.name}: {exc}") from None


def json_line(line: str, where: str) -> Any:
    """One line of a JSONL file, bounded in nesting; ``where`` is ``file: line n``."""
    try:
        return loads_json(line)
    except BoundedReadError as exc:
        raise ImportProblem(f"{where}: {exc}") from None


def load_yaml(path: Path) -> Any:
    """A YAML file through the plugin's bounded loader (nesting, alias expansion), as plain
    dicts and lists."""
    from .._yaml.yamlload import load_file, plain
    from ..errors import ConfigError

    try:
        return plain(load_file(path, path.name))
    except ConfigError as exc:
        raise ImportProblem(exc.located()) from None


def plain_name(value: str, what: str = "db_id") -> str:
    """``value`` when it is a plain name that stays inside the folder it is joined to."""
    if not _NAME.fullmatch(value):
        raise ImportProblem(f"{what} {value!r}: expected a plain name (letters, digits, "
                            "'_', '-', '.', no path separators)")
    return value
