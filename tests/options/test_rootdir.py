"""An option's value given as the next word (``--queryeval-baseline ../runs/base.json``) does
not move pytest's rootdir, as ``--junitxml ../out/j.xml`` does not (issue 54, item 3).

pytest decides its rootdir before it loads any plugin, so it took such a value for a test
path: the rootdir became the common parent, with other node ids, cache and shards. The first
test runs every value-taking option of the plugin's declaration table; the second a whole run
against a baseline outside the suite.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.plugin import declare
from pytest_queryeval.plugin.declare import add_report_options, add_run_options
from tests.support import dump, read_report, write_suite

CASES = {"test_q.yaml": {"kind": "json", "cases": [
    {"id": "a", "question": "q", "gold": {"x": 1}, "predicted": {"x": 1}}]}}


def _table() -> dict[str, dict[str, Any]]:
    """Every option the plugin declares to pytest, by option string: its argparse keywords."""
    table: dict[str, dict[str, Any]] = {}
    for add_options in (add_run_options, add_report_options):
        add_options(lambda *names, **kwargs: table.update(dict.fromkeys(names, kwargs)))
    return table


TABLE = _table()
TAKES_VALUE = sorted(o for o, kw in TABLE.items()
                     if kw.get("action", "store") in ("store", "append") and "nargs" not in kw)


class _Setup:
    """Records pytest's rootdir and ini file, then ends the run before it configures."""

    def __init__(self) -> None:
        self.seen: tuple[Path, Path | None] | None = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_cmdline_main(self, config: pytest.Config) -> int:
        self.seen = (config.rootpath, config.inipath)
        return 0


def _setup(pytester: pytest.Pytester, *args: str) -> tuple[Path, Path | None]:
    recorder = _Setup()
    pytester.runpytest_inprocess(*args, plugins=[recorder])
    assert recorder.seen is not None
    return recorder.seen


def test_the_table_is_the_plugins_own() -> None:
    """The property below runs over what the plugin declares, which the hook checks."""
    assert set(TAKES_VALUE) == set(getattr(declare, "VALUE_OPTIONS", ()))
    assert {"--queryeval-baseline", "--queryeval-json", "--queryeval-predictions",
            "--queryeval-repeat", "--queryeval-gating"} <= set(TAKES_VALUE)


@pytest.mark.parametrize("option", TAKES_VALUE)
def test_a_value_after_a_space_keeps_the_rootdir(pytester: pytest.Pytester,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 option: str) -> None:
    """``pytest OPTION VALUE`` run in the suite decides the rootdir and ini file as
    ``OPTION=VALUE``. VALUE names an existing path valid for the option's type: a file beside
    the suite's folder, or for a number or a choice a folder of that name in it."""
    declared = TABLE[option]
    suite = write_suite(pytester.path / "suite", files=CASES)
    (pytester.path / "runs").mkdir()
    (pytester.path / "runs" / "base.json").write_text("{}", encoding="utf-8")
    value = "../runs/base.json"
    if declared.get("type") in (int, float) or declared.get("choices"):
        value = "3" if declared.get("type") in (int, float) else declared["choices"][0]
        (suite / value).mkdir()
    monkeypatch.chdir(suite)
    attached = _setup(pytester, f"{option}={value}")
    assert attached == (suite, suite / "tox.ini")
    assert _setup(pytester, option, value) == attached

def test_a_baseline_beside_the_suite_keeps_node_ids_and_ini(pytester: pytest.Pytester,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """The issue's command: the baseline one folder up, no test path. The ini's addopts are
    applied (the right ini was found), the node ids are the suite's own."""
    suite = write_suite(pytester.path / "proj", files=CASES,
                        ini="[pytest]\nqueryeval_files = test_*.yaml\naddopts = -rA\n")
    (pytester.path / "runs").mkdir()
    monkeypatch.chdir(suite)
    first = pytester.runpytest_inprocess("--queryeval-json=../runs/base.json")
    first.assert_outcomes(passed=1)
    result = pytester.runpytest_inprocess("--queryeval-baseline", "../runs/base.json",
                                          "--queryeval-json", "r.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"rootdir: {suite}", "configfile: tox.ini",
                                 "PASSED test_q.yaml::a"])  # -rA: the ini's addopts
    report = read_report(suite / "r.json")
    assert [c["nodeid"] for c in report["cases"]] == ["test_q.yaml::a"]
    assert report["run"]["suite"] == read_report(pytester.path / "runs" / "base.json")[
        "run"]["suite"]
    assert dump(report["run"]["causes"]) == "[]"


def test_the_right_ini_files_checks_run(pytester: pytest.Pytester,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest checked ``minversion`` against the wrong ini file (none): it is checked again
    against the suite's, as a run with ``=`` would be."""
    suite = write_suite(pytester.path / "proj", files=CASES,
                        ini="[pytest]\nqueryeval_files = test_*.yaml\nminversion = 999\n")
    (pytester.path / "runs").mkdir()
    (pytester.path / "runs" / "base.json").write_text("{}", encoding="utf-8")
    monkeypatch.chdir(suite)
    result = pytester.runpytest_inprocess("--queryeval-baseline", "../runs/base.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*requires pytest-999*"])
