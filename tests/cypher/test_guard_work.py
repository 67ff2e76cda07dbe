"""The parent-side Cypher checks do work linear in the text (issue 58, the twelfth
re-probe's H2): a search after each ``;`` and a ``list.index`` per ``CALL`` made a 64 KB
prediction of 65,000 ``;`` hold pytest's own CPU for 50 s, outside every deadline, against a
5 s timeout. No clock: the Python calls each check makes (its generators and comparisons
included) are counted for a text and for one twice as long; linear work doubles, quadratic
quadruples."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

from pytest_queryeval.cypher import guard, reads

FORMS: dict[str, Callable[[int], str]] = {
    "semicolons": lambda n: ";" * n,
    "calls": lambda n: "CALL " * n,
    "semicolons after a read": lambda n: "MATCH (n) RETURN n" + ";" * n,
}
CHECKS: dict[str, Callable[[str], object]] = {
    "check": guard.check,
    "check_server": guard.check_server,
    "not_a_read": reads.not_a_read,
}


def _calls(check: Callable[[str], object], text: str) -> int:
    count = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count
        if event == "call":
            count += 1

    sys.setprofile(profile)
    try:
        check(text)
    except Exception:  # the check's refusal is not what is measured
        pass
    finally:
        sys.setprofile(None)
    return count


@pytest.mark.parametrize("check", list(CHECKS))
@pytest.mark.parametrize("form", list(FORMS))
def test_the_check_is_linear_in_the_text(form: str, check: str) -> None:
    small = _calls(CHECKS[check], FORMS[form](1000))
    large = _calls(CHECKS[check], FORMS[form](2000))
    assert large < 2.5 * small, (small, large)


#: The thirteenth re-probe's F4: the cost check (:mod:`pytest_queryeval.cypher.bounds`) followed
#: the copies of every earlier name at each ``AS`` (``WITH 1 AS a0, ..., 1 AS a999``: 42 s for
#: 11 KB, before any timeout) and walked back over every earlier alias from each ``AS``.
COST_FORMS: dict[str, Callable[[int], str]] = {
    "aliases in one step": lambda n: "WITH " + ", ".join(f"1 AS a{i}" for i in range(n))
    + " RETURN 1",
    "a chain of steps": lambda n: "WITH 1 AS a0 " + " ".join(f"WITH a{i - 1} AS a{i}"
                                                             for i in range(1, n))
    + " RETURN 1",
    "every name in one value": lambda n: "WITH " + ", ".join(f"1 AS a{i}" for i in range(n))
    + " WITH " + " + ".join(f"a{i}" for i in range(n)) + " AS x RETURN x",
    "aliases without commas": lambda n: "WITH 1 AS a0 WITH a0 "
    + " ".join(f"AS a{i}" for i in range(1, n)) + " RETURN 1",
}


@pytest.mark.parametrize("form", list(COST_FORMS))
def test_the_cost_check_is_linear_in_the_text(form: str) -> None:
    small = _calls(guard.check_costs, COST_FORMS[form](150))
    large = _calls(guard.check_costs, COST_FORMS[form](300))
    assert large < 2.5 * small, (small, large)


def test_copies_past_the_followed_values_are_still_bounded() -> None:
    """Past the values followed one by one, a name's copies are bounded as a whole: a value
    made of 100 names, each copied into the next step twice over, still multiplies."""
    names = [f"a{i}" for i in range(100)]
    query = ("WITH " + ", ".join(f"[1] AS {n}" for n in names) + " WITH " + " + ".join(names)
             + " AS l" + " WITH l + l AS l" * 7 + " RETURN size(l)")
    with pytest.raises(guard.QueryRefused, match="copies of one value, more than 64"):
        guard.check_costs(query)
    assert guard.check_costs(query.replace(" WITH l + l AS l" * 7, " WITH l + l AS l" * 5)) \
        is None
