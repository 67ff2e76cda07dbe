"""``--queryeval-shard-durations REPORT``: shards balanced by the case durations an earlier run
recorded (issue 30 item 6), the same partition on every runner."""

from __future__ import annotations

import json

from pytest_queryeval.suite.shard import balanced_shards
from tests.sdmx_cases import GDP, dump, sdmx_case, selection
from tests.support import read_report

IDS = [f"case-{i:02d}" for i in range(12)]
#: case-00 took as long as all the others together, ten times over
SECONDS = {cid: (110.0 if cid == "case-00" else 1.0) for cid in IDS}


def _suite(pytester):
    cases = [sdmx_case(cid, selection(GDP), selection(GDP)) for cid in IDS]
    pytester.makefile(".yaml", test_cases=dump({"kind": "sdmx", "cases": cases}))
    (pytester.path / "durations.json").write_text(json.dumps({
        "version": 1, "run": {},
        "cases": [{"id": cid, "duration_s": s} for cid, s in SECONDS.items()]}))


def _ran(pytester, report):
    return [c["id"] for c in read_report(pytester.path / report)["cases"]]


def test_shards_are_balanced_by_recorded_durations(suite, monkeypatch):
    _suite(suite)
    expected = balanced_shards(IDS, SECONDS, 3)
    shards = []
    for index in (1, 2, 3):
        suite.runpytest(f"--queryeval-shard={index}/3", "--queryeval-shard-durations=durations.json",
                        f"--queryeval-json=s{index}.json")
        shards.append(_ran(suite, f"s{index}.json"))
    assert sorted(i for s in shards for i in s) == IDS  # a partition: every case once
    assert [sorted(s) for s in shards] == [
        sorted(c for c, s in expected.items() if s == i) for i in (1, 2, 3)]
    heavy = next(s for s in shards if "case-00" in s)
    assert heavy == ["case-00"]  # the long case alone; the eleven others share two shards
    assert sorted(len(s) for s in shards) == [1, 5, 6]
    # the ini value does the same, read from the rootdir; auto reads the shard from the scheduler
    suite.makeini("[pytest]\nqueryeval_files = test_*.yaml\n"
                  "queryeval_shard_durations = durations.json\n")
    monkeypatch.setenv("QUERYEVAL_SHARD_INDEX", "2")
    monkeypatch.setenv("QUERYEVAL_SHARD_COUNT", "3")
    suite.runpytest("--queryeval-shard=auto", "--queryeval-json=auto.json")
    assert sorted(_ran(suite, "auto.json")) == sorted(shards[1])


def test_an_unreadable_durations_report_is_a_usage_error(suite):
    _suite(suite)
    result = suite.runpytest("--queryeval-shard=1/2", "--queryeval-shard-durations=nowhere.json")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--queryeval-shard-durations: nowhere.json: cannot read:*"])


def test_the_retry_options_join_the_one_invalid_options_error(suite):
    """An unreadable durations report and an unusable resume report are listed with every
    other problem of the options, in one usage error, not one per run."""
    _suite(suite)
    (suite.path / "bad.json").write_text('{"run": {}, "cases": [{"id": 3}]}')
    result = suite.runpytest("--queryeval-shard=1/2", "--queryeval-shard-durations=nowhere.json",
                             "--queryeval-resume=bad.json", "--queryeval-repeat=0")
    assert result.ret == 4
    result.stderr.fnmatch_lines([
        "*queryeval: invalid options:",
        "  --queryeval-repeat=0: must be 1 or more",
        "  --queryeval-resume: bad.json: cases?0?.id: expected a string*",
        "  --queryeval-shard-durations: nowhere.json: cannot read:*"])
    assert result.stderr.str().count("queryeval: ") == 1
