"""Markdown summary: figures from the fixture, escaping, the baseline section."""

from __future__ import annotations

import re
import statistics

from pytest_queryeval.report.baseline import compare
from pytest_queryeval.report.markdown import render_markdown


def _cells(line):
    """Cells of a table row, honouring backslash-escaped pipes."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def _table_after(text, heading):
    lines = text.splitlines()
    start = lines.index(heading)
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("|"):
            rows.append(_cells(line))
        elif rows:
            break
    return rows


def test_headline_and_run_facts(current):
    text = render_markdown(current)
    first, _, counts = text.splitlines()[:3]
    # the run's outcome in the words of the summary's last line (issue 43 item 3)
    assert first == ("## ❌ queryeval: FAILED: 5 failed cases (tracks-long, genre-top, zone-temps "
                     r"and 2 more); 1 error (customer-countries); gate pass\_rate 0.6667 &lt; 0.9")
    judged = [c for c in current["cases"] if c["outcome"] in ("passed", "failed", "error")]
    passed = sum(c["outcome"] == "passed" for c in judged)
    assert counts == (f"{passed} of {len(judged)} judged cases passed "
                      f"({100 * passed / len(judged):.1f} %) · gates: 1 of 2 passed")
    assert "predictions `predictions/model-v2.jsonl`" in text
    assert "### Baseline" not in text


def test_kind_tables(current):
    text = render_markdown(current)
    rows = _table_after(text, "### sql")
    header = rows[0]
    assert header[:3] == ["difficulty", "cases", "pass rate"]
    # what decides: the gated metric and latency; the other metrics are in the other reports
    assert header[3:] == [r"execution\_accuracy", "latency (s)"]
    for row in rows:  # every row has as many cells as the header
        assert len(row) == len(header)
    easy = next(r for r in rows if r[0] == "easy")
    cases = [c for c in current["cases"] if c["kind"] == "sql" and c["difficulty"] == "easy"]
    col = header.index(r"execution\_accuracy")
    assert easy[1] == "3"
    assert easy[2] == "66.7 %"
    assert easy[col] == f"{statistics.fmean(c['metrics']['execution_accuracy'] for c in cases):.3f}"
    secs = [c["metrics"]["prediction_seconds"] for c in cases]
    assert easy[header.index("latency (s)")] == (
        f"{statistics.fmean(secs):.2f} ± {statistics.pstdev(secs):.2f}")
    assert [r[0] for r in rows[2:]] == ["easy", "medium", "hard", "extra", "**all**"]
    # per-dimension SDMX metrics are not columns
    assert "precision[COUNTRY]" not in text
    assert "precision\\[COUNTRY\\]" not in text


def test_gates_table(current):
    rows = _table_after(render_markdown(current), "### Gates")
    assert rows[3] == [r"pass\_rate", "66.7 %", "&gt;= 90.0 %", "❌"]


def test_escaping(current):
    text = render_markdown(current)
    assert "<b>" not in text  # question "... <b>bold</b> & | pipes"
    assert (r"**Question:** Which tracks are longer than 10 minutes? &lt;b&gt;bold&lt;/b&gt; "
            r"&amp; \| pipes") in text
    # outside code blocks, raw HTML appears only in our own <details>/<summary>/<sub> tags
    prose = re.sub(r"(?ms)^```.*?^```$", "", text)
    assert "<urn:b59#OAT>" in text
    assert "<urn:b59#OAT>" not in prose
    assert set(re.findall(r"</?([a-z]+)", prose)) <= {"details", "summary", "sub"}


def test_escaping_hostile_values(current):
    case = current["cases"][2]
    case["id"] = "x</summary><script>alert(1)</script>"
    case["predicted"] = "```\n</details><img src=x onerror=alert(1)>\n```"
    text = render_markdown(current)
    assert "<script>" not in text
    # the fenced block is longer than the backtick run inside, so the HTML stays code
    assert "````\n```\n</details><img src=x onerror=alert(1)>\n```\n````" in text


def test_failures_section(current):
    text = render_markdown(current)
    failed = [c for c in current["cases"] if c["outcome"] in ("failed", "error")]
    assert f"### Failures ({len(failed)})" in text
    assert "<summary>genre-top — sql/medium — execution_accuracy</summary>" in text
    assert "<summary>customer-countries — sql/hard — error</summary>" in text
    assert "**Error:** prediction error: HTTP 503 from predictor" in text
    assert "missing rows (1 of 1):\n  ('Rock',)" in text
    assert "date-range" not in text  # xfailed is not a failure


def test_baseline_section(current, baseline):
    text = render_markdown(current, compare(current, baseline, 0.1))
    assert text.splitlines()[0].startswith(
        "## ❌ queryeval: FAILED: 2 regressions (genre-top, customer-countries); ")
    assert text.splitlines()[0].endswith(r"baseline drop: execution\_accuracy -0.200 &gt; max "
                                         r"drop 0.1 (overall), soft\_f1 -0.200 &gt; max drop 0.1 "
                                         r"(overall), exact\_set\_match -0.167 &gt; max drop 0.1 "
                                         "(overall)")
    assert text.splitlines()[2].endswith(
        r"baseline comparison: FAILED: execution\_accuracy -0.200 &gt; max drop 0.1 (overall), "
        r"soft\_f1 -0.200 &gt; max drop 0.1 (overall), exact\_set\_match -0.167 &gt; max drop "
        "0.1 (overall)")
    rows = _table_after(text, "### Baseline")
    ex = next(r for r in rows if r[0] == r"execution\_accuracy")
    assert ex == [r"execution\_accuracy", "0.800", "0.600", "▼ -0.200", "0.1 ❌"]
    js = next(r for r in rows if r[0] == r"json\_similarity")
    assert js[3] == "▲ +0.065"
    assert "**pass → fail (2)**: `genre-top` (sql/medium), `customer-countries` (sql/hard)" \
        in text
    assert "**fail → pass (1)**: `filter-region` (json/easy)" in text
    assert "19 cases in both runs; 1 new and 1 removed (not compared)." in text


def test_baseline_not_comparable(current, baseline):
    baseline["run"]["settings"]["json"]["model"] = "mpnet"
    text = render_markdown(current, compare(current, baseline, 0.1))
    assert "❌ not comparable: scored with different settings: json.model:" in text
    assert text.splitlines()[0].endswith('; baseline not comparable: scored with different '
                                         'settings: json.model: "mpnet" (baseline) vs '
                                         '"all-MiniLM-L6-v2" (current)')


def test_mentions_do_not_ping(current):
    current["cases"][2]["question"] = "ask @octocat about it"
    text = render_markdown(current)
    assert "@octocat" not in text
    assert "ask @\u2060octocat about it" in text


def test_size_stays_under_github_comment_limit(current):
    for case in current["cases"]:
        case["outcome"] = "failed"
        case["predicted"] = "p" * 1400
        case["gold"] = "g" * 1400
        case["diff"] = ["d" * 100] * 60
    text = render_markdown(current)
    assert len(text) < 65536
    shown = text.count("<details>")
    assert 0 < shown < 20
    assert f"… {20 - shown} more failures not shown here" in text
