"""Markdown summary (``--queryeval-markdown``) for a PR comment or ``$GITHUB_STEP_SUMMARY``.

GitHub renders inline HTML in Markdown, so every value from the report is escaped: a question
or a predicted query can never inject markup, links or formatting into the comment.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._util.safefile import write_atomic
from .._util.safetext import printable
from .._util.wording import plural, shortlist
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
from ..metricnames import FAILED_OUTCOMES, PASS_RATE, USAGE_METRICS, lower_is_better
from ..model import RecordLike
from .document import Report, full_record
from .models import markdown_lines as model_lines
from .outcome import pass_rate_text, run_facts, stated
from .terminal import (
    SPEND_HEADERS,
    arrow,
    comparison_line,
    drifted_lines,
    significance_cell,
    significance_header,
    spend_cell,
)

__all__ = ["render_markdown"]

#: Failures shown in full, and the size the whole summary stays under: GitHub caps comments
#: at 65,536 characters (and job summaries at 1 MiB).
MAX_FAILURES = 20
MAX_CHARS = 60000
#: Characters of a predicted/gold value shown per failure.
MAX_VALUE = 1500
LATENCY_METRIC = "prediction_seconds"

#: Inline syntax only (values never start a line): emphasis, code, links, strikethrough, cells.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def md(value: object) -> str:
    """Inline-safe text: HTML-escaped, Markdown punctuation and table pipes neutralised."""
    text = " ".join(str(value).split())  # newlines would break a table row
    # & < > become entities; the rest of Markdown's punctuation is backslash-escaped; a word
    # joiner after "@" keeps a question like "ask @team" from pinging people in a PR comment.
    text = _MD_SPECIAL.sub(r"\\\1", html.escape(text, quote=False))
    return text.replace("@", "@\u2060")


def code(value: object) -> str:
    """Inline code span that survives backticks and pipes in the value."""
    text = " ".join(str(value).split()).replace("|", "¦")
    ticks = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def fence(text: str, lang: str = "") -> str:
    """A fenced block longer than any backtick run inside (code blocks show text literally)."""
    ticks = "`" * max(3, max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    return f"{ticks}{lang}\n{text}\n{ticks}"


def _value_text(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                          indent=1, default=str)
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE] + " … [truncated]"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def render_markdown(report: Mapping[str, Any], comparison: Comparison | None = None) -> str:
    """The run summary as GitHub-flavoured Markdown: the outcome (the words of the summary's
    last line), gates, per kind, baseline, failures, then the denominators."""
    out: list[str] = []
    agg: Mapping[str, Any] = report.get("aggregates") or {}
    overall: Mapping[str, Any] = agg.get("overall") or {}
    run: Mapping[str, Any] = report.get("run") or {}
    gates = list(report.get("gates") or [])
    outcome = stated(report, comparison)
    out.extend([f"## {outcome.mark} {md(outcome.line)}", ""])
    evidence = report.get("evidence")
    if isinstance(evidence, Mapping) and evidence.get("line") \
            and str(evidence["line"]) not in outcome.line:  # --queryeval-gating=evidence
        out.extend([f"**{md(str(evidence['line']))}**", ""])
    counts = [md(pass_rate_text(overall, _pct))]
    if gates:
        ok = sum(bool(g.get("passed")) for g in gates)
        counts.append(f"gates: {ok} of {len(gates)} passed")
    if comparison is not None:
        counts.append(md(comparison_line(comparison)))
    out.extend([" · ".join(counts), ""])
    facts = []
    if run.get("interrupted"):
        facts.append("**interrupted: partial results**")
    counted = [f"{overall.get(k)} {label}" for k, label in
               (("count", "cases"), ("errors", "errors"), ("skipped", "skipped"),
                ("xfailed", "xfailed")) if overall.get(k)]
    facts.extend(counted)
    facts.extend(run_facts(run, md, code))
    if facts:
        out.extend([" · ".join(facts), ""])
    for line in drifted_lines(report.get("cases") or []):  # pinned cases whose data moved
        out.extend([md(line), ""])

    if gates:
        out.extend(_gates(gates))
    if report.get("audit"):
        out.extend(_audit(report["audit"]))
    out.extend(_kinds(agg, gated_metrics(report)))
    out.extend(_references(agg))
    if agg.get("by_turn"):  # conversation cases only (the gated set reads every case)
        out.extend(_by_turn(agg, gated_metrics(report)))
    out.extend(model_lines(agg, md))
    if comparison is not None:
        out.extend(_baseline(comparison))
    out.extend(_flaky(list(report.get("flaky") or [])))
    out.extend(_judge(report.get("judge")))
    # the failures before the denominators (a 32-row table pushed them down the page), and
    # the denominators kept within the size cap
    denominators = _denominators(agg)
    used = sum(len(line) + 1 for line in [*out, *denominators])
    out.extend(_failures(report.get("cases") or [], MAX_CHARS - used))
    out.extend(denominators)
    return "\n".join(out).rstrip() + "\n"


def markdown_text(report: Mapping[str, Any], comparison: Comparison | None = None) -> str:
    """:func:`render_markdown` with what a terminal must not show removed: the summary is
    often read with ``cat``, and appended to ``$GITHUB_STEP_SUMMARY`` as it is."""
    return printable(render_markdown(report, comparison))


def write_markdown(report: Report, path: Path,
                   comparison: Comparison | None = None) -> Path:
    """Write :func:`markdown_text` atomically (temporary file + rename)."""
    write_atomic(path, markdown_text(report, comparison), special="stream")
    return path


def _judge(agg: Mapping[str, Any] | None, limit: int = 20) -> list[str]:
    """What the LLM judge rescued and overturned, with its reasons (``judge:``)."""
    if not agg or not (agg.get("judged") or agg.get("errors")):
        return []
    from ..judge.report import summary_lines

    out = [f"### Judge ({md(summary_lines(agg)[0].removeprefix('judge: '))})", ""]
    for key, title in (("rescued", "Rescued by the judge"), ("overturned", "Overturned")):
        items = list(agg.get(key) or [])
        if not items:
            continue
        out.extend([f"**{title}** ({len(items)})", "", _row(["case", "kind", "difficulty",
                                                              "category", "reason"]),
                    "|---|---|---|---|---|"])
        out.extend(_row([code(i.get("id")), md(i.get("kind")), md(i.get("difficulty")),
                         md(f"{i.get('category')}{' (pinned)' if i.get('pinned') else ''}"),
                         md(i.get("reason"))]) for i in items[:limit])
        out.append("")
    for item in list(agg.get("errors") or [])[:limit]:
        out.append(f"- judge error in {code(item.get('id'))}: {md(item.get('error'))}")
    if agg.get("refused"):
        out.append(f"- {md(agg['refused'])}")
    out.append("")
    return out


def _flaky(flaky: list[Mapping[str, Any]], limit: int = 20) -> list[str]:
    """``repeat: N``: the cases whose runs disagreed on the outcome."""
    if not flaky:
        return []
    from ..rules.repeats import flaky_line

    out = [f"### Flaky cases ({len(flaky)})", "",
           "The outcome differs across the runs of these cases (P passed, F failed, E error).",
           ""]
    out.extend(f"- {md(flaky_line(item))}" for item in flaky[:limit])
    if len(flaky) > limit:
        out.append(f"- … {len(flaky) - limit} more")
    return [*out, ""]


def _references(agg: Mapping[str, Any]) -> list[str]:
    from .reference import reference_sections

    out: list[str] = []
    for title, questions, rows in reference_sections(agg):
        out.extend([f"### {md(title)}", "", f"{questions} questions", "",
                    _row(["metric", "reference name", "value"]), "|---|---|---:|"])
        out.extend(_row([code(name), md(label), _num(value, 4)]) for name, label, value in rows)
        out.append("")
    return out


def _by_turn(agg: Mapping[str, Any], gated: set[str]) -> list[str]:
    """Conversation cases: a row per turn number (``aggregates.by_turn``) with the metrics a
    summary leads with, under the conversations' interaction and turn accuracy; nothing
    without a conversation case."""
    from ..figures.by_turn import conversations_line, turn_table

    table = turn_table(agg, gated)
    if table is None:
        return []
    missing = table.missing
    out = ["### By turn", "", md(conversations_line(table.conversations)), "",
           _row(["turn", "turns", "passed", *(["missing"] if missing else []), "turn accuracy",
                 *(md(m) for m in table.metrics)]),
           "|---|---:|---:|" + "---:|" * (int(missing) + 1 + len(table.metrics))]
    for label, turns, passed, lost, rate, means in table.rows:
        out.append(_row([f"**{label}**" if label == "all" else label, str(turns), str(passed),
                         *([str(lost)] if missing else []), _pct(rate),
                         *(_num(v) for v in means)]))
    out.append("")
    return out


def _gates(gates: list[Mapping[str, Any]]) -> list[str]:
    out = ["### Gates", "", _row(["gate", "value", "limit", ""]), "|---|---:|---:|:-:|"]
    for g in gates:
        fmt = _pct if g.get("stat") == "pass_rate" else _num
        value = (md(g["reason"]) if g.get("value") is None and g.get("reason")
                 else fmt(g.get("value")))
        out.append(_row([md(g.get("name")), value,
                         f"{md(g.get('op') or '>=')} {fmt(g.get('limit'))}",
                         "✅" if g.get("passed") else "❌"]))
    out.append("")
    return out


def _audit(audit: Mapping[str, Any]) -> list[str]:
    """The gold audit's findings table (``--queryeval-audit-golds``), errors first."""
    rows = list(audit.get("findings") or [])
    mark = "❌" if audit.get("errors") else ("⚠️" if rows else "✅")
    out = ["### Gold audit", "",
           f"{mark} {audit.get('cases', 0)} cases audited: {audit.get('errors', 0)} errors, "
           f"{audit.get('warnings', 0)} warnings"
           + (" (reported only: `--queryeval-audit-golds=warn`)"
              if audit.get("mode") == "warn" and audit.get("errors") else ""), ""]
    if not rows:
        return out
    out.extend([_row(["severity", "finding", "case", "where", "message"]), "|---|---|---|---|---|"])
    for r in rows[:MAX_FAILURES * 5]:
        gold = f" gold[{r['gold']}]" if r.get("gold") is not None else ""
        out.append(_row([md(r.get("severity")), md(r.get("code")), code(f"{r.get('id')}{gold}"),
                         md(f"{r.get('file')}:{r.get('line')}"), md(_value_text(r.get("message")))]))
    if len(rows) > MAX_FAILURES * 5:
        out.append(f"\n… {len(rows) - MAX_FAILURES * 5} more findings in the JSON report.")
    out.append("")
    return out


def _kinds(agg: Mapping[str, Any], gated: set[str] | None = None) -> list[str]:
    """Per kind, difficulty x what decides first (cases, pass rate, the gated metrics,
    latency, tokens, cost), then the other headline metrics; a suite run on several engines
    gets the same table per dialect after the kinds'."""
    out: list[str] = []
    by_kd: Mapping[str, Mapping[str, Any]] = agg.get("by_kind_difficulty") or {}
    by_kind: Mapping[str, Any] = agg.get("by_kind") or {}
    for kind in sorted(by_kd):
        groups = [(md(d), by_kd[kind][d]) for d in ordered_difficulties(by_kd[kind])]
        if kind in by_kind:
            groups.append(("**all**", by_kind[kind]))
        out.extend([f"### {md(kind)}", ""])
        out.extend(_group_table("difficulty", groups, gated))
    by_dialect: Mapping[str, Any] = agg.get("by_dialect") or {}
    if by_dialect:
        out.extend(["### by dialect", ""])
        out.extend(_group_table("dialect", [(md(d), s) for d, s in by_dialect.items()], gated))
    return out


#: The most gated metrics a table leads with: with latency, tokens and cost a per-kind table
#: stays about ten columns wide (it was 15 to 19); the HTML and Excel reports have them all.
MAX_LEAD = 4


def _group_table(label: str, groups: Sequence[tuple[str, Mapping[str, Any]]],
                 gated: set[str] | None) -> list[str]:
    """One summary table, a row per (already escaped) group name: the few columns that
    decide (cases, pass rate, the gated metrics, latency, tokens, cost); the kinds' and the
    dialects' tables share it, so their columns agree."""
    out: list[str] = []
    names = ordered_metrics(m for _, s in groups for m in (s.get("metrics") or {}))
    lead = lead_metrics(names, gated or set())[:MAX_LEAD]
    latency = LATENCY_METRIC in names
    spend = [m for m in USAGE_METRICS if m in names]
    header = [label, "cases", "pass rate", *(md(m) for m in lead)]
    if latency:
        header.append("latency (s)")
    header += [SPEND_HEADERS[m] for m in spend]
    out.append(_row(header))
    out.append("|---|---:|---:|" + "---:|" * (len(lead) + int(latency) + len(spend)))
    for name, stats in groups:
        metrics = stats.get("metrics") or {}
        cells = [name, str(stats.get("count", 0)), _pct(stats.get("pass_rate")),
                 *(_num((metrics.get(m) or {}).get("mean")) for m in lead)]
        if latency:
            lat = metrics.get(LATENCY_METRIC)
            cells.append(f"{lat['mean']:.2f} ± {lat['std']:.2f}" if lat else "–")
        cells += [spend_cell(m, metrics.get(m)) for m in spend]
        out.append(_row(cells))
    shown = {*lead, *spend, LATENCY_METRIC}
    others = [m for m in names if m not in shown and not lower_is_better(m)
              and not is_detail_metric(m)]
    detail = sum(is_detail_metric(m) for m in names)
    parts = [f"{plural(len(others), 'other metric')} ({md(shortlist(others, 4))})"] \
        if others else []
    if detail:
        parts.append(f"{detail} per-component/per-dimension metrics")
    if parts:
        out.append("")
        out.append(f"<sub>{' and '.join(parts)} are in the HTML, Excel and JSON reports.</sub>")
    out.append("")
    return out


def _denominators(agg: Mapping[str, Any]) -> list[str]:
    """Over how many cases each kind's means were computed, and why the others are missing."""
    from .denominators import UNPARSABLE_HEADER, denominators

    rows = denominators(agg)
    if not rows:
        return []
    out = ["### Denominators", "",
           _row(["kind", "metric", "over", "of cases", "missing (why)", UNPARSABLE_HEADER]),
           "|---|---|---:|---:|---|---:|"]
    out.extend(_row([md(r.kind), md(r.metric), str(r.n), str(r.cases), md(r.missing or "–"),
                     str(r.unparsable)]) for r in rows)
    out.append("")
    return out


def _delta_cell(d: MetricDelta) -> str:
    if d.delta is None:
        return "–"
    mark = arrow(d)
    return f"{mark} 0.000" if mark == "=" else f"{mark} {d.delta:+.3f}"


def _baseline(cmp: Comparison) -> list[str]:
    out = ["### Baseline", ""]
    if not cmp.comparable:
        out.extend([f"❌ not comparable: {md(cmp.reason)}", ""])
        return out
    out.append(f"{'✅' if cmp.passed else '❌'} {md(cmp.summary())}")
    out.append("")
    note = f"{cmp.common} cases in both runs"
    if cmp.new_cases or cmp.removed_cases:
        note += f"; {len(cmp.new_cases)} new and {len(cmp.removed_cases)} removed (not compared)"
    out.extend([note + ".", ""])
    rows = [d for d in cmp.overall()
            if d.metric == PASS_RATE or not is_detail_metric(d.metric) or d.failed]
    rows += cmp.extra_rows()
    sig = cmp.significance is not None
    out.append(_row(["metric", "baseline", "current", "Δ", "max drop",
                     *([significance_header(cmp)] if sig else [])]))
    out.append("|---|---:|---:|---:|---:|" + ("---:|" if sig else ""))
    for d in rows:
        name = md(d.metric) if d.scope == "overall" else f"{md(d.metric)} ({md(d.label)})"
        limit = "" if d.limit is None else f"{d.limit:g}" + (" ❌" if d.failed else "")
        out.append(_row([name, _num(d.baseline), _num(d.current), _delta_cell(d), limit,
                         *([md(significance_cell(d))] if sig else [])]))
    out.append("")
    if cmp.critical_regressions:
        out.extend(["**Critical pass → fail** (each fails the gate): " + ", ".join(
            code(c.id) for c in cmp.critical_regressions[:MAX_FAILURES]), ""])
    for title, changes in (("pass → fail", cmp.regressions), ("fail → pass", cmp.fixes),
                           ("turns pass → fail", cmp.turn_regressions),
                           ("turns fail → pass", cmp.turn_fixes)):
        if changes:
            items = shortlist([f"{code(c.id)} ({md(c.kind)}/{md(c.difficulty)})"
                               for c in changes], MAX_FAILURES)
            out.extend([f"**{title} ({len(changes)})**: {items}", ""])
    out.extend(f"> ⚠️ {md(w)}" for w in cmp.warnings)
    if cmp.warnings:
        out.append("")
    return out


def _failures(cases: list[RecordLike], budget: int) -> list[str]:
    """Failure blocks, in report order, while they fit in ``budget`` characters."""
    failed = [i for i, c in enumerate(cases) if c.get("outcome") in FAILED_OUTCOMES]
    if not failed:
        return []
    out = [f"### Failures ({len(failed)})", ""]
    used = shown = 0
    for index in failed[:MAX_FAILURES]:
        block = _failure_block(full_record(cases, index))  # a merge's: read back whole
        size = sum(len(line) + 1 for line in block)
        if used + size > budget:
            break
        out.extend(block)
        used += size
        shown += 1
    if shown < len(failed):
        out.extend([f"… {len(failed) - shown} more failures not shown here (see the JSON, HTML "
                    "or Excel report).", ""])
    return out


def _failure_block(case: RecordLike) -> list[str]:
    why = ", ".join(str(m) for m in case.get("failed_metrics") or []) or case.get("outcome")
    summary = (f"{case.get('id')} — {case.get('kind')}/{difficulty_of(case)}"
               f" — {why}")
    out = ["<details>", f"<summary>{html.escape(summary)}</summary>", ""]
    if case.get("question"):
        out.extend([f"**Question:** {md(case['question'])}", ""])
    if case.get("error"):
        out.extend([f"**Error:** {md(case['error'])}", ""])
    metrics = case.get("metrics") or {}
    thresholds = case.get("thresholds") or {}
    gated = [m for m in ordered_metrics(thresholds) if m in metrics]
    if gated:
        out.extend([_row(["metric", "value", "threshold"]), "|---|---:|---|"])
        for m in gated:
            t = thresholds[m] or {}
            limit = " ".join(f"{k} {v:g}" for k, v in t.items() if isinstance(v, int | float))
            out.append(_row([md(m), _num(metrics[m]), md(limit)]))
        out.append("")
    turns = scored_turns(case)
    if turns is not None:  # a conversation: each scored turn's question, prediction and gold
        out.extend([_row(["turn", "outcome", "question", "predicted", "gold"]),
                    "|---:|---|---|---|---|"])
        out.extend(_row([md(t.get("turn")), md(t.get("outcome")), md(t.get("question") or ""),
                         code(_value_text(t["predicted"])) if t.get("predicted") is not None
                         else "–", code(_value_text(t["gold"])) if t.get("gold") is not None
                         else "–"]) for t in turns[:MAX_FAILURES])
        out.append("")
    for label, key in (("Predicted", "predicted"), ("Gold", "gold")):
        if (value := case.get(key)) is not None and turns is None:
            out.extend([f"**{label}:**", "", fence(_value_text(value)), ""])
    out.extend(_trajectory_rows(case))
    diff = [str(line) for line in case.get("diff") or []]
    if diff:
        out.extend(["**Diff:**", "", fence("\n".join(diff[:40])), ""])
    out.extend(["</details>", ""])
    return out


def _trajectory_rows(case: RecordLike) -> list[str]:
    """An agent case's steps beside the gold's, the step where they part in bold."""
    from .trajectory import parting_line, step_table, step_text

    table = step_table(case)
    if table is None:
        return []
    out = [f"**Trajectory:** {md(parting_line(table))}", "",
           _row(["step", "agent", "gold"] if table.has_gold else ["step", "agent"]),
           "|---:|---|---|" if table.has_gold else "|---:|---|"]
    for number, mine, theirs in table.rows[:MAX_TRAJECTORY_ROWS]:
        step = f"**{number} ←**" if table.parts_at == number - 1 else str(number)
        cells = [step, code(step_text(mine))]
        if table.has_gold:
            cells.append(code(step_text(theirs)))
        out.append(_row(cells))
    if len(table.rows) > MAX_TRAJECTORY_ROWS:
        out.append(f"… {len(table.rows) - MAX_TRAJECTORY_ROWS:,} more steps (JSON report)")
    out.append("")
    return out


#: Steps of a trajectory shown in a failure block.
MAX_TRAJECTORY_ROWS = 30
