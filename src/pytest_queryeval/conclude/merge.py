"""``queryeval merge SHARD.json... -o REPORT.json``: the shards of one run, put back together.

Each CI runner ran a shard (``--queryeval-shard I/N`` or pytest-split) and wrote its JSON
report. The merge takes the union of their cases and ends the run as the plugin would have in
one process (:func:`pytest_queryeval.conclude.conclude`): aggregates, gates and the baseline
comparison over the union, every report option of the plugin, and the same exit status.

Shards that cannot be one run are refused (exit 4, nothing written): another report version,
queryeval version, suite (the digest of its case ids), model, predictions source, gating mode,
scoring settings of a kind, shard count, a gate of the same name and scope defined differently,
or a gold audit's mode (``--queryeval-audit-golds``). Each gate is rebuilt from its report
entry, every field of it (its ``kind:``, ``tag:`` and ``model:`` filters among them), and the
suite's significance level from ``run.significance``: the settings the merge cannot read from
the suite files travel in the shards' reports. Several reports of one shard are attempts of it
(a scheduler's retry): the latest complete record of each case wins and the attempts are listed
(``run.attempts``). Cases missing from the union, and cases run by more than one shard, are
listed and fail the merge (exit 1, the report still written, each case once). The shards are
read case by case (:mod:`..report.stream`): the merge holds slim records, and the full ones are
read back as the reports are written. Shards of a gold audit merge into one audit: its findings
table is rebuilt over the union (the findings travel with each case), and, as in the plugin, no
baseline is compared or written.

Why one module of this size: the command's steps (checking that the shards are one run,
choosing each case's record among a shard's attempts, the union's run block, the exit status)
read the same shard reports and the same ``Merged`` record, each a function of its own; split
into modules, each would import the others' helpers for one command.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._util.paths import display
from .._util.wording import shortlist
from ..baseline.refusals import update_refusals
from ..errors import QueryEvalError
from ..judge.report import aggregate as judge_aggregate
from ..model import RecordLike
from ..rules.nearmiss import aggregate as near_miss_aggregate
from ..rules.repeats import flaky_cases
from ..suite.config import Gate
from . import Outputs, aggregates_of, conclude, exit_status, run_settings
from .aggregate import evaluate_gates
from .options import ReportOptions
from .plugin_formats import add_plugin_option, register_plugin_formats
from .pyids import accounted_for

#: Exit statuses, as pytest's ExitCode has them (this command does not import pytest).
OK, TESTS_FAILED, INTERRUPTED, USAGE_ERROR, NO_TESTS = 0, 1, 2, 4, 5
#: ``run`` fields every shard of one run shares (``suite`` and ``settings`` checked apart).
SAME_RUN = ("queryeval_version", "model", "predictions", "gating")
#: Of :data:`SAME_RUN`, what a shard that selected no case cannot know (it read the suite
#: config of no case file): not compared with the other shards', nor taken from it.
EMPTY_UNKNOWN = ("model", "predictions")
#: What defines a gate, as its report entry states it: every field of :class:`Gate` but its
#: name, read from the class so that a scope added to gates (``model:`` was once forgotten
#: here, and the merge then pooled a model-scoped gate over every model) reaches the merge.
GATE_FIELDS = tuple(f.name for f in dataclasses.fields(Gate) if f.name != "name")
LISTED = 10


class MergeRefused(Exception):
    """The shards are not parts of one run; the message says which field differs where."""


@dataclass
class Merged:
    report: dict[str, Any]
    missing: list[str] = field(default_factory=list)
    duplicated: list[tuple[str, list[str]]] = field(default_factory=list)
    missing_shards: list[str] = field(default_factory=list)
    interrupted: list[str] = field(default_factory=list)
    #: Every attempt of a shard that ran more than once (``run.attempts`` of the report).
    superseded: list[dict[str, Any]] = field(default_factory=list)


def load_shards(paths: Sequence[Path]) -> list[tuple[str, dict[str, Any]]]:
    """(name, report) per file, read case by case (:func:`..report.stream.scan`): each report's
    ``cases`` are slim records whose full text stays in the file (``spans``). MergeRefused names
    a file that is not a usable JSON report (not a regular file, too large or too deeply nested,
    or a field of the wrong type)."""
    from .._util.boundedio import BoundedReadError, read_problem
    from ..report.shardcheck import check_report, summary
    from ..report.stream import scan

    out: list[tuple[str, dict[str, Any]]] = []
    for path in paths:
        try:
            scanned = scan(path)
        except (OSError, BoundedReadError) as exc:
            raise MergeRefused(f"{path}: {read_problem(exc)}") from None
        data = scanned.header
        if "cases" not in data or not isinstance(data.get("run"), dict):
            raise MergeRefused(f"{path}: not a queryeval JSON report (no 'run' and 'cases')")
        problems = check_report({**data, "cases": []}) + scanned.problems
        if problems:
            raise MergeRefused(summary(str(path), problems))
        data["cases"] = scanned.cases
        data["spans"] = scanned.spans
        out.append((str(path), data))
    if not out:
        raise MergeRefused("no shard reports given")
    return out


def _check_same(shards: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
    from ..baseline.compare import incomparable

    shards = sorted(shards, key=lambda s: not s[1]["cases"])  # one with cases first
    first_name, first = shards[0]
    first_run = first["run"]
    for name, report in shards[1:]:
        run = report["run"]
        if report.get("version") != first.get("version"):
            raise MergeRefused(f"{name}: report version {report.get('version')!r}, but "
                               f"{first_name} has {first.get('version')!r}")
        suite_a, suite_b = first_run.get("suite"), run.get("suite")
        if suite_a and suite_b and suite_a != suite_b:
            raise MergeRefused(
                f"{name}: another suite ({suite_b.get('cases')} cases, digest "
                f"{suite_b.get('digest')}) than {first_name} ({suite_a.get('cases')} cases, "
                f"digest {suite_a.get('digest')}): shards of one run collect the same suite")
        for key in SAME_RUN:
            if key in EMPTY_UNKNOWN and not (report["cases"] and first["cases"]):
                continue  # a shard that selected no case read no suite config's model
            if run.get(key) != first_run.get(key):
                raise MergeRefused(f"{name}: run.{key} is {run.get(key)!r}, but {first_name} "
                                   f"has {first_run.get(key)!r}")
        a, b = _shard(first_run.get("shard")), _shard(run.get("shard"))
        if a and b and a[1] != b[1]:
            raise MergeRefused(f"{name}: shard {run.get('shard')} of another split than "
                               f"{first_name}'s {first_run.get('shard')}")
        why = incomparable(report, first)
        if why:
            raise MergeRefused(f"{name} and {first_name} were {why}")
        if _audit_mode(report) != _audit_mode(first):
            def said(r: Mapping[str, Any]) -> str:
                mode = _audit_mode(r)
                return f"a gold audit ({mode})" if mode else "not a gold audit"

            raise MergeRefused(f"{name} is {said(report)}, but {first_name} is {said(first)}")


def _audit_mode(report: Mapping[str, Any]) -> str | None:
    audit = report.get("audit")
    return str(audit.get("mode")) if isinstance(audit, Mapping) else None


def _shard(value: object) -> tuple[int, int] | None:
    if not isinstance(value, str):
        return None
    from ..suite.shard import parse_shard

    try:
        return parse_shard(value)
    except ValueError:
        return None


def _gates(shards: Sequence[tuple[str, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """The gate definitions of every shard, by name and scope directory (a shard lists the
    gates of the suite directories its cases are in; two sub-suites may each have a gate of
    one name), in the order they first appear; one gate defined two ways is refused."""
    seen: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
    for name, report in shards:
        for gate in report.get("gates") or []:
            spec = {k: gate.get(k) for k in ("name", *GATE_FIELDS)}
            key = (str(spec["name"]), str(spec.get("scope") or "."))
            other = seen.get(key)
            if other is None:
                seen[key] = (name, spec)
            elif other[1] != spec:
                diff = [k for k in GATE_FIELDS if other[1].get(k) != spec.get(k)]
                raise MergeRefused(f"{name}: gate {spec['name']!r} differs from {other[0]}'s "
                                   f"in {', '.join(diff)}: the shards ran another configuration")
    return [spec for _, spec in seen.values()]


def _serial_order(gates: Sequence[Gate], records: Sequence[RecordLike]) -> list[int]:
    """The order the serial run lists ``gates`` in (given in the order the shards first
    list them): it walks the case directories in sorted order and lists, for each, the gates
    of its ``queryeval.yaml`` files not listed yet, the outermost file's first, each file's in
    its own order; a shard saw only its own directories."""
    dirs = sorted({(Path.cwd() / str(r.get("file") or ".")).parent.resolve() for r in records})

    def key(index: int) -> tuple[int, int, int]:
        scope = gates[index].scope.resolve()
        first = next((n for n, d in enumerate(dirs) if d == scope or scope in d.parents),
                     len(dirs))
        return first, len(scope.parts), index

    return sorted(range(len(gates)), key=key)


def _attempts(shards: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, list[int]]:
    """The reports of each shard (``run.shard``; a report of no shard is its own), earliest
    attempt first: by ``run.started``, then by their order on the command line. Two reports
    of one shard that started at the same time are one attempt given twice, not a retry: their
    cases are duplicates, as cases run by two shards are."""
    groups: dict[str, list[int]] = {}
    started: dict[str, set[str]] = {}
    for i, (name, report) in enumerate(shards):
        shard, start = report["run"].get("shard"), str(report["run"].get("started"))
        key = str(shard) if shard else f"\0{name}"
        if start in started.setdefault(key, set()):  # the same attempt twice: duplicates
            key = f"{key}\0{i}"
        started.setdefault(key, set()).add(start)
        groups.setdefault(key, []).append(i)
    for indices in groups.values():
        indices.sort(key=lambda i: (str(shards[i][1]["run"].get("started") or ""), i))
    return groups


def _winners(shards: Sequence[tuple[str, Mapping[str, Any]]], indices: list[int],
             ) -> tuple[dict[str, tuple[int, int]], dict[int, int]]:
    """Of the attempts ``indices`` of one shard: case key -> (report, position) of the record
    that wins (the latest complete one, else the latest), and report -> its records that lost."""
    from ..report.shardcheck import COMPLETE_OUTCOMES as COMPLETE

    best: dict[str, tuple[int, int, bool]] = {}
    for i in indices:  # earliest first: a later record replaces an earlier one
        for pos, rec in enumerate(shards[i][1]["cases"]):
            key = str(rec.get("nodeid") or rec.get("id"))
            complete = rec.get("outcome") in COMPLETE
            have = best.get(key)
            if have is None or complete or not have[2]:
                best[key] = (i, pos, complete)
    kept: dict[int, int] = {}
    for i, _, _ in best.values():
        kept[i] = kept.get(i, 0) + 1
    lost = {i: len(shards[i][1]["cases"]) - kept.get(i, 0) for i in indices}
    return {k: (i, pos) for k, (i, pos, _) in best.items()}, lost


def merge_reports(shards: Sequence[tuple[str, dict[str, Any]]]) -> Merged:
    """The union report (gates evaluated, no baseline yet); MergeRefused when the shards are
    not parts of one run. Several reports of one shard are attempts of it (a retry): of each
    case the latest complete record wins, and the attempts it replaced are listed."""
    _check_same(shards)
    gate_specs = _gates(shards)
    merged = Merged(report={})
    records, latest = _union(shards, merged)
    runs = [report["run"] for _, report in shards]
    first = next((r for (_, report), r in zip(shards, runs, strict=True) if report["cases"]),
                 runs[0])
    _find_missing(merged, records, runs, first)
    merged.interrupted = [shards[i][0] for i in sorted(latest) if runs[i].get("interrupted")]
    merged.report = {"version": shards[0][1].get("version", 1),
                     "run": _merged_run(shards, runs, first, records, merged),
                     "cases": records, "aggregates": aggregates_of(records),
                     "gates": _merged_gates(gate_specs, records),
                     "flaky": flaky_cases(records),
                     "near_miss": near_miss_aggregate(records),
                     "judge": judge_aggregate(records)}
    from ..neighbours.check import summary as neighbour_summary

    neighbours = neighbour_summary(records)
    if neighbours is not None:  # --queryeval-neighbours: the shards' budgets, summed
        merged.report["neighbours"] = neighbours
    from ..predict.cache import summary as cache_summary

    if (cached := cache_summary(records)) is not None:  # answers kept between runs
        merged.report["prediction_cache"] = cached
    mode = _audit_mode(shards[0][1])
    if mode is not None:
        from ..report.audit import audit_report

        merged.report["audit"] = audit_report(records, mode)
    return merged


def _union(shards: Sequence[tuple[str, dict[str, Any]]], merged: Merged
           ) -> tuple[list[dict[str, Any]], list[int]]:
    """The winning record of each case, in file and line order, and the latest attempt of each
    shard; the superseded attempts and the duplicated cases go to ``merged``."""
    from ..report.stream import Span, StoredCases

    records: list[dict[str, Any]] = []
    spans: list[Span] = []
    where: dict[str, list[str]] = {}
    latest: list[int] = []
    for indices in _attempts(shards).values():
        won, lost = _winners(shards, indices)
        latest.append(indices[-1])
        if len(indices) > 1:
            merged.superseded.extend(
                {"report": Path(shards[i][0]).name, "shard": shards[i][1]["run"].get("shard"),
                 "attempt": n, "attempts": len(indices), "superseded": lost[i],
                 "kept": len(shards[i][1]["cases"]) - lost[i]}
                for n, i in enumerate(indices, start=1))
        for key, (i, pos) in won.items():
            name, report = shards[i]
            if key not in where:
                records.append(report["cases"][pos])
                stored = report.get("spans")
                spans.append(stored[pos] if stored else Span(Path(name), -1, 0))
            where.setdefault(key, []).append(name)
    cases = StoredCases(records, spans)
    cases.sort_by(lambda r: (str(r.get("file")), int(r.get("line") or 0), str(r.get("id"))))
    merged.duplicated = [(k, names) for k, names in where.items() if len(names) > 1]
    return cases, latest


def _find_missing(merged: Merged, records: Sequence[RecordLike], runs: list[dict[str, Any]],
                  first: dict[str, Any]) -> None:
    """The suite's cases no shard reported, and the shards no report is of."""
    suite_ids = next((r["suite_ids"] for r in runs if isinstance(r.get("suite_ids"), list)), None)
    if suite_ids is not None:
        # a case written in Python is in the suite by its test's node id (plugin/pycases.py)
        have = accounted_for(records)
        merged.missing = [str(i) for i in suite_ids if str(i) not in have]
    elif isinstance(first.get("suite"), dict):  # every shard ran whole: ids not recorded
        expected = int(first["suite"].get("cases") or 0)
        if len(records) < expected:
            merged.missing = [f"({expected - len(records)} case(s))"]
    split = [s for s in (_shard(r.get("shard")) for r in runs) if s]
    if split:
        total = split[0][1]
        merged.missing_shards = [f"{i}/{total}" for i in range(1, total + 1)
                                 if i not in {s[0] for s in split}]


def _merged_gates(gate_specs: list[dict[str, Any]], records: Sequence[RecordLike]
                  ) -> list[dict[str, Any]]:
    """The shards' gates evaluated on the union in the serial run's order, each scope as the
    shards wrote it."""
    cwd = Path.cwd()  # scopes and case files are both rootdir-relative: resolve them alike
    gates = [gate_of(spec, cwd) for spec in gate_specs]
    order = _serial_order(gates, records)
    evaluated = evaluate_gates([gates[i] for i in order], records)
    for gate, i in zip(evaluated, order, strict=True):
        gate["scope"] = gate_specs[i].get("scope")
    return evaluated


def gate_of(entry: Mapping[str, Any], base: Path) -> Gate:
    """The :class:`Gate` a report's gate entry states, its scope resolved from ``base``: every
    field the entry has (a field an older report lacks keeps its default), so the union is
    gated by the very gates each shard was, whatever filters they carry."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(Gate):
        value = entry.get(f.name)
        if value is None:  # not stated (an older report): the gate's default
            continue
        if f.name == "scope":
            value = base / str(value)
        elif f.name == "limit":
            value = float(value)
        elif f.name == "k" and not (isinstance(value, int) and not isinstance(value, bool)):
            value = None
        values[f.name] = value
    values.setdefault("scope", base)
    return Gate(**values)


def _merged_run(shards: Sequence[tuple[str, dict[str, Any]]], runs: list[dict[str, Any]],
                first: dict[str, Any], records: Sequence[RecordLike], merged: Merged
                ) -> dict[str, Any]:
    """The union report's ``run``: the earliest start, the latest finish, the longest shard,
    the settings of the whole run, and which reports it was merged from."""
    started = sorted(str(r["started"]) for r in runs if r.get("started"))
    finished = sorted(str(r["finished"]) for r in runs if r.get("finished"))
    run: dict[str, Any] = {
        "started": started[0] if started else None,
        "finished": finished[-1] if finished else None,
        "duration_s": round(max((float(r.get("duration_s") or 0) for r in runs), default=0), 3),
        "exitstatus": None,
        "interrupted": bool(merged.interrupted),
        **{key: first.get(key) for key in SAME_RUN},
        "settings": run_settings(records),
        "workers": max((int(r.get("workers") or 0) for r in runs), default=0),
        "shard": None,
        "merged_from": [{"report": Path(name).name, "shard": r.get("shard"),
                         "cases": len(report["cases"]), "exitstatus": r.get("exitstatus")}
                        for (name, report), r in zip(shards, runs, strict=True)],
    }
    if merged.superseded:  # the attempts of a retried shard, and what each lost
        run["attempts"] = merged.superseded
    if first.get("suite"):
        run["suite"] = first["suite"]
    alpha = _suite_significance(shards)
    if alpha is not None:
        run["significance"] = alpha
    return run


def _suite_significance(shards: Sequence[tuple[str, Mapping[str, Any]]]) -> float | None:
    """The alpha the suite sets for the baseline comparison (``gates: {significance:}`` or
    ini ``queryeval_significance``, which this command does not read): each shard recorded
    the smallest of its suite configs' (``run.significance``), so the smallest of theirs is
    the serial run's. A shard that selected no case read no suite config (its value is the
    ini's alone): it counts only when no shard has a case. MergeRefused names a shard whose
    value is no significance level."""
    from ..baseline.significance import parse_significance

    found = []
    ran = [shard for shard in shards if shard[1]["cases"]] or shards
    for name, report in ran:
        value = report["run"].get("significance")
        try:
            alpha = parse_significance(value, f"{name}: run.significance")
        except ValueError as exc:
            raise MergeRefused(str(exc)) from None
        if alpha is not None:
            found.append(alpha)
    return min(found) if found else None


def problems_of(merged: Merged) -> list[str]:
    """Why the union is not the whole run: missing shards, missing or duplicated cases."""
    out: list[str] = []
    if merged.missing_shards:
        out.append(f"missing shard(s): {', '.join(merged.missing_shards)}")
    if merged.missing:
        out.append(f"{len(merged.missing)} case(s) of the suite are in no shard: "
                   + shortlist(merged.missing, LISTED))
    if merged.duplicated:
        shown = shortlist([f"{key} (in {', '.join(Path(n).name for n in names)})"
                           for key, names in merged.duplicated], LISTED, sep="; ")
        out.append(f"{len(merged.duplicated)} case(s) ran in more than one shard (the first "
                   f"is kept): {shown}")
    if merged.interrupted:
        out.append("interrupted shard(s): " + ", ".join(Path(n).name for n in merged.interrupted))
    return out


def attempt_lines(attempts: Sequence[Mapping[str, Any]]) -> list[str]:
    """``shard 3/10: 2 attempts; shard-3.json superseded (1,000 cases by a later attempt)``."""
    by_shard: dict[str, list[Mapping[str, Any]]] = {}
    for a in attempts:
        by_shard.setdefault(str(a.get("shard")), []).append(a)
    lines = []
    for shard, group in by_shard.items():
        lost = [f"{a['report']} ({a['superseded']:,} of {a['superseded'] + a['kept']:,} "
                "cases)" for a in group if a["superseded"]]
        lines.append(f"shard {shard}: {len(group)} attempts, the latest complete record of each "
                     f"case kept; superseded: {', '.join(lost) or 'none'}")
    return lines


def _parser() -> argparse.ArgumentParser:
    from ..report.formats import add_report_options

    p = argparse.ArgumentParser(
        prog="queryeval merge",
        description="Merge the JSON reports of a sharded run (--queryeval-shard I/N or "
                    "pytest-split): aggregates, gates and the baseline comparison over the "
                    "union, with the plugin's report options and exit status.")
    p.add_argument("shards", nargs="+", metavar="SHARD.json", help="the shards' JSON reports")
    add_plugin_option(p.add_argument)
    add_report_options(p.add_argument, merge=True)  # the plugin's, declared once
    p.add_argument("--queryeval-inconclusive", choices=("status", "fail", "pass"),
                   default="status",
                   help="shards that ran with --queryeval-gating=evidence: what an "
                        "INCONCLUSIVE evidence gate does to the merged run (status: exit 6, "
                        "the default; fail: exit 1; pass: exit 0), as in the plugin")
    p.add_argument("--junitxml", "--junit-xml", metavar="PATH", default=None,
                   help="write the merged run's junit XML here (a testcase per case, the "
                        "merged aggregates and gates as properties), for a CI test-results "
                        "page that would otherwise show each shard's own figures")
    return p


def _usage(options: ReportOptions) -> list[str]:
    """Option problems found before anything is read (the plugin's checks, where shared)."""
    from ..suite.checks import MetricCatalog

    # any metric: a max-drop on one the reports do not hold is reported by the comparison
    problems = options.problems(MetricCatalog(["*"], lambda kind, metric: True))
    if options.significance is not None:
        from ..baseline.significance import parse_significance

        try:
            parse_significance(options.significance, "--queryeval-significance")
        except ValueError as exc:
            problems.append(str(exc))
    if options.update_baseline and not options.baseline:
        problems.append("--queryeval-update-baseline needs --queryeval-baseline PATH here "
                        "(queryeval merge reads no ini file)")
    return problems


def _overwrites(options: ReportOptions, shards: Sequence[str]) -> list[str]:
    """An output that is one of the inputs (the same file, symlinks followed): refused before
    anything is read or written, as ``queryeval merge r.json -o r.json`` once overwrote its
    own shard."""
    from .._util.safefile import same_file
    from ..report.formats import report_formats

    inputs = [(f"shard {i} ({path})", path) for i, path in enumerate(shards, 1)]
    if options.baseline:
        inputs.append((f"the --queryeval-baseline file ({options.baseline})", options.baseline))
    problems = []
    for name, value in options.files.items():
        index = same_file(value, [p for _, p in inputs]) if value else None
        if index is not None:
            flag = "-o/--queryeval-json" if name == "json" else f"--queryeval-{name}"
            problems.append(f"{flag} {value}: is {inputs[index][0]}, which this merge reads: "
                            f"write the {report_formats()[name].label} elsewhere")
    return problems


def run(argv: Sequence[str]) -> int:
    plugin_problems = register_plugin_formats(argv)  # their options exist before the parse
    args = _parser().parse_args(list(argv))
    cwd = Path.cwd()
    options = ReportOptions.from_namespace(args, cwd)
    err = sys.stderr
    _warn_deprecated(args)
    problems = plugin_problems + _usage(options) + _overwrites(options, args.shards)
    if problems:
        print("queryeval merge: invalid options:", *(f"  {p}" for p in problems), sep="\n",
              file=err)
        return USAGE_ERROR
    try:
        shards, merged = _merged(args.shards, options)
    except MergeRefused as exc:
        print(f"queryeval merge: refused: {exc}", file=err)
        return USAGE_ERROR
    report = merged.report
    if not report["cases"]:
        print("queryeval merge: the shards hold no cases", file=err)
        return NO_TESTS
    incomplete = problems_of(merged)
    out = _outputs(options, cwd, report)
    if out is None:
        return USAGE_ERROR
    _evidence_outputs(out, report, args.queryeval_inconclusive)
    outcomes = [str(r.get("outcome")) for r in report["cases"]]
    failing = any(o in ("failed", "error") for o in outcomes)
    status = INTERRUPTED if merged.interrupted else TESTS_FAILED if failing or incomplete else OK
    report["run"]["exitstatus"] = status
    lines: list[str] = [f"queryeval merge: {len(shards)} shard(s), {len(report['cases'])} cases"]
    lines.extend(attempt_lines(merged.superseded))
    lines.extend(f"error: {p}" for p in incomplete)
    if incomplete:
        out.problems.append("the shards are incomplete")
    status = _concluded(report, out, lines, merged, incomplete, status)
    if args.junitxml:  # after the outcome: its properties state it, as pytest's junit does
        status = _write_junit(report, cwd / args.junitxml, cwd, lines, status)
    from ..report.outcome import run_outcome

    # the last line: the outcome and why, as the reports state it
    lines.append((out.outcome or run_outcome(report, failing=status != OK,
                                             problems=out.problems)).line)
    from .._util.safetext import printable

    print("\n".join(printable(line) for line in lines))
    return exit_status(out, status)


def _evidence_outputs(out: Outputs, report: dict[str, Any], inconclusive: str) -> None:
    """Shards that ran with ``--queryeval-gating=evidence``: the merge concludes the evidence
    gate over every shard's cases as the serial run does (its alpha: the command line's, else
    the one the shards recorded, else 0.05), so serial = shards + merge holds for it too."""
    if report["run"].get("gating") != "evidence":
        return
    from ..baseline.evidence import DEFAULT_BUDGET

    recorded = report["run"].get("significance")
    out.evidence_alpha = out.significance if out.significance is not None else (
        float(recorded) if isinstance(recorded, int | float) else 0.05)
    out.repeat_budget = DEFAULT_BUDGET
    out.inconclusive = inconclusive


def _warn_deprecated(args: argparse.Namespace) -> None:
    """An old option spelling still works, as in the plugin, and says its new name."""
    from ..suite.deprecated import deprecated_spellings

    for old, new in deprecated_spellings(args):
        print(f"queryeval merge: warning: {old} is deprecated, use {new} (same values)",
              file=sys.stderr)


def _outputs(options: ReportOptions, cwd: Path, report: dict[str, Any]) -> Outputs | None:
    """The report and baseline options of the merged run, those of a gold audit as the plugin
    sets them; None (the usage error printed) for a baseline update of an audit's shards."""
    # no suite here: the baseline is the path given, from the current directory
    # --queryeval-significance, else the suite's alpha the shards recorded (as the plugin)
    alpha = _significance(options.significance)
    out = options.outputs(
        baseline_path=(cwd / options.baseline).resolve() if options.baseline else None,
        significance=report["run"].get("significance") if alpha is None else alpha,
        display=lambda p: display(p, cwd))
    if report.get("audit") is not None:  # as the plugin ends an audit
        from ..report.audit import summary_lines as audit_lines

        if options.update_baseline:
            print("queryeval merge: invalid options:\n  --queryeval-update-baseline cannot be "
                  "used with the shards of a gold audit: an audit scores the golds, not a model",
                  file=sys.stderr)
            return None
        out.after_gates = ["", *audit_lines(report["audit"])]
        out.skip_compare = "baseline: not compared in a gold audit"
    return out


def _concluded(report: dict[str, Any], out: Outputs, lines: list[str], merged: Merged,
               incomplete: list[str], status: int) -> int:
    """The merged report through :func:`~.conclude`, as the plugin ends a run; the exit
    status once the gates and the baseline have spoken (a report not written fails it)."""
    errors = [str(r.get("id")) for r in report["cases"] if r.get("outcome") == "error"]
    try:
        gated = conclude(report, out, lines, lambda: update_refusals(
            filters=[p for p in incomplete if not p.startswith("interrupted")],
            interrupted=bool(merged.interrupted), stopped=None, errors=errors),
            failing=status != OK)
    except QueryEvalError as exc:
        lines.append(exc.reason() if exc.reason().startswith("error") else
                     f"error: {exc.reason()}")
        gated = True
        out.problems.append("a report was not written")
        out.accepted, out.outcome = [], None
    if gated and status == OK:
        status = TESTS_FAILED
    if out.accepted and status == TESTS_FAILED:
        status = OK  # a refresh records its failures as the accepted state, as the plugin does
    return status


def _merged(paths: Sequence[str], options: ReportOptions
            ) -> tuple[list[tuple[str, dict[str, Any]]], Merged]:
    """The shards read and merged; MergeRefused when they are not parts of one run, or ran
    with another gating mode than ``--queryeval-gating`` says."""
    shards = load_shards([Path(p) for p in paths])
    merged = merge_reports(shards)
    mode = merged.report["run"].get("gating") or "strict"
    if options.gating and options.gating != mode:
        raise MergeRefused(f"--queryeval-gating={options.gating}, but the shards ran with "
                           f"{mode} (a gating mode is applied as the cases run)")
    return shards, merged


def _write_junit(report: dict[str, Any], target: Path, cwd: Path, lines: list[str],
                 status: int) -> int:
    """The junit XML of the merged run, its line in ``lines``; the exit status, failed when
    the file cannot be written."""
    from ..report.document import Report
    from ..report.junit import write_junit

    try:
        write_junit(Report.of(report), target)
        lines.append(f"junit XML: {display(target, cwd)}")
    except (OSError, QueryEvalError) as exc:
        lines.append(f"error: junit XML not written ({display(target, cwd)}): {exc}")
        status = TESTS_FAILED if status == OK else status
    return status


def _significance(value: str | None) -> float | None:
    if value is None:
        return None
    from ..baseline.significance import parse_significance

    return parse_significance(value, "--queryeval-significance")

