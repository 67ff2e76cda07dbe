"""Fixture reports shared by the report-writer tests (see make_fixture.py)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from tests.support import read_report

HERE = Path(__file__).resolve().parent


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = read_report(HERE / name)
    return data


_CURRENT = _load("current.json")
_BASELINE = _load("baseline.json")


@pytest.fixture
def current() -> dict[str, Any]:
    return copy.deepcopy(_CURRENT)


@pytest.fixture
def baseline() -> dict[str, Any]:
    return copy.deepcopy(_BASELINE)
