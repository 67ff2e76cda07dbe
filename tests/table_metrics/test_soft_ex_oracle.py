"""BIRD Soft EX (``metrics/soft_ex.py``) agrees item by item with livesqlbench's test_utils.

The oracle files were produced by running the reference functions unmodified
(tests/data/livesqlbench/PROVENANCE.md): the SQL-text rewrites on 2,064 texts (real predictions
from mini_dev, LiveSQLBench agent samples, hand-written hard cases) and ``preprocess_results`` /
``ex_base`` on typed result rows (Decimal HALF_UP edges, float rounding, dates, arrays, JSON,
empty results, order versus set equality).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.metrics.soft_ex import (
    preprocess_results,
    remove_comments,
    remove_distinct,
    remove_round,
    soft_ex_rewrite,
    soft_ex_score,
)
from tests.oracle_values import dec


def enc(v: Any) -> Any:
    """make_oracle.py's encoding (to compare processed rows with the oracle's)."""
    if isinstance(v, bool) or v is None or isinstance(v, int | str):
        return v
    if isinstance(v, Decimal):
        return {"$decimal": str(v)}
    if isinstance(v, float):
        return {"$float": repr(v)} if v != v or v in (float("inf"), float("-inf")) else v
    if isinstance(v, dt.datetime | dt.date | dt.time):
        tag = "$datetime" if isinstance(v, dt.datetime) else "$date" if isinstance(v, dt.date) \
            else "$time"
        return {tag: v.isoformat()}
    if isinstance(v, bytes):
        return {"$bytes": base64.b64encode(v).decode()}
    if isinstance(v, tuple):
        return {"$tuple": [enc(x) for x in v]}
    raise TypeError(type(v))


def _load(shared_data: Path, name: str) -> Any:
    return json.loads((shared_data / "livesqlbench" / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def texts(shared_data: Path) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    items = _load(shared_data, "texts.json")
    oracle = _load(shared_data, "oracle_texts.json")
    assert len(items) == len(oracle) == 2064
    assert [i["id"] for i in items] == [o["id"] for o in oracle]
    return list(zip(items, oracle, strict=True))


@pytest.mark.parametrize(("name", "fn"), [
    ("remove_comments", remove_comments),
    ("remove_distinct", remove_distinct),
    ("remove_round", remove_round),
    ("test_case_default", soft_ex_rewrite),
])
def test_text_rewrites_per_item(texts: list[tuple[dict[str, Any], dict[str, Any]]], name: str,
                                fn: Any) -> None:
    wrong = [item["id"] for item, oracle in texts if fn(item["sql"]) != oracle[name]]
    assert wrong == []


def test_the_texts_exercise_every_rewrite(texts: list[tuple[dict[str, Any], dict[str, Any]]],
                                          ) -> None:
    """The oracle is not vacuous: each rewrite changes hundreds of real texts."""
    for name in ("remove_comments", "remove_distinct", "remove_round"):
        changed = sum(1 for item, oracle in texts if oracle[name] != item["sql"])
        assert changed >= 40, name


@pytest.mark.parametrize(("sql", "expected"), [
    ("SELECT COUNT(DISTINCT x) FROM t", "SELECT COUNT(DISTINCT x) FROM t"),  # no space before
    ("SELECT COUNT( DISTINCT x) FROM t", "SELECT COUNT( x) FROM t"),
    ("SELECT DISTINCT\nname FROM t", "SELECT DISTINCT\nname FROM t"),
    ("SELECT myround(x) FROM t", "SELECT myx FROM t"),  # ROUND( inside a name
    ("SELECT ROUND(ROUND(p, 2), 1) FROM t", "SELECT p FROM t"),
    ("SELECT a FROM t -- no newline", "SELECT a FROM t -- no newline"),
    ("SELECT a -- why\nFROM t", "SELECT a \nFROM t"),
])
def test_rewrite_quirks(sql: str, expected: str) -> None:
    assert soft_ex_rewrite(sql) == expected


def test_values_per_item(shared_data: Path) -> None:
    cases = _load(shared_data, "values.json")
    oracle = {o["id"]: o for o in _load(shared_data, "oracle_values.json")}
    assert len(cases) == len(oracle) == 50
    for case in cases:
        want = oracle[case["id"]]
        gold = [dec(r) for r in case["gold"]]
        pred = [dec(r) for r in case["pred"]]
        for side, rows in (("gold", gold), ("pred", pred)):
            try:
                got: Any = [enc(r) for r in preprocess_results(rows)]
            except TypeError:
                got = "error: TypeError"
            assert got == want[f"{side}_processed"], (case["id"], side)
        order = bool((case["conditions"] or {}).get("order", False))
        score, _ = soft_ex_score(gold, pred, order=order)
        assert score == want["ex_base"], case["id"]
        # The plugin's sources give SQL arrays as tuples: the score is the same.
        tupled = [tuple(tuple(c) if isinstance(c, list) else c for c in r) for r in pred]
        assert soft_ex_score(gold, tupled, order=order)[0] == want["ex_base"], case["id"]


def test_half_up_and_float_round_differ_as_in_the_reference() -> None:
    assert preprocess_results([(Decimal("2.675"), 2.675, Decimal("-2.675"))]) == [
        (Decimal("2.68"), 2.67, Decimal("-2.68"))]
    assert soft_ex_score([(Decimal("3.14"),)], [(3.14,)], order=False)[0] == 0.0


def test_empty_and_failing_preprocessing_give_reasons() -> None:
    assert soft_ex_score([], [], order=False) == (0.0, "empty gold and predicted results")
    assert soft_ex_score([(1,)], [], order=False) == (0.0, "empty predicted result")
    score, why = soft_ex_score([([Decimal("1")],)], [([Decimal("1")],)], order=False)
    assert score == 0.0
    assert why is not None and "preprocess_results" in why
