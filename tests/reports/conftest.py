"""Fixture reports shared by the report-writer tests (see make_fixture.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((HERE / name).read_text(encoding="utf-8"))
    return data


_CURRENT = _load("current.json")
_BASELINE = _load("baseline.json")


@pytest.fixture
def current() -> dict[str, Any]:
    return copy.deepcopy(_CURRENT)


@pytest.fixture
def baseline() -> dict[str, Any]:
    return copy.deepcopy(_BASELINE)
