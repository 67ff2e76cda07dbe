"""``queryeval view RUN.json... -o view.html``: one static page over many runs.

Why: a team decides by comparing this week's model with last week's and a candidate, across
runs; the single-run HTML report shows one run against one baseline, and a local server is
what security reviews block. The page is one file that opens from disk: inline CSS and JS
(``view_page.html``, package data, read with :mod:`importlib.resources`) and the runs embedded
as one JSON document the script renders, under the HTML report's Content-Security-Policy.

A report is untrusted input (a file from another machine, a model's text inside it). Every
string is made printable and capped before it is embedded; the JSON is written with ``<``,
``>``, ``&`` and the JS line separators escaped, so no text of a report can end the data's
``<script type="application/json">`` element or become markup; the page's script inserts
report text only with ``textContent`` or its own escaper, and never into a URL.

Why one module of this size: what is decided per case is decided here, once, with the rules
the reports use: a case's state per run (:func:`.baseline.verdicts.judged_outcome`: a gating
mode's xfail failed), its headline metric (a threshold's metric, else the first headline metric
it has), and the filters' flags (see :func:`_flags`). The page only shows and filters.

Models are columns: a run that fans its cases out per model (records with a ``model``, ids
``case[model]``) gives one column per model, its rows paired by the id as written; a run of one
model is one column, its model ``run.model``, else ``run.predictions``: :mod:`.view_models`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from importlib import resources
from itertools import pairwise
from pathlib import Path
from typing import TypedDict

from ..model import RecordLike
from .trajectory import Steps, view_steps
from .view_models import Models

#: Characters of one embedded text (the report's own cap: a report from elsewhere may hold more).
MAX_TEXT = 10_000
#: Diff lines kept per case and run (the report's own cap), each cut at :data:`MAX_LINE`.
MAX_DIFF_LINES = 100
MAX_LINE = 2_000
#: Rows and columns of a result table shown per case and run.
MAX_TABLE_ROWS, MAX_TABLE_COLUMNS = 50, 20
#: Overall metrics shown in the trend (headline metrics first, per-dimension ones left out).
MAX_TREND_METRICS = 8
#: A case's state in one run, one letter each: passed (or xpassed), failed (a gating mode's
#: xfail included), error, skipped, expected to fail (an ``xfail:`` the case declares), other.
PASSED, FAILED, ERROR, SKIPPED, XFAIL, OTHER = "P", "F", "E", "S", "X", "O"
#: The filter flags of a case (bits of its ``f``); DISAGREE: the models' latest outcomes differ.
CHANGED, FLAKY, FAILING, DISAGREE = 1, 2, 4, 8
_TEMPLATE = "view_page.html"
_DATA_MARK = "/*QUERYEVAL_VIEW_DATA*/"


class ViewRefused(Exception):
    """Input files that are not queryeval JSON reports; the message names each file and what
    is wrong with it, one per line."""


class Gate(TypedDict):
    name: str
    value: float | None
    limit: float | None
    op: str
    passed: bool | None
    reason: str | None


class Column(TypedDict):
    """One column of the grid: the records of one model in one run."""

    run: int
    #: the model of the column's records (None: a run that names none, or the cases of a
    #: multi-model run that bring their own prediction)
    model: str | None
    label: str


class Run(TypedDict):
    label: str
    file: str
    model: str | None
    started: str | None
    outcome: str
    outcome_line: str
    pass_rate: float | None
    counts: dict[str, int]
    metrics: dict[str, float | None]
    gates: list[Gate]


#: A result table as shown: its column names and rows, every value as display text.
Table = tuple[list[str], list[list[str]]]
#: One case in one run: state, outcome, headline value, predicted, gold, diff lines, why (error
#: or reason) as string indices (-1: none); result tables (neighbours) and agent steps, or None.
Cell = tuple[str, int, float | None, int, int, list[int], int, tuple[str, Table, Table] | None,
             Steps | None]


class CaseRow(TypedDict):
    id: str
    kind: str
    difficulty: str
    question: int
    metric: str | None
    f: int
    cells: list[Cell | None]


class ViewData(TypedDict):
    version: int
    runs: list[Run]
    columns: list[Column]
    models: Models | None
    metrics: list[str]
    gates: list[str]
    cases: list[CaseRow]
    strings: list[str]


def _text(value: object, limit: int = MAX_TEXT) -> str:
    """A report value as display text: printable, and cut at ``limit`` characters."""
    from .._util.safetext import printable

    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1,
                                                           default=str)
    if len(text) > limit:
        text = f"{text[:limit]}… [cut: {len(text) - limit:,} of {len(text):,} characters]"
    return printable(text)


class _Strings:
    """The page's string table: a question or gold shared by ten runs is embedded once."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self._index: dict[str, int] = {}

    def add(self, value: object, limit: int = MAX_TEXT) -> int:
        if value is None or value == "":
            return -1
        text = _text(value, limit)
        found = self._index.get(text)
        if found is None:
            found = self._index[text] = len(self.items)
            self.items.append(text)
        return found


def load_runs(paths: Sequence[Path]) -> list[tuple[str, dict[str, object]]]:
    """(name as given, report) per file. ViewRefused lists every file that cannot be read or
    is not a report (not a regular file, not UTF-8 JSON, too deep or large, no ``run`` and
    ``cases``, a field of the wrong type as ``queryeval merge`` checks them), so that nothing
    is written from a partial set."""
    from .._util.boundedio import BoundedReadError, load_json_file, read_problem
    from .shardcheck import check_report, summary

    out: list[tuple[str, dict[str, object]]] = []
    problems: list[str] = []
    for path in paths:
        name = str(path)
        try:
            data = load_json_file(Path(path))
        except (OSError, BoundedReadError) as exc:
            problems.append(f"{name}: {read_problem(exc)}")
            continue
        if not isinstance(data, dict) or not isinstance(data.get("cases"), list) \
                or not isinstance(data.get("run"), dict):
            problems.append(f"{name}: not a queryeval JSON report (no 'run' and 'cases')")
            continue
        found = check_report(data)
        if found:
            problems.append(summary(name, found))
            continue
        out.append((name, data))
    if not paths:
        problems.append("no JSON report given")
    if problems:
        raise ViewRefused("\n".join(problems))
    return out


def _state(record: RecordLike) -> str:
    from ..baseline.verdicts import judged_outcome

    outcome = judged_outcome(record)
    if outcome in ("passed", "xpassed"):
        return PASSED
    return {"failed": FAILED, "error": ERROR, "skipped": SKIPPED,
            "xfailed": XFAIL}.get(str(outcome), OTHER)


def _flags(states: Sequence[str | None], models: Sequence[str | None], last: Sequence[bool],
           repeated_flaky: bool = False) -> int:
    """The filters a case is in, from its states per column in run order (None: not in that
    column, which changes nothing), each column's model, and which columns are the latest
    run's. *changed*: its state is not the same in every column that has it; *flaky*: one
    model's runs of it went between passing and not passing more than once (pass, fail, pass
    or fail, pass, fail), or ``--queryeval-repeat`` found its repeats disagree
    (``repeated_flaky``): two models that differ never make a case flaky; *failing*: it
    failed or erred in a column of the latest run."""
    present = [s for s in states if s is not None]
    flags = CHANGED if len(set(present)) > 1 else 0
    by_model: dict[str | None, list[bool]] = {}
    for state, model in zip(states, models, strict=True):
        if state in (PASSED, FAILED, ERROR):
            by_model.setdefault(model, []).append(state == PASSED)
    if repeated_flaky or any(sum(a != b for a, b in pairwise(judged)) >= 2
                             for judged in by_model.values()):
        flags |= FLAKY
    if any(s in (FAILED, ERROR) for s, latest in zip(states, last, strict=True) if latest):
        flags |= FAILING
    return flags


def _headline(records: Sequence[RecordLike]) -> str | None:
    """The metric a case's cells show: one its thresholds judge (latest run first), else the
    first headline metric it has, else its first non-timing metric."""
    from ..figures.columns import HEADLINE_METRICS, ordered_metrics
    from ..metricnames import lower_is_better

    for record in reversed(records):
        thresholds = record.get("thresholds")
        if isinstance(thresholds, Mapping) and thresholds:
            return ordered_metrics(str(k) for k in thresholds)[0]
    for record in reversed(records):
        metrics = record.get("metrics")
        if isinstance(metrics, Mapping) and metrics:
            names = [m for m in ordered_metrics(str(k) for k in metrics) if not lower_is_better(m)]
            lead = [m for m in names if m in HEADLINE_METRICS] or names
            if lead:
                return lead[0]
    return None


def _table(value: object) -> Table | None:
    """A ``[columns, rows]`` result as display text, cut at :data:`MAX_TABLE_ROWS` rows and
    :data:`MAX_TABLE_COLUMNS` columns (the report keeps them whole)."""
    if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], list)
            and isinstance(value[1], list)):
        return None

    def cell(v: object) -> str:
        return "NULL" if v is None else _text(v, 200)

    columns = [cell(c) for c in value[0][:MAX_TABLE_COLUMNS]]
    rows = [[cell(v) for v in row[:MAX_TABLE_COLUMNS]] for row in value[1][:MAX_TABLE_ROWS]
            if isinstance(row, list)]
    if len(value[1]) > MAX_TABLE_ROWS:
        rows.append([f"… [cut: {len(value[1]) - MAX_TABLE_ROWS} more rows]"])
    return columns, rows


def _tables(record: RecordLike) -> tuple[str, Table, Table] | None:
    """The result tables a record holds: the gold's and the prediction's on the counterexample
    database (``details.neighbours.counterexample``), with what the database is."""
    details = record.get("details")
    found = details.get("neighbours") if isinstance(details, Mapping) else None
    example = found.get("counterexample") if isinstance(found, Mapping) else None
    if not isinstance(example, Mapping):
        return None
    gold = _table(example.get("gold"))
    if gold is None:
        return None
    predicted = _table(example.get("predicted")) or (
        [], [[_text(example.get("predicted_failure") or "no result", 300)]])
    rows = example.get("rows")
    title = (f"on a counterexample database ({rows} rows, {_text(example.get('origin'), 100)})"
             if isinstance(rows, int) else "on a counterexample database")
    return title, gold, predicted


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if value == value and abs(value) != float("inf") else None


def _labels(names: Sequence[str]) -> list[str]:
    """Each run's label: its file name, or the path as given where two file names repeat."""
    base = [Path(n).name for n in names]
    return [b if base.count(b) == 1 else n for b, n in zip(base, names, strict=True)]


def _run(label: str, name: str, report: Mapping[str, object]) -> Run:
    from .._util.secrets import mask_url
    from .outcome import stated

    run = report.get("run")
    run = run if isinstance(run, Mapping) else {}
    agg = report.get("aggregates")
    overall = agg.get("overall") if isinstance(agg, Mapping) else None
    overall = overall if isinstance(overall, Mapping) else {}
    metrics: dict[str, float | None] = {}
    means = overall.get("metrics")
    for metric, stats in (means.items() if isinstance(means, Mapping) else ()):
        metrics[str(metric)] = _number(stats.get("mean")) if isinstance(stats, Mapping) else None
    counts = {k: int(v) for k in ("count", "passed", "failed", "errors", "skipped", "xfailed")
              if isinstance(v := overall.get(k), int) and not isinstance(v, bool)}
    gates: list[Gate] = []
    listed = report.get("gates")
    for g in listed if isinstance(listed, list) else ():
        if isinstance(g, Mapping):
            gates.append(Gate(name=_text(g.get("name"), 200), value=_number(g.get("value")),
                              limit=_number(g.get("limit")), op=_text(g.get("op") or ">=", 2),
                              passed=g["passed"] if isinstance(g.get("passed"), bool) else None,
                              reason=_text(g["reason"], 300) if g.get("reason") else None))
    from .view_models import run_model

    outcome = stated(report)
    model = run_model(report)
    return Run(label=_text(label, 300), file=_text(mask_url(name), 1000),
               model=_text(model, 300) if model else None,
               started=_text(run.get("started"), 40) or None,
               outcome=outcome.word,  # passed, failed or inconclusive (the evidence gate)
               outcome_line=_text(outcome.line, 2000), pass_rate=_number(overall.get("pass_rate")),
               counts=counts, metrics=metrics, gates=gates)


def _columns(reports: Sequence[Mapping[str, object]], labels: Sequence[str],
             ) -> list[tuple[Column, list[Mapping[str, object]]]]:
    """Each run's columns (:func:`.view_models.model_columns`) and their records, labelled."""
    from .view_models import model_columns, run_model

    out: list[tuple[Column, list[Mapping[str, object]]]] = []
    for index, (report, label) in enumerate(zip(reports, labels, strict=True)):
        found = model_columns(_cases(report))
        if found[0][0] is None and len(found) == 1:  # a run of one model
            model = run_model(report)
            out.append((Column(run=index, model=_text(model, 300) if model else None,
                               label=label), found[0][1]))
            continue
        for name, records in found:
            shown = _text(name, 300) if name else "no model"
            out.append((Column(run=index, model=_text(name, 300) if name else None,
                               label=shown if len(reports) == 1 else f"{label} · {shown}"),
                        records))
    return out


def _key_of(columns: Sequence[Sequence[Mapping[str, object]]]) -> str:
    """Cases pair by ``id``, by ``nodeid`` when a column repeats an id (as the baseline
    pairs)."""
    from .view_models import written

    for records in columns:
        ids = [written(c, "id") for c in records]
        if len(ids) != len(set(ids)):
            return "nodeid"
    return "id"


def _cases(report: Mapping[str, object]) -> list[Mapping[str, object]]:
    cases = report.get("cases")
    return [c for c in cases if isinstance(c, Mapping)] if isinstance(cases, list) else []


def _by_row_key(columns: Sequence[Sequence[Mapping[str, object]]], key: str,
                ) -> tuple[list[dict[str, Mapping[str, object]]], dict[str, None]]:
    """Each column's records by row key, and the row keys in the order the runs first list
    them (a case a later run adds comes after the earlier runs' cases)."""
    from .view_models import written

    by_column: list[dict[str, Mapping[str, object]]] = []
    order: dict[str, None] = {}
    for records in columns:
        table = {written(c, key): c for c in records}
        by_column.append(table)
        order.update(dict.fromkeys(table))
    return by_column, order


def _cell(record: RecordLike, state: str, metric: str | None,
          strings: _Strings) -> Cell:
    """One case in one column: its texts interned in ``strings`` (a prediction repeated across
    runs is embedded once), its diff cut to :data:`MAX_DIFF_LINES`."""
    metrics = record.get("metrics")
    value = _number(metrics.get(metric)) if metric and isinstance(metrics, Mapping) \
        else None
    diff = record.get("diff")
    lines = [strings.add(line, MAX_LINE) for line in diff[:MAX_DIFF_LINES]] \
        if isinstance(diff, list) else []
    if isinstance(diff, list) and len(diff) > MAX_DIFF_LINES:
        lines.append(strings.add(f"… [cut: {len(diff) - MAX_DIFF_LINES} more lines]"))
    return (state, strings.add(record.get("outcome") or "", 40), value,
            strings.add(record.get("predicted")), strings.add(record.get("gold")),
            lines, strings.add(record.get("error") or record.get("reason")),
            _tables(record), view_steps(record, strings.add))


def build_view(runs: Sequence[tuple[str, Mapping[str, object]]]) -> ViewData:
    """The page's data: the runs in the order given, their columns (one per model of a run),
    and one row per case of any run (in the order the runs first list them) with one cell per
    column (None where the column lacks it)."""
    from ..figures.columns import is_detail_metric, ordered_metrics
    from ..rules.repeats import is_flaky
    from .view_models import compare

    strings = _Strings()
    reports = [r for _, r in runs]
    labels = _labels([n for n, _ in runs])
    columns = _columns(reports, labels)
    key = _key_of([records for _, records in columns])
    by_column, order = _by_row_key([records for _, records in columns], key)
    column_models = [c["model"] for c, _ in columns]
    models, disagree = compare(column_models, by_column, _text)
    last_run = len(reports) - 1
    latest_columns = [c["run"] == last_run for c, _ in columns]
    rows: list[CaseRow] = []
    for case_key in order:
        found = [t.get(case_key) for t in by_column]
        present = [r for r in found if r is not None]
        latest = present[-1]
        metric = _headline(present)
        cells: list[Cell | None] = []
        states: list[str | None] = []
        for record in found:
            if record is None:
                cells.append(None)
                states.append(None)
                continue
            state = _state(record)
            states.append(state)
            cells.append(_cell(record, state, metric, strings))
        flags = _flags(states, column_models, latest_columns,
                       any(is_flaky(r) for r in present)) | (DISAGREE if case_key in disagree else 0)
        rows.append(CaseRow(id=_text(case_key, 1000),
                            kind=_text(latest.get("kind"), 100),
                            difficulty=_text(latest.get("difficulty"), 100),
                            question=strings.add(latest.get("question")),
                            metric=_text(metric, 200) if metric else None,
                            f=flags, cells=cells))
    run_rows = [_run(label, name, report) for label, (name, report)
                in zip(labels, runs, strict=True)]
    names = ordered_metrics(m for r in run_rows for m in r["metrics"])
    metrics = [m for m in names if not is_detail_metric(m)][:MAX_TREND_METRICS]
    gates = list(dict.fromkeys(g["name"] for r in run_rows for g in r["gates"]))
    return ViewData(version=2, runs=run_rows, columns=[c for c, _ in columns], models=models,
                    metrics=metrics, gates=gates, cases=rows, strings=strings.items)


def embed(data: object) -> str:
    """``data`` as JSON that is safe inside a ``<script>`` element: no ``<``, ``>`` or ``&``
    (so no ``</script>`` or ``<!--``) and no U+2028/2029, each written as its JSON escape."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def render_view(data: ViewData, title: str = "queryeval view") -> str:
    """The page: the template with the data and the title in place."""
    import html

    template = resources.files(__package__).joinpath(_TEMPLATE).read_text(encoding="utf-8")
    head, mark, tail = template.partition(_DATA_MARK)
    if not mark:  # pragma: no cover - the package data is broken
        raise RuntimeError(f"{_TEMPLATE}: no data mark")
    head = head.replace("<title>queryeval view</title>",
                        f"<title>{html.escape(_text(title, 200))}</title>", 1)
    return head + embed(data) + tail


def write_view(paths: Sequence[Path], out: Path, title: str = "queryeval view") -> ViewData:
    """Read the reports, and write the page atomically (nothing when a report is refused, or
    when the page would replace one of them: checked before anything is read or written)."""
    from .._util.safefile import same_file, write_atomic

    index = same_file(out, paths)
    if index is not None:
        raise ViewRefused(f"-o {out}: is RUN.json {index + 1} ({paths[index]}), which the page "
                          "is made from: write the page elsewhere")
    data = build_view(load_runs(paths))
    write_atomic(Path(out), render_view(data, title), special="stream")
    return data


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="queryeval view",
        description="Write one self-contained HTML page (no server, no network) over the JSON "
                    "reports of several runs, in the order given: a case x run grid, the "
                    "changed, flaky and failing filters, the aggregates and gates per run, and "
                    "each case's predictions side by side with the gold.")
    parser.add_argument("reports", nargs="+", type=Path, metavar="RUN.json",
                        help="JSON reports (--queryeval-json, or a queryeval merge output)")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="view.html",
                        help="the page to write")
    parser.add_argument("--title", default="queryeval view", help="the page's title")
    return parser


def main(argv: Sequence[str]) -> int:
    """``queryeval view``: 0 when the page is written, 4 (a usage error) when an input is
    refused (each file named with what is wrong), before anything is written."""
    args = _parser().parse_args(list(argv))
    try:
        data = write_view(args.reports, args.output, args.title)
    except ViewRefused as exc:
        print(f"queryeval view: refused, nothing written:\n  {str(exc).replace(chr(10), chr(10) + '  ')}",
              file=sys.stderr)
        return 4
    except OSError as exc:
        print(f"queryeval view: {args.output}: cannot write: {exc.strerror or exc}",
              file=sys.stderr)
        return 4
    size = args.output.stat().st_size
    print(f"queryeval view: {len(data['runs'])} runs, {len(data['cases'])} cases -> "
          f"{args.output} ({size / 1e6:.1f} MB)")
    return 0
