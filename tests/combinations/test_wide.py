"""The wide tier of generated combinations (issue 49 item 8: "a few hundred combinations run
in CI"): :func:`generator.wide`'s rows (every dimension but the way of running), each suite run
once, serially, in this process (``pytester.runpytest_inprocess``: no interpreter start, so a
row costs a fraction of a second), asserting the invariants a single run can show:

* every case of every origin (YAML, Python, a conversation turn, an SDMX file) is scored, once
  per model it fans out to, or is a located error;
* the exit status, the terminal's last line, the JSON report's and junit's headline state one
  outcome (with the row's verdict mode; a baseline mode gated against the row's strict run);
* with the gold audit on, no model or judge request is sent, and every gold is audited.

The costly ways of running (``-n 2``, shards + merge, resume, the cache's second run) stay on
the covering subset of ``test_combinations.py``. CI runs :data:`generator.WIDE_ROWS` rows;
``QUERYEVAL_COMBINATIONS_WIDE=N`` runs N (the wide all-pairs array first, then seeded random
rows)."""

from __future__ import annotations

import itertools
import os

import pytest

from tests.combinations.generator import (
    BY_QUESTION,
    WIDE_DIMENSIONS,
    WIDE_ROWS,
    Combination,
    CountingModel,
    build,
    pairwise,
    wide,
)
from tests.combinations.test_combinations import (
    VERDICT,
    _check_agent,
    _check_gates,
    _check_outcome,
    _check_pin,
    _check_scored,
    _requests,
    check_model_baseline,
)
from tests.e2e.support import FORMATS, Run
from tests.fixtures.openai_standin import MODEL, OpenAIStandin

ROWS = wide(int(os.environ.get("QUERYEVAL_COMBINATIONS_WIDE") or WIDE_ROWS))


@pytest.fixture(scope="module", autouse=True)
def _imported() -> None:
    """Import the plugin's modules and the heavy libraries once, here: an in-process run
    restores ``sys.modules`` as it found it, so a module first imported inside a run is
    imported (and its assertions rewritten) again by every run, most of a row's time."""
    import importlib
    import pkgutil

    import pytest_queryeval

    for info in pkgutil.walk_packages(pytest_queryeval.__path__, "pytest_queryeval."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    for name in ("duckdb", "openai", "scipy.stats", "openpyxl"):
        importlib.import_module(name)


def _run(pytester: pytest.Pytester, name: str, *args: str, formats: tuple[str, ...] = (),
         junit: bool = True) -> Run:
    """One in-process run of the suite in ``pytester.path``, as ``e2e.support.run_pytest``
    runs it in a subprocess (same options, same :class:`Run`)."""
    folder = pytester.path
    reports = {"json": folder / f"{name}.json"}
    extra = [f"--queryeval-json={reports['json']}"]
    for fmt in formats:
        reports[fmt] = folder / f"{name}.{fmt}"
        extra.append(f"{FORMATS[fmt]}={reports[fmt]}")
    if junit:
        reports["junit"] = folder / f"{name}.xml"
        extra.append(f"--junitxml={reports['junit']}")
    result = pytester.runpytest_inprocess(
        ".", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "--assert=plain",
        "--queryeval-no-step-summary", *extra, *args)
    return Run(name, int(result.ret), "\n".join(result.outlines), "\n".join(result.errlines),
               folder, reports)


def test_the_wide_array_covers_every_pair() -> None:
    """The wide all-pairs array meets every pair of values, and the CI count takes all of it
    (then random rows past it)."""
    rows = pairwise(WIDE_DIMENSIONS)
    for a, b in itertools.combinations(WIDE_DIMENSIONS, 2):
        met = {(row[a], row[b]) for row in rows}
        assert met == set(itertools.product(WIDE_DIMENSIONS[a], WIDE_DIMENSIONS[b])), (a, b)
    assert wide()[:len(rows)] == rows
    assert len(rows) < WIDE_ROWS
    assert len(set(wide())) == WIDE_ROWS == len({c.id for c in wide()})


@pytest.mark.parametrize("combo", ROWS, ids=[c.id for c in ROWS])
def test_wide(combo: Combination, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
              services: tuple[CountingModel, OpenAIStandin]) -> None:
    for name in [k for k in os.environ if k.startswith(("QUERYEVAL_SHARD", "SLURM_", "CI_NODE",
                                                        "GITHUB_"))] + ["PYTEST_XDIST_WORKER"]:
        monkeypatch.delenv(name, raising=False)
    model, openai = services
    model.reset()
    openai.requests.clear()
    openai.models = {MODEL, *combo.models}
    openai.answers = dict(BY_QUESTION)
    openai.containing = {"total > 12": VERDICT}
    plan = build(pytester.path, combo, model.url, openai.base_url)
    extra = ["--queryeval-neighbours=5"] if combo["counterexamples"] == "on" else []
    if combo["cache"] == "on":
        extra.append(f"--queryeval-prediction-cache={pytester.path / 'pcache'}")

    mode, _, base = combo["verdict"].partition("+")
    if base:  # the baseline is the row's own strict run
        strict = _run(pytester, "strict", *extra, junit=False)
        _check_outcome(strict)
    args = [] if mode == "strict" else [f"--queryeval-gating={mode}"]
    if base:
        args.append("--queryeval-baseline=strict.json")
    run = _run(pytester, "run", *args, *extra)
    _check_scored(run, combo, plan)
    if base:  # each model against its own baseline records (issue 59 item 2)
        check_model_baseline(run.json, strict.json)
    _check_agent(run, combo)
    _check_pin(run, combo)
    _check_gates(run, combo)
    _check_outcome(run, ("junit",))

    if combo["audit"] == "on":
        model.reset()
        openai.requests.clear()
        audit = _run(pytester, "audit", "--queryeval-audit-golds=warn", junit=False)
        _check_outcome(audit)
        assert _requests(model, openai) == 0, \
            f"the audit asked a model: {dict(model.calls)} {len(openai.requests)}"
        planned = {i for ids in plan["expected"].values() for i in ids}
        assert planned <= {str(r["id"]).split("[")[0] for r in audit.json["cases"]}
        _check_pin(audit, combo)  # a drifted gold is not judged on moved data
        unchecked = [r["id"] for r in audit.json["cases"]
                     if "audit" not in r.get("details", {}) and not r.get("drifted")]
        assert not unchecked, f"reported audited, golds never checked: {unchecked}"
        assert audit.json["audit"]["cases"] == len(  # a drifted case is skipped, not audited
            [r for r in audit.json["cases"] if not r.get("drifted")])
