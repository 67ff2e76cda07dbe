"""Self-contained HTML report (``--queryeval-html``): one file, no network, safe to attach.

Charts are inline SVG drawn here (no JS library, no CDN), the case table is sorted and
filtered by a few lines of inline JS, and a Content-Security-Policy forbids every fetch, so the
file renders the same offline, in a CI artifact viewer or in a mail attachment. Every value from
the report is HTML-escaped; the script reads the DOM and never embeds report data.

Why one module of this size: the page is one self-contained file (inline CSS, SVG and JS, a
strict Content-Security-Policy), written by one renderer.
"""

from __future__ import annotations

import html
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._util.safefile import write_atomic
from .._util.safetext import printable
from ..baseline.compare import Comparison, MetricDelta
from ..figures.by_turn import scored_turns
from ..figures.columns import (
    difficulty_of,
    gated_metrics,
    is_detail_metric,
    lead_metrics,
    ordered_difficulties,
    ordered_metrics,
)
from ..figures.numbers import doc_num as _num
from ..figures.numbers import doc_pct as _pct
from ..metricnames import (
    FAILED_OUTCOMES,
    PASS_RATE,
    PASSED_OUTCOMES,
    USAGE_METRICS,
    is_timing,
    lower_is_better,
)
from .document import Report, full_record
from .models import html_section as models_section
from .outcome import Outcome, pass_rate_text, run_facts, stated
from .terminal import (
    SPEND_HEADERS,
    arrow,
    comparison_line,
    significance_cell,
    significance_header,
    spend_cell,
)

if TYPE_CHECKING:
    from ..model import RecordLike

__all__ = ["render_html", "write_html"]

LATENCY_METRIC = "prediction_seconds"
#: Distribution charts per kind (headline metrics first, then latency).
CHARTS_PER_KIND = 3
#: Characters of a predicted/gold value shown in a case's details.
MAX_VALUE = 20000
#: The most case rows the table holds, and dots a distribution chart draws per difficulty:
#: the page of a 200,000-case merge stays a few MB (the JSON report has every case).
MAX_CASE_ROWS = 2000
MAX_DOTS = 400

CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
       "img-src data:; base-uri 'none'; form-action 'none'")

STYLE = """
:root{--ok:#1a7f37;--bad:#cf222e;--muted:#6e7781;--line:#d0d7de;--bg:#f6f8fa;--ink:#1f2328}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);
margin:0 auto;padding:24px 32px 64px;max-width:1320px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:32px 0 10px;
border-bottom:1px solid var(--line);padding-bottom:4px}h3{font-size:15px;margin:18px 0 6px}
.facts{color:var(--muted);margin:0 0 8px}
.verdict{font-size:16px;font-weight:600;margin:8px 0}
header{border-left:6px solid var(--line);padding-left:12px}
header.passed{border-color:var(--ok)}header.failed{border-color:var(--bad)}
header.inconclusive{border-color:#9a6700}.verdict.inconclusive{color:#9a6700}
.counts{margin:4px 0}
.ok{color:var(--ok)}.bad{color:var(--bad)}.muted{color:var(--muted)}
table{border-collapse:collapse;margin:6px 0 12px}
th,td{border:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
th{background:var(--bg);font-weight:600}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
tr.total td{font-weight:600;background:#fbfbfc}
.grid{display:flex;flex-wrap:wrap;gap:12px}
figure{margin:0;border:1px solid var(--line);border-radius:6px;padding:6px 8px;background:#fff}
figcaption{font-size:12px;color:var(--muted)}
svg text{font:11px system-ui,sans-serif;fill:#444}
.pill{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;font-weight:600}
.pill.passed,.pill.xpassed{background:#dafbe1;color:var(--ok)}
.pill.failed,.pill.error{background:#ffebe9;color:var(--bad)}
.pill.skipped,.pill.xfailed{background:#eaeef2;color:var(--muted)}
#cases-table th[data-key]{cursor:pointer;user-select:none;white-space:nowrap}
#cases-table th[aria-sort=ascending]::after{content:" ▲"}
#cases-table th[aria-sort=descending]::after{content:" ▼"}
#cases-table td.q{max-width:340px}
details>summary{cursor:pointer;color:#0969da}
#cases-table details[open]{min-width:460px}
pre{background:var(--bg);border:1px solid var(--line);border-radius:4px;padding:6px 8px;
margin:4px 0;white-space:pre-wrap;word-break:break-word;max-height:320px;overflow:auto;
font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.controls{display:flex;gap:16px;align-items:center;margin:6px 0}
.controls input[type=search]{padding:4px 8px;width:280px}
.failmetric{color:var(--bad);font-weight:600;font-size:12px}
tr.parts td{background:var(--badbg,#fde8e8);font-weight:600}
#all-metrics:not(:checked)~table .more{display:none}
.summary th.more,.summary td.more{color:var(--muted)}
"""

# Sorting and filtering; reads the DOM only. URL hash: #sort=<key>:<asc|desc>&failures&q=<text>
SCRIPT = """
(function () {
  var table = document.getElementById("cases-table");
  if (!table) { document.body.setAttribute("data-ready", "1"); return; }
  var tbody = table.tBodies[0];
  var rows = Array.prototype.slice.call(tbody.rows);
  var heads = table.tHead.rows[0].cells;
  var search = document.getElementById("case-filter");
  var onlyFailed = document.getElementById("only-failed");
  var counter = document.getElementById("case-count");
  function value(row, i, numeric) {
    var cell = row.cells[i];
    var v = cell.getAttribute("data-v");
    if (v === null) { v = cell.textContent; }
    if (numeric) { var f = parseFloat(v); return isNaN(f) ? null : f; }
    return v.toLowerCase();
  }
  function sortBy(i, dir) {
    var numeric = heads[i].getAttribute("data-type") === "num";
    var sorted = rows.slice().sort(function (a, b) {
      var x = value(a, i, numeric), y = value(b, i, numeric);
      if (x === y) { return a.getAttribute("data-i") - b.getAttribute("data-i"); }
      if (x === null) { return 1; }
      if (y === null) { return -1; }
      return (x < y ? -1 : 1) * dir;
    });
    sorted.forEach(function (r) { tbody.appendChild(r); });
    for (var j = 0; j < heads.length; j++) { heads[j].removeAttribute("aria-sort"); }
    heads[i].setAttribute("aria-sort", dir > 0 ? "ascending" : "descending");
    table.setAttribute("data-sorted", heads[i].getAttribute("data-key") + ":" +
                       (dir > 0 ? "asc" : "desc"));
  }
  function applyFilter() {
    var q = search.value.toLowerCase(), only = onlyFailed.checked, shown = 0;
    rows.forEach(function (r) {
      var o = r.getAttribute("data-outcome");
      var ok = (!only || o === "failed" || o === "error") &&
               (!q || r.textContent.toLowerCase().indexOf(q) >= 0);
      r.hidden = !ok;
      if (ok) { shown++; }
    });
    counter.textContent = shown + " of " + rows.length + " cases";
  }
  Array.prototype.forEach.call(heads, function (th, i) {
    if (!th.hasAttribute("data-key")) { return; }
    th.addEventListener("click", function () {
      sortBy(i, th.getAttribute("aria-sort") === "ascending" ? -1 : 1);
    });
  });
  search.addEventListener("input", applyFilter);
  onlyFailed.addEventListener("change", applyFilter);
  location.hash.replace(/^#/, "").split("&").forEach(function (part) {
    if (part === "failures") { onlyFailed.checked = true; }
    else if (part.indexOf("q=") === 0) { search.value = decodeURIComponent(part.slice(2)); }
    else if (part.indexOf("sort=") === 0) {
      var spec = part.slice(5).split(":");
      for (var i = 0; i < heads.length; i++) {
        if (heads[i].getAttribute("data-key") === spec[0]) {
          sortBy(i, spec[1] === "desc" ? -1 : 1);
        }
      }
    }
  });
  applyFilter();
  document.body.setAttribute("data-ready", "1");
})();
"""


def e(value: object) -> str:
    """Escape for text and attribute values."""
    return html.escape("" if value is None else str(value), quote=True)


def _value_text(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                          indent=2, default=str)
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE] + "\n… [truncated]"


def render_html(report: Mapping[str, Any], comparison: Comparison | None = None) -> str:
    """The whole report page as a string (write it with any atomic writer)."""
    agg: Mapping[str, Any] = report.get("aggregates") or {}
    overall: Mapping[str, Any] = agg.get("overall") or {}
    run: Mapping[str, Any] = report.get("run") or {}
    cases: list[Mapping[str, Any]] = list(report.get("cases") or [])
    gates = list(report.get("gates") or [])
    outcome = stated(report, comparison)
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{e(CSP)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>queryeval report: {outcome.word}</title>",
        f"<style>{STYLE}</style></head><body>",
        f'<header class="{outcome.word}"><h1>queryeval report</h1>',
        _headline(outcome, overall, run, gates, comparison, report.get("evidence")),
        "</header>",
    ]
    if gates:
        parts.append(_gates(gates))
    if report.get("audit"):
        parts.append(_audit(report["audit"]))
    parts.append(_summary(agg, cases, gated_metrics(report), _changed(cases, comparison)))
    parts.append(_references(agg))
    if agg.get("by_turn"):  # conversation cases only: no line at all otherwise
        parts.append(_by_turn(agg))
    parts.extend(filter(None, [models_section(agg)]))  # nothing at all without models
    parts.append(_distributions(cases))
    if comparison is not None:
        parts.append(_baseline(comparison))
    if report.get("flaky"):
        parts.append(_flaky(list(report["flaky"])))
    if (report.get("near_miss") or {}).get("overall"):
        parts.append(_near_misses(report["near_miss"], cases))
    judge = report.get("judge") or {}
    if judge.get("judged") or judge.get("errors"):
        parts.append(_judge(judge))
    parts.append(_case_table(report.get("cases") or cases))  # a merge's: read back whole
    parts.append(_denominators(agg))  # after the cases and their failures: a long table
    parts.append(f"<script>{SCRIPT}</script></body></html>")
    return "\n".join(parts) + "\n"


def write_html(report: Report, path: str | os.PathLike[str],
               comparison: Comparison | None = None) -> Path:
    """Render and write atomically (temporary file + rename)."""
    target = Path(path)
    write_atomic(target, printable(render_html(report, comparison)), special="stream")
    return target


def _denominators(agg: Mapping[str, Any]) -> str:
    """Over how many cases each kind's means were computed, and why the others are missing."""
    from .denominators import UNPARSABLE_HEADER, denominators

    rows = denominators(agg)
    if not rows:
        return ""
    out = ['<section id="denominators"><h2>Denominators</h2><table><thead><tr><th>kind</th>'
           '<th>metric</th><th class="n">over</th><th class="n">of cases</th>'
           f'<th>missing (why)</th><th class="n">{e(UNPARSABLE_HEADER)}</th></tr></thead><tbody>']
    out.extend(f"<tr><td>{e(r.kind)}</td><td>{e(r.metric)}</td><td class=\"n\">{r.n}</td>"
               f"<td class=\"n\">{r.cases}</td><td>{e(r.missing or '–')}</td>"
               f"<td class=\"n\">{r.unparsable}</td></tr>" for r in rows)
    out.append("</tbody></table></section>")
    return "".join(out)


def _headline(outcome: Outcome, overall: Mapping[str, Any], run: Mapping[str, Any],
              gates: list[Any], cmp: Comparison | None, evidence: object = None) -> str:
    """The run's outcome in the words of the summary's last line (red when it failed), then
    the pass rate with its count, the gates and the baseline comparison, then the facts."""
    bits = [f'<span id="verdict-cases">{e(pass_rate_text(overall, _pct))}</span>']
    if gates:
        ok = sum(bool(g.get("passed")) for g in gates)
        cls = ' class="bad"' if ok < len(gates) else ""
        bits.append(f"<span{cls}>gates: {ok} of {len(gates)} passed</span>")
    if cmp is not None:
        cls = ' class="bad"' if not cmp.passed else ""
        bits.append(f'<span{cls} id="verdict-baseline">{e(comparison_line(cmp))}</span>')
    if isinstance(evidence, Mapping) and evidence.get("line"):  # --queryeval-gating=evidence
        bits.append(f'<span id="verdict-evidence">{e(str(evidence["line"]))}</span>')
    tone = "inconclusive" if outcome.inconclusive else "ok" if outcome.passed else "bad"
    head = (f'<p class="verdict {tone}" id="outcome" '
            f'data-outcome="{outcome.word}">{e(outcome.line)}</p>'
            f'<p class="counts">{" · ".join(bits)}</p>')
    facts = []
    if run.get("interrupted"):
        facts.append('<strong class="bad">interrupted: partial results</strong>')
    for key, label in (("count", "case"), ("errors", "error"), ("skipped", "skipped"),
                       ("xfailed", "xfailed")):
        n = int(overall.get(key) or 0)
        if n:
            facts.append(f"{n} {label}{'s' if n > 1 and label in ('case', 'error') else ''}")
    if run.get("started"):
        facts.append(f"started {e(run['started'])}")
    facts.extend(run_facts(run, e, lambda value: f"<code>{e(value)}</code>"))
    return head + f'<p class="facts">{" · ".join(facts)}</p>'


def _gate_value(g: Mapping[str, Any], fmt: Callable[[float | None], object]) -> str:
    """The value, or why there is none (a gate that scored nothing)."""
    if g.get("value") is None and g.get("reason"):
        return e(g["reason"])
    return str(fmt(g.get("value")))


def _judge(agg: Mapping[str, Any]) -> str:
    """What the LLM judge rescued and overturned, with its reasons (``judge:``)."""
    from ..judge.report import summary_lines

    lists = []
    for key, title in (("rescued", "Rescued by the judge"), ("overturned", "Overturned")):
        items = "".join(f"<li><code>{e(i.get('id'))}</code> {e(i.get('kind'))}/"
                        f"{e(i.get('difficulty'))}: <strong>{e(i.get('category'))}</strong>"
                        f"{' (pinned)' if i.get('pinned') else ''}: {e(i.get('reason'))}</li>"
                        for i in agg.get(key) or [])
        if items:
            lists.append(f'<h3>{title}</h3><ul id="judge-{key}">{items}</ul>')
    errors = "".join(f"<li><code>{e(i.get('id'))}</code>: {e(i.get('error'))}</li>"
                     for i in agg.get("errors") or [])
    if errors:
        lists.append(f'<h3>Judge errors</h3><ul id="judge-errors">{errors}</ul>')
    refused = f'<p class="bad">{e(agg["refused"])}</p>' if agg.get("refused") else ""
    return (f'<section id="judge"><h2>Judge</h2><p>{e(summary_lines(agg)[0])}</p>{refused}'
            f'{"".join(lists)}</section>')


def _near_misses(agg: Mapping[str, Any], cases: Sequence[RecordLike]) -> str:
    """Failing cases a documented relaxation would pass (they explain, never change, a verdict)."""
    from ..rules.nearmiss import RELAXATIONS

    groups = [("overall", "", agg.get("overall") or {})]
    for scope in ("by_kind", "by_difficulty"):
        groups += [(scope[3:], k, v) for k, v in (agg.get(scope) or {}).items()]
    names = [n for n in RELAXATIONS if n in (agg.get("overall") or {})]
    head = "".join(f"<th class=n>{e(RELAXATIONS[n])}</th>" for n in names)
    rows = "".join(f"<tr><td>{e(scope)}</td><td>{e(group)}</td>"
                   + "".join(f"<td class=n>{int(counts.get(n, 0))}</td>" for n in names)
                   + "</tr>" for scope, group, counts in groups)
    items = "".join(f"<li><code>{e(c.get('id'))}</code> {e(c.get('kind'))}/"
                    f"{e(difficulty_of(c))}: "
                    f"{e('; '.join(RELAXATIONS.get(n, n) for n in c.get('near_miss') or []))}"
                    "</li>" for c in cases if c.get("near_miss"))
    return ('<section id="near-misses"><h2>Near misses</h2><p>Failing cases '
            f"({int(agg.get('failures') or 0)} with compared results) that one documented "
            "relaxation would pass; the verdicts stand.</p><table><thead><tr><th>scope</th>"
            f"<th>group</th>{head}</tr></thead><tbody>{rows}</tbody></table>"
            f'<ul id="near-miss-cases">{items}</ul></section>')


def _flaky(flaky: list[Mapping[str, Any]]) -> str:
    """``repeat: N``: the cases whose runs disagreed on the outcome."""
    rows = []
    for f in flaky:
        statuses = " ".join(str(s) for s in f.get("statuses") or [])
        rows.append(f"<tr><td>{e(f.get('id'))}</td><td>{e(f.get('file'))}:{e(f.get('line'))}"
                    f"</td><td class=n>{e(f.get('passed'))}/{e(f.get('runs'))}</td>"
                    f"<td>{e(statuses)}</td><td class=n>{_num(f.get('consistency'), 2)}</td>"
                    f"<td>{e(f.get('rule'))}</td><td>{e(f.get('outcome'))}</td></tr>")
    return ('<section id="flaky"><h2>Flaky cases</h2><p>The outcome differs across the runs '
            'of these cases.</p><table><thead><tr><th>case</th><th>where</th>'
            '<th class=n>runs passed</th><th>runs</th><th class=n>consistency</th>'
            '<th>repeat_rule</th><th>outcome</th></tr></thead><tbody>'
            + "".join(rows) + "</tbody></table></section>")


def _gates(gates: list[Mapping[str, Any]]) -> str:
    rows = []
    for g in gates:
        fmt = _pct if g.get("stat") == "pass_rate" else _num
        ok = bool(g.get("passed"))
        rows.append(f"<tr><td>{e(g.get('name'))}</td><td class=n>{_gate_value(g, fmt)}</td>"
                    f"<td class=n>{e(g.get('op') or '>=')} {fmt(g.get('limit'))}</td>"
                    f'<td class="{"ok" if ok else "bad"}">{"passed" if ok else "FAILED"}</td>'
                    "</tr>")
    return ('<section id="gates"><h2>Gates</h2><table><thead><tr><th>gate</th>'
            '<th class=n>value</th><th class=n>limit</th><th>result</th></tr></thead><tbody>'
            + "".join(rows) + "</tbody></table></section>")


def _references(agg: Mapping[str, Any]) -> str:
    """The references' session figures (TEXT2SPARQL, GERBIL QA), beside the per-kind tables."""
    from .reference import reference_sections

    sections = reference_sections(agg)
    if not sections:
        return ""
    out = ['<section id="reference-aggregates"><h2>Reference aggregates</h2>']
    for title, questions, rows in sections:
        out.append(f"<h3>{e(title)}</h3><p>{questions} questions</p><table><thead><tr>"
                   "<th>metric</th><th>reference name</th><th class=n>value</th></tr></thead>"
                   "<tbody>")
        out.extend(f"<tr><td>{e(name)}</td><td>{e(label)}</td><td class=n>{_num(value, 4)}</td>"
                   "</tr>" for name, label, value in rows)
        out.append("</tbody></table>")
    out.append("</section>")
    return "".join(out)
def _by_turn(agg: Mapping[str, Any]) -> str:
    """Conversation cases: a row per turn number with the mean of every metric but the
    per-component ones (the Excel sheet has those), then the conversations' interaction and
    turn accuracy ("" without a conversation case)."""
    from ..figures.by_turn import conversations_line, turn_table

    table = turn_table(agg)
    if table is None:
        return ""
    missing = table.missing
    out = ['<section id="by-turn"><h2>By turn</h2>',
           f'<p id="conversations">{e(conversations_line(table.conversations))}</p>',
           "<table><thead><tr><th>turn</th><th class=n>turns</th><th class=n>passed</th>"
           + ("<th class=n>missing</th>" if missing else "") + "<th class=n>turn accuracy</th>"
           + "".join(f"<th class=n>{e(m)}</th>" for m in table.metrics) + "</tr></thead><tbody>"]
    for label, turns, passed, lost, rate, means in table.rows:
        out.append(f'<tr data-turn="{e(label)}"><td>{e(label)}</td><td class=n>{turns}</td>'
                   f"<td class=n>{passed}</td>"
                   + (f"<td class=n>{lost}</td>" if missing else "")
                   + f"<td class=n>{_pct(rate)}</td>"
                   + "".join(f"<td class=n>{_num(v)}</td>" for v in means) + "</tr>")
    out.append("</tbody></table></section>")
    return "".join(out)


def _audit(audit: Mapping[str, Any]) -> str:
    """The gold audit's findings table (``--queryeval-audit-golds``), errors first."""
    rows = []
    for r in audit.get("findings") or []:
        gold = f" gold[{r['gold']}]" if r.get("gold") is not None else ""
        cls = "bad" if r.get("severity") == "error" else ""
        rows.append(f'<tr data-code="{e(r.get("code"))}"><td class="{cls}">{e(r.get("severity"))}'
                    f"</td><td>{e(r.get('code'))}</td><td><code>{e(r.get('id'))}{e(gold)}</code>"
                    f"</td><td>{e(r.get('file'))}:{e(r.get('line'))}</td>"
                    f"<td>{e(_value_text(r.get('message')))}</td></tr>")
    note = (" (reported only: --queryeval-audit-golds=warn)"
            if audit.get("mode") == "warn" and audit.get("errors") else "")
    head = (f"<p>{int(audit.get('cases') or 0)} cases audited: {int(audit.get('errors') or 0)} "
            f"errors, {int(audit.get('warnings') or 0)} warnings{e(note)}</p>")
    table = ("<table><thead><tr><th>severity</th><th>finding</th><th>case</th><th>where</th>"
             "<th>message</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
             if rows else "")
    return f'<section id="audit"><h2>Gold audit</h2>{head}{table}</section>'


def _changed(cases: Sequence[RecordLike],
             cmp: Comparison | None) -> dict[str, set[str]] | None:
    """The ids of the regressed and fixed cases (the gating mode's, else the comparison's
    flips), or None when the run had no baseline to change against."""
    if cmp is None and not any(c.get("baseline_status") is not None for c in cases):
        return None
    out: dict[str, set[str]] = {
        "regressions": {str(c.get("id")) for c in cases if c.get("standing") == "regression"},
        "fixed": {str(c.get("id")) for c in cases if c.get("standing") == "fixed"}}
    if cmp is not None and cmp.comparable:
        out["regressions"].update(ch.id for ch in cmp.regressions)
        out["fixed"].update(ch.id for ch in cmp.fixes)
    return out


def _summary(agg: Mapping[str, Any], cases: Sequence[RecordLike] = (),
             gated: set[str] | None = None, changed: dict[str, set[str]] | None = None) -> str:
    """Per kind, difficulty x what decides (cases, pass rate, regressions and fixed cases, the
    gated metrics, latency, tokens, cost); every other metric is a ``more`` column the
    *all metrics* checkbox shows (CSS only: the page reads the same without its script). A
    suite run on several engines gets the same table per dialect after the kinds'."""
    by_kd: Mapping[str, Mapping[str, Any]] = agg.get("by_kind_difficulty") or {}
    by_kind: Mapping[str, Any] = agg.get("by_kind") or {}
    by_dialect: Mapping[str, Any] = agg.get("by_dialect") or {}
    out = ['<section id="summary"><h2>Summary by kind and difficulty'
           f'{" and by dialect" if by_dialect else ""}</h2>']
    more_total = 0
    body: list[str] = []
    for kind in sorted(by_kd):
        groups = [(d, by_kd[kind][d], False) for d in ordered_difficulties(by_kd[kind])]
        if kind in by_kind:
            groups.append(("all", by_kind[kind], True))

        def kind_members(diff: str, total: bool, kind: str = kind) -> set[str]:
            return {str(c.get("id")) for c in cases if str(c.get("kind")) == kind
                    and (total or difficulty_of(c) == diff)}

        more_total = max(more_total, _group_table(
            body, f'<h3>{e(kind)}</h3><table class="summary" data-kind="{e(kind)}">',
            "difficulty", groups, kind_members, gated, changed))
    if by_dialect:
        def dialect_members(dialect: str, total: bool) -> set[str]:
            return {str(c.get("id")) for c in cases if str(c.get("dialect")) == dialect}

        more_total = max(more_total, _group_table(
            body, '<h3>by dialect</h3><table class="summary" data-dialects>', "dialect",
            [(d, s, False) for d, s in by_dialect.items()], dialect_members, gated, changed))
    if more_total:
        out.append('<input type="checkbox" id="all-metrics"> <label for="all-metrics">all '
                   f"metrics (up to {more_total} more columns)</label>")
    out.extend(body)
    out.append("</section>")
    return "".join(out)


def _group_table(body: list[str], opening: str, label: str,
                 groups: Sequence[tuple[str, Mapping[str, Any], bool]],
                 members: Callable[[str, bool], set[str]], gated: set[str] | None,
                 changed: dict[str, set[str]] | None) -> int:
    """One summary table (a row per group, ``total`` rows in bold) appended to ``body``; the
    number of its ``more`` columns. The kinds' and the dialects' tables share it, so their
    columns agree."""
    names = ordered_metrics(m for _, s, _ in groups for m in (s.get("metrics") or {}))
    lead = lead_metrics(names, gated or set())
    more = [m for m in names if m not in lead and not is_detail_metric(m)
            and not lower_is_better(m)]
    more += [m for m in names if m not in lead and m not in more and is_detail_metric(m)]
    latency = LATENCY_METRIC in names
    spend = [m for m in USAGE_METRICS if m in names]
    head = "".join(f'<th class="n lead">{e(m)}</th>' for m in lead)
    if changed is not None:
        head += '<th class="n">regressions</th><th class="n">fixed</th>'
    head += '<th class="n spend">latency (s)</th>' if latency else ""
    head += "".join(f'<th class="n spend">{e(SPEND_HEADERS[m])}</th>' for m in spend)
    head += "".join(f'<th class="n more">{e(m)}</th>' for m in more)
    body.append(f"{opening}<thead><tr><th>{label}</th><th class=n>cases</th>"
                f"<th class=n>pass rate</th>{head}</tr></thead><tbody>")
    for name, stats, total in groups:
        metrics = stats.get("metrics") or {}
        cells = "".join(f"<td class=n>{_num((metrics.get(m) or {}).get('mean'))}</td>"
                        for m in lead)
        if changed is not None:
            cells += "".join(f"<td class=n>{len(members(name, total) & changed[k])}</td>"
                             for k in ("regressions", "fixed"))
        if latency:
            lat = metrics.get(LATENCY_METRIC)
            cells += (f"<td class=n>{lat['mean']:.2f} ± {lat['std']:.2f}</td>" if lat
                      else "<td class=n>–</td>")
        cells += "".join(f"<td class=n>{e(spend_cell(m, metrics.get(m)))}</td>" for m in spend)
        cells += "".join(f'<td class="n more">{_num((metrics.get(m) or {}).get("mean"))}</td>'
                         for m in more)
        body.append(f'<tr{" class=total" if total else ""} data-{label}="{e(name)}">'
                    f"<td>{e(name)}</td><td class=n>{int(stats.get('count') or 0)}</td>"
                    f"<td class=n>{_pct(stats.get('pass_rate'))}</td>{cells}</tr>")
    body.append("</tbody></table>")
    return len(more)


# -------------------------------------------------------------------------------------------
# SVG charts


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    mag = 10.0 ** math.floor(math.log10(value))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        if value <= step * mag:
            return step * mag
    return 10 * mag


def _outcome_color(outcome: str) -> str:
    if outcome in PASSED_OUTCOMES:
        return "#1a7f37"
    if outcome in FAILED_OUTCOMES:
        return "#cf222e"
    return "#8c959f"


def strip_chart(title: str, metric: str, groups: Sequence[tuple[str, Sequence[tuple[str, str,
                float]]]]) -> str:
    """Dots per case (colour = outcome) and the mean per difficulty, on a shared y axis."""
    width, height = 300, 200
    left, right, top, bottom = 44, 10, 10, 34
    plot_w, plot_h = width - left - right, height - top - bottom
    values = [v for _, pts in groups for _, _, v in pts]
    y_max = _nice_max(max(values, default=1.0)) if is_timing(metric) else 1.0

    def y(v: float) -> float:
        return top + plot_h * (1 - min(max(v / y_max, 0.0), 1.0))

    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{e(title)}" '
           f'data-metric="{e(metric)}">']
    for i in range(5):
        v = y_max * i / 4
        yy = y(v)
        svg.append(f'<line x1="{left}" x2="{width - right}" y1="{yy:.1f}" y2="{yy:.1f}" '
                   f'stroke="#eaeef2"/><text x="{left - 6}" y="{yy + 4:.1f}" '
                   f'text-anchor="end">{v:.2f}</text>')
    band = plot_w / max(len(groups), 1)
    for gi, (label, pts) in enumerate(groups):
        cx = left + band * (gi + 0.5)
        svg.append(f'<text x="{cx:.1f}" y="{height - 18}" text-anchor="middle">{e(label)}'
                   f'</text><text x="{cx:.1f}" y="{height - 5}" text-anchor="middle" '
                   f'fill="#6e7781">n={len(pts)}</text>')
        step = max(1, -(-len(pts) // MAX_DOTS))  # a huge group: every step-th dot, mean of all
        for j, (cid, outcome, v) in enumerate(pts[::step]):
            jitter = ((j * 7919) % 17 - 8) / 8 * min(band * 0.28, 40)
            svg.append(f'<circle class="pt" cx="{cx + jitter:.1f}" cy="{y(v):.1f}" r="4" '
                       f'fill="{_outcome_color(outcome)}" fill-opacity="0.75">'
                       f"<title>{e(cid)}: {v:.3f} ({e(outcome)})</title></circle>")
        if pts:
            mean = math.fsum(v for _, _, v in pts) / len(pts)
            half = min(band * 0.38, 50)
            svg.append(f'<line class="mean" x1="{cx - half:.1f}" x2="{cx + half:.1f}" '
                       f'y1="{y(mean):.1f}" y2="{y(mean):.1f}" stroke="#1f2328" '
                       f'stroke-width="2"><title>mean {mean:.3f}</title></line>')
    svg.append(f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + plot_h}" stroke="#8c959f"/>'
               "</svg>")
    return f"<figure>{''.join(svg)}<figcaption>{e(title)}</figcaption></figure>"


def _distributions(cases: list[RecordLike]) -> str:
    out = ['<section id="distributions"><h2>Metric distributions by difficulty</h2>',
           '<p class="muted">Each dot is a case (green passed, red failed or error, grey '
           "skipped/xfailed); the bar is the mean.</p>"]
    kinds = sorted({str(c.get("kind")) for c in cases})
    for kind in kinds:
        members = [c for c in cases if str(c.get("kind")) == kind]
        names = ordered_metrics(m for c in members for m in (c.get("metrics") or {}))
        metrics = [m for m in names if not is_detail_metric(m) and not is_timing(m)]
        chosen = metrics[:CHARTS_PER_KIND] + ([LATENCY_METRIC] if LATENCY_METRIC in names
                                              else [])
        if not chosen:
            continue
        diffs = ordered_difficulties(difficulty_of(c) for c in members)
        figs = []
        for metric in chosen:
            groups = [(d, [(str(c.get("id")), str(c.get("outcome")), float(value))
                           for c in members if difficulty_of(c) == d
                           and isinstance(value := (c.get("metrics") or {}).get(metric),
                                          int | float)])
                      for d in diffs]
            figs.append(strip_chart(f"{kind}: {metric}", metric, groups))
        out.append(f'<h3>{e(kind)}</h3><div class="grid">{"".join(figs)}</div>')
    out.append("</section>")
    return "".join(out)


def delta_chart(deltas: Sequence[MetricDelta]) -> str:
    """Horizontal bars around zero: green better, red worse; dashed line at -max drop."""
    rows = [d for d in deltas if d.delta is not None]
    label_w, bar_w, row_h = 190, 320, 22
    width, height = label_w + bar_w + 70, row_h * len(rows) + 24
    scale = max([0.05, *(abs(d.delta or 0.0) for d in rows),
                 *(d.limit for d in rows if d.limit is not None)])
    zero = label_w + bar_w / 2

    def x(v: float) -> float:
        return zero + (bar_w / 2) * v / scale

    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="baseline deltas" '
           'id="delta-chart">']
    for i, d in enumerate(rows):
        delta = d.delta or 0.0
        yy = 6 + i * row_h
        worse = d.worsening > 0
        color = "#cf222e" if d.failed else ("#ff8182" if worse else "#4ac26b")
        if abs(delta) <= 1e-9:
            color = "#8c959f"
        x0, x1 = sorted((x(0.0), x(delta)))
        svg.append(f'<text x="{label_w - 8}" y="{yy + 14}" text-anchor="end">{e(d.metric)}'
                   f'</text><rect class="bar" data-metric="{e(d.metric)}" x="{x0:.1f}" '
                   f'y="{yy + 3}" width="{max(x1 - x0, 1):.1f}" height="{row_h - 8}" '
                   f'fill="{color}"><title>{e(d.metric)}: {_num(d.baseline)} → '
                   f"{_num(d.current)} ({delta:+.3f})</title></rect>"
                   f'<text x="{label_w + bar_w + 6}" y="{yy + 14}">{arrow(d)} {delta:+.3f}'
                   "</text>")
        if d.limit is not None:
            lx = x(d.limit if is_timing(d.metric) else -d.limit)
            svg.append(f'<line x1="{lx:.1f}" x2="{lx:.1f}" y1="{yy + 1}" y2="{yy + row_h - 3}" '
                       f'stroke="#1f2328" stroke-dasharray="3,2"><title>max drop '
                       f"{d.limit:g}</title></line>")
    svg.append(f'<line x1="{zero}" x2="{zero}" y1="2" y2="{height - 16}" stroke="#57606a"/>'
               f'<text x="{x(-scale):.1f}" y="{height - 3}">{-scale:+.3f}</text>'
               f'<text x="{x(scale):.1f}" y="{height - 3}" text-anchor="end">{scale:+.3f}</text>'
               "</svg>")
    return "".join(svg)


def _baseline(cmp: Comparison) -> str:
    out = ['<section id="baseline"><h2>Baseline comparison</h2>']
    if not cmp.comparable:
        out.append(f'<p class="verdict bad">not comparable: {e(cmp.reason)}</p></section>')
        return "".join(out)
    out.append(f'<p class="verdict {"ok" if cmp.passed else "bad"}">{e(cmp.summary())}</p>')
    note = f"{cmp.common} cases in both runs"
    if cmp.new_cases or cmp.removed_cases:
        note += (f"; {len(cmp.new_cases)} new and {len(cmp.removed_cases)} removed "
                 "(not compared)")
    out.append(f'<p class="muted">{e(note)}. Deltas are over the cases present in both runs.'
               "</p>")
    overall = [d for d in cmp.overall()
               if d.metric == PASS_RATE or not (is_detail_metric(d.metric)
                                                or is_timing(d.metric)) or d.failed]
    out.append(delta_chart(overall))
    rows = [*(d for d in cmp.overall() if d.metric == PASS_RATE
              or not is_detail_metric(d.metric) or d.failed),
            *cmp.extra_rows()]
    out.append('<table id="delta-table"><thead><tr><th>metric</th><th>scope</th>'
               "<th class=n>baseline</th><th class=n>current</th><th class=n>Δ</th>"
               "<th class=n>max drop</th>"
               + (f"<th class=n>{e(significance_header(cmp))}</th>"
                  if cmp.significance is not None else "")
               + "</tr></thead><tbody>")
    for d in rows:
        cls = ' class="bad"' if d.failed else ""
        mark = arrow(d)
        delta = ("–" if d.delta is None else "= 0.000" if mark == "=" else
                 f"{mark} {d.delta:+.3f}")
        limit = "" if d.limit is None else f"{d.limit:g}" + (" FAIL" if d.failed else "")
        sig = (f"<td class=n>{e(significance_cell(d))}</td>"
               if cmp.significance is not None else "")
        out.append(f"<tr{cls}><td>{e(d.metric)}</td><td>{e(d.label)}</td>"
                   f"<td class=n>{_num(d.baseline)}</td><td class=n>{_num(d.current)}</td>"
                   f"<td class=n>{e(delta)}</td><td class=n>{e(limit)}</td>{sig}</tr>")
    out.append("</tbody></table>")
    if cmp.critical_regressions:
        out.append('<p id="critical-regressions"><strong>Critical pass → fail</strong> (each '
                   "fails the gate): " + ", ".join(f"<code>{e(c.id)}</code>"
                                                  for c in cmp.critical_regressions) + "</p>")
    for title, ident, changes in (("pass → fail", "regressions", cmp.regressions),
                                  ("fail → pass", "fixes", cmp.fixes),
                                  ("turns pass → fail", "turn-regressions", cmp.turn_regressions),
                                  ("turns fail → pass", "turn-fixes", cmp.turn_fixes)):
        if changes:
            items = "".join(f"<li><code>{e(c.id)}</code> {e(c.kind)}/{e(c.difficulty)}: "
                            f"{e(c.before)} → {e(c.after)}"
                            + (f" <span class=muted>({e(', '.join(c.failed_metrics))})</span>"
                               if c.failed_metrics else "") + "</li>" for c in changes)
            out.append(f'<h3>{e(title)} ({len(changes)})</h3><ul id="{ident}">{items}</ul>')
    for w in cmp.warnings:
        out.append(f'<p class="bad">warning: {e(w)}</p>')
    out.append("</section>")
    return "".join(out)


# -------------------------------------------------------------------------------------------
# case table


def _main_metric(case: RecordLike) -> tuple[str, float | None]:
    metrics = case.get("metrics") or {}
    for name in ordered_metrics(metrics):
        value = metrics[name]
        if not is_timing(name) and isinstance(value, int | float):
            return name, float(value)
    return "", None


def _case_details(case: RecordLike) -> str:
    parts = []
    if case.get("error"):
        parts.append(f'<p class="bad">{e(case["error"])}</p>')
    if case.get("reason"):
        parts.append(f'<p class="muted">{e(case["reason"])}</p>')
    metrics = case.get("metrics") or {}
    thresholds = case.get("thresholds") or {}
    failed = set(case.get("failed_metrics") or [])
    if metrics:
        rows = []
        for name in ordered_metrics(metrics):
            t = thresholds.get(name) or {}
            limit = " ".join(f"{k} {v:g}" for k, v in t.items() if isinstance(v, int | float))
            cls = ' class="failmetric"' if name in failed else ""
            rows.append(f"<tr{cls}><td>{e(name)}</td><td class=n>{_num(metrics[name])}</td>"
                        f"<td>{e(limit)}</td></tr>")
        parts.append("<table><thead><tr><th>metric</th><th class=n>value</th><th>threshold"
                     "</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")
    turns = scored_turns(case)
    if turns is not None:  # a conversation: each scored turn's question, prediction and gold
        parts.append('<table class="turns"><thead><tr><th class=n>turn</th><th>outcome</th>'
                     "<th>question</th><th>predicted</th><th>gold</th></tr></thead><tbody>"
                     + "".join(f"<tr><td class=n>{e(t.get('turn'))}</td><td>"
                               f"{e(t.get('outcome'))}</td><td>{e(t.get('question'))}</td>"
                               f"<td>{_turn_value(t.get('predicted'))}</td>"
                               f"<td>{_turn_value(t.get('gold'))}</td></tr>"
                               for t in turns) + "</tbody></table>")
    for label, key in (("predicted", "predicted"), ("gold", "gold")):
        if (value := case.get(key)) is not None and turns is None:
            parts.append(f"<div><strong>{label}</strong><pre>{e(_value_text(value))}</pre>"
                         "</div>")
    parts.append(trajectory_html(case))
    fence = (case.get("details") or {}).get("fence_stripped")
    if fence:
        parts.append(f'<p class="muted">Markdown code fence {e(str(fence))} stripped before '
                     "scoring</p>")
    diff = [str(line) for line in case.get("diff") or []]
    if diff:
        parts.append(f'<div><strong>diff</strong><pre class="diff">{e(chr(10).join(diff))}'
                     "</pre></div>")
    sdmx = (case.get("details") or {}).get("sdmx_details")
    if sdmx:
        parts.append(f"<div><strong>indicator selection</strong><pre>{e(sdmx)}</pre></div>")
    where = f"{case.get('file') or ''}:{case.get('line') or ''}".strip(":")
    if where:
        parts.append(f'<p class="muted">{e(where)}</p>')
    label = "failure details" if case.get("outcome") in FAILED_OUTCOMES else "details"
    return f"<details><summary>{label}</summary>{''.join(parts)}</details>"


def trajectory_html(case: RecordLike) -> str:
    """An agent case's steps beside the gold's (``report/trajectory.py``), the parting step's
    row marked; every value escaped (a tool result is the model's data, never markup)."""
    from .trajectory import parting_line, step_table, step_text

    table = step_table(case)
    if table is None:
        return ""
    head = "<th class=n>step</th><th>agent</th>" + ("<th>gold</th>" if table.has_gold else "")
    rows = []
    for number, mine, theirs in table.rows[:MAX_TRAJECTORY_ROWS]:
        parts_here = table.parts_at == number - 1
        cls = ' class="parts"' if parts_here else ""
        gold = f"<td><code>{e(step_text(theirs, 400))}</code></td>" if table.has_gold else ""
        rows.append(f"<tr{cls}><td class=n>{number}{' ←' if parts_here else ''}</td>"
                    f"<td><code>{e(step_text(mine, 400))}</code></td>{gold}</tr>")
    more = (f'<p class="muted">{len(table.rows) - MAX_TRAJECTORY_ROWS:,} more steps in the '
            "JSON report</p>") if len(table.rows) > MAX_TRAJECTORY_ROWS else ""
    return (f'<div class="trajectory"><strong>trajectory</strong> <span class="muted">'
            f"{e(parting_line(table))}</span><table><thead><tr>{head}</tr></thead><tbody>"
            + "".join(rows) + f"</tbody></table>{more}</div>")


#: Steps of a trajectory shown in a case's details.
MAX_TRAJECTORY_ROWS = 100


def _turn_value(value: object) -> str:
    """A turn's prediction or gold in the case details (a missing turn's none: a dash)."""
    return "–" if value is None else f"<pre>{e(_value_text(value))}</pre>"


def shown_cases(cases: Sequence[RecordLike]) -> tuple[list[Mapping[str, Any]], int]:
    """The cases the table shows, in report order, and how many it leaves out: at most
    :data:`MAX_CASE_ROWS`, every failing case first (a 200,000-case merge wrote a 657 MB page).
    A merge's records are read back whole for the rows shown (``full``)."""
    from ..baseline.verdicts import judged_outcome
    from ..metricnames import FAILED_OUTCOMES

    if len(cases) <= MAX_CASE_ROWS:
        chosen = list(range(len(cases)))
    else:
        failing = [i for i, c in enumerate(cases) if judged_outcome(c) in FAILED_OUTCOMES]
        chosen = failing[:MAX_CASE_ROWS]
        if len(chosen) < MAX_CASE_ROWS:
            taken = set(chosen)
            chosen += [i for i in range(len(cases)) if i not in taken][
                :MAX_CASE_ROWS - len(chosen)]
        chosen.sort()
    rows: list[Mapping[str, Any]] = [full_record(cases, i) for i in chosen]
    return rows, len(cases) - len(rows)


def _case_table(all_cases: Sequence[RecordLike]) -> str:
    cases, left_out = shown_cases(all_cases)
    note = (f'<p class="muted" id="cases-left-out">{left_out:,} of {len(all_cases):,} cases are '
            f"not shown: the table holds at most {MAX_CASE_ROWS:,}, every failing case first; "
            "the JSON report has them all.</p>") if left_out else ""
    out = ['<section id="cases"><h2>Cases</h2>' + note + '<div class="controls">'
           '<input type="search" id="case-filter" placeholder="filter: id, question, query…" '
           'aria-label="filter cases"><label><input type="checkbox" id="only-failed"> failures '
           f'only</label><span id="case-count" class="muted">{len(cases)} cases</span></div>',
           '<table id="cases-table"><thead><tr>'
           '<th data-key="id">id</th><th data-key="kind">kind</th>'
           '<th data-key="difficulty">difficulty</th><th data-key="outcome">outcome</th>'
           '<th data-key="metric">main metric</th>'
           '<th data-key="score" data-type="num" class=n>score</th>'
           '<th data-key="latency" data-type="num" class=n>latency (s)</th>'
           '<th data-key="question">question</th><th>tags</th><th>details</th>'
           "</tr></thead><tbody>"]
    for i, case in enumerate(cases):
        outcome = str(case.get("outcome") or "")
        name, score = _main_metric(case)
        latency = (case.get("metrics") or {}).get(LATENCY_METRIC)
        failed = ", ".join(str(m) for m in case.get("failed_metrics") or [])
        out.append(
            f'<tr data-i="{i}" data-id="{e(case.get("id"))}" data-outcome="{e(outcome)}">'
            f"<td><code>{e(case.get('id'))}</code></td><td>{e(case.get('kind'))}</td>"
            f"<td>{e(difficulty_of(case))}</td>"
            f'<td data-v="{e(outcome)}"><span class="pill {e(outcome)}">{e(outcome)}</span>'
            + (f'<br><span class="failmetric">{e(failed)}</span>' if failed else "") + "</td>"
            f"<td>{e(name)}</td>"
            f'<td class=n data-v="{"" if score is None else score}">{_num(score)}</td>'
            f'<td class=n data-v="{"" if latency is None else float(latency)}">'
            f"{_num(latency, 2)}</td>"
            f"<td class=q>{e(case.get('question'))}</td>"
            f"<td>{e(', '.join(str(t) for t in case.get('tags') or []))}</td>"
            f"<td>{_case_details(case)}</td></tr>")
    out.append("</tbody></table></section>")
    return "".join(out)
