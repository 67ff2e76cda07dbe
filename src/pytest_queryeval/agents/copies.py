"""The planted copy of a case's datasource, made once per process and shared by its cases.

Why a module of its own: the copy is made by the engine's planting (:mod:`.canaries` for a
file, :mod:`.pgplant` for a PostgreSQL database) and, with ``enforce:``, given its agent side
(:mod:`.enforce`); this module is the one above all three, so none imports another's caller.
"""

from __future__ import annotations

import atexit
import json
import shutil
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._util.safefile import private_tempdir
from .canaries import Instruction, Planted, PlantError, Target, plant
from .descriptions import plant_descriptions

_COPIES: dict[str, Planted | PlantError] = {}
_LOCK = threading.Lock()
_DIRS: list[str] = []


def is_postgres(spec: Mapping[str, Any]) -> bool:
    """A datasource reached by a PostgreSQL URL (its type's dialect says so)."""
    from ..sources import source_type

    try:
        dialect = source_type(spec.get("type")).dialect(spec)
    except Exception:  # an unknown type: the source names it when it opens
        return False
    return dialect == "postgres" and isinstance(spec.get("url"), str)


def prepare(cases: Sequence[Any]) -> None:
    """Before the first case runs: the private template of each PostgreSQL datasource that
    ``cases`` plant on (:func:`.pgplant.prepare_template`); file copies need nothing ahead."""
    seen: set[str] = set()
    for case in cases:
        spec = getattr(case, "source_spec", None) or {}
        if not getattr(getattr(case, "agent", None), "protected", ()) or not is_postgres(spec):
            continue
        if str(spec.get("url")) not in seen:
            seen.add(str(spec.get("url")))
            from .pgplant import prepare_template

            prepare_template(spec)


def planted_for(spec: Mapping[str, Any], targets: Sequence[Target], seed: int = 0,
                enforce: bool = False, instructions: Sequence[Instruction] = ()
                ) -> Planted:
    """The planted copy of the datasource ``spec`` (``type`` sqlite or duckdb, absolute
    ``path``; or a PostgreSQL ``sqlalchemy`` URL: a template copy), made on first use and
    kept for the process (removed at its exit); a target that cannot be planted raises
    :class:`PlantError`, the same one for every case. ``enforce``: the agent's side of the
    copy withholds what is protected (:mod:`.enforce`)."""
    key = json.dumps([spec.get("type"), str(spec.get("path")), str(spec.get("url")), seed,
                      [[t.table, t.column, t.where] for t in targets], enforce,
                      list(instructions)], default=str)
    with _LOCK:
        got = _COPIES.get(key)
        if got is None:
            try:
                got = _make(spec, tuple(targets), seed, enforce, tuple(instructions))
            except PlantError as exc:
                got = exc
            _COPIES[key] = got
    if isinstance(got, PlantError):
        raise got
    return got


def _make(spec: Mapping[str, Any], targets: tuple[Target, ...], seed: int,
          enforce: bool, instructions: tuple[Instruction, ...]) -> Planted:
    if is_postgres(spec):
        from .pgplant import plant_postgres

        planted = plant_postgres(spec, targets, seed, enforce, instructions)
    else:
        if not _DIRS:
            atexit.register(_remove_dirs)
        # named with this process's pid: a later run removes a killed run's copies (a copy of
        # the user's database each, which the killed run's exit handler never removed)
        _DIRS.append(private_tempdir("queryeval-planted-", whole=True))
        planted = plant(Path(str(spec.get("path"))), str(spec.get("type")), targets, seed,
                        Path(_DIRS[-1]), instructions)
        assert planted.path is not None
        planted.descriptions = plant_descriptions(planted.path, str(spec.get("type")),
                                                  [i for i in instructions if i.comment])
        planted.spec = {**spec, "path": str(planted.path)}
        if enforce:
            from .enforce import tenant_copy

            planted.agent_spec = {**spec, "path": str(tenant_copy(planted, targets,
                                                                  str(spec.get("type"))))}
    planted.targets = targets
    return planted


def planted_spec(spec: Mapping[str, Any], targets: Sequence[Target], seed: int = 0,
                 enforce: bool = False, instructions: Sequence[Instruction] = ()
                 ) -> dict[str, Any]:
    """The spec of the planted copy as the gold reads it: the same mapping for the same
    inputs (a datasource is opened once per spec)."""
    planted = planted_for(spec, targets, seed, enforce, instructions)
    assert planted.spec is not None
    return planted.spec


def _remove_dirs() -> None:
    for path in _DIRS:
        shutil.rmtree(path, ignore_errors=True)


def schema_notes(case: Any) -> dict[str, str]:
    """The descriptions of the case's planted copy (``Table`` or ``Table.Column`` -> text);
    empty unless the case plants a ``{comment: ...}`` instruction."""
    from .spec import AgentSpec

    spec = getattr(case, "agent", None)
    if not isinstance(spec, AgentSpec) or not any(i.comment for i in spec.instructions):
        return {}
    try:
        planted = planted_for(getattr(case, "source_spec", None) or {}, spec.protected,
                              spec.canary_seed, spec.enforce, spec.instructions)
    except PlantError:  # the case's error already, where its source is opened
        return {}
    return dict(planted.descriptions)
