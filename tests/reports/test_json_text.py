"""The JSON report's text: the same data as ``json.dumps(_safe(report))``, one case per line."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_queryeval.report.json_report import DIGEST, _safe, digest_problem, dumps

leaves = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(),
                   st.text(max_size=8))
values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=3)
                      | st.tuples(inner, inner)
                      | st.dictionaries(st.one_of(st.text(max_size=5), st.integers(0, 3)), inner,
                                        max_size=3), max_leaves=12)
records = st.dictionaries(st.text(max_size=6), values, max_size=5)


@settings(max_examples=200, deadline=None)
@given(head=st.dictionaries(st.text(max_size=6).filter(lambda k: k != "cases"), values,
                            max_size=4),
       cases=st.lists(records, max_size=5))
def test_same_data_as_json_dumps_and_one_line_per_case(head: dict[str, Any],
                                                        cases: list[dict[str, Any]]) -> None:
    report = {**head, "cases": cases}
    text = dumps(report)
    # each case gains the digest of its own text (a "digest" it held is taken again)
    bare = [{k: v for k, v in c.items() if k != DIGEST} for c in cases]
    written = json.loads(text)
    assert {**written, "cases": [{k: v for k, v in c.items() if k != DIGEST}
                                 for c in written["cases"]]} \
        == json.loads(json.dumps(_safe({**head, "cases": bare})))
    assert text.endswith("}\n")
    if cases:
        lines = text.split("\n")  # str.splitlines also splits at U+0085, U+2028...
        start = lines.index('  "cases": [')
        parsed = [json.loads(line.strip().rstrip(","))
                  for line in lines[start + 1:start + 1 + len(cases)]]
        assert [list(c)[-1] for c in parsed] == [DIGEST] * len(cases)
        assert [{k: v for k, v in c.items() if k != DIGEST} for c in parsed] \
            == json.loads(json.dumps(_safe(bare)))
        assert lines[start + 1 + len(cases)] in ("  ]", "  ],")
        # read back, each record carries the digest of its content (keys that are not
        # strings aside: two keys 0 and "0" are one once read; the plugin's records have
        # string keys only, records._clean makes them so)
        for case, back in zip(cases, parsed, strict=True):
            if _string_keys(case):
                assert digest_problem(back) is None, back


def _string_keys(value: Any) -> bool:
    if isinstance(value, dict):
        return all(type(k) is str and _string_keys(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(_string_keys(v) for v in value)
    return True


def test_non_finite_floats_become_null_inside_a_case() -> None:
    text = dumps({"version": 1, "cases": [{"m": {"a": math.nan, "b": -math.inf, "c": 0.5}}]})
    line = next(ln for ln in text.split("\n") if ln.startswith('    {"m"'))
    assert line.startswith('    {"m": {"a": null, "b": null, "c": 0.5}, "digest": "')
    assert digest_problem(json.loads(line)) is None
