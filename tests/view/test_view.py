"""``queryeval view`` (issue 44 item 1): one offline page over the JSON reports of several runs.

Three real runs (``python -m pytest``) of one SQL suite on a real SQLite file, the predictions changing run by run
(a case that regresses, one that is fixed, two that flip back and forth, a query that breaks,
a prediction that goes missing, a case added and one removed), viewed in headless Chromium:
the grid, each filter's case ids set from the URL fragment, the trend of aggregates and gates,
and one case's predictions beside the gold.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.conclude.cli import main as queryeval
from pytest_queryeval.report.view import (
    CHANGED,
    FAILING,
    FLAKY,
    ViewRefused,
    build_view,
    embed,
    load_runs,
    render_view,
)
from tests.support import dump, write_suite

#: One xdist worker runs the whole module: its module-scoped runs are made once, not
#: once per worker (``tests/together.py``).
pytestmark = pytest.mark.xdist_group("tests.view.test_view")

GOLD = "SELECT x FROM t ORDER BY x"
RIGHT = "SELECT x FROM t ORDER BY x"
WRONG = "SELECT x FROM t WHERE x > 1 ORDER BY x"
BROKEN = "SELECT nope FROM t"  # a query error: no such column
ABSENT = "absent"  # not in that run's suite

#: case id -> its prediction in runs 1, 2 and 3 (None: no prediction, an error)
PLAN: dict[str, tuple[str | None, str | None, str | None]] = {
    "steady": (RIGHT, RIGHT, RIGHT),
    "regressed": (RIGHT, RIGHT, WRONG),
    "flaky": (RIGHT, WRONG, RIGHT),
    "flaky-fail": (WRONG, RIGHT, WRONG),
    "broken": (WRONG, WRONG, WRONG),
    "fixed": (WRONG, WRONG, RIGHT),
    "query-error": (RIGHT, RIGHT, BROKEN),
    "no-answer": (RIGHT, RIGHT, None),
    "added": (ABSENT, ABSENT, WRONG),
    "removed": (RIGHT, ABSENT, ABSENT),
}
STATES = {  # what the grid shows per run (M: not in the run)
    "steady": "PPP", "regressed": "PPF", "flaky": "PFP", "flaky-fail": "FPF", "broken": "FFF",
    "fixed": "FFP", "query-error": "PPF", "no-answer": "PPE", "added": "MMF", "removed": "PMM",
}
#: the grid's order: the cases as the runs first list them
ORDER = [*(k for k in PLAN if k != "added"), "added"]
EXPECTED = {
    "all": ORDER,
    "changed": ["regressed", "flaky", "flaky-fail", "fixed", "query-error", "no-answer"],
    "flaky": ["flaky", "flaky-fail"],
    "failing": ["regressed", "flaky-fail", "broken", "query-error", "no-answer", "added"],
}


def _cases(run: int) -> list[dict[str, Any]]:
    cases = []
    for case_id, preds in PLAN.items():
        if preds[run] == ABSENT:
            continue
        case: dict[str, Any] = {"id": case_id, "question": f"Which x are there? ({case_id})",
                                "gold": GOLD}
        if preds[run] is not None:
            case["predicted"] = preds[run]
        cases.append(case)
    return cases


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """One ``python -m pytest`` run of the suite in ``folder``, as a user runs it."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "QUERYEVAL_SHARD", "CI_NODE", "GITHUB_"))}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:randomly", "--queryeval-no-step-summary", *args],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=600,
                          check=False)


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory) -> Path:
    """A SQL suite on a real SQLite file, run three times (``run1.json`` to ``run3.json``),
    the predictions changing as :data:`PLAN` says."""
    root = write_suite(tmp_path_factory.mktemp("suite"), {
        "datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
        "thresholds": {"execution_accuracy": 1.0},
        "gates": {"execution_accuracy": 0.6}})
    with sqlite3.connect(root / "db.sqlite") as con:
        con.execute("CREATE TABLE t (x INTEGER)")
        con.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (3,)])
    con.close()
    for run in range(3):
        (root / "test_cases.yaml").write_text(dump({"kind": "sql", "datasource": "db",
                                                    "cases": _cases(run)}), encoding="utf-8")
        proc = _pytest(root, f"--queryeval-json=run{run + 1}.json")
        assert (root / f"run{run + 1}.json").is_file(), proc.stdout[-3000:] + proc.stderr
    return root


@pytest.fixture
def runs(suite_dir):
    """The three runs' JSON reports, oldest first."""
    return [suite_dir / f"run{run}.json" for run in (1, 2, 3)]


class Dom(HTMLParser):
    """The grid's rows (attributes, hidden or not, each cell's state), the trend's rows and
    the case panel's text, from Chromium's ``--dump-dom``."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.rows: list[dict[str, Any]] = []
        self.trend: dict[str, list[str]] = {}
        self.case_text: list[str] = []
        self._where: list[str] = []
        self._trend_row: list[str] | None = None
        self._in_case = False
        self._in_del = False
        #: the case panel's text without what the token diff marks deleted (the gold's)
        self.shown_predictions: list[str] = []
        self._cell: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "table":
            self._where.append(a.get("id") or "")
        if tag == "section" and a.get("id") == "case":
            self._in_case = True
        if tag == "del":
            self._in_del = True
        if tag == "tr" and "data-id" in a:  # a row of the grid (its tables hold only these)
            self.rows.append({**a, "states": ""})
        if tag == "td" and "data-state" in a:
            self.rows[-1]["states"] += a["data-state"]
        if self._where and self._where[-1] == "trend" and tag == "tr" and "data-row" in a:
            self._trend_row = self.trend.setdefault(a["data-row"], [])
        if self._trend_row is not None and tag == "td":
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "table" and self._where:
            self._where.pop()
        if tag == "section":
            self._in_case = False
        if tag == "del":
            self._in_del = False
        if tag == "td" and self._cell is not None and self._trend_row is not None:
            self._trend_row.append("".join(self._cell))
            self._cell = None
        if tag == "tr":
            self._trend_row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._in_case:
            self.case_text.append(data)
            if not self._in_del:
                self.shown_predictions.append(data)

    def visible(self) -> list[str]:
        return [r["data-id"] for r in self.rows if "hidden" not in r]

    def find(self, tag: str, **attrs: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags if t == tag
                and all(a.get(k.replace("_", "-")) == v for k, v in attrs.items())]


def test_the_view_decides_each_cases_states_and_filters(runs):
    data = build_view(load_runs(runs))
    rows = {c["id"]: c for c in data["cases"]}
    assert list(rows) == ORDER
    assert {k: "".join(x[0] if x else "M" for x in c["cells"]) for k, c in rows.items()} == STATES
    for name, bit in (("changed", CHANGED), ("flaky", FLAKY), ("failing", FAILING)):
        assert [k for k, c in rows.items() if c["f"] & bit] == EXPECTED[name], name
    assert [r["label"] for r in data["runs"]] == ["run1.json", "run2.json", "run3.json"]
    assert all(c["metric"] == "execution_accuracy" for c in rows.values())
    # the query error's reason and the failure's diff lines travel with the cell
    strings = data["strings"]
    last = rows["query-error"]["cells"][2]
    assert "no such column: nope" in strings[last[6]]
    wrong = rows["regressed"]["cells"][2]
    lines = [strings[i] for i in wrong[5]]
    assert lines[:4] == ["rows: gold 3, predicted 2", "column mapping: identity",
                         "missing rows (1 in gold, not in predicted; first 1):", "  - (1,)"]
    assert strings[wrong[3]] == WRONG and strings[wrong[4]] == GOLD
    # one question and one gold for 28 cells: the string table holds each text once
    assert strings.count(GOLD) == 1


def test_the_page_in_chromium_filters_from_the_url_fragment(runs, browser, tmp_path):
    out = tmp_path / "view.html"
    assert queryeval(["view", *map(str, runs), "-o", str(out)]) == 0
    for name, expected in EXPECTED.items():
        fragment = "" if name == "all" else f"#filter={name}"
        dom = Dom(browser(out.as_uri() + fragment, "--dump-dom"))
        assert dom.find("body", data_ready="1"), "the page's script did not run"
        assert [r["data-id"] for r in dom.rows] == ORDER
        assert dom.visible() == expected, name
        assert dom.find("div", id="grid")[0]["data-filter"] == name
    # the grid: one cell per run, with the state of the case in that run
    assert {r["data-id"]: r["states"] for r in dom.rows} == STATES
    # the search box's words in the fragment filter too, with a filter
    dom = Dom(browser(out.as_uri() + "#filter=failing&q=ERROR", "--dump-dom"))
    assert dom.visible() == ["query-error"]


def test_the_page_shows_the_trend_and_one_case_beside_the_gold(runs, browser, tmp_path):
    out = tmp_path / "view.html"
    assert queryeval(["view", *map(str, runs), "-o", str(out)]) == 0
    dom = Dom(browser(out.as_uri() + "#case=regressed", "--dump-dom"))
    reports = [json.loads(p.read_text()) for p in runs]
    # aggregates and gates per run, in run order
    assert dom.trend["pass_rate"][:3] == [f"{r['aggregates']['overall']['pass_rate']:.3f}"
                                          for r in reports]
    assert dom.trend["execution_accuracy"][:3] == [
        f"{r['aggregates']['overall']['metrics']['execution_accuracy']['mean']:.3f}"
        for r in reports]
    gate = reports[0]["gates"][0]["name"]
    assert dom.trend[f"gate:{gate}"][:3] == [f"{r['gates'][0]['value']:.3f}" for r in reports]
    assert dom.trend["outcome"] == ["failed", "failed", "failed", ""]
    # the case: its question, the gold once, each run's prediction and the result diff
    (panel,) = dom.find("section", id="case")
    assert panel["data-case"] == "regressed"
    text = "".join(dom.case_text)
    assert "Which x are there? (regressed)" in text
    assert text.count(GOLD) >= 1 and "gold" in text
    # the column that regressed first (issue 60 item 6: with 9 columns it was off-screen)
    assert [a["data-run"] for a in dom.find("div", **{"class": "col run changed"})] == ["2"]
    assert [a["data-run"] for a in dom.find("div", **{"class": "col run"})] == ["0", "1"]
    assert [a["data-run"] for a in dom.find("div") if (a.get("class") or "").startswith(
        "col run")] == ["2", "0", "1"]
    assert "changed: passed before, failed now" in text
    assert "missing rows (1 in gold, not in predicted; first 1):\n  - (1,)" in text and "the same as in the run before" in text
    # the token diff against the gold: the predicted WHERE is inserted
    assert any(t == "ins" for t, _ in dom.tags)


#: Clicks a reader makes, run in the page after its own script: the *flaky* filter, then a row.
_CLICKS = """<script>
document.querySelector('#controls [data-filter="flaky"]').click();
setTimeout(function () { document.querySelector('tr[data-id="flaky-fail"] td').click(); }, 50);
</script></body>"""


def test_the_pages_controls_set_the_filter_and_the_case(runs, browser, tmp_path):
    """A click on a filter or a row goes through the URL fragment like a link does."""
    page = render_view(build_view(load_runs(runs)))
    out = tmp_path / "clicked.html"
    out.write_text(page.replace("</body>", _CLICKS, 1), encoding="utf-8")
    dom = Dom(browser(out.as_uri(), "--virtual-time-budget=3000", "--dump-dom"))
    assert dom.visible() == EXPECTED["flaky"]
    assert dom.find("section", id="case")[0]["data-case"] == "flaky-fail"
    assert [r["data-id"] for r in dom.rows if r.get("class") == "sel"] == ["flaky-fail"]


def test_a_merged_shard_report_is_a_run(runs, suite_dir):
    """The suite of run 3 again, as two shards put together by ``queryeval merge``."""
    for index in (1, 2):
        _pytest(suite_dir, f"--queryeval-shard={index}/2", f"--queryeval-json=shard-{index}.json")
    merged = suite_dir / "merged.json"
    assert queryeval(["merge", str(suite_dir / "shard-1.json"), str(suite_dir / "shard-2.json"),
                      "-o", str(merged), "--queryeval-no-step-summary"]) == 1  # failing cases
    data = build_view(load_runs([runs[0], merged]))
    assert [r["label"] for r in data["runs"]] == ["run1.json", "merged.json"]
    merged_ids = [c["id"] for c in json.loads(merged.read_text())["cases"]]
    assert sorted(merged_ids) == sorted(k for k in PLAN if k != "removed")
    assert [c["id"] for c in data["cases"]] == ORDER
    assert {c["id"]: "".join(x[0] if x else "M" for x in c["cells"]) for c in data["cases"]} \
        == {k: s[0] + s[2] for k, s in STATES.items()}


def test_the_result_tables_a_record_holds_are_shown_with_their_differences(tmp_path, browser):
    """A prediction that passes by luck: ``--queryeval-neighbours`` finds a database on which
    its result differs from the gold's, and the record holds both tables."""
    root = write_suite(tmp_path / "suite", {
        "datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
        "thresholds": {"execution_accuracy": 1.0}},
        {"test_c.yaml": {"kind": "sql", "datasource": "db", "cases": [
            {"id": "lucky", "question": "q", "gold": GOLD,
             "predicted": "SELECT DISTINCT x FROM t ORDER BY x"}]}})
    with sqlite3.connect(root / "db.sqlite") as con:
        con.execute("CREATE TABLE t (x INTEGER)")
        con.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (3,)])
    con.close()
    proc = _pytest(root, "--queryeval-neighbours", "--queryeval-json=nb.json")
    assert proc.returncode == 0, proc.stdout[-3000:]
    example = json.loads((root / "nb.json").read_text())["cases"][0]["details"]["neighbours"][
        "counterexample"]
    data = build_view(load_runs([root / "nb.json"]))
    title, gold, predicted = data["cases"][0]["cells"][0][7]
    assert title == f"on a counterexample database ({example['rows']} rows, {example['origin']})"
    assert gold == (["x"], [[str(v) for v in row] for row in example["gold"][1]])
    assert predicted == (["x"], [[str(v) for v in row] for row in example["predicted"][1]])
    assert len(gold[1]) == len(predicted[1]) + 1  # the duplicate row DISTINCT drops
    out = tmp_path / "view.html"
    out.write_text(render_view(data), encoding="utf-8")
    dom = Dom(browser(out.as_uri() + "#case=lucky", "--dump-dom"))
    tables = [a["data-result"] for a in dom.find("table") if a.get("data-result")]
    assert tables == ["gold", "predicted"]
    assert len(dom.find("td", **{"class": "differs"})) == 1  # the gold's row the prediction lacks


# ---- located errors -------------------------------------------------------------------------


def test_unreadable_and_non_report_files_are_named_before_anything_is_written(
        runs, tmp_path, capsys):
    bad_json = tmp_path / "half.json"
    bad_json.write_text('{"run": {}, "cases": [', encoding="utf-8")
    not_report = tmp_path / "list.json"
    not_report.write_text("[1, 2]", encoding="utf-8")
    bad_field = tmp_path / "field.json"
    report = json.loads(runs[0].read_text())
    report["cases"][3]["metrics"]["execution_accuracy"] = "high"
    bad_field.write_text(json.dumps(report), encoding="utf-8")
    out = tmp_path / "view.html"
    args = [str(runs[0]), str(tmp_path / "missing.json"), str(bad_json), str(not_report),
            str(bad_field), str(tmp_path)]
    assert queryeval(["view", *args, "-o", str(out)]) == 4
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "queryeval view: refused, nothing written:"
    assert err[1:] == [
        f"  {tmp_path / 'missing.json'}: cannot read: No such file or directory",
        f"  {bad_json}: not JSON: Expecting value: line 1 column 23 (char 22)",
        f"  {not_report}: not a queryeval JSON report (no 'run' and 'cases')",
        f"  {bad_field}: cases[3].metrics.execution_accuracy: expected a finite number, true, "
        'false or null, got "high"',
        f"  {tmp_path}: a directory, not a regular file (an input file must be one)",
    ]
    assert not out.exists()
    with pytest.raises(ViewRefused, match="no JSON report given"):
        load_runs([])


@pytest.mark.parametrize("case_id", [{"a": 1}, ["a"], 7])
def test_a_case_id_that_is_no_text_is_a_located_error(runs, tmp_path, capsys, case_id):
    """The twelfth re-probe's L3: a hand-made report whose case id was an object (with its
    node id and identity) was a traceback (TypeError: unhashable type: 'dict') where every
    other field is a located error."""
    report = json.loads(runs[0].read_text())
    report["cases"][0]["id"] = case_id
    report["cases"][0]["identity"] = "x"
    report["cases"][0]["outcome"] = "passed"
    bad = tmp_path / "id.json"
    bad.write_text(json.dumps(report), encoding="utf-8")
    out = tmp_path / "view.html"
    assert queryeval(["view", str(bad), "-o", str(out)]) == 4
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "queryeval view: refused, nothing written:"
    assert err[1].startswith(f"  {bad}: cases[0].id: expected a string"), err
    assert not out.exists()


# ---- a report is untrusted input ------------------------------------------------------------

HOSTILE_ID = '</script><script>document.title="pwned"</script><!--'
HOSTILE = {
    "question": '<img src=x onerror="document.title=\'pwned\'"> & </SCRIPT > <!-- \u2028',
    "predicted": 'javascript:alert(1) </script><a href="javascript:alert(1)">x</a>',
    "gold": "<svg onload=alert(1)>",
    "reason": "<b>bold</b>\x1b[2J\u202eevil",
}


def _hostile_report(path):
    report = json.loads(path.read_text())
    case = report["cases"][0]
    case.update(HOSTILE)
    case["id"] = HOSTILE_ID
    case["diff"] = ["missing rows (1 of 1):", "  ('</script>',)", *(["x"] * 500)]
    case["details"] = {"neighbours": {"counterexample": {
        "rows": 1, "origin": "<b>o</b>", "gold": [["</script>"], [["<img src=x onerror=alert(1)>"]]],
        "predicted": [["<i>c</i>"], [[None]] * 80]}}}
    report["cases"][1]["predicted"] = "A" * 3_000_000  # far above the report's own cap
    report["cases"][1]["question"] = "é" * 50_000
    report["run"]["model"] = "<script>alert(1)</script> https://user:secret@example.invalid/"
    report["gates"][0]["name"] = "</script><b>gate</b>"
    return report


def test_hostile_report_text_stays_text(runs, tmp_path, browser):
    hostile = tmp_path / "h<b>o<i>stile.json"
    hostile.write_text(json.dumps(_hostile_report(runs[1])), encoding="utf-8")
    out = tmp_path / "view.html"
    assert queryeval(["view", str(runs[0]), str(hostile), "-o", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    # the data cannot end its element: no "<" at all inside it, and two scripts in the page
    data = page.split('<script type="application/json" id="data">')[1].split("</script>")[0]
    assert "<" not in data and ">" not in data and "\u2028" not in data
    assert page.count("<script") == 2 and page.count("</script>") == 2
    parsed = json.loads(data)
    assert HOSTILE_ID in [c["id"] for c in parsed["cases"]]
    assert "https://user:***@example.invalid/" in parsed["runs"][1]["model"]
    assert len(page) < 1_000_000  # every text cut at the report's cap
    assert any("[cut: 2,990,000 of 3,000,000 characters]" in s for s in parsed["strings"])
    assert any("\\x1b[2J\\u202eevil" in s for s in parsed["strings"])
    # in the browser: rendered as text; no element, attribute or script of the report's
    from urllib.parse import quote

    dom = Dom(browser(out.as_uri() + "#case=" + quote(HOSTILE_ID, safe=""), "--dump-dom"))
    assert dom.find("body", data_ready="1")
    assert dom.find("title")  # the page's own
    assert HOSTILE_ID in [r["data-id"] for r in dom.rows]
    assert dom.find("section", id="case")[0]["data-case"] == HOSTILE_ID
    for tag, attrs in dom.tags:
        assert tag not in ("img", "a", "iframe", "b"), (tag, attrs)
        assert not any(k.startswith("on") or k in ("href", "src") for k in attrs), (tag, attrs)
        assert tag != "svg" or attrs.get("class") == "spark"
    assert [a["data-result"] for a in dom.find("table") if a.get("data-result")] == ["gold",
                                                                                     "predicted"]
    text = "".join(dom.case_text)
    assert "<img src=x onerror=alert(1)>" in text and "[cut: 30 more rows]" in text
    assert HOSTILE["question"].replace("\u2028", "") in text.replace("\u2028", "")
    assert HOSTILE["predicted"] in "".join(dom.shown_predictions)
    scripts = [a for t, a in dom.tags if t == "script"]
    assert len(scripts) == 2
    title = browser(out.as_uri(), "--dump-dom").split("<title>")[1].split("</title>")[0]
    assert title == "queryeval view"


def test_embed_escapes_what_could_end_a_script_element():
    text = embed({"a": "</script><!-- & \u2028\u2029 >"})
    assert text == ('{"a":"\\u003c/script\\u003e\\u003c!-- \\u0026 \\u2028\\u2029 \\u003e"}')
    assert json.loads(text) == {"a": "</script><!-- & \u2028\u2029 >"}


def test_a_page_without_cases_renders(tmp_path):
    page = render_view(build_view([("empty.json", {"run": {}, "cases": []})]), title="<b>t</b>")
    assert "<title>&lt;b&gt;t&lt;/b&gt;</title>" in page
