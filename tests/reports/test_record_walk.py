"""The record walk (:func:`pytest_queryeval.report.records._clean`) copies a list of plain
numbers held in a dict without a call per item: the copy must be what the item-by-item walk
gives (NaN and infinities to null, -0.0 kept, strings scrubbed and made relative)."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_queryeval._util.secrets import Scrubber
from pytest_queryeval.report.records import _clean

PREFIX = "/root/dir/"
SCRUB = Scrubber(frozenset({"s3cret"}))

_ITEMS = st.one_of(st.integers(), st.booleans(), st.none(), st.floats(allow_nan=True),
                   st.sampled_from(["/root/dir/x", "s3cret", "plain"]))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@settings(max_examples=400, deadline=None)
@given(st.lists(_ITEMS, max_size=8), st.booleans())
def test_a_list_in_a_dict_is_walked_as_item_by_item(items: list[Any], as_tuple: bool) -> None:
    value = tuple(items) if as_tuple else items
    got = _clean({"k": value}, PREFIX, SCRUB)["k"]
    expected = [_clean(x, PREFIX, SCRUB) for x in items]
    assert _same(got, expected), (got, expected)
    assert got is not value  # a copy: the record never shares the outcome's list
