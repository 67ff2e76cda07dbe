"""pytest-queryeval: the pytest hooks (work in progress)."""

from __future__ import annotations
