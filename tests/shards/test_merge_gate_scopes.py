"""A merge gates the union as the serial run gates the suite, for every scope a gate has
(issue 59 item 1): ``kind:``, ``tag:``, ``model:`` and none, a pass-rate gate and a metric gate
(a floor and a ceiling), with the same values, verdicts, outcome line and exit status; and
``--queryeval-update-baseline`` does on the merge what it does on the serial run.

The suite: six SQL cases on a real SQLite file, asked of two models through predictions files
(``good`` answers all six, ``weak`` three; ``weak`` is three times slower), three of them
tagged ``easy`` (both models right), and two SDMX cases with their own failing predictions
(another kind, asked of no model). Each gate is built so that pooling the cases it does not
select would flip its verdict: the merge once dropped a gate's ``model:`` and gated both
models together (``good_pass`` failed, ``weak_pass`` passed)."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.conclude.aggregate import evaluate_gates
from pytest_queryeval.conclude.merge import GATE_FIELDS, _gates, gate_of
from pytest_queryeval.suite.config import Gate
from tests.models.conftest import RIGHT
from tests.sdmx_cases import GDP, MEX, sdmx_case, selection
from tests.support import dump, read_report, write_suite

WRONG = "SELECT 42"
GOOD = dict(RIGHT)
WEAK = {**RIGHT, **dict.fromkeys(("q1", "q2", "q3"), WRONG)}
EASY = ("q4", "q5", "q6")

#: scope -> (the gates, each one's verdict in the serial run). The serial values: ``good``
#: passes 6/6 (latency 0.5 s), ``weak`` 3/6 (1.5 s), the ``easy`` cases 6/6, the SQL cases
#: 9/12, the two SDMX cases 0/2: the whole run 9/14.
SCOPES: dict[str, tuple[dict[str, Any], dict[str, bool]]] = {
    "none": ({"pass_rate": {"min": 0.6}}, {"pass_rate": True}),
    "kind": ({"sql_pass": {"metric": "pass_rate", "min": 0.7, "kind": "sql"}},
             {"sql_pass[kind=sql]": True}),  # pooled with the SDMX cases: 9/14 < 0.7
    "tag": ({"easy_pass": {"metric": "pass_rate", "min": 1.0, "tag": "easy"}},
            {"easy_pass[tag=easy]": True}),
    # the gate: 6/6 for good alone, 9/12 (or 9/14) pooled
    "model": ({"good_pass": {"metric": "pass_rate", "min": 1.0, "model": "good"}},
              {"good_pass[model=good]": True}),
    # a weak model must not pass on the good one's cases: 3/6 alone, 9/14 pooled
    "model-weak": ({"weak_pass": {"metric": "pass_rate", "min": 0.6, "model": "weak"},
                    "weak_ex": {"metric": "execution_accuracy", "mean": 0.7, "model": "weak"},
                    "weak_slow": {"metric": "prediction_seconds", "max": 1.0, "model": "weak"}},
                   {"weak_pass[model=weak]": False, "weak_ex[model=weak]": False,
                    "weak_slow[model=weak]": False}),
    "kind+tag+model": ({"weak_easy": {"metric": "pass_rate", "min": 1.0, "kind": "sql",
                                      "tag": "easy", "model": "weak"}},
                       {"weak_easy[kind=sql][tag=easy][model=weak]": True}),
}


def _predictions(answers: dict[str, str], latency: float) -> str:
    return "".join(json.dumps({"id": i, "predicted": q, "latency": latency}) + "\n"
                   for i, q in answers.items())


def _suite(root: Path, gates: dict[str, Any]) -> None:
    with sqlite3.connect(root / "data.sqlite") as conn:
        conn.execute("CREATE TABLE t (x INTEGER)")
        conn.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (3,)])
    conn.close()
    sql = {"kind": "sql", "datasource": "db",
           "cases": [{"id": i, "question": f"question {i}", "gold": q,
                      **({"tags": ["easy"]} if i in EASY else {})} for i, q in RIGHT.items()]}
    sdmx = {"kind": "sdmx", "thresholds": {"macro_precision": 1.0},
            "cases": [sdmx_case(f"s{n}", selection(GDP), selection(MEX)) for n in (1, 2)]}
    write_suite(root, {
        "datasources": {"db": {"type": "sqlite", "path": "data.sqlite"}},
        "predictions": {"good": {"source": "file", "path": "good.jsonl"},
                        "weak": {"source": "file", "path": "weak.jsonl"}},
        "gates": gates,
    }, {"test_sql.yaml": dump(sql), "test_sdmx.yaml": dump(sdmx),
        "good.jsonl": _predictions(GOOD, 0.5), "weak.jsonl": _predictions(WEAK, 1.5)})


def _merge(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.run(sys.executable, "-m", "pytest_queryeval.conclude.cli", "merge", *args)


def _gate_view(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Every field of every gate entry (the scope is rootdir-relative in both)."""
    return [dict(gate) for gate in report["gates"]]


def _shards_merged(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, Path]:
    for index in (1, 2):
        pytester.runpytest(f"--queryeval-shard={index}/2", f"--queryeval-json=shard-{index}.json",
                           "--queryeval-gating=gates", "--queryeval-no-step-summary")
    result = _merge(pytester, "shard-1.json", "shard-2.json", "-o", "merged.json",
                    "--queryeval-gating=gates", "--queryeval-no-step-summary", *args)
    return result, pytester.path / "merged.json"


@pytest.mark.parametrize("scope", list(SCOPES))
def test_a_merge_gates_each_scope_as_the_serial_run(pytester: pytest.Pytester, scope: str) -> None:
    gates, verdicts = SCOPES[scope]
    _suite(pytester.path, gates)
    serial_result = pytester.runpytest("--queryeval-json=serial.json",
                                       "--queryeval-gating=gates", "--queryeval-no-step-summary")
    serial = read_report(pytester.path / "serial.json")
    assert {g["name"]: g["passed"] for g in serial["gates"]} == verdicts
    assert int(serial_result.ret) == (0 if all(verdicts.values()) else 1)
    merged_result, path = _shards_merged(pytester)
    merged = read_report(path)
    assert sorted(merged.by_id) == sorted(serial.by_id)
    assert _gate_view(merged) == _gate_view(serial)
    assert merged_result.ret == int(serial_result.ret), merged_result.stdout.str()
    assert merged["run"]["outcome_line"] == serial["run"]["outcome_line"]
    gate_lines = [line for line in serial_result.outlines if line.startswith("gate ")]
    assert gate_lines and gate_lines == [line for line in merged_result.outlines
                                         if line.startswith("gate ")]


def test_a_model_gate_counts_only_its_model_after_a_merge(pytester: pytest.Pytester) -> None:
    """The issue's numbers: 6 of 6 for the good model, where the pooled gate said
    ``pass rate = 0.7500 (required >= 1, 12 cases)`` (the SQL cases of both models)."""
    _suite(pytester.path, {"good_pass": {"metric": "pass_rate", "min": 1.0, "model": "good",
                                         "kind": "sql"}})
    result, path = _shards_merged(pytester)
    gate = read_report(path)["gates"][0]
    assert (gate["model"], gate["value"], gate["cases"], gate["passed"]) == ("good", 1.0, 6, True)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["gate PASS: pass rate kind=sql model=good = 1.0000 (required >= 1, "
                                 "6 cases)*"])


def test_a_baseline_refresh_on_a_failing_model_gate_is_the_serial_runs(
        pytester: pytest.Pytester) -> None:
    """``--queryeval-update-baseline`` on the merge does what it does on the serial run: with
    the weak model's gate failing, both write the baseline ("all the same") and exit 1; the
    pooled gate once passed on the merge, which then wrote it as a green refresh."""
    gates, _ = SCOPES["model-weak"]
    _suite(pytester.path, gates)
    serial_result = pytester.runpytest("--queryeval-json=serial.json", "--queryeval-gating=gates",
                                       "--queryeval-no-step-summary",
                                       "--queryeval-baseline=base-serial.json",
                                       "--queryeval-update-baseline")
    merged_result, path = _shards_merged(pytester, "--queryeval-baseline=base-merged.json",
                                         "--queryeval-update-baseline")
    serial, merged = read_report(pytester.path / "serial.json"), read_report(path)
    assert int(serial_result.ret) == merged_result.ret == 1
    line = serial["run"]["outcome_line"]
    assert "baseline updated all the same: base-serial.json" in line
    assert merged["run"]["outcome_line"] == line.replace("base-serial", "base-merged")
    written = [read_report(pytester.path / f"base-{n}.json") for n in ("serial", "merged")]
    assert [sorted(b.outcomes.items()) for b in written] == [sorted(serial.outcomes.items())] * 2
    serial_base, merged_base = ({(c["id"], c["status"], c["signature"]) for c in b["cases"]}
                                for b in written)
    assert serial_base == merged_base
    assert [b["run"]["outcome"] for b in written] == ["failed", "failed"]


def test_every_field_of_a_gate_survives_the_report_and_the_merge(tmp_path: Path) -> None:
    """A gate rebuilt from its report entry is the gate that wrote it, every field set to a
    value other than its default: a field added to :class:`Gate` that the report or the
    merge drops fails here (the merge once dropped ``model:``)."""
    values = {"name": "g", "metric": "execution_accuracy", "stat": "mean", "limit": 0.25,
              "scope": tmp_path / "sub", "kind": "sql", "tag": "easy", "allow_empty": True,
              "op": "<=", "model": "weak", "k": 2, "reviewed_only": True}
    fields = [f.name for f in dataclasses.fields(Gate)]
    assert sorted(values) == sorted(fields), "give the new Gate field a non-default value here"
    gate = Gate(**values)
    assert all(getattr(gate, f.name) != f.default for f in dataclasses.fields(Gate)
               if f.default is not dataclasses.MISSING)
    entry = evaluate_gates([gate], [])[0]
    assert set(GATE_FIELDS) <= set(entry)
    entry["scope"] = "sub"  # as the plugin writes it: rootdir-relative
    specs = _gates([("shard-1.json", {"gates": [entry]}), ("shard-2.json", {"gates": [entry]})])
    assert [gate_of(spec, tmp_path) for spec in specs] == [gate]


def test_the_suites_significance_level_reaches_the_merge(pytester: pytest.Pytester) -> None:
    """``gates: {significance: 0.05}`` in ``queryeval.yaml`` (which ``queryeval merge`` does
    not read) is recorded by each shard as ``run.significance`` and compares the union as it
    compares the serial run: one case of 24 that went from pass to fail is no significant drop
    (exact McNemar p = 1), where the merge once applied ``--queryeval-max-drop 0.01`` on its
    size alone and failed."""
    ids = [f"c{n:02d}" for n in range(24)]

    def write(wrong: set[str], config: dict[str, Any]) -> None:
        cases = [sdmx_case(i, selection(GDP), selection(MEX if i in wrong else GDP))
                 for i in ids]
        write_suite(pytester.path, config, {"test_cases.yaml": dump(
            {"kind": "sdmx", "thresholds": {"macro_precision": 1.0}, "cases": cases})})

    write(set(), {})
    pytester.runpytest("--queryeval-json=base.json")
    write({"c07"}, {"gates": {"significance": 0.05}})
    args = ("--queryeval-gating=gates", "--queryeval-baseline=base.json",
            "--queryeval-max-drop=0.01", "--queryeval-no-step-summary")
    serial_result = pytester.runpytest("--queryeval-json=serial.json", *args)
    for index in (1, 2):
        # each case's standing is decided as it runs: the shards compare with the baseline too
        pytester.runpytest(f"--queryeval-shard={index}/2", f"--queryeval-json=shard-{index}.json",
                           *args)
    merged_result = _merge(pytester, "shard-1.json", "shard-2.json", "-o", "merged.json", *args)
    serial, merged = (read_report(pytester.path / f"{n}.json") for n in ("serial", "merged"))
    assert (serial["baseline"]["passed"], merged["baseline"]["passed"]) == (True, True)
    assert int(serial_result.ret) == merged_result.ret == 0, merged_result.stdout.str()
    assert merged["run"]["outcome_line"] == serial["run"]["outcome_line"]
    assert serial["run"]["significance"] == merged["run"]["significance"] == 0.05
    assert [read_report(pytester.path / f"shard-{i}.json")["run"]["significance"]
            for i in (1, 2)] == [0.05, 0.05]
    # the command line still decides when given, as in the plugin
    strict = _merge(pytester, "shard-1.json", "shard-2.json", "-o", "strict.json", *args,
                    "--queryeval-significance=0.4")
    assert read_report(pytester.path / "strict.json")["baseline"]["significance"] == 0.4
    assert strict.ret in (0, 1)


def test_sub_suites_gates_of_one_name_merge_as_the_serial_run(pytester: pytest.Pytester) -> None:
    """Two sub-suites each with a gate named ``pass_rate`` (their directory is their scope),
    and one of the parent's: the merge once refused them (exit 4: "gate 'pass_rate' differs
    ... in scope"). Here the shard given first holds only ``b``'s cases, so the merge lists
    the gates in the serial run's order (the parent's, then ``a``'s, then ``b``'s), not in
    the order the shards show them."""
    from pytest_queryeval.suite.shard import shard_of

    ids = [f"case-{n}" for n in range(40)]
    a_ids = [i for i in ids if shard_of(i, 2) == 1][:6]
    b_ids = [i for i in ids if shard_of(i, 2) == 2][:6]
    files: dict[str, Any] = {}
    for sub, picked, wrong in (("a", a_ids, 1), ("b", b_ids, 3)):
        cases = [sdmx_case(i, selection(GDP), selection(MEX if n < wrong else GDP))
                 for n, i in enumerate(picked)]
        files[f"{sub}/queryeval.yaml"] = dump({"gates": {"pass_rate": 0.7,
                                                         "f1": {"metric": "macro_f1",
                                                                "mean": 0.8}}})
        files[f"{sub}/test_cases.yaml"] = dump({"kind": "sdmx", "cases": cases,
                                                "thresholds": {"macro_precision": 1.0}})
    write_suite(pytester.path, {"gates": {"all_pass": {"metric": "pass_rate", "min": 0.6}}},
                files)
    serial_result = pytester.runpytest("--queryeval-json=serial.json")
    for index in (1, 2):
        pytester.runpytest(f"--queryeval-shard={index}/2", f"--queryeval-json=shard-{index}.json")
    assert {c["file"].split("/")[0] for c in read_report(pytester.path / "shard-2.json")["cases"]} \
        == {"b"}
    result = _merge(pytester, "shard-2.json", "shard-1.json", "-o", "merged.json")
    serial, merged = (read_report(pytester.path / f"{n}.json") for n in ("serial", "merged"))
    assert [(g["name"], g["scope"], g["passed"]) for g in serial["gates"]] == [
        ("all_pass", ".", True), ("pass_rate", "a", True), ("f1", "a", True),
        ("pass_rate", "b", False), ("f1", "b", False)]
    assert _gate_view(merged) == _gate_view(serial)
    assert result.ret == int(serial_result.ret) == 1, result.stdout.str()
    gate_lines = [line for line in serial_result.outlines if line.startswith("gate ")]
    assert len(gate_lines) == 5
    assert gate_lines == [line for line in result.outlines if line.startswith("gate ")]
