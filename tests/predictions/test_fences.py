"""One Markdown code fence around a model's answer is stripped before parsing (issue 19)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pytest_queryeval.kinds._fences import strip_fence
from tests.sdmx_cases import GDP, GDP_PLUS, MEX, dump, sdmx_case, selection
from tests.support import read_report


@pytest.mark.parametrize(("text", "body", "opener"), [
    ("```sql\nSELECT 1\n```", "SELECT 1", "```sql"),
    ('  ```json\n{"a": 1}\n```\n', '{"a": 1}', "```json"),
    ("```\nSELECT 1\nFROM t\n```", "SELECT 1\nFROM t", "```"),
    ("~~~sparql\nASK {}\n~~~", "ASK {}", "~~~sparql"),
    ("```sql\nSELECT '```' AS s\n```", "SELECT '```' AS s", "```sql"),  # not at a line start
    ("````md\n```\nx\n```\n````", "```\nx\n```", "````md"),  # a longer fence holds a shorter
])
def test_one_enclosing_fence_is_stripped(text: str, body: str, opener: str) -> None:
    assert strip_fence(text) == (body, opener)


@pytest.mark.parametrize("text", [
    "SELECT 1",
    "Here is the query:\n```sql\nSELECT 1\n```",  # prose around: not a bare answer
    "```sql\nSELECT 1\n```\nIt counts rows.",
    "```sql\nSELECT 1\n```\n```sql\nSELECT 2\n```",  # two blocks: which one is not ours to say
    "```sql\nSELECT 1",  # never closed
    "```sql\nSELECT 1\n~~~",  # closed by the other character
    "```sql SELECT 1```",  # one line: not a fenced block
    "~~~~sql\nSELECT 1\n~~~",  # closed by a shorter fence: not closed (CommonMark)
])
def test_anything_else_is_left_alone(text: str) -> None:
    assert strip_fence(text) == (text, None)


@pytest.mark.parametrize(("text", "opener"), [
    ('"`" * 1_000_000', None),  # a run of backticks with no line after it
    ('"```\\n" + "`" * 1_000_000 + "x"', None),  # a body of backticks, no closing fence
    ('"```\\n" + "`" * 1_000_000', "```"),  # a body that is all closing fence
])
def test_a_long_run_of_fence_characters_is_read_in_one_pass(text: str, opener: str | None,
                                                            ) -> None:
    """Issue 58, the twelfth re-probe's H3: the fence's regular expression backtracked on a
    run of backticks, quadratic in its length, before any size check (a 128 KB prediction
    took 47 s of pytest's CPU; a megabyte, about an hour and a half). In a child process, as
    the regular expression engine holds the interpreter: a liveness bound, not a timing
    claim (read in one pass, a megabyte takes milliseconds)."""
    code = ("from pytest_queryeval.kinds._fences import strip_fence; "
            f"print(strip_fence({text})[1])")
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=120, check=True)
    except subprocess.TimeoutExpired:
        pytest.fail("the fence reader still ran after 120 s")
    assert done.stdout.strip() == str(opener)


def test_the_stripped_fence_shows_in_the_failure_and_the_json_report(suite):
    fenced = {"gdp": "```json\n" + json.dumps(selection(GDP_PLUS)) + "\n```",
              "mex": "```json\n" + json.dumps(selection(MEX)) + "\n```"}
    (suite.path / "preds.json").write_text(json.dumps(fenced))
    suite.makefile(".yaml", test_cases=dump({
        "kind": "sdmx", "thresholds": {"macro_precision": 1.0},
        "cases": [sdmx_case("gdp", selection(GDP)), sdmx_case("mex", selection(MEX))],
    }))
    result = suite.runpytest("--queryeval-predictions=preds.json", "--queryeval-json=r.json",
                             "--queryeval-html=r.html")
    result.assert_outcomes(passed=1, failed=1)  # scored, not "invalid prediction"
    result.stdout.fnmatch_lines(["predicted: *", "*(Markdown code fence ```json stripped before "
                                 "scoring)*"])
    report = read_report(suite.path / "r.json")
    assert {c["id"]: c["details"]["fence_stripped"] for c in report["cases"]} == {
        "gdp": "```json", "mex": "```json"}
    assert "Markdown code fence ```json stripped before scoring" in (suite.path / "r.html").read_text()
