"""Issue 58, the twenty-third re-probe: H1, H2 and F1, on real engines (a Chinook SQLite copy
and a DuckDB file).

H1, F1: a counted statement ``K`` was taken out of a span's output (or an LLM message) as
standing whole where a number or a label stood on the next line, when ``K`` ended in ``*``, in
a quote that opens a string, or in ``GLOB`` or ``TABLESAMPLE``. The engines read the next line
as more of ``K``: ``... ON g.GenreId = h.GenreId *`` then ``1, Employee`` is a join to the
forbidden table (SQLite 200 rows), and the remainder ``1, Employee`` read as no statement, so
the case passed with ``forbidden_tables`` 0. Now a number or a label ends ``K`` only where
``K`` parses alone and ends in a name, a number, a closed string or a closing bracket.

H2: the blanks after ``K`` were matched by two ``\\s*`` around a line end, which backtracked
in time quadratic in a run of vertical tabs (or ``\\r``, U+2028) the reading keeps as written:
30 KB of them in one CHAIN output took three minutes. Now the run is matched once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agents import probe_support as probe
from tests.agents.test_counts_from_what_ran import GOLD

#: Statements the engines do not end at a line's end, each recorded as the call (an error on
#: its own), and the output that goes on from it into the forbidden table.
STAR = "SELECT count(*) FROM Genre g JOIN Genre h ON g.GenreId = h.GenreId *"
QUOTE = "SELECT count(*) FROM Genre g JOIN Genre h ON g.Name <> '"
GOES_ON = {
    "star-num": (STAR, f"{STAR}\n1, Employee"),
    "star-nl-comma": (STAR, f"{STAR}\n1\n, Employee"),
    "quote-num": (QUOTE, f"{QUOTE}\n1', Employee"),
    "quote-label": (QUOTE, f"{QUOTE}\nAnswer: 25', Employee"),
}
GLOB = "SELECT count(*) FROM Genre g JOIN Genre h ON g.Name GLOB"
SAMPLE = "SELECT count(*) FROM Genre TABLESAMPLE"
GOES_ON_SQLITE = {"glob": (GLOB, f"{GLOB}\n1 OR 1, Employee")}
GOES_ON_DUCKDB = {
    "sample-num": (SAMPLE, f"{SAMPLE}\n100, Employee"),
    "sample-pct": (SAMPLE, f"{SAMPLE}\n10%, Employee"),
}
#: Outputs that quote a counted statement whole, a number or a label after it.
ENDED = {
    "result": (GOLD, f"{GOLD}\nSQLResult: 25"),
    "number": (GOLD, f"{GOLD}\n25"),
    "answer": (GOLD, f"{GOLD}\nAnswer: 25"),
    "count": ("SELECT count(*)", "SELECT count(*)\n1"),
    "null": (
        "SELECT count(*) FROM Genre WHERE Name IS NOT NULL",
        "SELECT count(*) FROM Genre WHERE Name IS NOT NULL\nSQLResult: 25",
    ),
    "string": (
        "SELECT count(*) FROM Genre WHERE Name <> 'Rock'",
        "SELECT count(*) FROM Genre WHERE Name <> 'Rock'\nSQLResult: 24",
    ),
}


def _forms(prefix: str, forms: dict[str, tuple[str, str]]) -> dict[str, dict[str, Any]]:
    lines: dict[str, dict[str, Any]] = {}
    for form, (ran, out) in forms.items():
        for kind in ("CHAIN", "AGENT", None):
            lines[f"{prefix}-{(kind or 'nokind').lower()}-{form}"] = {
                "spans": [*probe.recorded(ran), probe.output_span(kind, out)]
            }
        lines[f"{prefix}-json-{form}"] = {
            "spans": [*probe.recorded(ran), probe.output_span("CHAIN", json.dumps({"query": out, "result": 25}))]
        }
        lines[f"{prefix}-fence-{form}"] = {
            "spans": [*probe.recorded(ran), probe.message_span(f"{probe.fence(out)}\n25")]
        }
        lines[f"{prefix}-bare-{form}"] = {"spans": [*probe.recorded(ran), probe.message_span(f"{out}\n25")]}
    return lines


def span_outputs(prefix: str, forms: dict[str, tuple[str, str]]) -> dict[str, dict[str, Any]]:
    """:func:`_forms` but the LLM message's (its content is the model's own text, the
    floor's): the CHAIN, AGENT, no-kind and CHAIN JSON outputs."""
    return {
        cid: line
        for cid, line in _forms(prefix, forms).items()
        if not cid.startswith((f"{prefix}-fence-", f"{prefix}-bare-"))
    }


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_a_number_after_a_statement_that_goes_on_is_no_end(
    pytester: pytest.Pytester, shared_data: Path, engine: str
) -> None:
    goes_on = {**GOES_ON, **(GOES_ON_SQLITE if engine == "sqlite" else GOES_ON_DUCKDB)}
    hostile = _forms("h1", goes_on)
    honest = _forms("honest", ENDED)
    report = probe.run_lines(pytester, shared_data, {**hostile, **honest}, probe.datasource(pytester, engine))
    probe.assert_verdicts(report, list(hostile), list(honest))


def test_a_number_or_a_label_ends_only_a_statement_that_ends() -> None:
    """The rule beside the engines: the statement parses alone and its last token asks for
    nothing more."""
    from pytest_queryeval.agents.spanoutput import _whole

    def whole(text: str, statement: str) -> bool:
        return _whole(text, 0, len(statement))

    for ran, out in (*GOES_ON.values(), *GOES_ON_SQLITE.values(), *GOES_ON_DUCKDB.values()):
        assert not whole(out, ran), out
    for ran, out in ENDED.values():
        assert whole(out, ran), out
    from pytest_queryeval.agents.spanoutput import complete

    for ran in ("SELECT 2 *", "SELECT Name, GenreId*", f"{GOLD} t JOIN", f"{GOLD},", f"{GOLD} g ESCAPE"):
        assert not complete(ran), ran
    # the text's end ends any statement; ``;`` and a fence, on its line or the next, only one
    # that ends outside every literal (the engines read ``QUOTE;`` on into the string: the
    # twenty-fifth re-probe's H3)
    for ran, _ in GOES_ON.values():
        assert whole(ran, ran)
        assert (whole(f"{ran};", ran) and whole(f"{ran}\n```", ran)) == (ran != QUOTE), ran


def test_a_run_of_blanks_after_a_statement_is_read_in_one_pass() -> None:
    """Runs of line ends the reading keeps as written: a search that backtracks through them
    takes hours at this length, a linear one well under a second."""
    probe.run_linear(
        "from pytest_queryeval.agents.runcopies import RunCopies\n"
        "from pytest_queryeval.agents.spanoutput import _Search\n"
        "K = 'SELECT count(*) FROM Genre'\n"
        "for blank in ('\\v', '\\r', '\\u2028', '\\x1c', '\\f', ' \\v', '\\v\\u00a0'):\n"
        "    for tail in ('x', '', '25', ';'):\n"
        "        search = _Search(set(), {K}, [10**6], ['Employee'], RunCopies([]))\n"
        "        search.without_known_lines(K + blank * 200000 + tail)\n"
        "print('done')\n",
        timeout=120,
    )
