"""The server fixture itself: a missing binary fails (never skips) with a clear message."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_missing_binary_fails_clearly(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                      shared_data: Path) -> None:
    monkeypatch.setenv("OXIGRAPH_BIN", str(pytester.path / "no-such-oxigraph"))
    pytester.makeconftest(f"""
import pytest
from pathlib import Path
pytest_plugins = ["tests.fixtures.oxigraph"]

@pytest.fixture(scope="session")
def shared_data():
    return Path({str(shared_data)!r})
""")
    pytester.makepyfile(test_uses_server="""
def test_needs_server(oxigraph_endpoint):
    assert oxigraph_endpoint.query_url
""")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*the oxigraph server binary was not found*pip install oxigraph*"])
    assert "skipped" not in result.stdout.str()
