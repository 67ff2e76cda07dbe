"""Sharding on the schedulers teams use (issue 30 item 6): the shard from each scheduler's own
environment variables, and a partition balanced by a previous report's durations that every
runner computes alike."""

from __future__ import annotations

import pytest

from pytest_queryeval.suite.shard import balanced_shards, durations_from_report, shard_from_environment


@pytest.mark.parametrize(("env", "expected"), [
    ({"QUERYEVAL_SHARD_INDEX": "2", "QUERYEVAL_SHARD_COUNT": "4"}, (2, 4)),
    ({"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "3"}, (1, 3)),  # GitLab parallel: 1-based
    ({"CIRCLE_NODE_INDEX": "0", "CIRCLE_NODE_TOTAL": "2"}, (1, 2)),  # CircleCI: 0-based
    ({"BUILDKITE_PARALLEL_JOB": "4", "BUILDKITE_PARALLEL_JOB_COUNT": "5"}, (5, 5)),
    ({"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "8", "SLURM_ARRAY_TASK_MIN": "1"},
     (3, 8)),  # sbatch --array=1-8
    ({"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "8", "SLURM_ARRAY_TASK_MIN": "0"},
     (1, 8)),  # sbatch --array=0-7
    ({"JOB_COMPLETION_INDEX": "9", "QUERYEVAL_SHARD_COUNT": "10"}, (10, 10)),  # Indexed Job
    # the project's own variables win over a scheduler's
    ({"QUERYEVAL_SHARD_INDEX": "1", "QUERYEVAL_SHARD_COUNT": "2", "CI_NODE_INDEX": "2",
      "CI_NODE_TOTAL": "2"}, (1, 2)),
])
def test_the_shard_comes_from_the_schedulers_variables(env: dict[str, str],
                                                       expected: tuple[int, int]) -> None:
    assert shard_from_environment(env) == expected


@pytest.mark.parametrize(("env", "message"), [
    ({}, "no scheduler variable is set (looked for QUERYEVAL_SHARD_INDEX, CI_NODE_INDEX"),
    ({"JOB_COMPLETION_INDEX": "0"}, "Kubernetes Indexed Job: JOB_COMPLETION_INDEX='0' and "
                                    "QUERYEVAL_SHARD_COUNT='' must be whole numbers"),
    ({"CI_NODE_INDEX": "4", "CI_NODE_TOTAL": "3"}, "GitLab CI: CI_NODE_INDEX=4 is not one of 3 "
                                                   "shards (CI_NODE_TOTAL=3, counted from 1)"),
    ({"CIRCLE_NODE_INDEX": "x", "CIRCLE_NODE_TOTAL": "2"}, "CircleCI: CIRCLE_NODE_INDEX='x'"),
    # issue 39 item 7: a number too long for Python's int() names its variable, shown cut
    ({"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "9" * 5000},
     "GitLab CI: CI_NODE_INDEX='1' and CI_NODE_TOTAL='99999999999999999999'... (5,000 "
     "characters) must be whole numbers (of at most 9 digits)"),
    ({"QUERYEVAL_SHARD_INDEX": "9" * 5000, "QUERYEVAL_SHARD_COUNT": "2"},
     "queryeval: QUERYEVAL_SHARD_INDEX='99999999999999999999'... (5,000 characters)"),
    ({"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "4",
      "SLURM_ARRAY_TASK_MIN": "1" * 5000}, "SLURM_ARRAY_TASK_MIN='11111111111111111111'..."),
    ({"CIRCLE_NODE_INDEX": "\u00b2", "CIRCLE_NODE_TOTAL": "2"},  # a digit int() refuses
     "CircleCI: CIRCLE_NODE_INDEX='\u00b2'"),
])
def test_a_wrong_environment_is_named(env: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=r"^--queryeval-shard=auto: ") as info:
        shard_from_environment(env)
    assert message in str(info.value)


def test_durations_come_from_a_report() -> None:
    report = {"cases": [
        {"id": "a", "duration_s": 2.5, "metrics": {"gold_seconds": 9.0}},
        {"id": "b", "metrics": {"gold_seconds": 0.25, "predicted_seconds": 0.5,
                                "prediction_seconds": 1.0, "execution_accuracy": 1.0}},
        {"id": "c", "metrics": {}},
        {"id": 7, "duration_s": 1.0},  # a damaged record is skipped
        {"id": "d", "duration_s": float("nan")},
    ]}
    assert durations_from_report(report) == {"a": 2.5, "b": 1.75, "c": 0.0}


def test_a_balanced_partition_is_even_and_the_same_for_every_runner() -> None:
    ids = [f"case-{i:03d}" for i in range(100)]
    # a long tail: ten slow cases take as long as the ninety others together
    durations = {cid: (9.0 if i < 10 else 1.0) for i, cid in enumerate(ids)}
    shards = balanced_shards(ids, durations, 4)
    loads = [sum(durations[c] for c, s in shards.items() if s == k) for k in range(1, 5)]
    assert loads == [45.0, 45.0, 45.0, 45.0]
    # the same partition whatever order a runner collected the cases in
    assert balanced_shards(list(reversed(ids)), dict(reversed(durations.items())), 4) == shards
    assert set(shards) == set(ids)


def test_new_cases_count_as_the_median_and_no_report_balances_by_count() -> None:
    durations = {"a": 1.0, "b": 2.0, "c": 30.0}
    shards = balanced_shards(["a", "b", "c", "new-1", "new-2"], durations, 2)
    assert shards["c"] == 1  # alone with the longest case...
    assert {shards["a"], shards["b"], shards["new-1"], shards["new-2"]} == {2}  # 2+2+1+2 < 30
    by_count = balanced_shards([str(i) for i in range(10)], {}, 3)
    assert sorted(list(by_count.values()).count(k) for k in (1, 2, 3)) == [3, 3, 4]


def test_a_huge_scheduler_variable_is_a_usage_error_that_names_it(pytester, monkeypatch):
    """End to end: the run stops before collecting with the variable's name, not Python's
    "Exceeds the limit (4300 digits) for integer string conversion"."""
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    monkeypatch.setenv("CI_NODE_INDEX", "1")
    monkeypatch.setenv("CI_NODE_TOTAL", "9" * 5000)
    result = pytester.runpytest("--queryeval-shard=auto")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "CI_NODE_TOTAL='99999999999999999999'... (5,000 characters)" in err
    assert "Exceeds the limit" not in err and "9" * 100 not in err
