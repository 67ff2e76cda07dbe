"""``queryeval view`` compares models (issue 49 item 4): models as columns, from one multi-model
run or from one run per model, their pass rates per kind and difficulty, each pair's McNemar
test and the cases they disagree on, "flaky" only within one model, and a case panel that opens
where the reader is, even below 2,000 rows.

The two-model suite of ``tests/models`` (a real SQLite file, two predictions files) run with
``python -m pytest``: once with both models (``model-a``, ``model-b``: one run, fanned out),
and once per model (the ``run.model`` label of ``--queryeval-model-label`` names one, the
``run.predictions`` source the other), plus a run of model-a with q5 wrong.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from pytest_queryeval.baseline.significance import mcnemar
from pytest_queryeval.figures.columns import difficulty_of
from pytest_queryeval.report.models import pair_text
from pytest_queryeval.report.view import (
    CHANGED,
    DISAGREE,
    FAILING,
    FLAKY,
    build_view,
    load_runs,
    render_view,
)
from tests.models.conftest import MODEL_A, RIGHT, WRONG, two_model_suite
from tests.view.test_view import Dom, _pytest

#: One xdist worker runs the whole module: its module-scoped runs are made once, not
#: once per worker (``tests/together.py``).
pytestmark = pytest.mark.xdist_group("tests.view.test_view_models")

QS = list(RIGHT)  # q1 .. q6


def _run(root: Path, name: str, *args: str) -> Path:
    proc = _pytest(root, f"--queryeval-json={name}", *args)
    assert (root / name).is_file(), proc.stdout[-3000:] + proc.stderr
    return root / name


@pytest.fixture(scope="module")
def multi(tmp_path_factory) -> Path:
    """One run of both models: ids ``q1[model-a]``, ``q1[model-b]``..., and ``inline``."""
    root = two_model_suite(tmp_path_factory.mktemp("multi"))
    return _run(root, "both.json")


@pytest.fixture(scope="module")
def per_model(tmp_path_factory) -> dict[str, Path]:
    """One run per model of the same suite (ids ``q1``...): ``a`` labelled ``model-a``, ``b``
    named by its predictions source only, ``a2`` model-a again with q5 wrong, ``a3`` a copy of
    ``a`` (model-a a third time)."""
    root = two_model_suite(tmp_path_factory.mktemp("single"), {"source": "file", "path": "a.jsonl"})
    (root / "a2.jsonl").write_text("".join(
        json.dumps({"id": i, "predicted": WRONG if i == "q5" else q}) + "\n"
        for i, q in MODEL_A.items()), encoding="utf-8")
    runs = {"a": _run(root, "a.json", "--queryeval-model-label=model-a"),
            "b": _run(root, "b.json", "--queryeval-predictions=b.jsonl"),
            "a2": _run(root, "a2.json", "--queryeval-predictions=a2.jsonl",
                       "--queryeval-model-label=model-a")}
    runs["a3"] = root / "a3.json"
    shutil.copyfile(runs["a"], runs["a3"])
    return runs


def _states(data) -> dict[str, str]:
    return {c["id"]: "".join(x[0] if x else "M" for x in c["cells"]) for c in data["cases"]}


def test_a_multi_model_run_is_one_column_per_model_with_its_report_s_comparison(multi):
    report = json.loads(multi.read_text())
    data = build_view(load_runs([multi]))
    assert [(c["run"], c["model"], c["label"]) for c in data["columns"]] == [
        (0, "model-a", "model-a"), (0, "model-b", "model-b"), (0, None, "no model")]
    # one row per case as written, one cell per model (the inline case has no model)
    assert [c["id"] for c in data["cases"]] == [*QS, "inline"]
    assert _states(data) == {"q1": "PFM", "q2": "PFM", "q3": "PFM", "q4": "PFM", "q5": "PPM",
                             "q6": "FPM", "inline": "MMP"}
    flags = {c["id"]: c["f"] for c in data["cases"]}
    assert [k for k, f in flags.items() if f & DISAGREE] == ["q1", "q2", "q3", "q4", "q6"]
    assert not any(f & FLAKY for f in flags.values())
    models = data["models"]
    assert models is not None and models["names"] == ["model-a", "model-b"]
    # the pairs and the disagreements the run's own report holds, with the report's sentence
    cmp = report["aggregates"]["model_comparison"]
    assert [{k: v for k, v in p.items() if k != "text"} for p in models["pairs"]] == cmp["pairs"]
    assert models["pairs"][0]["p_value"] == 0.375 == mcnemar(4, 1)
    assert models["pairs"][0]["text"] == pair_text(cmp["pairs"][0])
    assert models["disagreement_count"] == cmp["disagreement_count"] == 5
    assert models["disagreements"] == [
        (d["case"], [d["outcomes"]["model-a"], d["outcomes"]["model-b"]])
        for d in cmp["disagreements"]]
    # the models table of the report (one column per model here) and the pass rate per kind
    # and per difficulty, counted from the records
    rows = {(r["group"], r["label"]): r for r in models["rows"]}
    assert rows[("model", "cases")]["cells"] == ["6", "6"]
    assert rows[("model", "pass")]["cells"] == ["83.3 %", "33.3 %"]
    assert rows[("model", "pass")]["rates"] == [report["aggregates"]["models"][m]["pass_rate"]
                                                for m in ("model-a", "model-b")]
    assert rows[("model", "latency (s, mean)")]["cells"] == ["0.500", "1.500"]
    assert rows[("kind", "sql")]["rates"] == [5 / 6, 2 / 6]
    levels = [label for g, label in rows if g == "difficulty"]
    assert set(levels) == {difficulty_of(c) for c in report["cases"]}
    for index, model in enumerate(("model-a", "model-b")):
        mine = [c for c in report["cases"] if c.get("model") == model]
        total = Counter(difficulty_of(c) for c in mine)
        passed = Counter(difficulty_of(c) for c in mine if c["outcome"] == "passed")
        assert [rows[("difficulty", d)]["rates"][index] for d in levels] == \
            [passed[d] / total[d] for d in levels], model


def test_one_run_per_model_a_case_one_passes_and_the_other_fails_is_not_flaky(per_model):
    runs = [per_model[k] for k in ("a", "b", "a2", "a3")]
    data = build_view(load_runs(runs))
    assert _states(data) == {"q1": "PFPP", "q2": "PFPP", "q3": "PFPP", "q4": "PFPP",
                             "q5": "PPFP", "q6": "FPFF", "inline": "PPPP"}
    flags = {c["id"]: c["f"] for c in data["cases"]}
    # model-a passes q1, model-b fails it, run after run: changed, the models disagree, but
    # never flaky (which the grid said of a pass, fail, pass before)
    assert [k for k, f in flags.items() if f & FLAKY] == ["q5"]
    assert flags["q1"] == CHANGED | DISAGREE
    assert flags["q6"] == CHANGED | DISAGREE | FAILING
    # model-a's own runs of q5: pass, fail, pass, flaky; model-b passes it
    assert flags["q5"] == CHANGED | FLAKY
    assert flags["inline"] == 0
    assert [c["model"] for c in data["columns"]] == ["model-a", "b.jsonl", "model-a", "model-a"]
    assert [c["label"] for c in data["columns"]] == ["a.json", "b.json", "a2.json", "a3.json"]
    models = data["models"]
    assert models is not None and models["names"] == ["b.jsonl", "model-a"]
    assert models["columns"] == [1, 3]  # each model's latest run
    (pair,) = models["pairs"]
    assert (pair["a"], pair["b"], pair["cases"], pair["a_only"], pair["b_only"],
            pair["p_value"], pair["better"]) == ("b.jsonl", "model-a", 7, 1, 4, mcnemar(1, 4),
                                                 "model-a")
    assert pair["p_value"] == 0.375 and pair["text"] == pair_text(pair)
    assert models["disagreements"] == [(q, ["failed", "passed"] if q != "q6"
                                        else ["passed", "failed"])
                                       for q in ("q1", "q2", "q3", "q4", "q6")]
    rows = {(r["group"], r["label"]): r for r in models["rows"]}
    assert rows[("kind", "sql")]["rates"] == [3 / 7, 6 / 7]


def test_the_page_shows_the_models_as_columns(multi, per_model, browser, tmp_path):
    out = tmp_path / "models.html"
    out.write_text(render_view(build_view(load_runs([multi]))), encoding="utf-8")
    dom = Dom(browser(out.as_uri() + "#filter=disagree", "--dump-dom"))
    assert dom.find("body", data_ready="1")
    assert [a["data-model"] for a in dom.find("th") if "data-col" in a] == ["model-a", "model-b", ""]
    assert dom.visible() == ["q1", "q2", "q3", "q4", "q6"]
    assert {r["data-id"]: r["states"] for r in dom.rows}["q6"] == "FPM"
    assert [a.get("data-model") for a in dom.find("th") if "data-model" in a][:2] == \
        ["model-a", "model-b"]  # the models table's header
    (pair,) = dom.find("li")
    assert (pair["data-a"], pair["data-b"], float(pair["data-p"] or "nan")) == (
        "model-a", "model-b", 0.375)
    assert dom.find("h3", id="disagree-count")[0]["data-count"] == "5"
    assert [a["data-case"] for a in dom.find("tr") if a.get("data-case")] == \
        ["q1", "q2", "q3", "q4", "q6"]
    assert [a["data-label"] for a in dom.find("tr", data_group="kind")] == ["sql"]
    assert dom.find("tr", data_group="difficulty")
    assert not dom.find("span", **{"class": "tag flaky"})
    # one run per model: no flaky tag on a case one model passes and the other fails
    two = tmp_path / "two.html"
    two.write_text(render_view(build_view(load_runs([per_model[k] for k in ("a", "b", "a3")]))),
                   encoding="utf-8")
    dom = Dom(browser(two.as_uri() + "#filter=flaky", "--dump-dom"))
    assert dom.visible() == []
    assert not dom.find("span", **{"class": "tag flaky"})


# ---- the case panel opens where the reader is -----------------------------------------------

#: A reader scrolls to row 1,500 of 2,000, clicks it, reads the panel, then closes it: the
#: panel's box and the row's, each against the window, go into a ``data-check`` attribute.
_READ_FAR_DOWN = """<script>
function inView(b) {
  return b.height > 0 && b.bottom > 0 && b.top < innerHeight && b.right > 0 && b.left < innerWidth;
}
var tr = document.querySelector('tr[data-id="case-01500"]');
tr.scrollIntoView({block: "center"});
setTimeout(function () {
  var before = scrollY;
  tr.querySelector("td").click();
  setTimeout(function () {
    var panel = document.getElementById("case");
    var check = {panel: inView(panel.getBoundingClientRect()), row: inView(tr.getBoundingClientRect()),
                 moved: Math.abs(scrollY - before), far: before, shown: panel.getAttribute("data-case")};
    var close = panel.querySelector("button.close");
    if (close) close.click();
    setTimeout(function () {
      check.closed = panel.getAttribute("data-case");
      check.closedMoved = Math.abs(scrollY - before);
      document.body.setAttribute("data-check", JSON.stringify(check));
    }, 200);
  }, 300);
}, 200);
</script></body>"""


def test_a_case_panel_opens_in_sight_below_2000_rows(multi, browser, tmp_path):
    """2,000 cases: one real record of the run, given 2,000 ids."""
    report = json.loads(multi.read_text())
    record = next(c for c in report["cases"] if c["id"] == "q1[model-b]")
    record = {k: v for k, v in record.items() if k not in ("model", "nodeid")}
    report["cases"] = [{**record, "id": f"case-{i:05d}"} for i in range(2000)]
    page = render_view(build_view([("big.json", report)]))
    out = tmp_path / "big.html"
    out.write_text(page.replace("</body>", _READ_FAR_DOWN, 1), encoding="utf-8")
    text = browser(out.as_uri(), "--window-size=1280,800", "--virtual-time-budget=5000",
                   "--dump-dom")
    (body,) = Dom(text).find("body")
    check = json.loads(body["data-check"] or "{}")
    assert check["far"] > 20_000  # the row is far down the page
    assert check["shown"] == "case-01500"
    assert check["panel"] is True  # the panel's box is in the window
    assert check["row"] is True  # and the row clicked too
    assert check["moved"] < 800  # the page moved less than a window's height, if at all
    assert check["closed"] == "" and check["closedMoved"] == check["moved"]
