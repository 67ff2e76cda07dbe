"""HTML report: static structure and escaping, then the real page in headless Chromium.

Chromium comes from ``scripts/install-chromium.sh`` (Debian package ``chromium``). Without it
the browser tests skip, unless QUERYEVAL_REQUIRE_CHROMIUM is set (CI), where they fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from pytest_queryeval.report.baseline import compare
from pytest_queryeval.report.html import render_html, write_html


class Page(HTMLParser):
    """Collects tags, attributes and visible text, tracking which rows are hidden."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.tags = []
        self.rows = []  # case-table rows: attrs dict
        self.text = []
        self._in_cases = False
        self._depth = 0  # tables nested in the case table (metric tables in details)
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "table" and self._in_cases:
            self._depth += 1
        if tag == "table" and a.get("id") == "cases-table":
            self._in_cases = True
            self.cases_table = a
        if self._in_cases and tag == "tr" and "data-id" in a:
            self.rows.append(a)

    def handle_endtag(self, tag):
        if tag == "table" and self._in_cases:
            if self._depth:
                self._depth -= 1
            else:
                self._in_cases = False

    def handle_data(self, data):
        self.text.append(data)

    def find(self, tag, **attrs):
        return [a for t, a in self.tags if t == tag
                and all(a.get(k.replace("_", "-")) == v for k, v in attrs.items())]


@pytest.fixture
def page_html(current, baseline):
    return render_html(current, compare(current, baseline, 0.1))


def test_self_contained(page_html):
    page = Page(page_html)
    (csp,) = page.find("meta", http_equiv="Content-Security-Policy")
    assert "default-src 'none'" in csp["content"]
    # nothing that could fetch: no src/href attributes, no external resources
    for tag, attrs in page.tags:
        assert tag not in ("link", "img", "iframe", "object", "embed", "base")
        assert not {"src", "href", "action", "srcset"} & set(attrs), (tag, attrs)
    assert len(page.find("script")) == 1


def test_case_table(page_html, current):
    page = Page(page_html)
    assert [r["data-id"] for r in page.rows] == [c["id"] for c in current["cases"]]
    assert [r["data-outcome"] for r in page.rows] == [c["outcome"] for c in current["cases"]]
    text = "".join(page.text)
    # failure diffs and the SDMX detail cell are in the page
    assert "missing rows (1 of 1):\n  ('Rock',)" in text
    assert "False Positives [1]\n  * GDP_CONST" in text
    assert "prediction error: HTTP 503 from predictor" in text


def test_escaping(current):
    current["cases"][0]["id"] = 'x"><script>alert(1)</script>'
    current["cases"][0]["question"] = "<img src=x onerror=alert(1)> & more"
    current["cases"][1]["predicted"] = "</pre></details></td></tr></table><script>bad()</script>"
    current["run"]["predictions"] = "<b>p</b>"
    page_text = render_html(current)
    page = Page(page_text)
    assert len(page.find("script")) == 1
    assert not page.find("img")
    assert page.rows[0]["data-id"] == 'x"><script>alert(1)</script>'
    assert "<img src=x onerror=alert(1)> & more" in "".join(page.text)
    assert "&lt;/pre&gt;&lt;/details&gt;" in page_text
    assert len(page.rows) == len(current["cases"])


def test_distribution_charts(page_html):
    page = Page(page_html)
    svgs = [a for t, a in page.tags if t == "svg" and "data-metric" in a]
    metrics = [a["data-metric"] for a in svgs]
    # per kind: up to 3 headline metrics + latency, never per-dimension metrics
    assert metrics.count("prediction_seconds") == 4
    assert "execution_accuracy" in metrics
    assert "macro_f1" in metrics
    assert not any("[" in m for m in metrics)
    # one dot per case value: sql execution_accuracy has 6 scored cases
    text = page_html.split('aria-label="sql: execution_accuracy"')[1].split("</svg>")[0]
    assert text.count('<circle class="pt"') == 6


def test_delta_chart(page_html):
    page = Page(page_html)
    bars = {a["data-metric"]: a for t, a in page.tags if t == "rect" and "data-metric" in a}
    assert set(bars) >= {"pass_rate", "execution_accuracy", "json_similarity", "macro_f1"}
    assert "prediction_seconds" not in bars
    ex, js = bars["execution_accuracy"], bars["json_similarity"]
    assert ex["fill"] == "#cf222e"  # failed the max-drop
    assert js["fill"] == "#4ac26b"  # improved
    assert float(ex["x"]) + float(ex["width"]) <= float(js["x"]) + 0.5  # left of zero
    assert page.find("ul", id="regressions")


def test_without_comparison(current):
    page_text = render_html(current)
    assert 'id="baseline"' not in page_text
    assert 'id="delta-chart"' not in page_text


def test_not_comparable(current, baseline):
    baseline["run"]["settings"]["json"]["alpha"] = 0.9
    text = render_html(current, compare(current, baseline, 0.1))
    assert "not comparable: scored with different settings: json.alpha: 0.9 (baseline)" in text


def test_write_html(tmp_path, current, baseline):
    cmp = compare(current, baseline, 0.1)
    path = write_html(current, tmp_path / "out" / "report.html", cmp)
    assert path.read_text(encoding="utf-8") == render_html(current, cmp)
    assert os.listdir(path.parent) == ["report.html"]


def test_empty_report():
    text = render_html({"version": 1, "run": {}, "cases": [], "aggregates": {}, "gates": []})
    assert 'id="cases-table"' in text


# ------------------------------------------------------------------------------------------
# headless Chromium


def _chromium():
    for name in (os.environ.get("QUERYEVAL_CHROMIUM"), "chromium", "chromium-browser",
                 "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    if os.environ.get("QUERYEVAL_REQUIRE_CHROMIUM"):
        pytest.fail("chromium not found: run scripts/install-chromium.sh")
    pytest.skip("chromium not installed (scripts/install-chromium.sh)")
    return None


@pytest.fixture
def browser(tmp_path):
    exe = _chromium()

    def run(url, *extra):
        cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
               "--hide-scrollbars", *extra, url]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout

    return run


@pytest.fixture
def page_file(tmp_path, page_html):
    path = tmp_path / "report.html"
    path.write_text(page_html, encoding="utf-8")
    return path


def test_browser_sorts_and_filters(browser, page_file, current):
    dom = Page(browser(page_file.as_uri() + "#sort=score:desc&failures", "--dump-dom"))
    assert dom.find("body", data_ready="1"), "the inline script did not run"
    assert dom.cases_table["data-sorted"] == "score:desc"
    visible = [r["data-id"] for r in dom.rows if "hidden" not in r]
    failures = [c for c in current["cases"] if c["outcome"] in ("failed", "error")]

    def score(c):
        m = c["metrics"]
        for name in ("execution_accuracy", "json_similarity", "macro_f1"):
            if name in m:
                return m[name]
        return None

    scored = sorted((c for c in failures if score(c) is not None), key=lambda c: -score(c))
    unscored = [c for c in failures if score(c) is None]  # blanks sort last
    assert visible == [c["id"] for c in scored + unscored]
    assert "6 of 20 cases" in "".join(dom.text)


def test_browser_sort_by_id_and_search(browser, page_file, current):
    dom = Page(browser(page_file.as_uri() + "#sort=id:asc", "--dump-dom"))
    assert [r["data-id"] for r in dom.rows] == sorted(c["id"] for c in current["cases"])
    assert all("hidden" not in r for r in dom.rows)
    dom = Page(browser(page_file.as_uri() + "#q=brick", "--dump-dom"))
    visible = {r["data-id"] for r in dom.rows if "hidden" not in r}
    assert visible == {c["id"] for c in current["cases"] if "brick" in c["tags"]}


def test_browser_screenshot(browser, page_file, tmp_path):
    shot = tmp_path / "report.png"
    browser(page_file.as_uri(), f"--screenshot={shot}", "--window-size=1320,2400")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000  # a rendered page, not a blank canvas


def _live_model(report):
    """The fixture report as a live model's run: every SQL case also has the 30 Spider
    component scores, latency, tokens and cost (56 metric columns in the old summary)."""
    from pytest_queryeval.conclude import aggregates_of
    from pytest_queryeval.figures.columns import _spider_components

    for i, case in enumerate(report["cases"]):
        metrics = case.setdefault("metrics", {})
        if case["kind"] == "sql" and metrics:
            metrics.update({m: 0.5 for m in sorted(_spider_components())})
        metrics.update({"prediction_seconds": 1.0 + i / 10, "prompt_tokens": 900 + i,
                        "completion_tokens": 40 + i, "cost_usd": 0.0021})
    report["aggregates"] = aggregates_of(report["cases"])
    return report


# Run in the page after its own script: where the summary's columns end, as body attributes.
_MEASURE = """<script>
(function () {
  var out = {page: document.documentElement.scrollWidth, tables: []};
  document.querySelectorAll("table.summary").forEach(function (t) {
    var cols = {};
    t.tHead.rows[0].querySelectorAll("th").forEach(function (th) {
      var r = th.getBoundingClientRect();
      cols[th.textContent] = {right: r.right, shown: r.width > 0,
                              more: th.classList.contains("more")};
    });
    out.tables.push({kind: t.getAttribute("data-kind"), cols: cols});
  });
  document.body.setAttribute("data-measure", JSON.stringify(out));
})();
</script></body>"""


def test_browser_decisive_columns_fit_1400px(browser, tmp_path, current, baseline):
    """Gated metrics, pass rate, regressions and fixed, latency, tokens and cost are within a
    1400 px window; the other metrics are behind the *all metrics* toggle (issue 24 item 5)."""
    import json

    report = _live_model(current)
    page = render_html(report, compare(report, _live_model(baseline), 0.1))
    path = tmp_path / "live.html"
    path.write_text(page.replace("</body>", _MEASURE, 1), encoding="utf-8")
    shot = tmp_path / "live.png"
    browser(path.as_uri(), f"--screenshot={shot}", "--window-size=1400,1000")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("QUERYEVAL_KEEP_SCREENSHOT"):  # look at it: the decisive columns show
        shutil.copy(shot, os.environ["QUERYEVAL_KEEP_SCREENSHOT"])
    dom = Page(browser(path.as_uri(), "--dump-dom", "--window-size=1400,1000"))
    measure = json.loads(dom.find("body")[0]["data-measure"])
    sql = next(t["cols"] for t in measure["tables"] if t["kind"] == "sql")
    decisive = ["difficulty", "cases", "pass rate", "execution_accuracy", "regressions", "fixed",
                "latency (s)", "prompt tokens", "completion tokens", "cost (USD)"]
    assert list(sql)[:len(decisive)] == decisive
    for table in measure["tables"]:
        for name, col in table["cols"].items():
            if col["more"]:  # behind the toggle until it is ticked
                assert not col["shown"], (table["kind"], name)
            else:
                assert col["shown"] and col["right"] <= 1400, (table["kind"], name, col)
    assert sql["where_f1"]["more"] and sql["soft_f1"]["more"]
    assert measure["page"] <= 1400  # nothing to scroll sideways to
