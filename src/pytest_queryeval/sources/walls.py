"""The walls: what a datasource type promises to hold against a hostile predicted query, as
part of its registry entry (:attr:`~pytest_queryeval.sources.SourceType.walls`).

Why a declaration: each engine was hardened on its own, and what one type held (a worker
process that a crash or a runaway query cannot take the run down with) another did not, with
nothing saying so. A type now declares each wall, ``True`` or the reason it cannot hold it
(``"cannot: ..."``); a suite whose datasource's type cannot hold a wall gets a warning naming
the datasource and the wall (:func:`open_walls`), and the shared hostile corpus
(``tests/walls/``) runs against every registered type and expects exactly what it declares.
docs/architecture.md ("The walls") states them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, NamedTuple

#: ``True`` (the wall holds) or why it does not (a text starting with :data:`CANNOT`).
Wall = Literal[True] | str

CANNOT = "cannot: "

#: What each wall means, in the order docs/architecture.md lists them.
MEANINGS: dict[str, str] = {
    "process": "queries run outside the pytest process: an engine that crashes or runs away "
               "ends its case, not the run",
    "read_only": "the engine itself refuses writes, the guard bypassed (a gold query's "
                 "trusted run)",
    "file_access": "no query reads or writes a file of the host (its content is never in a "
                   "result or a reason)",
    "time_limit": "the time limit covers parsing and planning as well as execution: a deep "
                  "literal or a huge range ends as the case's error within it",
    "memory_bound": "the memory a query may take is bounded (a huge value ends as the case's "
                    "error, the pytest process does not grow)",
}

#: Each wall in a few words, as a warning names it.
TITLES: dict[str, str] = {
    "process": "a process of its own", "read_only": "a read-only engine",
    "file_access": "no host file access", "time_limit": "a time limit that covers parsing",
    "memory_bound": "a memory bound",
}

#: What ``isolation: thread`` gives up, for the types that take the key.
THREAD = "cannot: isolation: thread runs queries in the pytest process"


@dataclass(frozen=True)
class Walls:
    """A type's walls (see :data:`MEANINGS`); each ``True`` or ``"cannot: <why>"``."""

    process: Wall = True
    read_only: Wall = True
    file_access: Wall = True
    time_limit: Wall = True
    memory_bound: Wall = True
    #: What a datasource key's value gives up on this type, ``(key, value, {wall: "cannot:
    #: ..."})``: ``rehearse: false`` on a Bolt server gives up the time limit a FalkorDB
    #: server cannot keep inside one expression (its family page says so).
    given_up: tuple[tuple[str, object, Mapping[str, str]], ...] = field(default=(),
                                                                       compare=False)

    def __post_init__(self) -> None:
        for name, value in [*self.items(), *((n, v) for _, _, walls in self.given_up
                                             for n, v in walls.items())]:
            if name not in MEANINGS:
                raise ValueError(f"no wall {name!r}: one of {', '.join(MEANINGS)}")
            if value is not True and not (isinstance(value, str) and value.startswith(CANNOT)
                                          and value[len(CANNOT):].strip()):
                raise ValueError(f"wall {name}: True or {CANNOT!r} and the reason, "
                                 f"not {value!r}")

    def items(self) -> list[tuple[str, Wall]]:
        return [(f.name, getattr(self, f.name)) for f in fields(self) if f.name in MEANINGS]

    def unmet(self) -> dict[str, str]:
        """The walls it cannot hold, with why (the text after ``cannot:``)."""
        return {name: str(value)[len(CANNOT):] for name, value in self.items()
                if value is not True}

    def holds(self, wall: str) -> bool:
        return getattr(self, wall) is True

    def of_spec(self, spec: Mapping[str, object]) -> Walls:
        """The walls of one datasource: ``isolation: thread`` gives up the process and its
        memory cap, and a key of :attr:`given_up` what it names."""
        changes: dict[str, Any] = {wall: why for wall, (why, _) in self.gave_up(spec).items()}
        return replace(self, **changes)

    def gave_up(self, spec: Mapping[str, object]) -> dict[str, tuple[str, str]]:
        """Each wall a key of ``spec`` gives up, with why and the key (a value compared with
        its type too: ``rehearse: 0`` is not ``false``)."""
        out: dict[str, tuple[str, str]] = {}
        if spec.get("isolation") == "thread":
            out.update(process=(THREAD, "isolation"), memory_bound=(THREAD, "isolation"))
        for key, value, walls in self.given_up:
            if key in spec and type(spec[key]) is type(value) and spec[key] == value:
                out.update({wall: (why, key) for wall, why in walls.items()})
        return out


class OpenWall(NamedTuple):
    """A wall a datasource of the run does not hold: the warning (naming the key), and where
    that ``type`` (or ``isolation``) was written, where pytest shows it (None: not in a
    ``queryeval.yaml``)."""

    message: str
    file: str | None
    line: int | None


def open_walls(datasources: Iterable[tuple[str, Mapping[str, object]]]) -> list[OpenWall]:
    """One warning per datasource and wall its type declares it cannot hold, for the
    datasources a run's cases use (``(name, spec)``; each datasource is named once), located
    at the key that gives the wall up."""
    from . import source_type
    from .defined import defined_at

    out: list[OpenWall] = []
    seen: set[str] = set()
    for name, spec in datasources:
        type_name = spec.get("type")
        walls = source_type(type_name).walls
        if walls is None or name in seen:
            continue
        seen.add(name)
        keys = {wall: key for wall, (_, key) in walls.gave_up(spec).items()}
        for wall, why in walls.of_spec(spec).unmet().items():
            key = keys.get(wall, "type")
            at = defined_at(name, spec, key)
            out.append(OpenWall(
                f"datasources.{name}.{key}: a {type_name} datasource does not hold the wall "
                f"{wall} ({TITLES[wall]}): {why}", *(at or (None, None))))
    return out
