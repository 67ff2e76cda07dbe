"""The registry the walls' tests are parametrized over (every type, built-in or registered
through ``pytest_queryeval_source_types``), read when the tests are collected."""

from __future__ import annotations

import pytest

from pytest_queryeval.sources import SourceType, source_types
from pytest_queryeval.sources.walls import Walls

from .corpus import CATEGORY_WALL, DAMAGING, IN_PROCESS_UNSAFE
from .live import LIVE, NOT_LIVE, SERVER_MARKS


def registered(config: pytest.Config) -> dict[str, SourceType]:
    """Every type of the registry: the built-in table and the hook's entries."""
    out: dict[str, SourceType] = dict(source_types())
    for result in reversed(config.hook.pytest_queryeval_source_types(config=config)):
        for name, entry in (result or {}).items():
            out[name] = entry if isinstance(entry, SourceType) else SourceType.inherit(entry)
    return out


def _server(name: str) -> list[pytest.MarkDecorator]:
    return [getattr(pytest.mark, SERVER_MARKS[name])] if name in SERVER_MARKS else []


def _marks(name: str, walls: Walls | None, category: str) -> list[pytest.MarkDecorator]:
    return _server(name) + _wall_marks(name, walls, category)


def _wall_marks(name: str, walls: Walls | None, category: str) -> list[pytest.MarkDecorator]:
    if name not in LIVE:
        return [pytest.mark.skip(reason=NOT_LIVE[name])] if name in NOT_LIVE else []
    if walls is None:
        return []  # fails: the type declares no walls
    unmet = walls.unmet()
    wall = CATEGORY_WALL[category]
    in_process = "process" in unmet and category in IN_PROCESS_UNSAFE
    if wall is not None and wall in unmet:
        return [pytest.mark.xfail(strict=True, raises=AssertionError,
                                  reason=f"declared: {wall}: {unmet[wall]}",
                                  run=category not in DAMAGING and not in_process)]
    if in_process:
        return [pytest.mark.skip(reason=f"not run: it could crash or stall what runs the "
                                        f"engine (declared: process: {unmet['process']})")]
    return []


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    types = registered(metafunc.config)
    if "category" in metafunc.fixturenames:
        metafunc.parametrize(("type_name", "category"), [
            pytest.param(name, category, marks=_marks(name, entry.walls, category),
                         id=f"{name}-{category}")
            for name, entry in sorted(types.items()) for category in CATEGORY_WALL])
    elif "type_name" in metafunc.fixturenames:
        metafunc.parametrize("type_name", [
            pytest.param(name, marks=([pytest.mark.skip(reason=NOT_LIVE[name])]
                                      if name in NOT_LIVE else []) + _server(name))
            if "live" in metafunc.fixturenames else name
            for name in sorted(types)])
