"""Pins for mined cases: what ``queryeval mine`` records of the data, and ``--refresh``.

Why: a mined gold is what production ran on the data it saw; the pin (:mod:`..sources.pins`)
lets a replay tell a changed model from changed data. Mining pins each case on the suite's
datasource as it is then (the ``queryeval.yaml`` above ``--out``, or ``--config``): the tables
its observed query reads, found by the SQL table extraction the agent ledger uses
(:func:`..agents.ledger.tables_of`), or the digest of a file source's files. ``--refresh DIR``
computes them again after a person reviewed a change, and rewrites only each case's
one-line ``pin:`` (never anything else of the file), saying what it re-pinned.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, QueryEvalError
from ..sources.base import DataSource
from ..sources.pins import PinError, file_sum, pin_problems, real_names, table_sum

CONFIG = "queryeval.yaml"


def find_datasource(name: str, where: Path, config: Path | None) -> tuple[dict[str, Any] | None,
                                                                         str]:
    """The spec of datasource ``name`` in the suite config above ``where`` (or ``config``),
    with what was found or why nothing was."""
    from ..suite.config import ConfigFinder

    start = (config.parent if config is not None else where).resolve()
    if config is not None and not config.is_file():
        return None, f"{config}: no such file"
    while not start.exists():
        start = start.parent
    cfg = ConfigFinder(Path(start.anchor)).for_directory(start)
    found = cfg.datasources.get(name)
    if found is None:
        return None, f"no {CONFIG} at or above {start} defines datasource {name!r} " \
                     "(give --config)"
    if found.errors:
        return None, found.errors[0]
    where = Path(start.anchor) / found.file  # (displayed relative to the anchor)
    shown = where.relative_to(Path.cwd()) if where.is_relative_to(Path.cwd()) else where
    return dict(found.spec), f"{shown}:{found.line}"


def flow(pin: Mapping[str, Any]) -> str:
    """``pin`` as the one line ``--refresh`` can rewrite in place."""
    import yaml

    return str(yaml.safe_dump(dict(pin), default_flow_style=True, width=1 << 30,
                              sort_keys=False)).strip()


@dataclass
class Pinner:
    """Pins on one datasource: a table's checksum is computed once, however many cases read
    it."""

    name: str
    spec: dict[str, Any]
    source: DataSource | None = None
    #: the checksums computed (a table's name, or ``\0file``)
    sums: dict[str, str] = field(default_factory=dict)

    @property
    def is_sql(self) -> bool:
        from ..sources import SOURCE_TYPES

        entry = SOURCE_TYPES.get(str(self.spec.get("type")))
        return bool(entry is not None and entry.sql)

    def _source(self) -> DataSource:
        if self.source is None:
            from ..sources import open_source

            self.source = open_source(self.name, dict(self.spec))
        return self.source

    def pin(self, query: str | None, pinned: Mapping[str, Any] | None = None,
            ) -> dict[str, Any] | None:
        """The pin of a case whose gold is ``query`` (``pinned``: its pin now, whose tables
        stand when the query names none the source has). None: nothing to pin."""
        if not self.is_sql:
            return {"file": self._file_sum()}
        source = self._source()
        names: list[str] = []
        if isinstance(query, str) and query.strip():
            from ..agents.textjudge import tables_of

            names = real_names(source, tables_of(query, source.dialect))
        if not names and pinned:
            names = sorted(pinned.get("tables") or {})
        if not names:
            return None
        return {"tables": {name: self._table_sum(source, name) for name in names}}

    def _table_sum(self, source: DataSource, name: str) -> str:
        if name not in self.sums:
            self.sums[name] = table_sum(source, name)
        return self.sums[name]

    def _file_sum(self) -> str:
        if "\0file" not in self.sums:
            self.sums["\0file"] = file_sum(self.spec)
        return self.sums["\0file"]

    def close(self) -> None:
        if self.source is not None:
            self.source.close()


# -- --refresh -------------------------------------------------------------------------------

_PIN_LINE = re.compile(r"^(?P<head>\s*(?:-\s+)?pin:[ \t]*)(?P<value>\{.*\})[ \t]*(?P<end>\r?\n?)$")


@dataclass
class Refreshed:
    """What ``--refresh`` did to one file."""

    changed: list[str] = field(default_factory=list)
    same: int = 0
    errors: list[str] = field(default_factory=list)


def refresh_file(path: Path, display: str, pinners: dict[str, Pinner | str],
                 where: Path, config: Path | None) -> tuple[str | None, Refreshed]:
    """The text of ``path`` with each pinned case's ``pin:`` line computed again (None when
    nothing changed or an error stops it), and what was done."""
    from .._yaml.yamlload import load_file

    done = Refreshed()
    try:
        data = load_file(path, display)
    except ConfigError as exc:
        done.errors.append(exc.located())
        return None, done
    cases = data.get("cases") if isinstance(data, Mapping) else data
    if not isinstance(cases, list):
        return None, done
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    header = data.get("datasource") if isinstance(data, Mapping) else None
    for n, case in enumerate(cases):
        if isinstance(case, Mapping) and "pin" in case:
            _refresh_case(case, f"cases[{n}]", header, lines, display, done,
                          lambda name: _pinner(name, pinners, where, config))
    if done.errors or not done.changed:
        return None, done
    return "".join(lines), done


def _pinner(name: str, pinners: dict[str, Pinner | str], where: Path,
            config: Path | None) -> Pinner | str:
    if name not in pinners:
        spec, said = find_datasource(name, where, config)
        pinners[name] = Pinner(name, spec) if spec is not None else said
    return pinners[name]


def _refresh_case(case: Mapping[str, Any], path: str, header: object, lines: list[str],
                  display: str, done: Refreshed, pinner_of: Any) -> None:
    line = case.line_of("pin") if hasattr(case, "line_of") else 0
    at = f"{display}:{line}: {path}.pin"
    for container, key, sub, message in pin_problems(case["pin"]):
        where = container.line_of(key) if hasattr(container, "line_of") else line
        done.errors.append(f"{display}:{where}: {path}.pin{sub}: {message}")
    if done.errors:
        return
    name = case.get("datasource", header)
    matched = _PIN_LINE.match(lines[line - 1]) if 0 < line <= len(lines) else None
    if not isinstance(name, str):
        done.errors.append(f"{at}: the case names no datasource to re-pin on")
        return
    if matched is None:
        done.errors.append(f"{at}: not the one line 'pin: {{...}}' queryeval mine writes; "
                           "write it on one line to re-pin it")
        return
    pinner = pinner_of(name)
    if isinstance(pinner, str):
        done.errors.append(f"{at}: {pinner}")
        return
    old = dict(case["pin"])
    try:
        new = pinner.pin(case.get("gold") if isinstance(case.get("gold"), str) else None, old)
    except (PinError, QueryEvalError) as exc:
        done.errors.append(f"{at}: cannot pin: {exc}")
        return
    if new is None or new == _plain(old):
        done.same += 1
        return
    lines[line - 1] = matched["head"] + flow(new) + matched["end"]
    done.changed.append(f"{case.get('id', path)}: {', '.join(_what_changed(_plain(old), new))}")


def _plain(pin: Mapping[str, Any]) -> dict[str, Any]:
    return {k: dict(v) if isinstance(v, Mapping) else v for k, v in pin.items()}


def _what_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    if "file" in new:
        return ["file"]
    before, after = old.get("tables") or {}, new.get("tables") or {}
    out = [t for t in sorted(after) if before.get(t) != after[t]]
    out.extend(f"{t} (no longer read)" for t in sorted(before) if t not in after)
    return out
