"""What the hostile re-probes' test files (the fourteenth to the eighteenth) share: a suite of
agent cases from a predictions file, run once, and the two verdicts every probe checks (each
hostile case refused, each honest one passed), so that a probe file states its cases and its
expected verdicts and nothing else.

The suites are the ones the earlier probes built (over a real Chinook SQLite copy, a DuckDB
file or the example's ladybug graph, with write and forbidden-table gates); these helpers only
write them and run pytest once over them, so each probe reads one report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.agents.textcalls import text_call
from tests.agents.test_counts_from_what_ran import GOLD, _file_suite, llm_call, span
from tests.agents.test_counts_ninth_probe import UNESTABLISHED
from tests.agents.test_counts_tenth_probe import _datasource as datasource
from tests.agents.test_counts_tenth_probe import _graph_suite
from tests.agents.test_counts_thirteenth_probe_replay import _suite
from tests.support import Report, run_report

__all__ = [
    "UNESTABLISHED",
    "after",
    "assert_found",
    "assert_honest",
    "assert_hostile",
    "assert_not_passed",
    "assert_verdicts",
    "counted_spans",
    "datasource",
    "fence",
    "message_span",
    "output_span",
    "recorded",
    "run_cases",
    "run_graph",
    "run_linear",
    "run_lines",
]

#: A case's record, its thresholds and its agent block, as ``run_cases`` takes them.
Case = tuple[dict[str, Any], dict[str, Any], dict[str, Any]]


def _run(pytester: pytest.Pytester) -> Report:
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    return report


def run_lines(
    pytester: pytest.Pytester,
    shared_data: Path,
    lines: dict[str, dict[str, Any]],
    datasource: dict[str, Any] | None = None,
) -> Report:
    """One record per case under the write and forbidden-table gates (SQLite unless
    ``datasource``), run; the report."""
    _file_suite(pytester, shared_data, lines, datasource)
    return _run(pytester)


def run_cases(pytester: pytest.Pytester, shared_data: Path, cases: dict[str, Case]) -> Report:
    """Cases each with their own gates and agent block, on SQLite, run; the report."""
    _suite(pytester, shared_data, cases)
    return _run(pytester)


def run_graph(pytester: pytest.Pytester, lines: dict[str, dict[str, Any]]) -> Report:
    """One record per case on the ladybug graph under ``write_attempts``, run; the report."""
    _graph_suite(pytester, lines)
    return _run(pytester)


def assert_not_passed(report: Report, ids: Iterable[str]) -> None:
    """No hostile case passed: all of them named at once, with their metrics, when some did."""
    passed = {cid: report.by_id[cid]["metrics"] for cid in ids if report.by_id[cid]["outcome"] == "passed"}
    assert not passed, passed


def assert_hostile(
    report: Report,
    ids: Iterable[str],
    *,
    outcomes: Collection[str] = ("error",),
    starts: str | None = None,
    contains: Iterable[str] = (),
) -> None:
    """Each case's outcome is one of ``outcomes``; its error (when ``starts`` or ``contains``
    ask) begins with ``starts`` and holds each of ``contains``: the probe's reason, not only
    some refusal."""
    parts = list(contains)
    for cid in ids:
        case = report.by_id[cid]
        assert case["outcome"] in outcomes, (cid, case["outcome"], case["metrics"])
        if starts is not None:
            assert case["error"].startswith(starts), (cid, case["error"])
        for part in parts:
            assert part in case["error"], (cid, case["error"])


def assert_verdicts(report: Report, hostile: Collection[str], honest: Iterable[str]) -> None:
    """The probes' usual verdicts: no hostile case passed, each is an error saying the counts
    are not established, and each honest case passed."""
    assert_not_passed(report, hostile)
    assert_hostile(report, hostile, starts=UNESTABLISHED)
    assert_honest(report, honest)


def assert_found(text: str, why: str) -> None:
    """The floor finds ``text`` (a read of the forbidden ``Employee`` or a write) for ``why``."""
    found = text_call(text, ["Employee"])
    assert found is not None and why in found, found


def assert_honest(report: Report, ids: Iterable[str]) -> None:
    """Each honest case passed: a reading that refuses them is no fix."""
    for cid in ids:
        case = report.by_id[cid]
        assert case["outcome"] == "passed", (cid, case.get("error"), case.get("metrics"))


def fence(statement: str, tag: str = "sql") -> str:
    return f"```{tag}\n{statement}\n```"


def after(
    ran: list[dict[str, Any]], text: str, result: str, answer: str = "There are 25 genres."
) -> dict[str, Any]:
    """The record: ``ran``, then ``text`` in the model's message, ``result`` as a user message
    (as a harness that parsed a call in it returns it), and the answer."""
    return {
        "trajectory": [
            *ran,
            {"role": "assistant", "content": text},
            {"role": "user", "content": result},
            {"role": "assistant", "content": answer},
        ]
    }


def recorded(query: str, llm: str = "l1", cid: str = "c1",
             tool: str = "t2", start: int = 1) -> list[dict[str, Any]]:
    """A call of ``run_query`` with ``query`` as traced: an LLM span calling it and its TOOL
    span (``25`` rows), started at ``start`` and the next tick."""
    return [
        llm_call(llm, start, cid, query),
        span(
            "TOOL",
            tool,
            start + 1,
            **{
                "tool.name": "run_query",
                "tool_call.id": cid,
                "input.value": json.dumps({"query": query}),
                "output.value": "25",
            },
        ),
    ]


def counted_spans() -> list[dict[str, Any]]:
    """The counted call as traced: an LLM span calling ``run_query`` and its TOOL span."""
    return recorded(GOLD, "h1", "ch", "h2")


def output_span(kind: str | None, value: str) -> dict[str, Any]:
    """A span of ``kind`` (none: no kind attribute) whose output is ``value``."""
    record = span(kind or "CHAIN", "o1", 3, **{"output.value": value})
    if kind is None:
        record["attributes"].pop("openinference.span.kind", None)
    return record


def message_span(content: str) -> dict[str, Any]:
    """An LLM span whose output message (the model's own text) is ``content``."""
    prefix = "llm.output_messages.0.message."
    return span("LLM", "m1", 3, **{prefix + "role": "assistant", prefix + "content": content})


def run_linear(script: str, timeout: int) -> None:
    """Run ``script`` (which prints ``done`` after its searches of long texts) in a child.

    A quadratic search of such a text takes minutes, a linear one well under a second: the
    child's ``timeout`` is a generous bound for a loaded machine, not a measured time.
    """
    import pytest_queryeval

    env = {**os.environ, "PYTHONPATH": str(Path(pytest_queryeval.__file__).parents[1])}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout, check=False, env=env
    )
    assert done.stdout.strip() == "done", done.stderr[-2000:]
