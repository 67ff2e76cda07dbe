"""The run's figures as junit ``<testsuite>`` properties, and the junit XML of a merged run
(``queryeval merge --junitxml``).

Why here and not in the plugin: a sharded run's CI test-results page reads junit files, and
one built from the shards' files showed each shard's own gate values (``pass_rate`` 0.4167,
0.4286, 0.4706) that no report of the run states (merged 0.4419). The properties pytest's junit
gets at the end of a session (:func:`properties`) and the file ``queryeval merge`` writes
(:func:`write_junit`) come from one list, so the merged file says what the merged report says.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..model import RecordLike
from .document import Report

#: The ``<testcase>`` child of each outcome (pytest's junit: an xfail is a skip of its type).
_CHILD = {"failed": ("failure", None), "error": ("error", None),
          "skipped": ("skipped", "pytest.skip"), "xfailed": ("skipped", "pytest.xfail")}
#: Characters XML 1.0 cannot hold, even escaped (pytest's junit drops them the same way).
_NOT_XML = re.compile("[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _sig(value: float) -> float:
    """Six significant digits: a cost of $0.0000031 per case is not 0 (six decimals were)."""
    return float(f"{value:.6g}")


def properties(report: Mapping[str, Any]) -> list[tuple[str, object]]:
    """The run's ``<testsuite>`` properties: its outcome, the aggregates, the judge's counts
    and each gate's verdict."""
    out: list[tuple[str, object]] = []
    add = out.append
    run = report.get("run") or {}
    if run.get("outcome"):  # the run's outcome first, in the words of the summary's last line
        add(("queryeval.outcome", str(run["outcome"])))
        add(("queryeval.outcome_line", str(run.get("outcome_line") or "")))
        for cause in run.get("causes") or []:
            add(("queryeval.cause", str(cause)))
    evidence = report.get("evidence")
    if isinstance(evidence, Mapping):  # --queryeval-gating=evidence: PASS, FAIL, INCONCLUSIVE
        add(("queryeval.verdict", str(evidence.get("verdict"))))
        add(("queryeval.verdict_line", str(evidence.get("line") or "")))
        if evidence.get("min_detectable_drop") is not None:
            add(("queryeval.min_detectable_drop", _sig(evidence["min_detectable_drop"])))
    overall = report["aggregates"]["overall"]
    add(("queryeval.cases", overall["count"]))
    if overall["pass_rate"] is not None:
        add(("queryeval.pass_rate", round(overall["pass_rate"], 6)))
    for metric, stats in overall["metrics"].items():
        add((f"queryeval.mean.{metric}", _sig(stats["mean"])))
        if "total" in stats:
            add((f"queryeval.total.{metric}", _sig(stats["total"])))
    for kind, stats in report["aggregates"]["by_kind"].items():
        for metric, m in stats["metrics"].items():
            add((f"queryeval.{kind}.mean.{metric}", _sig(m["mean"])))
            if "total" in m:
                add((f"queryeval.{kind}.total.{metric}", _sig(m["total"])))
    # accuracy next to latency and cost, per kind and difficulty
    for kind, per_diff in report["aggregates"].get("by_kind_difficulty", {}).items():
        for diff, stats in per_diff.items():
            prefix = f"queryeval.{kind}.{diff}"
            if stats.get("pass_rate") is not None:
                add((f"{prefix}.pass_rate", _sig(stats["pass_rate"])))
            metrics = stats.get("metrics") or {}
            for metric, stat in (("prediction_seconds", "mean"), ("cost_usd", "total"),
                                 ("prompt_tokens", "total"), ("completion_tokens", "total"),
                                 ("judge_ex", "mean"), ("judge_cost_usd", "total")):
                if stat in (metrics.get(metric) or {}):
                    add((f"{prefix}.{stat}.{metric}", _sig(metrics[metric][stat])))
    from ..figures.by_turn import junit_properties  # conversation cases: the by-turn table

    out.extend(junit_properties(report["aggregates"]))
    judge = report.get("judge") or {}
    if judge.get("judged") or judge.get("errors"):
        for key in ("judged", "asked", "pinned", "calls"):
            add((f"queryeval.judge.{key}", int(judge.get(key) or 0)))
        for key in ("rescued", "overturned", "errors"):
            add((f"queryeval.judge.{key}", len(judge.get(key) or [])))
    for gate in report["gates"]:
        add((f"queryeval.gate.{gate['name']}", "pass" if gate["passed"] else "fail"))
    return out


def _text(value: object) -> str:
    return _NOT_XML.sub("?", str(value))


def _address(nodeid: str) -> tuple[str, str]:
    """``(classname, name)`` of a node id, as pytest's junit spells them
    (``sub/test_q.yaml::q1[model-a]`` → ``sub.test_q.yaml``, ``q1[model-a]``)."""
    path, bracket, params = nodeid.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + params
    return ".".join(names[:-1]), names[-1]


def _testcase(record: RecordLike) -> ET.Element:
    from .terminal import failure_text

    nodeid = str(record.get("nodeid") or f"{record.get('file')}::{record.get('id')}")
    classname, name = _address(nodeid)
    seconds = (record.get("metrics") or {}).get("query_seconds")
    case = ET.Element("testcase", classname=_text(classname), name=_text(name),
                      file=_text(record.get("file") or ""), line=str(record.get("line") or 0),
                      time=f"{float(seconds or 0):.3f}")
    props = [("queryeval.kind", record.get("kind"))]
    if record.get("difficulty"):
        props.append(("queryeval.difficulty", record.get("difficulty")))
    props += [(f"queryeval.{m}", v) for m, v in sorted((record.get("metrics") or {}).items())]
    holder = ET.SubElement(case, "properties")
    for key, value in props:
        ET.SubElement(holder, "property", name=_text(key), value=_text(value))
    child = _CHILD.get(str(record.get("outcome")))
    if child is not None:
        tag, kind = child
        reason = record.get("error") or record.get("reason") or ""
        element = ET.SubElement(case, tag, message=_text(
            f"{record.get('kind')} case {record.get('id')!r}: {reason}"[:1000]))
        if kind is not None:
            element.set("type", kind)
        else:
            element.text = _text(failure_text(record))
    return case


def junit_tree(report: Mapping[str, Any], records: Iterable[RecordLike]) -> ET.Element:
    """The junit XML of a run: one ``<testsuite>`` with the run's :func:`properties` and a
    ``<testcase>`` per record (``records``: the full ones, whose failure text is shown)."""
    run = report.get("run") or {}
    suite = ET.Element("testsuite", name="pytest")
    holder = ET.SubElement(suite, "properties")
    for key, value in properties(report):
        ET.SubElement(holder, "property", name=_text(key), value=_text(value))
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for record in records:
        outcome = record.get("outcome")
        counts["tests"] += 1
        counts["failures"] += outcome == "failed"
        counts["errors"] += outcome == "error"
        counts["skipped"] += outcome in ("skipped", "xfailed")
        suite.append(_testcase(record))
    for key, value in counts.items():
        suite.set(key, str(value))
    suite.set("time", f"{float(run.get('duration_s') or 0):.3f}")
    if run.get("started"):
        suite.set("timestamp", _text(run["started"]))
    root = ET.Element("testsuites", name="queryeval merge")
    root.append(suite)
    return root


def write_junit(report: Report, path: Path) -> None:
    """Write the junit XML of ``report`` (a merge's cases are read back whole, one at a time)."""
    from .._util.safefile import write_atomic

    root = junit_tree(report, Report.of(report).records())
    ET.indent(root)
    write_atomic(Path(path), ET.tostring(root, encoding="utf-8", xml_declaration=True))
