"""``suite/cases.py`` on its own: a case file into ``Case`` objects, each problem located."""

from __future__ import annotations

from pathlib import Path

from pytest_queryeval.suite.cases import is_turn_list, load_cases
from pytest_queryeval.suite.config import SuiteConfig
from tests.sdmx_cases import GDP, MEX, dump, sdmx_case, selection


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "test_q.yaml"
    path.write_text(dump(data))
    return path


def test_each_entry_becomes_a_case_with_its_id_line_and_kind(tmp_path: Path) -> None:
    path = _write(tmp_path, {"kind": "sdmx", "cases": [
        sdmx_case("gdp", selection(GDP), selection(GDP), tags=["econ"]),
        sdmx_case("mex", selection(GDP, MEX))]})
    cases = load_cases(path, "test_q.yaml", SuiteConfig())
    assert [(c.id, c.kind, c.errors) for c in cases] == [("gdp", "sdmx", []), ("mex", "sdmx", [])]
    assert cases[0].line < cases[1].line
    assert cases[0].tags == ["econ"]


def test_an_unknown_key_fails_only_its_case_with_the_key_path(tmp_path: Path) -> None:
    path = _write(tmp_path, {"kind": "sdmx", "cases": [
        sdmx_case("ok", selection(GDP)), sdmx_case("bad", selection(GDP), tagz=["x"])]})
    ok, bad = load_cases(path, "test_q.yaml", SuiteConfig())
    assert ok.errors == []
    assert len(bad.errors) == 1
    assert bad.errors[0].startswith("test_q.yaml:")
    assert bad.errors[0].endswith(": cases[1].tagz: unknown key (did you mean 'tags'?)")


def test_is_turn_list() -> None:
    assert is_turn_list([{"role": "user", "content": "q"}])
    assert not is_turn_list([{"id": "a"}])
