"""Bad input fails only the affected item, with file:line: key path: message."""

from __future__ import annotations

from tests.sdmx_cases import GDP, MEX, dump, sdmx_case, selection
from tests.support import read_report


def _lines(pytester, name):
    return (pytester.path / name).read_text().splitlines()


def _line_of(pytester, name, needle):
    return next(i for i, line in enumerate(_lines(pytester, name), 1) if needle in line)


def test_each_problem_fails_only_its_own_case(suite, monkeypatch):
    monkeypatch.delenv("QE_TEST_MISSING_VAR", raising=False)
    structures = str((suite.path / "structures").resolve())
    suite.makefile(".yaml", queryeval=dump({"datasources": {
        "imf": {"type": "sdmx-structure", "paths": [structures]},
        "secret": {"type": "sdmx-structure", "paths": ["${QE_TEST_MISSING_VAR}"]},
    }}))
    suite.makefile(".yaml", test_bad=dump({
        "kind": "sdmx",
        "cases": [
            sdmx_case("good", selection(GDP), selection(GDP)),
            sdmx_case("typo-key", selection(GDP), selection(GDP), questoin="x"),
            sdmx_case("bad-metric", selection(GDP), selection(GDP), thresholds={"macro_f2": 0.5}),
            sdmx_case("good", selection(MEX), selection(MEX)),
            sdmx_case("no-source", selection(MEX), selection(MEX), datasource="nope"),
            sdmx_case("env", selection(MEX), selection(MEX), datasource="secret"),
        ],
    }))
    result = suite.runpytest("--queryeval-json=r.json", "-rf")
    result.assert_outcomes(passed=1, failed=5)
    name = "test_bad.yaml"
    typo = _line_of(suite, name, '"questoin"')
    metric = _line_of(suite, name, '"macro_f2"')
    dup = [i for i, line in enumerate(_lines(suite, name), 1) if '"id": "good"' in line]
    nosrc = _line_of(suite, name, '"datasource": "nope"')
    expected = [
        f"{name}:{typo}: cases[1].questoin: unknown key (did you mean 'question'?)",
        f"{name}:{metric}: cases[2].thresholds.macro_f2: unknown metric for kind sdmx",
        f"{name}:{dup[1] - 1}: id: duplicate id 'good' (first defined at {name}:{dup[0] - 1})",
        f"{name}:{nosrc}: cases[4].datasource: unknown datasource 'nope' (known: imf, secret)",
        "queryeval.yaml:9: datasources.secret.paths[0]: environment variable QE_TEST_MISSING_VAR is not set",
    ]
    out = result.stdout.str()
    for line in expected:
        assert f"error: {line}" in out, line
    report = read_report(suite.path / "r.json")
    outcomes = [(c["id"], c["outcome"]) for c in report["cases"]]
    assert outcomes.count(("good", "passed")) == 1
    assert sum(1 for _, o in outcomes if o == "error") == 5


def test_yaml_syntax_error_fails_that_file_with_line_and_column_and_the_rest_runs(suite):
    suite.makefile(".yaml", test_broken="kind: sdmx\ncases:\n  - id: a\n    conversation: [\n")
    suite.makefile(".yaml", test_fine=dump(sdmx_case("fine", selection(GDP), selection(GDP), kind="sdmx")))
    result = suite.runpytest("-rf")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_broken.yaml:4: YAML syntax error, column 20: expected the node content*"])
    assert "Interrupted" not in result.stdout.str()


def test_duplicate_yaml_keys_and_non_mapping_cases_are_located(suite):
    suite.makefile(".yaml", test_dupkey="kind: sdmx\nkind: sql\ncases: []\n")
    suite.makefile(".yaml", test_scalar=dump({"kind": "sdmx", "cases": ["just a string",
                                              sdmx_case("ok", selection(GDP), selection(GDP))]}))
    result = suite.runpytest("-rf")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*test_dupkey.yaml:2: YAML syntax error, column 1: duplicate key 'kind'*"])
    assert "test_scalar.yaml:4: cases[0]: a case must be a mapping" in result.stdout.str()


def test_unknown_kind_and_missing_kind(suite):
    suite.makefile(".yaml", test_k=dump({"cases": [
        {"id": "nokind", "question": "q", "gold": "x", "predicted": "x"},
        {"id": "badkind", "kind": "gremlin", "question": "q", "gold": "x", "predicted": "x"},
    ]}))
    result = suite.runpytest("-rf")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert ("test_k.yaml:4: cases[0].kind: missing: set kind (one of cypher, json, sdmx, "
            "sparql, sql) on the case or the file") in out
    assert "cases[1].kind: unknown kind 'gremlin' (known: cypher, json, sdmx, sparql, sql)" in out


def test_bad_threshold_on_the_command_line_is_a_usage_error(suite):
    suite.makefile(".yaml", test_a=dump(sdmx_case("a", selection(GDP), selection(GDP), kind="sdmx")))
    result = suite.runpytest("--queryeval-threshold", "not_a_metric=0.5")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*unknown metric 'not_a_metric'*"])
