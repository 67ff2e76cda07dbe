"""Excel report (``--queryeval-xlsx``): the run's Outcome, Summary with native charts, Details,
SDMX overview, Run.

Laid out after the Denodo AI SDK evaluator (Summary grouped by difficulty, native charts that
users can post-process in Excel, one Details row per question) and the SDMX methodology's
overview sheet (macro recall / precision and the per-dimension detail cell). Everything comes
from the JSON report dict: nothing else (environment, connection strings) can leak into it.

Why one module of this size: the workbook's sheets share their column order, number formats and
chart ranges, which must agree cell for cell.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._util.safefile import atomic_output
from ..errors import MissingDependency
from ..figures.columns import (
    difficulty_of,
    gated_metrics,
    is_detail_metric,
    lead_metrics,
    ordered_difficulties,
    ordered_metrics,
)
from ..kindregistry import declares
from ..metricnames import FAILED_OUTCOMES, PASSED_OUTCOMES, is_timing, is_usage
from ..model import RecordLike
from .document import Report, full_record

if TYPE_CHECKING:  # xlsxwriter ships no type information: these name what is passed around
    from xlsxwriter.format import Format
    from xlsxwriter.workbook import Workbook
    from xlsxwriter.worksheet import Worksheet

    #: The workbook's cell formats, by the name the sheets use.
    Formats = dict[str, Format]

__all__ = ["LATENCY_METRIC", "write_xlsx"]

#: The metric the Summary's latency columns are taken from.
LATENCY_METRIC = "prediction_seconds"
#: Excel's limit on the characters in one cell.
CELL_LIMIT = 32767
#: Most metric series drawn in one kind's chart (the table has them all).
CHART_SERIES = 6

SUMMARY_FIXED = ("Kind", "Difficulty", "Number of samples", "Percent correct")
LATENCY_HEADERS = ("Mean latency (s)", "Latency std (s)")
#: With a baseline: the group's cases that passed there and fail now, and the reverse.
CHANGE_HEADERS = ("Regressions", "Fixed")
#: What the group's predictions cost (totals), after the latency columns.
USAGE_COLUMNS = (("prompt_tokens", "Prompt tokens", "int"),
                 ("completion_tokens", "Completion tokens", "int"),
                 ("cost_usd", "Cost (USD)", "usd"))
DETAILS_FIXED = ("ID", "Kind", "Difficulty", "Tags", "Question", "Predicted", "Gold", "Outcome",
                 "Failed metrics")
SDMX_HEADERS = ("ID", "Difficulty", "Tags", "Question", "Outcome", "macro recall",
                "macro precision", "macro f1", "indicator selection details")
ALL = "all"


def _xlsxwriter() -> Any:
    try:
        import xlsxwriter
    except ImportError as exc:
        raise MissingDependency(
            "the Excel report (--queryeval-xlsx) needs xlsxwriter: "
            "pip install pytest-queryeval[excel]") from exc
    return xlsxwriter


def write_xlsx(report: Report, path: str | os.PathLike[str],
               comparison: object = None) -> Path:
    """Write the workbook via a temporary file, so an existing report is replaced whole.
    ``comparison``: unused, the workbook reads the report's ``baseline`` (every writer of
    :data:`.formats.REPORT_WRITERS` takes it)."""
    xlsxwriter = _xlsxwriter()
    target = Path(path)
    with atomic_output(target, suffix=".xlsx", special="stream") as fh:
        # Strings stay strings: a question or a predicted query starting with "=" must never
        # become a formula, and URLs are not turned into links. A stream (a FIFO, a terminal)
        # cannot be seeked: the zip is built in memory, then written to it.
        wb = xlsxwriter.Workbook(fh if fh.seekable() else io.BytesIO(), {
            "strings_to_formulas": False, "strings_to_urls": False,
            "strings_to_numbers": False, "nan_inf_to_errors": True})
        fmt = _formats(wb)
        _outcome_sheet(wb, fmt, report)
        _summary(wb, fmt, report)
        _all_metrics(wb, fmt, report)
        if (report.get("aggregates") or {}).get("by_dialect"):
            _dialect_sheet(wb, fmt, report)
        if (report.get("aggregates") or {}).get("by_turn"):
            _by_turn_sheet(wb, fmt, report["aggregates"])
        if (report.get("aggregates") or {}).get("models"):
            _model_sheet(wb, fmt, report)
        _details(wb, fmt, report)
        sdmx = [c for c in report.get("cases") or []
                if declares(str(c.get("kind")), "code_selection")]
        if sdmx:
            _sdmx_overview(wb, fmt, sdmx)
        if report.get("flaky"):
            _flaky_sheet(wb, fmt, list(report["flaky"]))
        if report.get("audit"):
            _audit_sheet(wb, fmt, report["audit"])
        _reference_sheet(wb, fmt, report.get("aggregates") or {})
        _denominators_sheet(wb, fmt, report.get("aggregates") or {})
        if (report.get("near_miss") or {}).get("overall"):
            _near_miss_sheet(wb, fmt, report)
        judge = report.get("judge") or {}
        if judge.get("judged") or judge.get("errors"):
            _judge_sheet(wb, fmt, judge)
        _run_sheet(wb, fmt, report)
        wb.close()
        if not fh.seekable():
            fh.write(wb.filename.getvalue())
    return target


def _formats(wb: Workbook) -> Formats:
    base = {"valign": "top"}
    return {
        "header": wb.add_format({**base, "bold": True, "bg_color": "#DDE4EE", "border": 1,
                                 "text_wrap": True}),
        "text": wb.add_format(base),
        "wrap": wb.add_format({**base, "text_wrap": True}),
        "mono": wb.add_format({**base, "text_wrap": True, "font_name": "Consolas"}),
        "pct": wb.add_format({**base, "num_format": "0.0%"}),
        "num": wb.add_format({**base, "num_format": "0.000"}),
        "sec": wb.add_format({**base, "num_format": "0.00"}),
        "int": wb.add_format({**base, "num_format": "0"}),
        "usd": wb.add_format({**base, "num_format": "$0.000000"}),
        "total_usd": wb.add_format({**base, "bold": True, "top": 1, "num_format": "$0.000000"}),
        "total": wb.add_format({**base, "bold": True, "top": 1}),
        "total_pct": wb.add_format({**base, "bold": True, "top": 1, "num_format": "0.0%"}),
        "total_num": wb.add_format({**base, "bold": True, "top": 1, "num_format": "0.000"}),
        "total_sec": wb.add_format({**base, "bold": True, "top": 1, "num_format": "0.00"}),
        "total_int": wb.add_format({**base, "bold": True, "top": 1, "num_format": "0"}),
        "passed": wb.add_format({**base, "bg_color": "#C6EFCE", "font_color": "#006100"}),
        "failed": wb.add_format({**base, "bg_color": "#FFC7CE", "font_color": "#9C0006"}),
        "other": wb.add_format({**base, "bg_color": "#EDEDED", "font_color": "#555555"}),
        "title": wb.add_format({"bold": True, "font_size": 13}),
        "title_passed": wb.add_format({"bold": True, "font_size": 13, "font_color": "#006100",
                                       "bg_color": "#C6EFCE"}),
        "title_failed": wb.add_format({"bold": True, "font_size": 13, "font_color": "#9C0006",
                                       "bg_color": "#FFC7CE"}),
        "title_inconclusive": wb.add_format({"bold": True, "font_size": 13,
                                             "font_color": "#7F6000", "bg_color": "#FFEB9C"}),
    }


def _cell_text(value: object) -> str:
    """Text for a cell: strings as they are, other JSON values compact, within Excel's limit."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                          default=str)
    if len(text) > CELL_LIMIT:
        marker = "… [truncated]"
        text = text[: CELL_LIMIT - len(marker)] + marker
    return text


def _write_text(ws: Worksheet, row: int, col: int, value: object, fmt: Format) -> None:
    text = _cell_text(value)
    if text:
        ws.write_string(row, col, text, fmt)
    else:
        ws.write_blank(row, col, None, fmt)


def _write_num(ws: Worksheet, row: int, col: int, value: object, fmt: Format) -> None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        ws.write_number(row, col, float(value), fmt)
    else:
        ws.write_blank(row, col, None, fmt)


# -------------------------------------------------------------------------------------------
# Summary


def _summary_groups(report: Mapping[str, Any]) -> tuple[list[tuple[str, str, Mapping[str, Any]]],
                                                        list[tuple[str, str, Mapping[str, Any]]]]:
    """(kind, difficulty, GroupStats) rows, then the total rows (per kind, overall)."""
    agg = report.get("aggregates") or {}
    by_kd: Mapping[str, Mapping[str, Any]] = agg.get("by_kind_difficulty") or {}
    detail = [(kind, diff, by_kd[kind][diff])
              for kind in sorted(by_kd) for diff in ordered_difficulties(by_kd[kind])]
    by_kind: Mapping[str, Any] = agg.get("by_kind") or {}
    totals = [(kind, ALL, by_kind[kind]) for kind in sorted(by_kind)]
    if agg.get("overall"):
        totals.append((ALL, ALL, agg["overall"]))
    return detail, totals


def _changed(report: Mapping[str, Any]) -> dict[str, set[str]] | None:
    """Regressed and fixed case ids (the gating mode's and the baseline comparison's flips),
    or None when the run had no baseline."""
    cases = report.get("cases") or []
    cmp = report.get("baseline")
    if not isinstance(cmp, Mapping) and not any(c.get("baseline_status") is not None
                                                for c in cases):
        return None
    out = {"regressions": {str(c.get("id")) for c in cases if c.get("standing") == "regression"},
           "fixed": {str(c.get("id")) for c in cases if c.get("standing") == "fixed"}}
    if isinstance(cmp, Mapping):
        out["regressions"].update(str(ch.get("id")) for ch in cmp.get("regressions") or [])
        out["fixed"].update(str(ch.get("id")) for ch in cmp.get("fixes") or [])
    return out


def _summary(wb: Workbook, fmt: Formats, report: Mapping[str, Any]) -> None:
    """What decides first: samples, percent correct, regressions and fixed (with a baseline),
    the gated metrics, latency, tokens and cost. Every metric is on the *All metrics* sheet."""
    detail, totals = _summary_groups(report)
    ws, first_metric, lat_col, metric_names = _group_sheet(
        wb, fmt, report, "Summary", SUMMARY_FIXED[:2],
        [((kind, diff), stats, False) for kind, diff, stats in detail]
        + [((kind, diff), stats, True) for kind, diff, stats in totals],
        lambda c, kind, diff: kind in (ALL, str(c.get("kind"))) and diff in (ALL, difficulty_of(c)))
    if detail:
        _summary_charts(wb, ws, detail, metric_names, lat_col, chart_row=len(detail)
                        + len(totals) + 3, first_metric=first_metric)


def _dialect_sheet(wb: Workbook, fmt: Formats, report: Mapping[str, Any]) -> None:
    """The Summary's columns per dialect, for a suite run on several engines (the JSON's
    ``by_dialect``)."""
    by_dialect: Mapping[str, Any] = (report.get("aggregates") or {}).get("by_dialect") or {}
    _group_sheet(wb, fmt, report, "By dialect", ("Dialect",),
                 [((d,), stats, False) for d, stats in by_dialect.items()],
                 lambda c, dialect: str(c.get("dialect")) == dialect)


def _model_sheet(wb: Workbook, fmt: Formats, report: Mapping[str, Any]) -> None:
    """The Summary's columns per model, for a run of several models (``aggregates.models``)."""
    models: Mapping[str, Any] = (report.get("aggregates") or {}).get("models") or {}
    _group_sheet(wb, fmt, report, "By model", ("Model",),
                 [((m,), stats, False) for m, stats in models.items()],
                 lambda c, model: c.get("model") == model)


def _group_sheet(wb: Workbook, fmt: Formats, report: Mapping[str, Any], title: str,
                 labels: Sequence[str],
                 groups: Sequence[tuple[tuple[str, ...], Mapping[str, Any], bool]],
                 member: Callable[..., bool]) -> tuple[Any, int, int, list[str]]:
    """A sheet of one row per group (its label cells, samples, percent correct, flips, the
    deciding metrics, latency, spend); ``member(case, *labels)`` says which cases a row's flips
    count. The Summary and the dialects' sheet share it, so their columns agree. Returns the
    sheet, the first metric column, the latency column and the metric columns' names."""
    ws = wb.add_worksheet(title)
    stats_of = [stats for _, stats, _ in groups]
    metric_names = lead_metrics(
        (m for stats in stats_of for m in (stats.get("metrics") or {})
         if m != LATENCY_METRIC and not is_usage(m)), gated_metrics(report))
    present = {m for stats in stats_of for m in (stats.get("metrics") or {})}
    usage = [c for c in USAGE_COLUMNS if c[0] in present]
    changed = _changed(report)
    flips = list(CHANGE_HEADERS) if changed is not None else []
    fixed = [*labels, *SUMMARY_FIXED[2:]]
    headers = [*fixed, *flips, *metric_names, *LATENCY_HEADERS, *(c[1] for c in usage)]
    for col, name in enumerate(headers):
        ws.write_string(0, col, name, fmt["header"])
    first_metric = len(fixed) + len(flips)
    lat_col = first_metric + len(metric_names)
    count_col = len(labels)
    cases = report.get("cases") or []
    for row, (names, stats, total) in enumerate(groups, start=1):
        p = "total_" if total else ""
        for col, name in enumerate(names):
            ws.write_string(row, col, name, fmt["total" if total else "text"])
        _write_num(ws, row, count_col, stats.get("count"), fmt[p + "int"])
        _write_num(ws, row, count_col + 1, stats.get("pass_rate"), fmt[p + "pct"])
        if changed is not None:
            members = {str(c.get("id")) for c in cases if member(c, *names)}
            for i, key in enumerate(("regressions", "fixed")):
                _write_num(ws, row, len(fixed) + i, len(members & changed[key]),
                           fmt[p + "int"])
        metrics = stats.get("metrics") or {}
        for i, name in enumerate(metric_names):
            _write_num(ws, row, first_metric + i, (metrics.get(name) or {}).get("mean"),
                       fmt[p + "num"])
        latency = metrics.get(LATENCY_METRIC) or {}
        _write_num(ws, row, lat_col, latency.get("mean"), fmt[p + "sec"])
        _write_num(ws, row, lat_col + 1, latency.get("std"), fmt[p + "sec"])
        for i, (name, _, style) in enumerate(usage):
            spent = metrics.get(name) or {}
            _write_num(ws, row, lat_col + 2 + i, spent.get("total"), fmt[p + style])
    ws.freeze_panes(1, len(labels))
    ws.set_row(0, 30)
    ws.set_column(0, len(labels) - 1, 12)
    ws.set_column(count_col, count_col + 1, 10)
    ws.set_column(count_col + 2, max(count_col + 2, len(headers) - 1), 14)
    return ws, first_metric, lat_col, metric_names


def _all_metrics(wb: Workbook, fmt: Formats, report: Mapping[str, Any]) -> None:
    """The mean of every metric per kind x difficulty (the Summary keeps the deciding ones)."""
    ws = wb.add_worksheet("All metrics")
    detail, totals = _summary_groups(report)
    names = ordered_metrics(m for _, _, stats in [*detail, *totals]
                            for m in (stats.get("metrics") or {}))
    headers = [*SUMMARY_FIXED[:3], *names]
    for col, name in enumerate(headers):
        ws.write_string(0, col, name, fmt["header"])
    for row, (kind, diff, stats) in enumerate([*detail, *totals], start=1):
        total = row > len(detail)
        p = "total_" if total else ""
        ws.write_string(row, 0, kind, fmt["total" if total else "text"])
        ws.write_string(row, 1, diff, fmt["total" if total else "text"])
        _write_num(ws, row, 2, stats.get("count"), fmt[p + "int"])
        metrics = stats.get("metrics") or {}
        for i, name in enumerate(names):
            _write_num(ws, row, 3 + i, (metrics.get(name) or {}).get("mean"), fmt[p + "num"])
    ws.freeze_panes(1, 2)
    ws.set_row(0, 30)
    ws.set_column(0, 1, 12)
    ws.set_column(2, max(2, len(headers) - 1), 14)


def _summary_charts(wb: Workbook, ws: Worksheet, detail: Sequence[tuple[str, str, Mapping[str, Any]]],
                    metric_names: list[str], lat_col: int, chart_row: int,
                    first_metric: int = len(SUMMARY_FIXED)) -> None:
    """Native charts over the kind x difficulty rows (two-level category axis)."""
    last = len(detail)  # detail rows are 1..last
    cats = ["Summary", 1, 0, last, 1]
    charts: list[Any] = []

    def column_chart(title: str, col: int, y_title: str, num_format: str,
                     error_col: int | None = None) -> Any:
        chart = wb.add_chart({"type": "column"})
        series: dict[str, Any] = {
            "name": ["Summary", 0, col], "categories": cats, "values": ["Summary", 1, col, last,
                                                                          col],
            "data_labels": {"value": True, "num_format": num_format},
        }
        if error_col is not None:
            series["y_error_bars"] = {
                "type": "custom",
                "plus_values": ["Summary", 1, error_col, last, error_col],
                "minus_values": ["Summary", 1, error_col, last, error_col],
            }
        chart.add_series(series)
        chart.set_title({"name": title})
        chart.set_y_axis({"name": y_title, "num_format": num_format, "min": 0})
        chart.set_legend({"none": True})
        return chart

    pct = column_chart("Percent correct by kind and difficulty", 3, "passed", "0%")
    pct.set_y_axis({"name": "passed", "num_format": "0%", "min": 0, "max": 1})
    charts.append(pct)
    charts.append(column_chart("Number of samples", 2, "cases", "0"))
    if any(LATENCY_METRIC in (s.get("metrics") or {}) for _, _, s in detail):
        charts.append(column_chart("Mean prediction latency (± std)", lat_col, "seconds",
                                   "0.00", error_col=lat_col + 1))

    # One chart per kind: its headline metrics by difficulty.
    start = 1
    for kind in dict.fromkeys(k for k, _, _ in detail):
        rows = [s for k, _, s in detail if k == kind]
        end = start + len(rows) - 1
        present = [m for m in metric_names
                   if not is_detail_metric(m) and not is_timing(m)
                   and any(m in (s.get("metrics") or {}) for s in rows)][:CHART_SERIES]
        if present:
            chart = wb.add_chart({"type": "column"})
            for m in present:
                col = first_metric + metric_names.index(m)
                chart.add_series({"name": ["Summary", 0, col],
                                  "categories": ["Summary", start, 1, end, 1],
                                  "values": ["Summary", start, col, end, col]})
            chart.set_title({"name": f"{kind}: mean metrics by difficulty"})
            chart.set_y_axis({"name": "mean", "min": 0, "max": 1, "num_format": "0.0"})
            chart.set_legend({"position": "bottom"})
            charts.append(chart)
        start = end + 1

    for i, chart in enumerate(charts):
        chart.set_size({"width": 560, "height": 300})
        ws.insert_chart(chart_row + (i // 2) * 16, (i % 2) * 7, chart)


# -------------------------------------------------------------------------------------------
# Details


def _outcome_format(fmt: Formats, outcome: str) -> Format:
    if outcome in PASSED_OUTCOMES:
        return fmt["passed"]
    if outcome in FAILED_OUTCOMES:
        return fmt["failed"]
    return fmt["other"]


def _details(wb: Workbook, fmt: Formats, report: Mapping[str, Any]) -> None:
    ws = wb.add_worksheet("Details")
    cases: list[Mapping[str, Any]] = list(report.get("cases") or [])
    names = ordered_metrics(m for c in cases for m in (c.get("metrics") or {}))
    # what decides first: the gated metrics, latency, tokens and cost, then the rest
    lead = lead_metrics(names, gated_metrics(report))
    spend = [m for m in names if m not in lead and (is_timing(m) or is_usage(m))]
    metric_names = [*lead, *spend, *(m for m in names if m not in lead and m not in spend)]
    headers = [*DETAILS_FIXED, *metric_names, "Error", "Reason"]
    for col, name in enumerate(headers):
        ws.write_string(0, col, name, fmt["header"])
    first_metric = len(DETAILS_FIXED)
    stored = report.get("cases") or []
    for row in range(1, len(cases) + 1):
        case = full_record(stored, row - 1)  # a merge re-reads each record whole
        outcome = str(case.get("outcome") or "")
        values = [case.get("id"), case.get("kind"), difficulty_of(case),
                  ", ".join(str(t) for t in case.get("tags") or []), case.get("question"),
                  case.get("predicted"), case.get("gold")]
        for col, value in enumerate(values):
            _write_text(ws, row, col, value, fmt["mono"] if col in (5, 6) else fmt["wrap"])
        _write_text(ws, row, 7, outcome, _outcome_format(fmt, outcome))
        _write_text(ws, row, 8, ", ".join(str(m) for m in case.get("failed_metrics") or []),
                    fmt["text"])
        metrics = case.get("metrics") or {}
        for i, name in enumerate(metric_names):
            style = ("sec" if is_timing(name) else "usd" if name == "cost_usd" else
                     "int" if is_usage(name) else "num")
            _write_num(ws, row, first_metric + i, metrics.get(name), fmt[style])
        _write_text(ws, row, first_metric + len(metric_names), case.get("error"), fmt["wrap"])
        _write_text(ws, row, first_metric + len(metric_names) + 1, case.get("reason"),
                    fmt["wrap"])
    ws.freeze_panes(1, 1)
    ws.set_row(0, 30)
    ws.autofilter(0, 0, max(len(cases), 1), len(headers) - 1)
    ws.set_column(0, 0, 22)
    ws.set_column(1, 3, 11)
    ws.set_column(4, 4, 40)
    ws.set_column(5, 6, 50)
    ws.set_column(7, 8, 14)
    ws.set_column(first_metric, first_metric + len(metric_names) - 1, 12)
    ws.set_column(first_metric + len(metric_names), first_metric + len(metric_names) + 1, 40)


# -------------------------------------------------------------------------------------------
# SDMX overview


def _sdmx_overview(wb: Workbook, fmt: Formats, cases: list[RecordLike]) -> None:
    ws = wb.add_worksheet("SDMX overview")
    for col, name in enumerate(SDMX_HEADERS):
        ws.write_string(0, col, name, fmt["header"])
    for row, case in enumerate(cases, start=1):
        metrics = case.get("metrics") or {}
        outcome = str(case.get("outcome") or "")
        _write_text(ws, row, 0, case.get("id"), fmt["wrap"])
        _write_text(ws, row, 1, difficulty_of(case), fmt["wrap"])
        _write_text(ws, row, 2, ", ".join(str(t) for t in case.get("tags") or []), fmt["wrap"])
        _write_text(ws, row, 3, case.get("question"), fmt["wrap"])
        _write_text(ws, row, 4, outcome, _outcome_format(fmt, outcome))
        for col, name in ((5, "macro_recall"), (6, "macro_precision"), (7, "macro_f1")):
            _write_num(ws, row, col, metrics.get(name), fmt["num"])
        details = (case.get("details") or {}).get("sdmx_details")
        _write_text(ws, row, 8, details, fmt["mono"])
        lines = _cell_text(details).count("\n") + 1
        ws.set_row(row, 15 * min(max(lines, 1), 60))
    # Dataset-level figures, as the seed's "Data Query Metrics" (plain means over the cases).
    total = len(cases) + 1
    ws.write_string(total, 0, "mean", fmt["total"])
    for col in range(1, 5):
        ws.write_blank(total, col, None, fmt["total"])
    for col, name in ((5, "macro_recall"), (6, "macro_precision"), (7, "macro_f1")):
        # a metric a record holds as null (a NaN written by JSON, a merged report) is no number
        vals = [float(v) for c in cases
                if isinstance(v := (c.get("metrics") or {}).get(name), int | float)
                and not isinstance(v, bool)]
        _write_num(ws, total, col, sum(vals) / len(vals) if vals else None, fmt["total_num"])
    ws.write_blank(total, 8, None, fmt["total"])
    ws.freeze_panes(1, 1)
    ws.set_row(0, 30)
    ws.set_column(0, 0, 22)
    ws.set_column(1, 2, 12)
    ws.set_column(3, 3, 40)
    ws.set_column(4, 7, 11)
    ws.set_column(8, 8, 80)


# -------------------------------------------------------------------------------------------
# Run


def _by_turn_sheet(wb: Workbook, fmt: Formats, agg: Mapping[str, Any]) -> None:
    """Conversation cases: a row per turn number with every metric's mean, the
    conversations' line above the table."""
    from ..figures.by_turn import conversations_line, turn_table

    table = turn_table(agg, every=True)
    if table is None:
        return
    ws = wb.add_worksheet("By turn")
    _write_text(ws, 0, 0, conversations_line(table.conversations), fmt["text"])
    headers = ("Turn", "Turns", "Passed", "Missing", "Turn accuracy", *table.metrics)
    for col, name in enumerate(headers):
        ws.write_string(2, col, name, fmt["header"])
    for row, (label, turns, passed, missing, rate, means) in enumerate(table.rows, start=3):
        total = label == ALL
        _write_text(ws, row, 0, label, fmt["total" if total else "text"])
        for col, count in enumerate((turns, passed, missing), start=1):
            _write_num(ws, row, col, count, fmt["total_int" if total else "int"])
        _write_num(ws, row, 4, rate, fmt["total_pct" if total else "pct"])
        for col, mean in enumerate(means, start=5):
            _write_num(ws, row, col, mean, fmt["total_num" if total else "num"])
    ws.set_column(0, 0, 10)
    ws.set_column(1, len(headers) - 1, 16)
    ws.freeze_panes(3, 1)


def _reference_sheet(wb: Workbook, fmt: Formats, agg: Mapping[str, Any]) -> None:
    """TEXT2SPARQL's and GERBIL's session figures (not means of the per-case columns)."""
    from .reference import reference_sections

    sections = reference_sections(agg)
    if not sections:
        return
    ws = wb.add_worksheet("Reference aggregates")
    for col, name in enumerate(("reference", "questions", "metric", "reference name", "value")):
        ws.write_string(0, col, name, fmt["header"])
    row = 1
    for title, questions, rows in sections:
        for name, label, value in rows:
            _write_text(ws, row, 0, title, fmt["text"])
            _write_num(ws, row, 1, questions, fmt["int"])
            _write_text(ws, row, 2, name, fmt["text"])
            _write_text(ws, row, 3, label, fmt["text"])
            _write_num(ws, row, 4, value, fmt["num"])
            row += 1
    ws.set_column(0, 0, 40)
    ws.set_column(1, 4, 16)


def _denominators_sheet(wb: Workbook, fmt: Formats, agg: Mapping[str, Any]) -> None:
    """Over how many cases each kind's means were computed, and why the others are missing."""
    from .denominators import UNPARSABLE_HEADER, denominators

    rows = denominators(agg)
    if not rows:
        return
    ws = wb.add_worksheet("Denominators")
    for col, name in enumerate(("kind", "metric", "over", "of cases", "missing (why)",
                                UNPARSABLE_HEADER)):
        ws.write_string(0, col, name, fmt["header"])
    for row, r in enumerate(rows, start=1):
        _write_text(ws, row, 0, r.kind, fmt["text"])
        _write_text(ws, row, 1, r.metric, fmt["text"])
        _write_num(ws, row, 2, r.n, fmt["int"])
        _write_num(ws, row, 3, r.cases, fmt["int"])
        _write_text(ws, row, 4, r.missing, fmt["text"])
        _write_num(ws, row, 5, r.unparsable, fmt["int"])
    ws.set_column(0, 1, 24)
    ws.set_column(2, 3, 10)
    ws.set_column(4, 5, 40)


def _near_miss_sheet(wb: Workbook, fmt: Formats, report: Mapping[str, Any]) -> None:
    """Near misses: counts per relaxation (overall, per kind, per difficulty), then the cases."""
    from ..rules.nearmiss import RELAXATIONS

    agg: Mapping[str, Any] = report["near_miss"]
    ws = wb.add_worksheet("Near misses")
    names = [n for n in RELAXATIONS if n in (agg.get("overall") or {})]
    for col, name in enumerate(["scope", "group", *(RELAXATIONS[n] for n in names)]):
        ws.write_string(0, col, name, fmt["header"])
    groups = [("overall", "", agg.get("overall") or {})]
    for scope in ("by_kind", "by_difficulty"):
        groups += [(scope[3:], k, v) for k, v in (agg.get(scope) or {}).items()]
    row = 1
    for scope, group, counts in groups:
        _write_text(ws, row, 0, scope, fmt["text"])
        _write_text(ws, row, 1, group, fmt["text"])
        for col, n in enumerate(names, start=2):
            _write_num(ws, row, col, counts.get(n, 0), fmt["text"])
        row += 1
    row += 1
    for col, name in enumerate(("id", "kind", "difficulty", "would pass with")):
        ws.write_string(row, col, name, fmt["header"])
    for case in report.get("cases") or []:
        if case.get("near_miss"):
            row += 1
            values = [case.get("id"), case.get("kind"), difficulty_of(case),
                      "; ".join(RELAXATIONS.get(n, n) for n in case["near_miss"])]
            for col, value in enumerate(values):
                _write_text(ws, row, col, value, fmt["text"])
    ws.set_column(0, 1, 24)
    ws.set_column(2, 2 + len(names), 18)


def _judge_sheet(wb: Workbook, fmt: Formats, agg: Mapping[str, Any]) -> None:
    """What the LLM judge rescued and overturned, with its reasons, and its errors."""
    ws = wb.add_worksheet("Judge")
    names = ("judge", "id", "kind", "difficulty", "category", "pinned", "reason")
    for col, name in enumerate(names):
        ws.write_string(0, col, name, fmt["header"])
    row = 0
    for key in ("rescued", "overturned", "errors"):
        for item in agg.get(key) or []:
            row += 1
            values = [key, item.get("id"), item.get("kind"), item.get("difficulty"),
                      item.get("category"), "yes" if item.get("pinned") else "no",
                      item.get("error") if key == "errors" else item.get("reason")]
            for col, value in enumerate(values):
                _write_text(ws, row, col, value, fmt["text"])
    ws.set_column(0, 5, 16)
    ws.set_column(6, 6, 80)


def _flaky_sheet(wb: Workbook, fmt: Formats, flaky: list[Mapping[str, Any]]) -> None:
    """``repeat: N``: the cases whose runs disagreed on the outcome."""
    ws = wb.add_worksheet("Flaky")
    names = ("id", "file", "line", "kind", "passed", "runs", "statuses", "consistency",
             "rule", "outcome")
    for col, name in enumerate(names):
        ws.write_string(0, col, name, fmt["header"])
    for row, item in enumerate(flaky, start=1):
        for col, key in enumerate(names):
            value = item.get(key)
            if key == "statuses":
                value = " ".join(map(str, value or []))
            if isinstance(value, int | float) and not isinstance(value, bool):
                _write_num(ws, row, col, value, fmt["num"] if key == "consistency"
                           else fmt["text"])
            else:
                _write_text(ws, row, col, value, fmt["text"])
    ws.set_column(0, 1, 28)
    ws.set_column(2, 9, 12)


def _audit_sheet(wb: Workbook, fmt: Formats, audit: Mapping[str, Any]) -> None:
    """``--queryeval-audit-golds``: one row per finding, errors first (docs/auditing.md)."""
    ws = wb.add_worksheet("Gold audit")
    names = ("severity", "code", "id", "gold", "file", "line", "kind", "message")
    for col, name in enumerate(names):
        ws.write_string(0, col, name, fmt["header"])
    for row, item in enumerate(audit.get("findings") or [], start=1):
        for col, key in enumerate(names):
            value = item.get(key)
            if key == "severity":
                _write_text(ws, row, col, value, fmt["failed" if value == "error" else "other"])
            elif key in ("gold", "line"):
                _write_num(ws, row, col, value, fmt["int"])
            else:
                _write_text(ws, row, col, value, fmt["wrap" if key == "message" else "text"])
    ws.set_column(0, 0, 10)
    ws.set_column(1, 2, 24)
    ws.set_column(3, 3, 6)
    ws.set_column(4, 4, 36)
    ws.set_column(5, 6, 8)
    ws.set_column(7, 7, 100)


def _outcome_sheet(wb: Workbook, fmt: Formats, report: Mapping[str, Any]) -> None:
    """The first sheet: the run's outcome in the words of the summary's last line, each
    cause, then the pass rate with its count, the gates and the baseline comparison."""
    from ..figures.numbers import doc_pct
    from .outcome import pass_rate_text, stated

    ws = wb.add_worksheet("Outcome")
    outcome = stated(report)
    ws.write_string(0, 0, outcome.line, fmt[f"title_{outcome.word}"])
    rows: list[tuple[str, str]] = [("outcome", outcome.word)]
    rows += [("cause", cause) for cause in outcome.causes]
    overall = (report.get("aggregates") or {}).get("overall") or {}
    rows.append(("pass rate", pass_rate_text(overall, doc_pct)))
    gates = list(report.get("gates") or [])
    if gates:
        rows.append(("gates", f"{sum(bool(g.get('passed')) for g in gates)} of {len(gates)} "
                              "passed"))
    cmp = report.get("baseline")
    if isinstance(cmp, Mapping) and cmp.get("summary"):
        rows.append(("baseline comparison", str(cmp["summary"]).removeprefix("baseline ")))
    for row, (key, value) in enumerate(rows, start=2):
        ws.write_string(row, 0, key, fmt["text"])
        _write_text(ws, row, 1, value, fmt["wrap"])
    ws.set_column(0, 0, 20)
    ws.set_column(1, 1, 100)


def _run_sheet(wb: Workbook, fmt: Formats, report: Mapping[str, Any]) -> None:
    ws = wb.add_worksheet("Run")
    run: Mapping[str, Any] = report.get("run") or {}
    ws.write_string(0, 0, "Run", fmt["title"])
    row = 1
    for key in ("started", "finished", "duration_s", "exitstatus", "interrupted",
                "queryeval_version", "predictions"):
        ws.write_string(row, 0, key, fmt["text"])
        value = run.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            ws.write_number(row, 1, float(value), fmt["text"])
        else:
            _write_text(ws, row, 1, value if not isinstance(value, bool) else str(value).lower(),
                        fmt["text"])
        row += 1
    for kind, settings in sorted((run.get("settings") or {}).items()):
        ws.write_string(row, 0, f"settings: {kind}", fmt["text"])
        _write_text(ws, row, 1, settings, fmt["wrap"])
        row += 1
    gates = list(report.get("gates") or [])
    if gates:
        row += 1
        ws.write_string(row, 0, "Gates", fmt["title"])
        row += 1
        for col, name in enumerate(("name", "metric", "stat", "value", "op", "limit",
                                    "passed")):
            ws.write_string(row, col, name, fmt["header"])
        for gate in gates:
            row += 1
            for col, key in enumerate(("name", "metric", "stat")):
                _write_text(ws, row, col, gate.get(key), fmt["text"])
            _write_num(ws, row, 3, gate.get("value"), fmt["num"])
            _write_text(ws, row, 4, gate.get("op"), fmt["text"])
            _write_num(ws, row, 5, gate.get("limit"), fmt["num"])
            ok = bool(gate.get("passed"))
            ws.write_string(row, 6, "passed" if ok else "FAILED",
                            fmt["passed"] if ok else fmt["failed"])
    ws.set_column(0, 0, 26)
    ws.set_column(1, 1, 60)
    ws.set_column(2, 6, 12)
