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
