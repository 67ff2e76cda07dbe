"""Issue 58, the twenty-fourth re-probe: H1, H2 and F1, on real engines (a Chinook SQLite copy
and a DuckDB file).

H1, F1: a number on the line after a counted statement ``K`` ended it, and any Unicode digit
was a number: SQLite and DuckDB read a non-ASCII character (``\\u0661``, a fullwidth ``1``) as
a name's, so ``K`` then ``\\u0661, Employee`` is an alias and a join to the forbidden table
(SQLite 200 rows), and the remainder read as no statement: the case passed with
``forbidden_tables`` 0. H2: a fence ended ``K`` whatever followed, and the engines read a fence
as a backtick-quoted name that a later backtick closes: ``K``, a fence, then ``\\`, Employee``
is the same join. Now a number is ASCII digits before no name's character, and a fence ends
``K`` only where no backtick follows it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agents import probe_support as probe
from tests.agents.test_counts_from_what_ran import GOLD
from tests.agents.test_counts_twentythird_probe import _forms, span_outputs

AS = f"{GOLD} AS"
GOES_ON = {
    "arabic-indic": (GOLD, f"{GOLD}\n\u0661, Employee"),
    "fullwidth": (GOLD, f"{GOLD}\n\uff11, Employee"),
    "devanagari": (GOLD, f"{GOLD}\n\u0967, Employee"),
    "math-bold": (GOLD, f"{GOLD}\n\U0001d7cf, Employee"),
    "combining": (GOLD, f"{GOLD}\n1\u0301, Employee"),
    "fence": (GOLD, f"{GOLD}\n```\n`, Employee"),
    "fence-number": (GOLD, f"{GOLD}\n```\n25\n`, Employee"),
    "fence-result": (GOLD, f"{GOLD}\n```sql\nSQLResult: 25\n`, Employee"),
    "fence-after-as": (AS, f"{AS}\n```\n`, Employee"),
}
ENDED = {
    "fence-end": (GOLD, f"{GOLD}\n```"),
    "fence-prose": (GOLD, f"{GOLD}\n```\nThere are 25 genres."),
    "number": (GOLD, f"{GOLD}\n25"),
    "result": (GOLD, f"{GOLD}\nSQLResult: 25"),
}


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_a_unicode_digit_or_a_fence_after_a_statement_is_no_end(
    pytester: pytest.Pytester, shared_data: Path, engine: str
) -> None:
    # the same texts in an LLM message's content are the model's own text, the floor's (not
    # mended here: the probe's F1/F2)
    hostile = span_outputs("h", GOES_ON)
    honest = _forms("honest", ENDED)
    report = probe.run_lines(pytester, shared_data, {**hostile, **honest},
                             probe.datasource(pytester, engine))
    probe.assert_verdicts(report, list(hostile), list(honest))


def test_the_rule_beside_the_engines() -> None:
    from pytest_queryeval.agents.spanoutput import _whole

    for ran, out in GOES_ON.values():
        assert not _whole(out, 0, len(ran)), out
    for ran, out in ENDED.values():
        assert _whole(out, 0, len(ran)), out
