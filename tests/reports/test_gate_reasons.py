"""A gate that scored nothing shows why, in place of its value, in every report."""

from __future__ import annotations

from pytest_queryeval.report.html import render_html
from pytest_queryeval.report.markdown import render_markdown
from pytest_queryeval.report.terminal import gate_lines

EMPTY = {"name": "execution_accuracy[tag=smoke]", "metric": "execution_accuracy", "stat": "mean",
         "scope": ".", "kind": None, "tag": "smoke", "value": None, "op": ">=", "limit": 0.9,
         "cases": 0, "allow_empty": False, "reason": "nothing scored: no case matched",
         "passed": False}


def test_terminal_markdown_and_html_show_the_reason(current):
    current["gates"] = [EMPTY]
    assert gate_lines([EMPTY]) == [
        "gate FAIL: mean execution_accuracy tag=smoke = n/a (nothing scored: no case matched) "
        "(required >= 0.9, 0 cases)"]
    assert gate_lines([{**EMPTY, "allow_empty": True, "passed": True}])[0].startswith(
        "gate PASS: mean execution_accuracy tag=smoke = n/a (nothing scored: no case matched; "
        "allow_empty: true)")
    md = render_markdown(current)
    assert ("| execution\\_accuracy\\[tag=smoke\\] | nothing scored: no case matched | "
            "&gt;= 0.900 | ❌ |") in md
    html = render_html(current)
    assert "<td class=n>nothing scored: no case matched</td>" in html
