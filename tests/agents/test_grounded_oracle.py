"""dbagenteval 0.1.0's grounded-answer check against the reference run unmodified
(tests/data/dbagenteval/PROVENANCE.md), and the suite's tolerance beside it."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from pytest_queryeval.metrics.grounded_answer import ungrounded_numbers


def _cell(value: object) -> object:
    if isinstance(value, dict) and "decimal" in value:
        return Decimal(value["decimal"])
    return value


def test_equals_the_reference(shared_data: Path) -> None:
    items = json.loads((shared_data / "dbagenteval" / "oracle.json").read_text())["items"]
    assert len(items) == 325
    flagged = 0
    for item in items:
        rows = [[_cell(c) for c in row] for row in item["rows"]]
        got = ungrounded_numbers(item["answer"], item["question"], rows)
        assert got == item["ungrounded"], item
        flagged += bool(got)
    assert flagged == 216  # both verdicts are well represented


def test_the_suite_tolerance_widens_each_figure() -> None:
    assert ungrounded_numbers("The mean is 3.2", "", [[3.1416]]) == ["3.2"]
    assert ungrounded_numbers("The mean is 3.2", "", [[3.1416]], tolerance=0.01) == []
