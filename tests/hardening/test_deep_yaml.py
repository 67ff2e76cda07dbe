"""A deeply nested YAML file (30,000 levels, 60 KB) is a located error for that file only: libyaml's
composer recurses in C, so before the depth bound it crashed the whole pytest process (exit 139,
no report, no other case run)."""

from __future__ import annotations

import pytest

from .conftest import by_id, dump, no_traceback, run_suite

DEPTH = 30_000
#: pytest_queryeval.suite.yamlload.MAX_NESTING_DEPTH, the documented bound (not imported: the test
#: must collect on code without it).
MAX_NESTING_DEPTH = 200


@pytest.mark.parametrize("shape", ["flow-list", "flow-map", "block-list"])
def test_deep_yaml_is_a_located_error_and_the_suite_runs(suite: pytest.Pytester, shape: str,
                                                         ) -> None:
    if shape == "flow-list":
        deep = "kind: sql\ncases: " + "[" * DEPTH + "]" * DEPTH + "\n"
    elif shape == "flow-map":
        deep = "kind: sql\ncases: " + "{a: " * DEPTH + "1" + "}" * DEPTH + "\n"
    else:
        # indentation grows with depth: 30,000 levels would be 450 MB, which the 64 MiB cap
        # on a YAML file refuses before parsing; 5,000 levels (12 MB) still nest past the bound
        deep = "kind: sql\ncases:\n" + "\n".join(" " * i + "-" for i in range(5_000)) + "\n"
    (suite.path / "test_deep.yaml").write_text(deep, encoding="utf-8")
    suite.makefile(".yaml", test_good=dump({
        "kind": "sql", "cases": [{"id": "good", "gold_result": {"columns": ["n"], "rows": [[1]]},
                                  "predicted_result": {"columns": ["n"], "rows": [[1]]},
                                  "thresholds": {"execution_accuracy": 1.0}}]}))
    result, report = run_suite(suite, subprocess=True)
    no_traceback(result)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-3000:]
    recs = by_id(report)
    assert recs["good"]["outcome"] == "passed"
    errors = [c for c in report["cases"] if c["outcome"] == "error"]
    assert [c["file"] for c in errors] == ["test_deep.yaml"]
    line = 2 if shape != "block-list" else 2 + MAX_NESTING_DEPTH
    assert errors[0]["error"] == (f"test_deep.yaml:{line}: YAML error: nesting deeper than "
                                  f"{MAX_NESTING_DEPTH} levels of mappings and lists")
