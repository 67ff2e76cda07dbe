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

What is decided per case is decided here, once, with the rules the reports use: a case's
state per run (:func:`.baseline.verdicts.judged_outcome`: a gating mode's xfail failed), its
headline metric (a threshold's metric, else the first headline metric it has), and the
filters' flags (see :func:`_flags`). The page only shows and filters.

Models are columns: a run that fans its cases out per model (records with a ``model``, ids
``case[model]``) gives one column per model, its rows paired by the id as written; a run of one
model is one column, its model the run's ``run.model`` label, else its ``run.predictions``
source (:func:`run_model`). The models' comparison (the per-run reports' models table, each
pair's McNemar test, the cases they disagree on) is :mod:`..conclude.models` and :mod:`.models`
applied to each model's latest column, so the page says what the run's own report says.
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


class ModelsRow(TypedDict):
    """One row of the models table, one cell per model (``rate``: the pass rate it shows)."""

    group: str
    label: str
    cells: list[str]
    rates: list[float | None]


class Pair(TypedDict):
    a: str
    b: str
    cases: int
    a_only: int
    b_only: int
    p_value: float
    better: str | None
    text: str


class Models(TypedDict):
    """The models compared: each one's latest column, the table (models as columns), each
    pair's McNemar test and the cases the models disagree on (case, outcome per model)."""

    names: list[str]
    columns: list[int]
    rows: list[ModelsRow]
    pairs: list[Pair]
    disagreements: list[tuple[str, list[str]]]
    disagreement_count: int


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
#: One case in one run: state, outcome, headline value, predicted, gold, diff lines, why
#: (error or reason): strings as indices into the page's string table, -1 for none; last, the
#: gold's and the prediction's result tables where the record holds them (the counterexample
#: database of ``--queryeval-neighbours``), else None.
Cell = tuple[str, int, float | None, int, int, list[int], int, tuple[str, Table, Table] | None]


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
    from .._util.boundedio import BoundedReadError, load_json_file
    from .shardcheck import check_report, summary

    out: list[tuple[str, dict[str, object]]] = []
    problems: list[str] = []
    for path in paths:
        name = str(path)
        try:
            data = load_json_file(Path(path))
        except OSError as exc:
            problems.append(f"{name}: cannot read: {exc.strerror or exc}")
            continue
        except BoundedReadError as exc:
            problems.append(f"{name}: {exc}")
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


def _state(record: Mapping[str, object]) -> str:
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


def _headline(records: Sequence[Mapping[str, object]]) -> str | None:
    """The metric a case's cells show: one its thresholds judge (latest run first), else the
    first headline metric it has, else its first non-timing metric."""
    from ..metricnames import lower_is_better
    from .columns import HEADLINE_METRICS, ordered_metrics

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


def _tables(record: Mapping[str, object]) -> tuple[str, Table, Table] | None:
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
    from ..conclude.outcome import stated

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
    outcome = stated(report)
    return Run(label=_text(label, 300), file=_text(mask_url(name), 1000), model=run_model(report),
               started=_text(run.get("started"), 40) or None,
               outcome="passed" if outcome.passed else "failed",
               outcome_line=_text(outcome.line, 2000), pass_rate=_number(overall.get("pass_rate")),
               counts=counts, metrics=metrics, gates=gates)


def run_model(report: Mapping[str, object]) -> str | None:
    """The model of a run that fans out no model: its ``run.model`` label
    (``--queryeval-model-label``, else the suite's ``model:``), else its ``run.predictions``
    source (``file:preds.jsonl``, as :func:`..predict.describe_predictions` writes it), as
    shown; None when the report names neither (such runs count as runs of one model)."""
    from .._util.secrets import mask_url

    run = report.get("run")
    run = run if isinstance(run, Mapping) else {}
    model = run.get("model") or run.get("predictions")
    return _text(mask_url(str(model)), 300) if model else None


def _columns(reports: Sequence[Mapping[str, object]], labels: Sequence[str],
             ) -> list[tuple[Column, list[Mapping[str, object]]]]:
    """Each run's columns and their records: one per model a multi-model run's records name
    (by name), then one for its records of no model; a run of one model is one column."""
    from ..conclude.models import model_of

    single = all(not any(model_of(c) for c in _cases(r)) for r in reports)
    out: list[tuple[Column, list[Mapping[str, object]]]] = []
    for index, (report, label) in enumerate(zip(reports, labels, strict=True)):
        groups: dict[str | None, list[Mapping[str, object]]] = {}
        for case in _cases(report):
            groups.setdefault(model_of(case), []).append(case)
        if not any(groups):  # no record names a model: the run's model
            model = run_model(report)
            out.append((Column(run=index, model=model, label=label), groups.get(None, [])))
            continue
        names: list[str | None] = [*sorted(m for m in groups if m is not None)]
        if None in groups:
            names.append(None)
        for name in names:
            shown = _text(name, 300) if name else "no model"
            out.append((Column(run=index, model=_text(name, 300) if name else None,
                               label=shown if single or len(reports) == 1 else
                               f"{label} · {shown}"), groups[name]))
    return out


def _written(record: Mapping[str, object], key: str) -> str:
    """The record's ``key`` (id or nodeid) as the case is written: without the ``[model]``
    a multi-model run's fan-out appends, so a case's models share its row."""
    from ..conclude.models import model_of

    value = str(record.get(key) or record.get("id"))
    model = model_of(record)
    suffix = f"[{model}]"
    return value[:-len(suffix)] if model and value.endswith(suffix) else value


def _key_of(columns: Sequence[Sequence[Mapping[str, object]]]) -> str:
    """Cases pair by ``id``, by ``nodeid`` when a column repeats an id (as the baseline
    pairs)."""
    for records in columns:
        ids = [_written(c, "id") for c in records]
        if len(ids) != len(set(ids)):
            return "nodeid"
    return "id"


def _cases(report: Mapping[str, object]) -> list[Mapping[str, object]]:
    cases = report.get("cases")
    return [c for c in cases if isinstance(c, Mapping)] if isinstance(cases, list) else []


def _models(columns: Sequence[Column], tables: Sequence[Mapping[str, Mapping[str, object]]],
            ) -> tuple[Models | None, dict[str, int]]:
    """The models' comparison (None for fewer than two models) and the cases they disagree
    on, as flags by row key. Each model is its latest column; the table is
    :func:`.models.table` turned to one column per model, then the pass rate per kind and per
    difficulty (:func:`..conclude.aggregate.group_stats`, as every report counts it); the
    pairs and disagreements are :func:`..conclude.models.compare_models` of those columns."""
    from ..baseline.verdicts import judged_outcome
    from ..conclude.aggregate import group_stats
    from ..conclude.models import compare_models
    from .columns import difficulty_of, ordered_difficulties
    from .models import pair_text, table
    from .numbers import doc_num, doc_pct

    latest: dict[str, int] = {}
    for index, column in enumerate(columns):
        if column["model"] is not None:
            latest[column["model"]] = index
    if len(latest) < 2:
        return None, {}
    names = sorted(latest)
    # the records as compare_models pairs them: by the row's key, whatever the file or model
    by_model = {m: [{**{k: v for k, v in rec.items() if k != "model"}, "id": key, "file": ""}
                    for key, rec in tables[latest[m]].items()] for m in names}
    stats = {m: group_stats(by_model[m]) for m in names}
    kinds = sorted({str(r.get("kind")) for recs in by_model.values() for r in recs})
    header, rows = table({"models": stats, "by_kind": dict.fromkeys(kinds)}, doc_num, doc_pct)
    out_rows: list[ModelsRow] = [
        ModelsRow(group="model", label=h, cells=[r[i] for r in rows],
                  rates=[stats[m]["pass_rate"] if h == "pass" else None for m in names])
        for i, h in enumerate(header) if i > 0]

    def rates(group: str, label: str, kind: str | None, diff: str | None) -> None:
        cells, values = [], []
        for m in names:
            found = group_stats([r for r in by_model[m]
                                 if (kind is None or str(r.get("kind")) == kind)
                                 and (diff is None or difficulty_of(r) == diff)])
            judged = found["passed"] + found["failed"] + found["errors"] \
                + found["xfailed_by_gating"]
            cells.append(f"{doc_pct(found['pass_rate'])} of {judged}" if found["count"] else "")
            values.append(found["pass_rate"])
        out_rows.append(ModelsRow(group=group, label=label, cells=cells, rates=values))

    for kind in kinds:
        rates("kind", kind, kind, None)
    diffs = ordered_difficulties(difficulty_of(r) for recs in by_model.values() for r in recs)
    for diff in diffs:
        rates("difficulty", diff, None, diff)
    if len(kinds) > 1:
        for kind in kinds:
            for diff in diffs:
                if any(str(r.get("kind")) == kind and difficulty_of(r) == diff
                       for recs in by_model.values() for r in recs):
                    rates("kind_difficulty", f"{kind} · {diff}", kind, diff)
    compared = compare_models(by_model)
    pairs = [Pair(a=p["a"], b=p["b"], cases=p["cases"], a_only=p["a_only"], b_only=p["b_only"],
                  p_value=p["p_value"], better=p["better"], text=pair_text(p))
             for p in compared["pairs"]]
    # the same rule as compare_models, for every case (it lists at most 200)
    disagree: dict[str, int] = {}
    for key in tables[latest[names[0]]]:
        outcomes = [judged_outcome(tables[latest[m]][key]) if key in tables[latest[m]] else None
                    for m in names]
        if all(key in tables[latest[m]] for m in names) and len(set(outcomes)) > 1:
            disagree[key] = DISAGREE
    return Models(names=names, columns=[latest[m] for m in names], rows=out_rows, pairs=pairs,
                  disagreements=[(d["case"], [str(d["outcomes"][m] or "not run") for m in names])
                                 for d in compared["disagreements"]],
                  disagreement_count=compared["disagreement_count"]), disagree


def build_view(runs: Sequence[tuple[str, Mapping[str, object]]]) -> ViewData:
    """The page's data: the runs in the order given, their columns (one per model of a run),
    and one row per case of any run (in the order the runs first list them) with one cell per
    column (None where the column lacks it)."""
    from ..engine.repeats import is_flaky
    from .columns import is_detail_metric, ordered_metrics

    strings = _Strings()
    reports = [r for _, r in runs]
    labels = _labels([n for n, _ in runs])
    columns = _columns(reports, labels)
    key = _key_of([records for _, records in columns])
    by_column: list[dict[str, Mapping[str, object]]] = []
    order: dict[str, None] = {}
    for _, records in columns:
        table = {_written(c, key): c for c in records}
        by_column.append(table)
        order.update(dict.fromkeys(table))
    models, disagree = _models([c for c, _ in columns], by_column)
    column_models = [c["model"] for c, _ in columns]
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
            metrics = record.get("metrics")
            value = _number(metrics.get(metric)) if metric and isinstance(metrics, Mapping) \
                else None
            diff = record.get("diff")
            lines = [strings.add(line, MAX_LINE) for line in diff[:MAX_DIFF_LINES]] \
                if isinstance(diff, list) else []
            if isinstance(diff, list) and len(diff) > MAX_DIFF_LINES:
                lines.append(strings.add(f"… [cut: {len(diff) - MAX_DIFF_LINES} more lines]"))
            cells.append((state, strings.add(record.get("outcome") or "", 40), value,
                          strings.add(record.get("predicted")), strings.add(record.get("gold")),
                          lines, strings.add(record.get("error") or record.get("reason")),
                          _tables(record)))
        flags = _flags(states, column_models, latest_columns,
                       any(is_flaky(r) for r in present)) | disagree.get(case_key, 0)
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
    if models is not None:
        models["disagreements"] = [(_text(c, 1000), o) for c, o in models["disagreements"]]
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
    """Read the reports, and write the page atomically (nothing when a report is refused)."""
    from .._util.safefile import write_atomic

    data = build_view(load_runs(paths))
    write_atomic(Path(out), render_view(data, title))
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
