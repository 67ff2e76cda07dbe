"""The ``queryeval`` terminal section and the failure text of one item.

Why one module of this size: the summary, the gate and comparison lines, the last line and a
failure's text are read together by users and must use one vocabulary (issue 24: one word for
one thing), so they are kept side by side.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._util.safetext import printable
from .._util.wording import plural, shortlist
from ..baseline.compare import EPSILON, Comparison, MetricDelta
from ..baseline.verdicts import BELOW, FIXED, KNOWN, NOISE, REGRESSION, judged_outcome
from ..figures.by_turn import scored_turns
from ..figures.columns import gated_metrics, is_detail_metric, is_spider_component
from ..figures.numbers import num, seconds, signed, tokens, usd
from ..figures.numbers import pct as _pct
from ..kindregistry import declared_names
from ..metricnames import FAILED_OUTCOMES, PASS_RATE
from ..model import NO_DIFFICULTY
from .denominators import kind_line
from .models import terminal_lines as model_lines

if TYPE_CHECKING:
    from ..model import RecordLike

_SHORT = {
    "execution_accuracy": "EX", "judge_ex": "judgeEX", "exact_set_match": "ESM", "soft_f1": "softF1",
    "row_match_f1": "rowF1", "entity_set_f1": "entF1", "arity_f1": "arityF1",
    "json_similarity": "OJSS", "structural_similarity": "StrSS",
    "semantic_similarity": "SemSS", "macro_precision": "P", "macro_recall": "R",
    "macro_f1": "F1",
}
_ORDER = ("easy", "medium", "hard", "extra", "simple", "moderate", "challenging", "unknown")


def _fmt(v: object) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    def line(r: list[str]) -> str:
        return "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in
                         enumerate(zip(r, widths, strict=True))).rstrip()
    return [line(header), "  ".join("-" * w for w in widths), *[line(r) for r in rows]]


def _diff_key(d: str) -> tuple[int, str]:
    return (_ORDER.index(d) if d in _ORDER else len(_ORDER), d)


def spider_lines(spider: Mapping[str, Any], *, full: bool) -> list[str]:
    """Spider exact set match per hardness, with the evaluator's averaging rules; ``full``
    prints the official ``evaluation.py`` table line for line."""
    from ..metrics.spider import LEVELS, format_table

    table = format_table(dict(spider)).splitlines()
    if full:
        return ["Spider structure (official evaluator layout):", *table, ""]
    # header, count and the exact-match row of the official table; a hardness with no case
    # shows '-' here (the official layout above keeps the evaluator's 0.000 for it)
    exact = "{:20} ".format("exact match") + " ".join(
        f"{spider[lv]['exact']:<20.3f}" if spider[lv]["count"] else f"{'-':<20}"
        for lv in LEVELS)
    return ["Spider structure (--queryeval-spider-table for the partial matching):",
            table[0].rstrip(), table[1].rstrip(), exact.rstrip(), ""]


def reference_lines(agg: Mapping[str, Any]) -> list[str]:
    """TEXT2SPARQL's and GERBIL's session figures, one line each."""
    from .reference import reference_sections

    lines = []
    for title, questions, rows in reference_sections(agg):
        cells = ", ".join(f"{name}={_fmt(value)}" for name, _, value in rows)
        lines.extend([f"{title}, {plural(int(questions), 'question')}: {cells}", ""])
    return lines


def turn_lines(agg: Mapping[str, Any], gated: set[str]) -> list[str]:
    """Conversation cases: the by-turn table (a row per turn number, the metrics a summary
    leads with) and the conversations line; none without a conversation case."""
    from ..figures.by_turn import conversations_line, turn_table

    table = turn_table(agg, gated)
    if table is None:
        return []
    header = ["turn", "", "turns", "pass", *(["missing"] if table.missing else []),
              *(_SHORT.get(m, m) for m in table.metrics)]
    rows = [[label, "", str(turns), _pct(rate), *([str(missing)] if table.missing else []),
             *(_fmt(v) for v in means)]
            for label, turns, _, missing, rate, means in table.rows]
    return [*_table(header, rows), conversations_line(table.conversations), ""]


def unreviewed_lines(cases: Sequence[RecordLike], limit: int = 10) -> list[str]:
    """The cases mined from traces that no person has confirmed (``reviewed: false``), apart:
    their golds are what production ran, so a pass says the model repeats production, not
    that it is right."""
    ids = [str(c.get("id")) for c in cases if c.get("reviewed") is False]
    if not ids:
        return []
    more = f" (+{len(ids) - limit} more)" if len(ids) > limit else ""
    return [f"unreviewed: {plural(len(ids), 'case')} mined by queryeval mine, golds not yet "
            f"confirmed (-m 'not unreviewed' leaves them out): {', '.join(ids[:limit])}{more}"]


def drifted_lines(cases: Sequence[RecordLike], limit: int = 10) -> list[str]:
    """The pinned cases whose data changed, apart: skipped, not scored, since a pass or a fail
    on moved data would say nothing of the model; each with the tables that changed."""
    found = [(str(c.get("id")), c.get("drifted")) for c in cases if c.get("drifted")]
    if not found:
        return []
    shown = [f"{cid} ({', '.join(str(t) for t in tables)})" if isinstance(tables, list)
             else cid for cid, tables in found[:limit]]
    more = f" (+{len(found) - limit} more)" if len(found) > limit else ""
    return [f"drifted: {plural(len(found), 'case')} skipped, the data pinned for them changed "
            f"(review, then queryeval mine --refresh DIR re-pins): {', '.join(shown)}{more}"]


def summary_lines(report: Mapping[str, Any], *, tags: bool = False, worst: int = 5,
                  spider_table: bool = False, baseline: bool = True) -> list[str]:
    agg = report["aggregates"]
    lines = _kind_lines(agg)
    if agg.get("spider"):
        lines.extend(spider_lines(agg["spider"], full=spider_table))
    from ..figures.turn_table import turn_table_lines

    lines.extend(turn_table_lines(report["cases"], full=spider_table))
    lines.extend(reference_lines(agg))
    if agg.get("by_turn"):  # conversation cases only (the gated set reads every case)
        lines.extend(turn_lines(agg, gated_metrics(report)))
    if agg.get("by_dialect"):
        lines.extend(_pass_rate_table("dialect", agg["by_dialect"]))
    lines.extend(model_lines(agg))
    if tags and agg["by_tag"]:
        lines.extend(_pass_rate_table("tag", agg["by_tag"]))
    lines.extend(_overall_lines(agg["overall"]))
    lines.extend(unreviewed_lines(report["cases"]))
    lines.extend(drifted_lines(report["cases"]))
    lines.extend(carried_lines(report["cases"]))
    lines.extend(threshold_lines(agg.get("thresholds")))
    lines.extend(gating_lines(report, baseline=baseline))
    lines.extend(flaky_lines(report))
    lines.extend(near_miss_summary(report.get("near_miss") or {}))
    from ..neighbours.check import summary_line as neighbour_line

    lines.extend(neighbour_line(report.get("neighbours")))
    from ..judge.report import summary_lines as judge_lines

    lines.extend(judge_lines(report.get("judge")))
    from ..predict.cache import summary_lines as cache_lines

    lines.extend(cache_lines(report.get("prediction_cache")))
    lines.extend(_worst_lines(report["cases"], worst))
    return [printable(line) for line in lines]


def _kind_lines(agg: Mapping[str, Any]) -> list[str]:
    """A table per kind, a row per difficulty: each kind leads with its own headline metrics
    (its declared ones, else its first four), as its reference evaluator reports them."""
    lines: list[str] = []
    for kind, per_diff in agg["by_kind_difficulty"].items():
        metrics = declared_names(kind, "headline_metrics") or tuple(
            sorted(agg["by_kind"][kind]["metrics"])[:4])
        present = [m for m in metrics if m in agg["by_kind"][kind]["metrics"]]
        spend = [c for c in _SPEND if c[0] in agg["by_kind"][kind]["metrics"]]
        header = [kind, "difficulty", "cases", "pass", *[_SHORT.get(m, m) for m in present],
                  *[c[1] for c in spend]]
        rows = []
        for diff in sorted(per_diff, key=_diff_key):
            rows.append(_row(kind, diff, per_diff[diff], present, spend))
        if len(per_diff) > 1:
            rows.append(_row(kind, "all", agg["by_kind"][kind], present, spend))
        lines.extend(_table(header, rows))
        over = kind_line(agg["by_kind"][kind], present, _SHORT)
        if over:
            lines.append(over)
        lines.append("")
    return lines


def _pass_rate_table(title: str, groups: Mapping[str, Any]) -> list[str]:
    """The cases and pass rate of each dialect or tag: groups that cut across the kinds."""
    header = [title, "", "cases", "pass"]
    rows = [[g, "", str(s["count"]), _pct(s["pass_rate"])] for g, s in groups.items()]
    return [*_table(header, rows), ""]


def _overall_lines(o: Mapping[str, Any]) -> list[str]:
    """The run's counts in one line, and what it spent when it spent anything."""
    granted = f" ({o['xfailed_by_gating']} by the gating mode)" if o.get(
        "xfailed_by_gating") else ""
    lines = [f"overall: {plural(o['count'], 'case')}, {o['passed']} passed, "
             f"{o['failed']} failed, {plural(o['errors'], 'error')}, {o['xfailed']} "
             f"xfailed{granted}, {o['skipped']} skipped; "
             f"pass rate {_pct(o['pass_rate'])}"]
    spent = spent_line(o)
    if spent:
        lines.append(spent)
    return lines


def _worst_lines(cases: Sequence[RecordLike], worst: int) -> list[str]:
    """The first cases to look at: errors before failures, the lowest scores first."""
    bad = [c for c in cases if judged_outcome(c) in FAILED_OUTCOMES]
    if not (bad and worst):
        return []
    lines = [f"worst cases ({min(worst, len(bad))} of {len(bad)} not passing):"]
    bad.sort(key=lambda c: (c.get("outcome") != "error", _score(c)))
    for c in bad[:worst]:
        why = c.get("error") or c.get("reason") or ", ".join(
            f"{m}={metric_text(m, (c.get('metrics') or {}).get(m))}"
            for m in c.get("failed_metrics", []))
        shown = c["outcome"] if not c.get("standing") else f"{c['outcome']} ({c['standing']})"
        lines.append(f"  {c['id']} [{c['kind']}/{c.get('difficulty') or NO_DIFFICULTY}] "
                     f"{shown}: {_one_line(why)}")
    return lines


def carried_lines(cases: Sequence[RecordLike]) -> list[str]:
    """``--queryeval-resume``: how many cases an earlier attempt scored, and from which report."""
    sources: dict[str, int] = {}
    for c in cases:
        source = c.get("carried")
        if source:
            sources[str(source)] = sources.get(str(source), 0) + 1
    if not sources:
        return []
    total = sum(sources.values())
    where = ", ".join(f"{n} from {name}" for name, n in sources.items())
    return [f"carried: {plural(total, 'case')} scored by an earlier attempt, not run again "
            f"({where}; --queryeval-resume)"]


def threshold_lines(coverage: Mapping[str, Any] | None, limit: int = 10) -> list[str]:
    """How many cases each threshold gated, and the cases none did (``record_only: true``):
    a gate with a hole must say so (:func:`~pytest_queryeval.rules.thresholds.coverage`)."""
    from ..rules.thresholds import describe_bound

    if not coverage:
        return []
    gated, ungated = list(coverage.get("gated") or ()), list(coverage.get("ungated") or ())
    lines: list[str] = []
    if gated:
        parts = []
        for entry in gated:
            by_default = int(entry.get("by_default") or 0)
            parts.append(f"{entry['metric']} {describe_bound(entry)} gated "
                         f"{plural(int(entry['cases']), 'case')}"
                         + (f" ({by_default} by default)" if by_default else ""))
        lines.append("thresholds: " + ", ".join(parts))
    elif ungated:
        lines.append("thresholds: none applied")
    if ungated:
        n = len(ungated)
        shown = shortlist(ungated, limit)
        lines.append(f"ungated: {plural(n, 'case')} {'has' if n == 1 else 'have'} no threshold "
                     f"on a score (record_only: true), {'its' if n == 1 else 'their'} scores "
                     f"are recorded only: {shown}")
    return lines


def near_miss_summary(agg: Mapping[str, Any]) -> list[str]:
    from ..rules.nearmiss import summary_lines

    return summary_lines(agg)


def flaky_lines(report: Mapping[str, Any], limit: int = 20) -> list[str]:
    """``repeat: N``: the cases whose runs disagreed on the outcome."""
    from ..rules.repeats import flaky_line

    flaky = list(report.get("flaky") or [])
    if not flaky:
        return []
    lines = [f"flaky cases ({len(flaky)}: the outcome differs across runs):"]
    lines.extend(f"  {flaky_line(item)}" for item in flaky[:limit])
    if len(flaky) > limit:
        lines.append(f"  … {len(flaky) - limit} more (the JSON report's 'flaky' lists them all)")
    return lines


def gating_lines(report: Mapping[str, Any], limit: int = 10, *,
                  baseline: bool = True) -> list[str]:
    """``--queryeval-gating baseline/gates``: the counts, and the cases that changed.
    ``baseline`` says whether a baseline was given: without one, ``gates`` mode cannot tell
    a regression or a fixed case, so it does not count them."""
    mode = (report.get("run") or {}).get("gating") or "strict"
    if mode == "strict":
        return []
    cases = report["cases"]
    groups = {v: [str(c["id"]) for c in cases if c.get("standing") == v]
              for v in (KNOWN, BELOW, REGRESSION, FIXED, NOISE)}
    counts = [f"{len(groups[KNOWN])} failing since baseline (xfailed)"] if mode == "baseline" else []
    if mode == "evidence":  # the evidence gate decides: each failure weighed by its history
        counts.append(f"{len(groups[NOISE])} {NOISE} (xfailed)")
    if groups[BELOW] or mode == "gates":
        counts.append(f"{len(groups[BELOW])} below threshold (xfailed)")
    if baseline or mode == "baseline":
        xfailed = sum(c.get("standing") == REGRESSION and c.get("outcome") == "xfailed"
                      for c in cases)  # gates mode: the gates decide
        decide = "the evidence gate decides" if mode == "evidence" else "the gates decide"
        counts += [plural(len(groups[REGRESSION]), "regression")
                   + (f" ({xfailed} xfailed: {decide})" if xfailed else ""),
                   f"{len(groups[FIXED])} fixed"]
    lines = [f"gating {mode}: " + ", ".join(counts)]
    for title, ids in (("REGRESSION", groups[REGRESSION]), ("fixed", groups[FIXED])):
        if ids:
            more = f" … {len(ids) - limit} more" if len(ids) > limit else ""
            lines.append(f"{title}: {', '.join(ids[:limit])}{more}")
    return lines


def _score(c: RecordLike) -> float:
    metrics = c.get("metrics") or {}
    for m in declared_names(str(c.get("kind")), "headline_metrics"):
        if m in metrics:  # null: a NaN score, written as null in the JSON report
            value = metrics[m]
            return float(value) if isinstance(value, int | float) else 0.0
    return 0.0


def _one_line(text: str, limit: int = 110) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _row(kind: str, diff: str, stats: Mapping[str, Any], metrics: list[str],
         spend: Sequence[tuple[str, str, str, Any]] = ()) -> list[str]:
    del kind
    return ["", diff, str(stats["count"]), _pct(stats["pass_rate"]),
            *[_fmt(stats["metrics"].get(m, {}).get("mean")) for m in metrics],
            *[show(stats["metrics"].get(m, {}).get(stat)) for m, _, stat, show in spend]]


#: Latency and spend beside the accuracy columns: (metric, header, statistic, format).
_SPEND: tuple[tuple[str, str, str, Callable[[float | None], str]], ...] = (
    ("prediction_seconds", "latency", "mean", seconds),
    ("completion_tokens", "tokens out", "total", tokens),
    ("cost_usd", "cost", "total", usd),
)


#: Headers of the usage columns of the Markdown and HTML summaries (each a total over the group).
SPEND_HEADERS = {"prompt_tokens": "prompt tokens", "completion_tokens": "completion tokens",
                 "cost_usd": "cost (USD)"}


def metric_text(metric: str, value: float | None) -> str:
    """A case's metric as the reports print it: dollars, whole tokens, else 3 decimals."""
    if metric == "cost_usd":
        return usd(value)
    if metric in ("prompt_tokens", "completion_tokens"):
        return tokens(value)
    return _fmt(value)


def spend_cell(metric: str, stats: Mapping[str, Any] | None) -> str:
    """A group's total of a usage metric, formatted (``-`` when no case has it)."""
    total = (stats or {}).get("total")
    if total is None and stats:  # a report written before totals: mean x n
        total = stats.get("mean", 0) * stats.get("n", 0)
    return usd(total) if metric == "cost_usd" else tokens(total)


def spent_line(stats: Mapping[str, Any]) -> str | None:
    """``spent: N prompt + M completion tokens, $X (mean $Y per case); latency ...``, or None
    when the run recorded neither usage nor latency."""
    metrics = stats.get("metrics") or {}
    parts = []
    if "prompt_tokens" in metrics or "completion_tokens" in metrics:
        parts.append(f"{tokens((metrics.get('prompt_tokens') or {}).get('total', 0))} prompt + "
                     f"{tokens((metrics.get('completion_tokens') or {}).get('total', 0))} "
                     "completion tokens")
    if "cost_usd" in metrics:
        cost = metrics["cost_usd"]
        parts.append(f"{usd(cost.get('total'))} (mean {usd(cost.get('mean'))} per case)")
    if not parts:
        return None
    latency = metrics.get("prediction_seconds")
    tail = (f"; latency mean {seconds(latency.get('mean'))}, total "
            f"{seconds(latency.get('total'))}") if latency else ""
    return "spent: " + ", ".join(parts) + tail


def gate_lines(gates: Sequence[Mapping[str, Any]]) -> list[str]:
    out = []
    for g in gates:
        mark = "PASS" if g["passed"] else "FAIL"
        if g["value"] is not None:
            value = f"{g['value']:.4f}"
        elif g.get("allow_empty"):
            value = f"n/a ({g.get('reason') or 'nothing scored'}; allow_empty: true)"
        else:
            value = f"n/a ({g.get('reason') or 'nothing scored'})"
        what = "pass rate" if g["stat"] == "pass_rate" else f"{g['stat']} {g['metric']}"
        if isinstance(g.get("k"), int):  # pass@k / pass^k of the repeated cases
            what = f"{'pass@' if g['metric'] == 'pass_at_k' else 'pass^'}{g['k']} ({g['metric']})"
        scope = "".join(f" {k}={g[k]}" for k in ("kind", "tag", "model") if g.get(k)) + (
            " reviewed only" if g.get("reviewed_only") else "")
        out.append(f"gate {mark}: {what}{scope} = {value} (required {g.get('op') or '>='} "
                   f"{g['limit']:g}, {_gate_cases(g)})"
                   + (f": {g['reason']}" if g["value"] is not None and g.get("reason") else ""))
    return out


def _gate_cases(gate: Mapping[str, Any]) -> str:
    """``66 of 88 cases scored`` when the value is computed over fewer cases than the gate
    selects (a mean over the cases having the metric, a pass rate over the judged ones)."""
    cases = int(gate["cases"])
    over = gate.get("n", cases)  # reports written before ``n`` counted the selection only
    if over is None or over == cases:
        return plural(cases, "case")
    return f"{over} of {plural(cases, 'case')} " + (
        "judged" if gate["stat"] == "pass_rate" else "scored")


def outcome_line(report: Mapping[str, Any], *, failed: bool,
                 problems: Sequence[str] = ()) -> str:
    """The summary's last line: :func:`~pytest_queryeval.report.outcome.run_outcome`'s (``failed``:
    the session fails), which every report's headline states in the same words."""
    from .outcome import run_outcome

    return run_outcome(report, failing=failed, problems=problems).line


def _show(value: object, limit: int = 2000) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} chars)"


def failure_text(record: RecordLike, *, spider_components: bool = False,
                 verbose: bool = False) -> str:
    """What failed first (the reason and the diff), then question, predicted vs gold and the
    metric/value/threshold table of the gated metrics (every metric with ``verbose``, pytest's
    ``-v``); control characters written as escapes (a prediction's escape codes never reach
    the console or the junit XML)."""
    return printable(_failure_text(record, spider_components, verbose))


def _failure_text(record: RecordLike, spider_components: bool, verbose: bool) -> str:
    out: list[str] = []
    header = f"{record['kind']} case {record['id']!r} ({record.get('file')}:{record.get('line')})"
    out.append(header)
    if record.get("standing") == "regression":
        out.append("REGRESSION: this case passed in the baseline")
    if record.get("error"):
        out.append(f"error: {record['error']}")
        return "\n".join(out)
    if record.get("reason"):
        out.append(f"reason:    {record['reason']}")
    diff = record.get("diff") or []
    if diff:  # what decides comes first: a 13-row metric table used to push it off screen
        out.extend(str(d) for d in diff)
        out.append("")
    out.extend(_answer_lines(record))
    from .trajectory import trajectory_lines

    out.extend(trajectory_lines(record))
    out.extend(_metric_lines(record, spider_components, verbose))
    return "\n".join(out)


def _answer_lines(record: RecordLike) -> list[str]:
    """The question, the prediction and the gold side by side; for a conversation, those of
    each scored turn, since a case-level pair would hide which turn went wrong."""
    turns = scored_turns(record)
    if turns is not None:  # a conversation: each scored turn's question, prediction and gold
        return _turn_blocks(turns)
    out: list[str] = []
    if record.get("question"):
        out.append(f"question:  {record['question']}")
    out.append("predicted: " + _show(record.get("predicted")).replace("\n", "\n           "))
    fence = (record.get("details") or {}).get("fence_stripped")
    if fence:
        out.append(f"           (Markdown code fence {fence} stripped before scoring)")
    out.append("gold:      " + _show(record.get("gold")).replace("\n", "\n           "))
    return out


def _metric_lines(record: RecordLike, spider_components: bool, verbose: bool) -> list[str]:
    """The metric table, cut to the metrics that decide unless asked for more: the lines
    that say how many were left out tell the reader which option shows them."""
    metrics = record.get("metrics") or {}
    thresholds = record.get("thresholds") or {}
    failed = set(record.get("failed_metrics") or [])
    names = [m for m in thresholds] + [m for m in metrics if m not in thresholds]
    hidden = others = 0
    if not spider_components:  # the structure diff lines above name the mismatched parts
        kept = [m for m in names if m in thresholds or not is_spider_component(m)]
        hidden, names = len(names) - len(kept), kept
    if not verbose:  # the metrics that decide; the rest with -v
        kept = [m for m in names if m in thresholds or m in failed]
        others, names = len(names) - len(kept), kept
    out: list[str] = []
    if names:
        rows = []
        for m in names:
            t = thresholds.get(m)
            bound = "" if not t else " and ".join(
                f"{'>=' if k == 'min' else '<='} {v:g}" for k, v in t.items())
            mark = "FAIL" if m in failed else ("ok" if t else "")
            rows.append([m, metric_text(m, metrics.get(m)), bound, mark])
        width = [max(len(r[i]) for r in [["metric", "value", "threshold", ""], *rows])
                 for i in range(4)]
        out.append("")
        out.append("  ".join(h.ljust(w) for h, w in
                             zip(["metric", "value", "threshold", ""], width, strict=True)).rstrip())
        for r in rows:
            out.append("  ".join(c.ljust(w) for c, w in zip(r, width, strict=True)).rstrip())
    if others:
        out.append(f"({plural(others, 'other metric')}: -v shows them)")
    if hidden:
        out.append(f"({plural(hidden, 'Spider component metric')}: --queryeval-spider-table "
                   "shows them)")
    return out


def _turn_blocks(turns: Sequence[Mapping[str, Any]]) -> list[str]:
    """``turn 2 (failed): question`` then its predicted and gold, indented, per scored turn."""
    out: list[str] = []
    for entry in turns:
        out.append(f"turn {entry.get('turn')} ({entry.get('outcome')}): "
                   f"{_one_line(str(entry.get('question') or ''), 200)}")
        for label, key in (("predicted", "predicted"), ("gold", "gold")):
            text = _show(entry.get(key)).replace("\n", "\n             ")
            out.append(f"  {label + ':':<10} {text}")
    return out


# --------------------------------------------------------------------------------------------
# baseline comparison


def arrow(d: MetricDelta) -> str:
    """▲ value went up, ▼ down, = unchanged (direction of the number, not of quality)."""
    delta = d.delta
    if delta is None or abs(delta) <= EPSILON:
        return "="
    return "▲" if delta > 0 else "▼"


def significance_header(cmp: Comparison) -> str:
    """Column title of the p-value / interval column."""
    level = 1 - (cmp.significance or 0.05)
    return f"p / {level:.0%} CI"


def significance_cell(d: MetricDelta) -> str:
    """``p=0.031`` (pass rate), ``[-0.210, -0.040]`` (a metric), ``not significant`` marks."""
    if d.p_value is not None:
        text = f"p={d.p_value:.3g}"
    elif d.ci_low is not None and d.ci_high is not None:
        text = f"[{d.ci_low:+.3f}, {d.ci_high:+.3f}]"
    else:
        return ""
    return text + (" *" if d.significant else "")


def format_comparison(cmp: Comparison, *, max_cases: int = 10,
                      spider_components: bool = False) -> list[str]:
    """Compact terminal lines: overall deltas with arrows, failed groups, flips, a verdict.
    The Spider component scores are left out unless ``spider_components`` (or they failed)."""
    lines: list[str] = []
    models = []
    if cmp.models.get("baseline") or cmp.models.get("current"):
        models.append(f"model: {cmp.models.get('current') or 'unnamed'} vs baseline "
                      f"{cmp.models.get('baseline') or 'unnamed'}")
    if not cmp.comparable:
        lines.append(f"baseline: not comparable — {cmp.reason}")
        lines.extend(models)
        lines.append(comparison_line(cmp))
        return lines
    head = f"baseline: {plural(cmp.common, 'case')} in both runs"
    if cmp.new_cases or cmp.removed_cases:
        head += (f", {len(cmp.new_cases)} new, {len(cmp.removed_cases)} removed "
                 f"(not compared)")
    lines.append(head)
    lines.extend(models)
    lines.extend(_delta_lines(cmp, spider_components))
    lines.extend(_flip_lines(cmp, max_cases))
    lines.extend(f"warning: {w}" for w in cmp.warnings)
    lines.append(comparison_line(cmp))
    return lines


def _delta_lines(cmp: Comparison, spider_components: bool) -> list[str]:
    """The delta table: every overall metric that says something (an unchanged detail metric
    does not), then each failed group's; the lines after it count what was left out."""
    overall = [d for d in cmp.overall()
               if spider_components or d.failed or not is_spider_component(d.metric)]
    spider = len(cmp.overall()) - len(overall)
    shown = [d for d in overall
             if d.metric == PASS_RATE or not is_detail_metric(d.metric) or d.failed
             or (d.delta is not None and abs(d.delta) > EPSILON)]
    hidden = len(overall) - len(shown)
    extra = cmp.extra_rows()
    rows = [(d.metric if d.scope == "overall" else f"{d.metric} ({d.label})", d)
            for d in [*shown, *extra]]
    width = max([len("metric"), *(len(name) for name, _ in rows)])
    sig = cmp.significance is not None
    lines = [f"  {'metric':<{width}}  {'baseline':>8}  {'current':>8}  {'delta':>9}  "
             f"{'max drop':>8}" + (f"  {significance_header(cmp)}" if sig else "")]
    for name, d in rows:
        limit = "" if d.limit is None else f"{d.limit:g}"
        flag = "  FAIL" if d.failed else ""
        mark = arrow(d)
        delta = num(0.0) if mark == "=" and d.delta is not None else signed(d.delta)
        evidence = f"  {significance_cell(d):<24}" if sig else ""
        lines.append(f"  {name:<{width}}  {num(d.baseline):>8}  {num(d.current):>8}  "
                     f"{mark} {delta:>7}  {limit:>8}{evidence}{flag}".rstrip())
    if sig and cmp.bootstrap:
        lines.append(f"  (p: exact McNemar on the pass/fail flips; CI: paired bootstrap, "
                     f"{cmp.bootstrap['n_resamples']:,} resamples, seed "
                     f"{cmp.bootstrap['seed']}, percentile)")
    if hidden:
        lines.append(f"  ({hidden} per-dimension/component metrics unchanged)")
    if spider:
        lines.append(f"  ({plural(spider, 'Spider component metric')}: --queryeval-spider-table)")
    return lines


def _flip_lines(cmp: Comparison, max_cases: int) -> list[str]:
    """The cases (and conversation turns) whose outcome flipped, critical regressions first:
    each of those fails the gate by itself."""
    lines: list[str] = []
    if cmp.critical_regressions:
        lines.append(f"critical pass → fail: {len(cmp.critical_regressions)} (each fails the "
                     "baseline gate)")
        lines.extend(f"  {ch.id} [{ch.kind}/{ch.difficulty}] {ch.before} → {ch.after}"
                     for ch in cmp.critical_regressions[:max_cases])
    for title, changes in (("pass → fail", cmp.regressions), ("fail → pass", cmp.fixes),
                           ("turns pass → fail", cmp.turn_regressions),
                           ("turns fail → pass", cmp.turn_fixes)):
        if not changes:
            continue
        lines.append(f"{title}: {len(changes)}")
        for ch in changes[:max_cases]:
            why = ", ".join(ch.failed_metrics) or (ch.error or "")
            lines.append(f"  {ch.id} [{ch.kind}/{ch.difficulty}] {ch.before} → {ch.after}"
                         + (f"  ({why})" if why and ch.after != "passed" else ""))
        if len(changes) > max_cases:
            lines.append(f"  … {len(changes) - max_cases} more")
    return lines


def comparison_line(cmp: Comparison) -> str:
    """``baseline comparison: OK: ...``: the aggregate comparison's result. Not called a
    standing: ``--queryeval-gating`` judges cases, and both appear in one run."""
    return "baseline comparison: " + cmp.summary().removeprefix("baseline ")
