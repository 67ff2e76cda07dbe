"""Agreement with the official Spider evaluator on the 1,034 dev pairs.

Reference: ``spider/oracle/spider_head_match__gold_example__per_item.jsonl`` (per item) and
``spider_head_match__gold_example.txt`` (stdout of taoyds/spider HEAD ``evaluation.py``), plus
``eval_result_example.txt`` for the legacy FROM-table rule. Any accepted disagreement must be
listed in docs/spider-conformance.md and in ``KNOWN`` below (none today).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.metrics.spider import (
    OFFICIAL_NAMES,
    Schema,
    StructureResult,
    aggregate,
    format_table,
    hardness,
    structure_scores,
)

#: field -> item indexes allowed to disagree (each documented in docs/spider-conformance.md)
KNOWN: dict[str, set[int]] = {}
MAX_DISAGREEMENT = 0.005  # of items, per field


def _pairs(spider: Path) -> list[tuple[str, str, str]]:
    gold = [ln.strip().split("\t") for ln in
            (spider / "gold_example.txt").read_text().splitlines() if ln.strip()]
    pred = [ln.strip().split("\t")[0] for ln in
            (spider / "pred_example.txt").read_text().splitlines() if ln.strip()]
    return [(g[0], g[1], p) for g, p in zip(gold, pred, strict=True)]


@pytest.fixture(scope="module")
def spider(shared_data: Path) -> Path:
    return shared_data / "spider"


@pytest.fixture(scope="module")
def oracle(spider: Path) -> list[dict[str, Any]]:
    path = spider / "oracle" / "spider_head_match__gold_example__per_item.jsonl"
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


def _score(spider: Path, legacy: bool) -> list[StructureResult]:
    tables = spider / "tables.json"
    return [structure_scores(g, p, Schema.from_tables_json(tables, db), legacy_from_check=legacy)
            for g, db, p in _pairs(spider)]


@pytest.fixture(scope="module")
def results(spider: Path) -> list[StructureResult]:
    return _score(spider, legacy=False)


def _official_table(text: str) -> str:
    return text[text.index(" " * 21 + "easy"):]


def _disagreements(results: list[StructureResult],
                   oracle: list[dict[str, Any]]) -> dict[str, list[int]]:
    bad: dict[str, list[int]] = {}

    def check(field: str, idx: int, ours: Any, theirs: Any) -> None:
        if ours != theirs:
            bad.setdefault(field, []).append(idx)

    for res, item in zip(results, oracle, strict=True):
        i = item["idx"]
        check("hardness", i, res.hardness, item["hardness"])
        check("counts", i, list(res.counts),
              [item["count_component1"], item["count_component2"], item["count_others"]])
        check("pred_parse_error", i, res.pred_parse_error is not None, item["pred_parse_error"])
        check("exact", i, res.exact, item["exact"])
        for comp, name in OFFICIAL_NAMES.items():
            check(comp, i, list(res.partial[comp]), item["partial"][name])
    return bad


def test_oracle_has_every_pair(results: list[StructureResult],
                               oracle: list[dict[str, Any]]) -> None:
    assert len(results) == len(oracle) == 1034


def test_per_item_agreement(results: list[StructureResult],
                            oracle: list[dict[str, Any]]) -> None:
    bad = _disagreements(results, oracle)
    unexplained = {f: [i for i in idx if i not in KNOWN.get(f, set())] for f, idx in bad.items()}
    unexplained = {f: idx for f, idx in unexplained.items() if idx}
    assert not unexplained, f"undocumented disagreements with the oracle: {unexplained}"
    for field, idx in bad.items():
        assert len(idx) < MAX_DISAGREEMENT * len(oracle), field


def test_metrics_follow_partials(results: list[StructureResult],
                                 oracle: list[dict[str, Any]]) -> None:
    for res, item in zip(results, oracle, strict=True):
        assert res.metrics["exact_set_match"] == item["exact"]
        for comp, name in OFFICIAL_NAMES.items():
            acc, rec, f1 = item["partial"][name][:3]
            expected = (0, 0, 0) if item["pred_parse_error"] else (acc, rec, f1)
            got = tuple(res.metrics[f"{comp}_{m}"] for m in ("acc", "rec", "f1"))
            assert got == expected, (item["idx"], comp)
        if item["pred_parse_error"]:
            assert res.pred_parse_error
            assert res.diff
        elif not item["exact"]:
            assert res.diff, item["idx"]


def test_aggregated_table_is_the_official_output(results: list[StructureResult],
                                                 spider: Path) -> None:
    expected = _official_table(
        (spider / "oracle" / "spider_head_match__gold_example.txt").read_text())
    assert format_table(aggregate(results)) == expected


def test_aggregates_to_three_decimals(results: list[StructureResult], spider: Path) -> None:
    lines = _official_table(
        (spider / "oracle" / "spider_head_match__gold_example.txt").read_text()).splitlines()
    agg = aggregate(results)
    levels = ("easy", "medium", "hard", "extra", "all")
    rows = {ln[:20].strip(): ln[20:].split() for ln in lines if ln[:20].strip()}
    assert [int(x) for x in rows["count"]] == [agg[lv]["count"] for lv in levels]
    assert rows["exact match"] == [f"{agg[lv]['exact']:.3f}" for lv in levels]
    assert agg["all"]["count"] == 1034
    assert {lv: agg[lv]["count"] for lv in levels[:4]} == {
        "easy": 250, "medium": 440, "hard": 174, "extra": 170}


def test_legacy_from_check_reproduces_historical_result(spider: Path) -> None:
    expected = _official_table((spider / "eval_result_example.txt").read_text())
    assert format_table(aggregate(_score(spider, legacy=True))) == expected


def test_hardness_without_schema(oracle: list[dict[str, Any]]) -> None:
    wrong = [item["idx"] for item in oracle if hardness(item["gold"]) != item["hardness"]]
    assert not wrong


def test_hardness_with_schema(oracle: list[dict[str, Any]], spider: Path) -> None:
    tables = spider / "tables.json"
    wrong = [item["idx"] for item in oracle
             if hardness(item["gold"], Schema.from_tables_json(tables, item["db_id"]))
             != item["hardness"]]
    assert not wrong


def test_cli_prints_the_official_stdout(spider: Path) -> None:
    import io

    from pytest_queryeval.metrics.spider.cli import main

    args = ["--gold", str(spider / "gold_example.txt"), "--pred", str(spider / "pred_example.txt"),
            "--table", str(spider / "tables.json"), "--verbose"]
    out = io.StringIO()
    assert main(args, out) == 0
    assert out.getvalue() == (
        spider / "oracle" / "spider_head_match__gold_example.txt").read_text()
    out = io.StringIO()
    assert main([*args, "--legacy-from-check"], out) == 0
    assert out.getvalue() == (spider / "eval_result_example.txt").read_text()


def test_aggregate_accepts_recorded_details(results: list[StructureResult],
                                            spider: Path) -> None:
    recorded = [json.loads(json.dumps(r.to_details())) for r in results]
    expected = _official_table(
        (spider / "oracle" / "spider_head_match__gold_example.txt").read_text())
    assert format_table(aggregate(recorded)) == expected
