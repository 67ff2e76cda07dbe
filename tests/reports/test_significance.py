"""The statistical baseline gate (``--queryeval-significance``): exact McNemar and the paired
bootstrap checked against SciPy, the gate's decisions on built reports, and the plugin's
options (validated before the run) on a real suite."""

from __future__ import annotations

import json
import math
import sys
from fractions import Fraction

import pytest
from tests.support import read_report

from pytest_queryeval.baseline.significance import (
    N_RESAMPLES,
    SEED,
    mcnemar,
    mcnemar_exact,
    min_flips_for,
    paired_bootstrap,
)
from pytest_queryeval.report.baseline import compare, format_comparison, parse_significance

np = pytest.importorskip("numpy")
stats = pytest.importorskip("scipy.stats")


# -- McNemar ----------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 5, 6, 15, 40, 101, 400])
def test_mcnemar_is_the_exact_binomial_p_value_and_agrees_with_scipy(n):
    """Ours is the exact two-sided value, correctly rounded (Fraction arithmetic); SciPy's
    binomtest goes through Boost's floating incomplete beta and differs from the exact value
    in the last digits only (the documented bound: relative 4e-14)."""
    for b in range(n + 1):
        c = n - b
        k = min(b, c)
        exact = Fraction(2 * sum(math.comb(n, j) for j in range(k + 1)), 2 ** n)
        want = 1.0 if 2 * k == n or exact >= 1 else float(exact)
        got = mcnemar_exact(b, c)
        assert got == want
        assert got == pytest.approx(stats.binomtest(b, n, 0.5).pvalue, rel=4e-14, abs=0)


@pytest.mark.parametrize("n", [0, 1, 2, 5, 6, 15, 40, 101, 400])
def test_the_gate_reports_scipys_own_p_value(n):
    """With SciPy installed, the gate's p-value is scipy.stats.binomtest's, to the last digit
    (the issue's contract: SciPy if present, our exact code otherwise)."""
    for b in range(n + 1):
        want = 1.0 if n == 0 else stats.binomtest(b, n, 0.5).pvalue
        assert mcnemar(b, n - b) == want


def test_without_scipy_the_gate_uses_the_exact_value(monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy.stats", None)  # import fails as if not installed
    assert mcnemar(10, 2) == mcnemar_exact(10, 2) == 2 * 79 / 4096


def test_mcnemar_known_values():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(3, 3) == 1.0
    assert mcnemar_exact(6, 0) == 0.03125  # 2 / 64
    assert mcnemar_exact(5, 0) == 0.0625
    assert mcnemar_exact(10, 2) == pytest.approx(0.03857421875)  # 2 * 79 / 4096
    assert min_flips_for(0.05) == 6  # 5 flips the same way: p = 0.0625
    assert min_flips_for(0.01) == 8


# -- bootstrap --------------------------------------------------------------------------------


def _scipy_interval(base, cur, confidence):
    res = stats.bootstrap((np.asarray(base, float), np.asarray(cur, float)),
                          lambda b, c, axis: np.mean(c - b, axis=axis), paired=True,
                          vectorized=True, method="percentile", n_resamples=N_RESAMPLES,
                          confidence_level=confidence, rng=SEED)
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


@pytest.mark.parametrize(("n", "confidence"), [(2, 0.95), (7, 0.95), (40, 0.9), (333, 0.99),
                                               (2500, 0.95)])
def test_bootstrap_interval_equals_scipy_to_the_last_digit(n, confidence):
    rs = np.random.default_rng(n)
    base = rs.random(n).round(3)
    cur = (base + rs.normal(-0.05, 0.2, n)).clip(0, 1)
    iv = paired_bootstrap(base.tolist(), cur.tolist(), confidence=confidence)
    assert (iv.low, iv.high) == _scipy_interval(base, cur, confidence)
    assert (iv.n_resamples, iv.seed, iv.rng) == (10_000, SEED, "numpy")
    assert iv.low <= iv.mean <= iv.high


def test_bootstrap_on_pass_fail_flags_equals_scipy():
    base = [1.0] * 30 + [0.0] * 10
    cur = [1.0] * 22 + [0.0] * 8 + [1.0] * 2 + [0.0] * 8
    iv = paired_bootstrap(base, cur, confidence=0.95)
    assert (iv.low, iv.high) == _scipy_interval(base, cur, 0.95)
    # 8 losses against 2 gains: the interval reaches 0, as McNemar finds no significance
    assert (iv.low, iv.high) == (-0.3, 0.0) and mcnemar_exact(8, 2) > 0.1


def test_bootstrap_without_numpy_is_reproducible(monkeypatch):
    """No numpy: Python's random.Random(SEED) draws, same percentile method; documented as
    another sample of resamples than SciPy's, so only close to its interval."""
    base = [1.0] * 30 + [0.0] * 10
    cur = [1.0] * 22 + [0.0] * 8 + [1.0] * 2 + [0.0] * 8
    monkeypatch.setitem(sys.modules, "numpy", None)
    first = paired_bootstrap(base, cur)
    assert first == paired_bootstrap(base, cur)
    assert first.rng == "python"
    monkeypatch.undo()
    low, high = _scipy_interval(base, cur, 0.95)
    assert abs(first.low - low) <= 0.03 and abs(first.high - high) <= 0.03


# -- the gate on reports ------------------------------------------------------------------------


def _report(outcomes, *, ex=None, severity=None, difficulty=None):
    cases = []
    for i, outcome in enumerate(outcomes):
        value = (ex[i] if ex is not None else (1.0 if outcome == "passed" else 0.0))
        cases.append({"id": f"c{i}", "nodeid": f"t.yaml::c{i}", "kind": "sql",
                      "difficulty": (difficulty or {}).get(i, "easy"), "tags": [],
                      "severity": (severity or {}).get(i), "outcome": outcome,
                      "status": outcome, "metrics": {"execution_accuracy": value},
                      "failed_metrics": [] if outcome == "passed" else ["execution_accuracy"]})
    return {"version": 1, "run": {}, "cases": cases}


def _delta(cmp, metric, scope="overall"):
    return next(d for d in cmp.deltas if d.metric == metric and d.scope == scope)


def test_a_small_drop_beyond_max_drop_is_noise_with_significance():
    base = _report(["passed"] * 20)
    cur = _report(["failed"] * 2 + ["passed"] * 18)
    plain = compare(cur, base, {"*": 0.05})
    assert not plain.passed  # -0.1 > 0.05
    cmp = compare(cur, base, {"*": 0.05}, significance=0.05)
    rate = _delta(cmp, "pass_rate")
    assert rate.p_value == 0.5  # 2 flips one way: 2 * 1/4
    assert rate.significant is False and not rate.failed
    ex = _delta(cmp, "execution_accuracy")
    assert (ex.ci_low, ex.ci_high) == _scipy_interval([1.0] * 20, [0.0] * 2 + [1.0] * 18, 0.95)
    assert ex.ci_high == 0.0 and not ex.failed
    assert cmp.passed
    assert cmp.summary() == "baseline OK: no significant drop (alpha 0.05) beyond the max-drop"
    assert cmp.bootstrap == {"method": "percentile", "n_resamples": 10_000, "seed": SEED,
                             "confidence": 0.95, "rng": "numpy"}


def test_a_large_drop_is_significant_and_fails():
    base = _report(["passed"] * 30)
    cur = _report(["failed"] * 9 + ["passed"] * 21)
    cmp = compare(cur, base, significance=0.05)  # no max-drop: any significant drop fails
    rate = _delta(cmp, "pass_rate")
    assert rate.p_value == 2 / 2 ** 9
    assert rate.failed and rate.significant
    ex = _delta(cmp, "execution_accuracy")
    assert ex.ci_high < 0 and ex.failed
    assert not cmp.passed
    lines = format_comparison(cmp)
    assert lines[1].split()[-1] == "CI" and "p / 95% CI" in lines[1]
    assert any(line.split()[0] == "pass_rate" and "p=0.00391 *" in line
               and line.endswith("FAIL") for line in lines)
    assert any("paired bootstrap, 10,000 resamples, seed 20261123" in line for line in lines)
    assert lines[-1].startswith("baseline comparison: FAILED: pass_rate -0.300 > max drop 0 "
                                "(overall, McNemar p = 0.00391)")


def test_critical_case_fails_on_any_flip_regardless():
    base = _report(["passed"] * 20)
    cur = _report(["failed"] + ["passed"] * 19, severity={0: "critical"})
    cmp = compare(cur, base, significance=0.05)
    assert not any(d.failed for d in cmp.deltas)  # one flip is not significant ...
    assert [c.id for c in cmp.critical_regressions] == ["c0"]
    assert not cmp.passed  # ... but the case is critical
    assert "critical case(s) passed → failed: c0" in cmp.summary()
    assert "critical pass → fail: 1 (each fails the baseline gate)" in format_comparison(cmp)
    tagged = _report(["failed"] + ["passed"] * 19)
    tagged["cases"][0]["tags"] = ["critical"]  # the marker form
    assert not compare(tagged, base, {"*": 0.5}).passed
    assert compare(cur, base).passed  # no gate asked: compared only


def test_small_groups_are_warned():
    base = _report(["passed"] * 10, difficulty={0: "hard", 1: "hard"})
    cur = _report(["failed", "failed"] + ["passed"] * 8, difficulty={0: "hard", 1: "hard"})
    cmp = compare(cur, base, significance=0.05)
    assert cmp.warnings == ["difficulty hard: 2 paired case(s) cannot show a significant change "
                            "at alpha 0.05 (at least 6 needed)"]
    hard = next(d for d in cmp.deltas if d.metric == "pass_rate" and d.group == "hard")
    assert hard.p_value == 0.5


@pytest.mark.parametrize("value", ["0", "0.5", "1", "x", "nan", "-0.1"])
def test_parse_significance_errors(value):
    with pytest.raises(ValueError, match="--queryeval-significance"):
        parse_significance(value, "--queryeval-significance")


# -- through the plugin ---------------------------------------------------------------------------


def _suite(pytester, failing=(), *, critical=(), gates=None):
    cases = []
    for i in range(12):
        cases.append({"id": f"q{i}", "gold_result": {"columns": ["x"], "rows": [[i]]},
                      "predicted_result": {"columns": ["x"],
                                           "rows": [[-1 if i in failing else i]]},
                      **({"severity": "critical"} if i in critical else {})})
    pytester.makefile(".yaml", test_q=json.dumps(
        {"kind": "sql", "thresholds": {"execution_accuracy": 1.0}, "cases": cases}))
    config = {"gates": gates} if gates else {}
    pytester.makefile(".yaml", queryeval=json.dumps(config))


def test_plugin_significance_gate(suite):
    _suite(suite)
    suite.runpytest("--queryeval-update-baseline", "-p", "no:cacheprovider").assert_outcomes(
        passed=12)
    _suite(suite, failing=(3,))
    args = ["--queryeval-baseline=queryeval-baseline.json", "--queryeval-max-drop=0.05",
            "-p", "no:cacheprovider", "--queryeval-gating=gates"]
    plain = suite.runpytest(*args)
    assert plain.ret == pytest.ExitCode.TESTS_FAILED
    noise = suite.runpytest(*args, "--queryeval-significance=0.05")
    assert noise.ret == pytest.ExitCode.OK, noise.stdout.str()
    noise.stdout.fnmatch_lines(["*pass_rate*1.000*0.917*▼*-0.083*0.05*p=1*",
                                "baseline comparison: OK: no significant drop (alpha 0.05) beyond "
                                "the max-drop"])
    _suite(suite, failing=(3,), critical=(3,))
    critical = suite.runpytest(*args, "--queryeval-significance=0.05")
    assert critical.ret == pytest.ExitCode.TESTS_FAILED
    critical.stdout.fnmatch_lines(["critical pass → fail: 1*", "  q3 [[]sql/*] passed → failed"])
    _suite(suite, failing=tuple(range(8)), gates={"significance": 0.05})  # the gates: form
    drop = suite.runpytest(*args)
    assert drop.ret == pytest.ExitCode.TESTS_FAILED
    drop.stdout.fnmatch_lines(["*pass_rate*p=0.00781 *FAIL"])
    json_path = suite.path / "r.json"
    suite.runpytest(*args, f"--queryeval-json={json_path}", "--queryeval-markdown=r.md",
                    "--queryeval-html=r.html")
    md = (suite.path / "r.md").read_text()
    assert "| metric | baseline | current | Δ | max drop | p / 95% CI |" in md
    assert r"| pass\_rate | 1.000 | 0.333 | ▼ -0.667 | 0.05 ❌ | p=0.00781 \* |" in md
    page = (suite.path / "r.html").read_text()
    assert "<th class=n>p / 95% CI</th>" in page and "<td class=n>p=0.00781 *</td>" in page
    rate = next(d for d in read_report(json_path)["baseline"]["deltas"]
                if d["metric"] == "pass_rate" and d["scope"] == "overall")
    assert rate["p_value"] == 0.0078125 and rate["significant"] is True


def test_plugin_significance_options_are_checked_before_the_run(suite):
    _suite(suite)
    bad = suite.runpytest("--queryeval-significance=5", "--queryeval-baseline=b.json",
                          "-p", "no:cacheprovider")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--queryeval-significance: '5' must be a significance level "
                              "between 0 and 0.5*"])
    alone = suite.runpytest("--queryeval-significance=0.05", "-p", "no:cacheprovider")
    assert alone.ret == pytest.ExitCode.USAGE_ERROR
    alone.stderr.fnmatch_lines(["*--queryeval-significance needs --queryeval-baseline*"])
    _suite(suite, gates={"significance": "often"})
    yaml_bad = suite.runpytest("-p", "no:cacheprovider")
    assert yaml_bad.ret == pytest.ExitCode.USAGE_ERROR
    yaml_bad.stderr.fnmatch_lines(["*queryeval.yaml:1: gates.significance: must be a "
                                   "significance level such as 0.05, not 'often'*"])
    suite.makeini("[pytest]\nqueryeval_files = test_*.yaml\nqueryeval_significance = 0.7\n")
    _suite(suite)
    ini_bad = suite.runpytest("-p", "no:cacheprovider")
    assert ini_bad.ret == pytest.ExitCode.USAGE_ERROR
    ini_bad.stderr.fnmatch_lines(["*tox.ini:3: queryeval_significance: '0.7' must be*"])


def test_every_seat_resolves_the_alpha_in_one_order():
    """The option, else the smallest suite alpha, else the ini value, else None: what the
    serial run, each xdist worker and the controller read (one function)."""
    from pytest_queryeval.baseline.significance import resolve_significance

    assert resolve_significance("0.01", [0.2, 0.1], "0.3") == 0.01
    assert resolve_significance(None, [0.2, None, 0.1], "0.3") == 0.1
    assert resolve_significance("", [None], "0.3") == 0.3
    assert resolve_significance(None, [], None) is None
    with pytest.raises(ValueError, match="--queryeval-significance"):
        resolve_significance("0.7", [0.1], None)
