"""The fixture reports are self-consistent: their aggregates follow from their cases."""

from __future__ import annotations

import math
from typing import Any


def _stats(cases: list[dict[str, Any]]) -> dict[str, Any]:
    outcomes = [c["outcome"] for c in cases]
    p = outcomes.count("passed") + outcomes.count("xpassed")
    f, e = outcomes.count("failed"), outcomes.count("error")
    return {"count": len(cases), "passed": p, "failed": f, "errors": e,
            "xfailed": outcomes.count("xfailed"),
            "pass_rate": p / (p + f + e) if p + f + e else None}


def test_fixture_shape(current):
    cases = current["cases"]
    assert len(cases) == 20
    assert {c["kind"] for c in cases} == {"sql", "sparql", "json", "sdmx"}
    assert len({c["id"] for c in cases}) == 20


def test_fixture_aggregates_match_cases(current, baseline):
    for report in (current, baseline):
        cases = report["cases"]
        agg = report["aggregates"]
        for kind, by_diff in agg["by_kind_difficulty"].items():
            for diff, stats in by_diff.items():
                members = [c for c in cases if c["kind"] == kind
                           and (c["difficulty"] or "unknown") == diff]
                for key, value in _stats(members).items():
                    assert stats[key] == value, (kind, diff, key)
                for metric, m in stats["metrics"].items():
                    vals = [c["metrics"][metric] for c in members if metric in c["metrics"]]
                    mean = sum(vals) / len(vals)
                    std = math.sqrt(sum((v - mean) ** 2 for v in vals) / len(vals))
                    assert math.isclose(m["mean"], mean)
                    assert math.isclose(m["std"], std, abs_tol=1e-12)
                    assert m["n"] == len(vals)
