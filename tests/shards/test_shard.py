"""``--queryeval-shard I/N`` and ``queryeval merge``: a suite split across runners and put back."""

from __future__ import annotations

import json

import pytest

from pytest_queryeval.suite.shard import parse_shard, shard_of
from tests.sdmx_cases import GDP, MEX, dump, sdmx_case, selection
from tests.support import read_report

IDS = [f"case-{i:02d}" for i in range(24)]


@pytest.fixture
def many(suite):
    cases = [sdmx_case(i, selection(GDP), selection(GDP if n % 3 else MEX))
             for n, i in enumerate(IDS)]
    suite.makefile(".yaml", test_cases=dump({"kind": "sdmx",
                                             "thresholds": {"macro_precision": 1.0},
                                             "cases": cases}))
    suite.makefile(".yaml", queryeval=dump({"gates": {
        "macro_f1": {"mean": 0.5}, "f1_ceiling": {"metric": "macro_f1", "max": 0.5}}}))
    return suite


def _ids(pytester, path):
    return [c["id"] for c in read_report(pytester.path / path)["cases"]]


def test_shards_partition_the_suite_by_a_stable_hash_of_the_case_id(many):
    seen: list[str] = []
    for index in (1, 2, 3):
        result = many.runpytest(f"--queryeval-shard={index}/3",
                                f"--queryeval-json=shard-{index}.json")
        ids = _ids(many, f"shard-{index}.json")
        assert ids == sorted(i for i in IDS if shard_of(i, 3) == index)
        assert 0 < len(ids) < len(IDS)
        result.stdout.fnmatch_lines([f"*{len(IDS) - len(ids)} deselected*"])
        report = read_report(many.path / f"shard-{index}.json")
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


def _shards(pytester, total, *extra):
    for index in range(1, total + 1):
        pytester.runpytest(f"--queryeval-shard={index}/{total}",
                           f"--queryeval-json=shard-{index}.json", *extra)
    return [f"shard-{i}.json" for i in range(1, total + 1)]


def _merge(pytester, *args):
    import sys

    return pytester.run(sys.executable, "-m", "pytest_queryeval.conclude.cli", "merge", *args)


def test_merge_recomputes_aggregates_gates_and_exit_like_one_run(many):
    whole = many.runpytest("--queryeval-json=whole.json")
    full = read_report(many.path / "whole.json")
    shards = _shards(many, 3)
    result = _merge(many, *shards, "-o", "merged.json", "--queryeval-markdown=m.md",
                    "--queryeval-html=m.html", "--queryeval-baseline=whole.json",
                    "--queryeval-max-drop=0.01")
    merged = read_report(many.path / "merged.json")
    assert result.ret == whole.ret == 1  # the same failing cases fail both
    assert [c["id"] for c in merged["cases"]] == [c["id"] for c in full["cases"]]
    assert merged["aggregates"] == full["aggregates"]
    assert merged["flaky"] == full["flaky"] and merged["near_miss"] == full["near_miss"]
    assert [(g["name"], g["value"], g["op"], g["passed"], g["scope"]) for g in merged["gates"]] \
        == [(g["name"], g["value"], g["op"], g["passed"], g["scope"]) for g in full["gates"]]
    assert [(g["op"], g["passed"]) for g in merged["gates"]] == [(">=", True), ("<=", False)]
    assert merged["run"]["exitstatus"] == 1
    assert [m["shard"] for m in merged["run"]["merged_from"]] == ["1/3", "2/3", "3/3"]
    assert merged["baseline"]["comparable"] is True and merged["baseline"]["passed"] is True
    result.stdout.fnmatch_lines(["queryeval merge: 3 shard(s), 24 cases", "*sdmx*",
                                 "gate PASS*", "gate FAIL*", "*JSON report: *merged.json*"])
    line = merged["run"]["outcome_line"]  # every report heads with the last line
    assert line.startswith("queryeval: FAILED: 8 failed cases (case-00, case-03, case-06 and 5 "
                           "more); gate f1_ceiling 0.6667 > 0.5")
    assert result.stdout.lines[-1] == line
    assert (many.path / "m.md").read_text().startswith(
        "## ❌ " + line.replace("_", r"\_").replace(">", "&gt;") + "\n\n16 of 24 judged cases passed")
    assert (many.path / "m.html").is_file()


def test_merge_fails_on_a_drop_versus_the_baseline(many):
    many.runpytest("--queryeval-json=whole.json")
    better = read_report(many.path / "whole.json")
    for case in better["cases"]:
        case["metrics"]["macro_f1"] = 1.0
    (many.path / "better.json").write_text(json.dumps(better))
    shards = _shards(many, 2)
    result = _merge(many, *shards, "-o", "merged.json", "--queryeval-baseline=better.json",
                    "--queryeval-max-drop=macro_f1=0.05")
    assert result.ret == 1
    merged = read_report(many.path / "merged.json")
    assert merged["baseline"]["passed"] is False
    result.stdout.fnmatch_lines(["*macro_f1*", "queryeval: FAILED: *failed cases*; "
                                               "baseline drop: macro_f1 -* > max drop 0.05 *"])


def test_merge_reports_missing_and_duplicated_cases(many):
    shards = _shards(many, 3)
    first = read_report(many.path / shards[0])
    missing = sorted(set(IDS) - set(first["run"]["suite_ids"]) | (
        set(_ids(many, shards[2]))))
    result = _merge(many, shards[0], shards[1], shards[1], "-o", "merged.json")
    assert result.ret == 1
    merged = read_report(many.path / "merged.json")
    assert sorted(c["id"] for c in merged["cases"]) == sorted(
        _ids(many, shards[0]) + _ids(many, shards[1]))  # each case once
    result.stdout.fnmatch_lines([
        "error: missing shard(s): 3/3",
        f"error: {len(missing)} case(s) of the suite are in no shard: {', '.join(missing[:10])}*",
        f"error: {len(_ids(many, shards[1]))} case(s) ran in more than one shard (the first is "
        "kept): *(in shard-2.json, shard-2.json)*"])
    result = _merge(many, shards[0], "-o", "m.json", "--queryeval-update-baseline",
                    "--queryeval-baseline=base.json")
    result.stdout.fnmatch_lines(["error: baseline NOT updated (base.json): the run was "
                                 "filtered (missing shard(s): 2/3, 3/3*"])
    assert not (many.path / "base.json").exists()
    # the complete merge may become the baseline
    result = _merge(many, *shards, "-o", "m.json", "--queryeval-update-baseline",
                    "--queryeval-baseline=base.json")
    result.stdout.fnmatch_lines(["baseline updated: *base.json"])


def test_merge_refuses_shards_of_another_suite_or_configuration(many):
    shards = _shards(many, 2)
    (many.path / "s1.json").write_text((many.path / shards[0]).read_text())
    many.runpytest("--queryeval-shard=2/2", "--queryeval-json=labelled.json",
                   "--queryeval-model-label=v2")
    result = _merge(many, "s1.json", "labelled.json", "-o", "m.json")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["queryeval merge: refused: labelled.json: run.model is 'v2', "
                                 "but s1.json has None"])
    assert not (many.path / "m.json").exists()
    # a gate of the same name with another limit
    many.makefile(".yaml", queryeval=dump({"gates": {"macro_f1": {"mean": 0.9}}}))
    many.runpytest("--queryeval-shard=2/2", "--queryeval-json=gate.json")
    result = _merge(many, "s1.json", "gate.json")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*refused: gate.json: gate 'macro_f1' differs from s1.json's "
                                 "in limit*"])
    # another suite: one more case
    many.makefile(".yaml", test_more=dump({"kind": "sdmx", "cases": [
        sdmx_case("extra", selection(GDP), selection(GDP))]}))
    many.makefile(".yaml", queryeval=dump({"gates": {
        "macro_f1": {"mean": 0.5}, "f1_ceiling": {"metric": "macro_f1", "max": 0.5}}}))
    many.runpytest("--queryeval-shard=2/2", "--queryeval-json=other.json")
    result = _merge(many, "s1.json", "other.json")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*refused: other.json: another suite (25 cases, digest *) than "
                                 "s1.json (24 cases*"])
    # not a report; bad options
    (many.path / "junk.json").write_text("[1]")
    result = _merge(many, "s1.json", "junk.json")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*refused: junk.json: not a queryeval JSON report*"])
    result = _merge(many, "s1.json", "--queryeval-max-drop=0.1")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--queryeval-max-drop needs --queryeval-baseline*"])


def test_a_shard_under_xdist_records_the_suite_from_the_workers(many):
    many.runpytest("-n", "2", "--queryeval-shard=1/2", "--queryeval-json=x.json")
    run = read_report(many.path / "x.json")["run"]
    assert run["suite"]["cases"] == len(IDS)
    assert run["suite_ids"] == IDS
    assert run["shard"] == "1/2"


def test_pytest_split_groups_merge_like_one_run(many):
    """pytest-split (``--splits 3 --group I``) instead of ``--queryeval-shard``: its groups are
    contiguous runs of the suite's items, chosen by recorded durations; the merge checks their
    union against the suite's ids just the same."""
    pytest.importorskip("pytest_split")
    whole = many.runpytest("--queryeval-json=whole.json")
    full = read_report(many.path / "whole.json")
    seen: list[str] = []
    for group in (1, 2, 3):
        result = many.runpytest("--splits", "3", "--group", str(group),
                                f"--queryeval-json=group-{group}.json")
        ids = _ids(many, f"group-{group}.json")
        assert 0 < len(ids) < len(IDS)
        result.stdout.fnmatch_lines([f"*{len(IDS) - len(ids)} deselected*"])
        seen += ids
    assert sorted(seen) == IDS
    result = _merge(many, "group-1.json", "group-2.json", "group-3.json", "-o", "merged.json")
    merged = read_report(many.path / "merged.json")
    assert result.ret == whole.ret == 1
    assert [c["id"] for c in merged["cases"]] == [c["id"] for c in full["cases"]]
    assert merged["aggregates"] == full["aggregates"]
    result.stdout.fnmatch_lines(["queryeval merge: 3 shard(s), 24 cases"])
    # one group short: the union is incomplete and the merge says which cases are missing
    result = _merge(many, "group-1.json", "group-3.json", "-o", "short.json")
    assert result.ret == 1
    missing = sorted(set(IDS) - set(_ids(many, "group-1.json")) - set(_ids(many, "group-3.json")))
    result.stdout.fnmatch_lines([f"error: {len(missing)} case(s) of the suite are in no shard: "
                                 f"{', '.join(missing)}"])


def test_merge_refuses_a_damaged_shard_naming_the_file_and_the_field(many):
    """A crafted or damaged shard is a usage error (exit 4, nothing written) naming the shard
    and the field path, not a traceback with exit 1 (the status of failing tests)."""
    shards = _shards(many, 2)
    good = read_report(many.path / shards[0])
    gated = next(i for i, g in enumerate(good["gates"]) if g["name"] == "macro_f1")

    def damaged(name, change):
        report = json.loads(json.dumps(good))
        change(report)
        text = json.dumps(report).replace('"__BIG__"', "1" + "0" * 400)
        (many.path / name).write_text(text)
        return name

    for name, change, message in (
        ("line.json", lambda r: r["cases"][1].__setitem__("line", "abc"),
         'cases[1].line: expected an integer, got "abc"'),
        ("workers.json", lambda r: r["run"].__setitem__("workers", "x"),
         'run.workers: expected an integer, got "x"'),
        ("limit.json", lambda r: r["gates"][gated].__setitem__("limit", "abc"),
         f'gates[{gated}].limit: expected a finite number, got "abc"'),
        ("big.json", lambda r: r["cases"][0]["metrics"].__setitem__("macro_f1", "__BIG__"),
         "cases[0].metrics.macro_f1: expected a finite number, true, false or null, got "
         + "1" + "0" * 36 + "..."),
        ("spider.json", lambda r: r["cases"][0]["details"].__setitem__("spider", {"exact": 1}),
         "cases[0].details.spider.hardness: expected one of easy, medium, hard, extra, got null"),
    ):
        damaged(name, change)
        result = _merge(many, name, shards[1], "-o", "m.json")
        assert result.ret == 4, (name, result.stderr.str())
        result.stderr.fnmatch_lines([f"queryeval merge: refused: {name}: {message}"])
        assert "Traceback" not in result.stderr.str()
        assert not (many.path / "m.json").exists()
    # 100,000-deep JSON: the decoder's RecursionError, and a depth the writers could not take
    for name, depth in (("deep.json", 100_000), ("deeper.json", 300)):
        (many.path / name).write_text('{"run": {}, "cases": [' + "[" * depth + "]" * depth
                                      + "]}")
        result = _merge(many, name, "-o", "m.json")
        assert result.ret == 4
        result.stderr.fnmatch_lines([f"*refused: {name}: not JSON: nested deeper than 200 "
                                     "levels"])
    # a device and a FIFO with no writer: refused before reading (both used to hang or OOM)
    import os

    os.mkfifo(many.path / "fifo.json")
    for name in ("/dev/zero", "fifo.json"):
        result = _merge(many, name, "-o", "m.json")
        assert result.ret == 4
        result.stderr.fnmatch_lines([f"*refused: {name}: *not a regular file*"])
    assert not (many.path / "m.json").exists()


def test_shard_auto_reads_the_schedulers_variables(many, monkeypatch):
    """Issue 30 item 6: ``--queryeval-shard auto`` on a GitLab parallel job (CI_NODE_INDEX is
    1-based) runs the same cases as the explicit I/N, and a job without the variables is a
    usage error naming them."""
    for name in ("QUERYEVAL_SHARD_INDEX", "QUERYEVAL_SHARD_COUNT", "CIRCLE_NODE_INDEX",
                 "BUILDKITE_PARALLEL_JOB", "SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CI_NODE_INDEX", "2")
    monkeypatch.setenv("CI_NODE_TOTAL", "3")
    many.runpytest("--queryeval-shard=auto", "--queryeval-json=auto.json")
    assert _ids(many, "auto.json") == sorted(i for i in IDS if shard_of(i, 3) == 2)
    assert read_report(many.path / "auto.json")["run"]["shard"] == "2/3"
    monkeypatch.delenv("CI_NODE_INDEX")
    result = many.runpytest("--queryeval-shard=auto")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--queryeval-shard=auto: no scheduler variable is set*"])
