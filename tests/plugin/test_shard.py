"""``--queryeval-shard I/N`` and ``queryeval merge``: a suite split across runners and put back."""

from __future__ import annotations

import json

import pytest

from pytest_queryeval.shard import parse_shard, shard_of

from .conftest import GDP, MEX, dump, sdmx_case, selection

IDS = [f"case-{i:02d}" for i in range(24)]


@pytest.fixture
def many(suite):
    cases = [sdmx_case(i, selection(GDP), selection(GDP if n % 3 else MEX))
             for n, i in enumerate(IDS)]
    suite.makefile(".yaml", test_cases=dump({"kind": "sdmx",
                                             "thresholds": {"macro_precision": 1.0},
                                             "cases": cases}))
    suite.makefile(".yaml", queryeval=dump({"gates": {"macro_f1": {"mean": 0.5}}}))
    return suite


def _ids(pytester, path):
    return [c["id"] for c in json.loads((pytester.path / path).read_text())["cases"]]


def test_shards_partition_the_suite_by_a_stable_hash_of_the_case_id(many):
    seen: list[str] = []
    for index in (1, 2, 3):
        result = many.runpytest(f"--queryeval-shard={index}/3",
                                f"--queryeval-json=shard-{index}.json")
        ids = _ids(many, f"shard-{index}.json")
        assert ids == sorted(i for i in IDS if shard_of(i, 3) == index)
        assert 0 < len(ids) < len(IDS)
        result.stdout.fnmatch_lines([f"*{len(IDS) - len(ids)} deselected*"])
        report = json.loads((many.path / f"shard-{index}.json").read_text())
        assert report["run"]["shard"] == f"{index}/3"
        seen += ids
    assert sorted(seen) == IDS  # every case in exactly one shard
    # stable: the same id lands in the same shard whatever else the suite holds
    assert shard_of("case-05", 3) == shard_of("case-05", 3)
    assert [shard_of(i, 3) for i in IDS] == [shard_of(i, 3) for i in reversed(IDS)][::-1]


def test_bad_shard_is_a_usage_error(many):
    for value, message in (("3/2", "I must be between 1 and N"), ("a/b", "expected I/N"),
                           ("0/4", "I must be between 1 and N")):
        result = many.runpytest(f"--queryeval-shard={value}")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"*--queryeval-shard={value}: {message}*"])
    assert parse_shard(" 2/4 ") == (2, 4)
