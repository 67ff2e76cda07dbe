"""A custom kind takes part in the gold audit: its own ``audit`` method, else the self-check."""

from __future__ import annotations

import json

import pytest

from tests.support import read_report

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

CONFTEST = '''
from pytest_queryeval.audit import self_check
from pytest_queryeval.model import Scored


class Echo:
    """Scores 1 when the prediction is the gold word and the word is not "broken"."""
    name = "echo"
    option_keys = frozenset()

    def is_metric(self, name):
        return name == "same"

    def validate(self, case):
        return []

    def difficulty(self, case):
        return None

    def evaluate(self, case, prediction, ctx):
        return Scored({"same": float(prediction == case.gold and prediction != "broken")})


class LintedEcho(Echo):
    """Echo with an audit of its own: a gold word in capitals reads the clock."""
    name = "linted-echo"

    def audit(self, case, ctx, result):
        if case.gold.isupper():
            result.add("clock-dependent", f"{case.gold} is a clock word")
        self_check(case, self, ctx, result, case.gold, None)


def pytest_queryeval_kinds(config):
    return {"echo": Echo, "linted-echo": LintedEcho}
'''


def test_a_custom_kind_audits_its_golds(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", queryeval="{}")  # a suite: its test_*.yaml are case files
    cases = [{"id": "fine", "gold": "word", "thresholds": {"same": 1}},
             {"id": "broken", "gold": "broken", "thresholds": {"same": 1}}]
    pytester.makefile(".yaml", test_plain=json.dumps({"kind": "echo", "cases": cases}))
    pytester.makefile(".yaml", test_linted=json.dumps({"kind": "linted-echo", "cases": [
        *({**c, "id": f"linted-{c['id']}"} for c in cases),
        {"id": "linted-now", "gold": "NOW", "thresholds": {"same": 1}}]}))
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly",
                                "--queryeval-audit-golds", "--queryeval-json=audit.json")
    result.assert_outcomes(passed=3, failed=2)
    report = read_report(pytester.path / "audit.json")
    found = {(f["id"], f["code"]) for f in report["audit"]["findings"]}
    assert found == {("broken", "gold-below-threshold"), ("linted-broken", "gold-below-threshold"),
                     ("linted-now", "clock-dependent")}
    now = next(f for f in report["audit"]["findings"] if f["id"] == "linted-now")
    assert (now["severity"], now["message"]) == ("warning", "NOW is a clock word")
