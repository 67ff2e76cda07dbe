"""Which YAML files are case files, and what a project without a suite pays for the plugin.

A ``test_*.yaml`` file is a case file only where a ``queryeval.yaml`` lies in its folder or
above it (up to the rootdir), or when the ini sets ``queryeval_files``: any other project's
``tests/test_config.yaml`` data file was collected as a failing ``kind: missing`` case (issue 24
item 1). Such a project imports only the hook module and the few small modules it needs (the options'
declarations, the hook specifications, the report formats' table).
"""

from __future__ import annotations

import json

import pytest

from tests.sdmx_cases import GDP, dump, sdmx_case, selection

#: What a run of a project without a case file imports of the package: the hook module, the
#: small modules it needs, the built-ins' plugin module and the formats' table, and the hook module of the Cypher
#: package (which the built-ins register as a plugin; it imports nothing at module level).
SLEEPING = ["pytest_queryeval", "pytest_queryeval.plugin.declare", "pytest_queryeval.hookspecs",
            "pytest_queryeval.plugin", "pytest_queryeval.plugin.builtins",
            "pytest_queryeval.report", "pytest_queryeval.report.formats",
            "pytest_queryeval.cypher", "pytest_queryeval.cypher.plugin"]

#: Writes the package's imported modules when the session ends, for the assertions below.
MODULES_CONFTEST = """
import json, sys

def pytest_unconfigure(config):
    names = sorted(m for m in sys.modules if m.split(".")[0] == "pytest_queryeval")
    (config.rootpath / "modules.json").write_text(json.dumps(names))
"""

CASE = dump({"kind": "sdmx", "cases": [sdmx_case("gdp", selection(GDP), selection(GDP))]})


def _plain_project(pytester: pytest.Pytester) -> None:
    """A project without a suite: a test module, and a data file named like a case file."""
    pytester.makeini("[pytest]\ntestpaths = tests\n")
    pytester.mkdir("tests")
    (pytester.path / "tests" / "test_config.yaml").write_text("name: demo\nretries: 3\n")
    (pytester.path / "tests" / "test_app.py").write_text(
        "def test_reads_its_data():\n    assert 'retries' in open(__file__[:-11] + "
        "'test_config.yaml').read()\n")
    pytester.makeconftest(MODULES_CONFTEST)


def test_a_data_file_of_a_project_without_suite_is_not_collected_nor_anything_imported(
        pytester: pytest.Pytester) -> None:
    _plain_project(pytester)
    result = pytester.runpytest_subprocess("-p", "queryeval", "-rA")
    assert result.ret == 0
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "test_config.yaml" not in out
    assert "= queryeval =" not in out
    assert json.loads((pytester.path / "modules.json").read_text()) == sorted(SLEEPING)


def test_collect_only_of_a_project_without_suite_lists_its_tests_only(
        pytester: pytest.Pytester) -> None:
    _plain_project(pytester)
    result = pytester.runpytest_subprocess("--collect-only", "-q")
    assert result.ret == 0
    assert [line for line in result.outlines if "::" in line] == [
        "tests/test_app.py::test_reads_its_data"]


@pytest.mark.parametrize("config", ["", "{}\n"])
def test_a_queryeval_yaml_above_makes_the_yaml_files_below_case_files(
        pytester: pytest.Pytester, config: str) -> None:
    """An empty ``queryeval.yaml`` and ``{}`` are suite configs; the rule reaches sub-folders,
    and stops at folders the config is not above."""
    pytester.makeconftest(MODULES_CONFTEST)
    (pytester.mkdir("suite") / "queryeval.yaml").write_text(config)
    (pytester.mkdir("suite/sub") / "test_deep.yaml").write_text(CASE)
    (pytester.mkdir("data") / "test_config.yaml").write_text("name: demo\n")
    result = pytester.runpytest_subprocess("--collect-only", "-q")
    assert result.ret == 0
    assert [line for line in result.outlines if "::" in line] == ["suite/sub/test_deep.yaml::gdp"]
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1)
    modules = json.loads((pytester.path / "modules.json").read_text())
    assert "pytest_queryeval.plugin.runner" in modules and "pytest_queryeval.plugin.controller" in modules


def test_ini_queryeval_files_alone_decides(pytester: pytest.Pytester) -> None:
    """Set in the ini, the patterns make every matching file a case file, without a
    queryeval.yaml (as before the rule): here the data file is a case file, and fails."""
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    (pytester.mkdir("tests") / "test_config.yaml").write_text("name: demo\n")
    (pytester.path / "tests" / "test_case.yaml").write_text(CASE)
    result = pytester.runpytest_subprocess("-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*tests/test_case.yaml::gdp PASSED*",
                                 "*tests/test_config.yaml::config FAILED*"])


def test_report_options_without_a_case_say_nothing_was_written(
        pytester: pytest.Pytester) -> None:
    """Given its options, the plugin checks them before collection as ever, and a run in
    which no case ran says why no report was written, without failing."""
    _plain_project(pytester)
    result = pytester.runpytest_subprocess("--queryeval-json", "report.json",
                                           "--queryeval-update-baseline")
    assert result.ret == 0
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "queryeval: no case ran, so nothing was written or compared (--queryeval-json, "
        "--queryeval-update-baseline): no case file was collected (a file matching "
        "test_*.yaml test_*.yml is a case file where a queryeval.yaml lies in its folder or "
        "above it, or when the ini sets queryeval_files)"])
    assert not (pytester.path / "report.json").exists()
    assert not (pytester.path / "tests" / "queryeval-baseline.json").exists()
    bad = pytester.runpytest_subprocess("--queryeval-threshold", "nonsense")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*queryeval*nonsense*"])


def test_a_project_without_suite_under_xdist_prints_nothing_even_when_interrupted(
        pytester: pytest.Pytester) -> None:
    """The xdist controller loads the plugin at once (its workers collect): without a case it
    prints no queryeval section, nor when the session is interrupted."""
    _plain_project(pytester)
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:randomly")
    assert result.ret == 0
    result.assert_outcomes(passed=1)
    assert "test_config.yaml" not in result.stdout.str()
    assert "= queryeval =" not in result.stdout.str()
    # the controller stops the session when the first result arrives
    (pytester.path / "tests" / "conftest.py").write_text(
        "import pytest\n\n"
        "WORKER = []\n\n"
        "def pytest_configure(config):\n"
        "    WORKER.append(hasattr(config, 'workerinput'))\n\n"
        "def pytest_runtest_logreport(report):\n"
        "    if report.when == 'call' and not WORKER[0]:\n"
        "        pytest.exit('stopped by the project', returncode=2)\n")
    stopped = pytester.runpytest_subprocess("-n", "2", "-p", "no:randomly")
    assert stopped.ret == pytest.ExitCode.INTERRUPTED
    assert "stopped by the project" in stopped.stdout.str()
    assert "= queryeval =" not in stopped.stdout.str()
