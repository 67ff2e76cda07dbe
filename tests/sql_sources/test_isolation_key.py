"""``isolation:`` is checked by one rule for every source that has the key: the same values,
the same message naming the value, the same located key."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_queryeval.errors import ConfigError
from pytest_queryeval.sources import open_source


@pytest.mark.parametrize("spec", [
    {"type": "sqlite", "path": "db.sqlite"},
    {"type": "duckdb", "path": "db.duckdb"},
    {"type": "sqlalchemy", "url": "sqlite:///db.sqlite"},
    {"type": "rdf", "path": "graph.ttl"},
], ids=lambda spec: spec["type"])
def test_a_bad_isolation_is_located_and_named(spec: dict[str, str], tmp_path: Path) -> None:
    if "path" in spec:
        spec = {**spec, "path": str(tmp_path / spec["path"])}
    with pytest.raises(ConfigError) as err:
        open_source("db", {**spec, "isolation": "sandbox"})
    assert err.value.key == "datasources.db.isolation"
    assert err.value.message == "isolation must be process or thread, not 'sandbox'"
