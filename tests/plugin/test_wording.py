"""One rule for a count with its noun and for a list cut after its first items."""

from __future__ import annotations

from pytest_queryeval.wording import plural, shortlist


def test_plural() -> None:
    assert plural(1, "regression") == "1 regression"
    assert plural(0, "regression") == "0 regressions"
    assert plural(2, "coincidental pass", "coincidental passes") == "2 coincidental passes"


def test_shortlist() -> None:
    assert shortlist(["a", "b"], 3) == "a, b"
    assert shortlist(["a", "b", "c"], 3) == "a, b, c"
    assert shortlist(["a", "b", "c", "d", "e"], 3) == "a, b, c and 2 more"
    assert shortlist(["x (in s1)", "y (in s2)"], 1, sep="; ") == "x (in s1) and 1 more"
