"""What the end-to-end layer's modules share: running pytest and ``queryeval merge`` as a user
does (a subprocess in the suite's folder), a normaliser that sets aside what two runs of one
suite may differ in (times, the run's own bookkeeping), and the outcome each report format
states (issue 43 items 3 and 8).

The layer runs each suite a few times and asserts many things of each run: runs are module
fixtures (``Runs``), kept for the module, so the layer's time is that of its runs."""

from __future__ import annotations

import html as htmllib
import json
import math
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support import Report, read_report

#: Every report format a run is asked for (JSON always): name -> option.
FORMATS = {"html": "--queryeval-html", "md": "--queryeval-markdown", "xlsx": "--queryeval-xlsx"}
#: The issue's own words for the headline assertions that wait for another branch.


@dataclass
class Run:
    """One pytest (or merge) process: its exit status, output and the reports it wrote."""

    name: str
    status: int
    stdout: str
    stderr: str
    folder: Path
    reports: dict[str, Path] = field(default_factory=dict)

    @property
    def json(self) -> Report:
        return read_report(self.reports["json"])

    @property
    def last_line(self) -> str:
        """The terminal's last ``queryeval:`` line (the outcome and its causes)."""
        lines = [ln for ln in self.stdout.splitlines() if ln.startswith("queryeval: ")]
        assert lines, self.stdout[-3000:]
        return lines[-1]

    def explain(self) -> str:
        return f"{self.name}: exit {self.status}\n{self.stdout[-4000:]}\n{self.stderr[-2000:]}"


#: Installed pytest plugins a suite's run never uses, left out of every run these tests make:
#: hypothesis's imports the whole library at each run's end (its terminal summary) and anyio's
#: imports anyio; with both, a run of a ten-case suite cost about 0.4 s more CPU, a third of
#: it, and the generated combinations, the reference artifacts and the end-to-end layer make
#: some thousands of such runs. A user's run is the same run with them loaded.
UNUSED_PLUGINS = "-p no:hypothesispytest -p no:anyio"


def env() -> dict[str, str]:
    """The environment of a run these tests make: the caller's, without what would make it a
    shard, a worker or a CI job, and with :data:`UNUSED_PLUGINS` left out."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "QUERYEVAL_SHARD", "SLURM_", "CI_NODE", "GITHUB_"))}
    env.pop("PYTEST_XDIST_WORKER", None)
    env["PYTEST_ADDOPTS"] = UNUSED_PLUGINS
    return env


def run_pytest(folder: Path, name: str, *args: str, target: str = ".",
               formats: Sequence[str] = ("html", "md", "xlsx"), junit: bool = True,
               timeout: float = 600, out: Path | None = None) -> Run:
    """``python -m pytest TARGET ARGS`` in ``folder``, writing ``NAME.json`` (and the other
    formats, and junit) in ``out`` (default: ``folder``)."""
    cmd, reports = pytest_command(folder, name, *args, target=target, formats=formats,
                                  junit=junit, out=out)
    proc = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=timeout,
                          check=False, env=env())
    return Run(name, proc.returncode, proc.stdout, proc.stderr, folder, reports)


def pytest_command(folder: Path, name: str, *args: str, target: str = ".",
                   formats: Sequence[str] = ("html", "md", "xlsx"), junit: bool = True,
                   out: Path | None = None) -> tuple[list[str], dict[str, Path]]:
    """The command :func:`run_pytest` runs, and the reports it names (a test that kills the
    process mid-run starts it itself, and retries with the very same command)."""
    out = out or folder
    reports = {"json": out / f"{name}.json"}
    extra = [f"--queryeval-json={reports['json']}"]
    for fmt in formats:
        reports[fmt] = out / f"{name}.{fmt}"
        extra.append(f"{FORMATS[fmt]}={reports[fmt]}")
    if junit:
        reports["junit"] = out / f"{name}.xml"
        extra.append(f"--junitxml={reports['junit']}")
    cmd = [sys.executable, "-m", "pytest", target, "-q", "-p", "no:randomly",
           "-p", "no:cacheprovider", "--queryeval-no-step-summary", *extra, *args]
    return cmd, reports


def run_merge(folder: Path, name: str, shards: Sequence[Path | str], *args: str,
              formats: Sequence[str] = ("html", "md", "xlsx"), out: Path | None = None) -> Run:
    """``queryeval merge SHARDS -o NAME.json ARGS`` in ``folder`` (reports in ``out``)."""
    out = out or folder
    reports = {"json": out / f"{name}.json"}
    extra = ["-o", str(reports["json"])]
    for fmt in formats:
        reports[fmt] = out / f"{name}.{fmt}"
        extra.append(f"{FORMATS[fmt]}={reports[fmt]}")
    cmd = [sys.executable, "-m", "pytest_queryeval.conclude.cli", "merge", *map(str, shards), *extra,
           "--queryeval-no-step-summary", *args]
    proc = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=300,
                          check=False, env=env())
    return Run(name, proc.returncode, proc.stdout, proc.stderr, folder, reports)


#: ``run`` fields that say how a run was made, not what it found.
RUN_BOOKKEEPING = frozenset({
    "started", "finished", "duration_s", "exitstatus", "workers", "shard", "suite_ids",
    "merged_from", "attempts", "interrupted",
})
#: Case fields that differ between two runs of one case: its time, where it ran.
CASE_BOOKKEEPING = frozenset({"digest", "carried", "duration_s"})


def _timing(key: str) -> bool:
    """A time, or how often a request was sent before it was answered (the example's agent
    stand-in is retried when another run of its folder closes the port's shared listener)."""
    return "seconds" in key or key.endswith("_s") or key in (
        "elapsed", "latency", "attempts", "retry_waits")


def _drop_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_timings(v) for k, v in value.items() if not _timing(str(k))}
    if isinstance(value, list):
        return [_drop_timings(v) for v in value]
    return value


def normalise(report: Mapping[str, Any]) -> dict[str, Any]:
    """``report`` without what two runs of one suite differ in though they found the same:
    times (every key naming seconds, and what is computed from them), the run's bookkeeping
    (when, where, how many workers, which shard, the shards merged), each case's digest (of a
    record that holds its times) and the attempt that carried it. Cases keyed by node id."""
    out: dict[str, Any] = {}
    for key, value in report.items():
        if key == "run":
            out["run"] = _drop_timings({k: v for k, v in value.items()
                                        if k not in RUN_BOOKKEEPING})
        elif key == "cases":
            out["cases"] = {str(c.get("nodeid")): _drop_timings(
                {k: v for k, v in c.items() if k not in CASE_BOOKKEEPING}) for c in value}
        elif key == "judge":  # pinned answers are asked of no model: the counts hold
            out[key] = _drop_timings(value)
        else:
            out[key] = _drop_timings(value)
    return out


#: How far two scores of one case may lie apart and be one: an embedding model's vectors differ
#: in the last bits with the batch they were computed in (a shard batches other texts), so a
#: semantic similarity moves by about 1e-9, and a detail rounded to 6 decimals by one unit.
REL_TOL = 1e-5


def _close(a: Any, b: Any) -> bool:
    types = {type(a), type(b)}
    if float in types and types <= {int, float}:
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=REL_TOL)
    return False


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two normalised reports differ (the first 20 paths), for an assertion message."""
    found: list[str] = []
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key not in a or key not in b:
                found.append(f"{path}.{key}: only in {'second' if key in b else 'first'}")
            else:
                found += differences(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found += differences(x, y, f"{path}[{i}]")
    elif _close(a, b):
        pass
    elif a != b:
        found.append(f"{path}: {json.dumps(a, default=str)[:200]} != "
                     f"{json.dumps(b, default=str)[:200]}")
    return found[:20]


def assert_same(a: Mapping[str, Any], b: Mapping[str, Any], what: str) -> None:
    diff = differences(normalise(a), normalise(b))
    assert not diff, f"{what}:\n  " + "\n  ".join(diff)


# -- the outcome each format states ---------------------------------------------------------
def outcome_word(status: int) -> str:
    """What the exit status says: 0 passed, 1 failed (tests, gates or baseline)."""
    return {0: "PASSED", 1: "FAILED"}[status]


def html_text(path: Path) -> str:
    return htmllib.unescape(re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8")))


def markdown_head(path: Path) -> str:
    """The Markdown summary's first lines (its headline: what a step summary shows first)."""
    return "\n".join(path.read_text(encoding="utf-8").splitlines()[:6])


def excel_first_sheet(path: Path) -> str:
    openpyxl = pytest.importorskip("openpyxl")
    wb = openpyxl.load_workbook(path, read_only=True)
    sheet = wb[wb.sheetnames[0]]
    cells = [str(c) for row in sheet.iter_rows(max_row=8, values_only=True) for c in row
             if c is not None]
    wb.close()
    return "\n".join(cells)


def junit_properties(path: Path) -> dict[str, str]:
    root = ET.parse(path).getroot()
    return {p.get("name", ""): p.get("value", "") for p in root.iter("property")}


def headline_of(run: Run, fmt: str) -> str:
    """The text of ``run``'s report in ``fmt`` where its headline lies."""
    path = run.reports[fmt]
    if fmt == "json":
        return json.dumps(run.json["run"], ensure_ascii=False)
    if fmt == "html":
        return html_text(path)[:4000]
    if fmt == "md":
        return markdown_head(path)
    if fmt == "xlsx":
        return excel_first_sheet(path)
    if fmt == "junit":
        return "\n".join(f"{k}={v}" for k, v in junit_properties(path).items())
    raise ValueError(fmt)


def accepted_everywhere(path: Path) -> None:
    """A JSON report goes back in as each option that reads one reads it: a shard of
    ``queryeval merge``, the earlier attempt of ``--queryeval-resume``, the recorded times of
    ``--queryeval-shard-durations`` (each loader the option calls; the runs themselves are
    exercised by the modules' own runs). Every field of every record is one the shard check
    knows (checked or carried unread), so a field a writer adds is a decision, not a refusal
    found by a user."""
    from pytest_queryeval.conclude.merge import load_shards, merge_reports
    from pytest_queryeval.plugin.resume import Resume
    from pytest_queryeval.report.shardcheck import CASE, CASE_UNCHECKED
    from pytest_queryeval.suite.shard import load_durations

    merged = merge_reports(load_shards([path]))  # MergeRefused names the file and field
    report = read_report(path)
    assert len(merged.report["cases"]) == len(report["cases"])
    Resume.load(path, path.name)  # ValueError: the resume option's usage error
    durations = load_durations(path, path.name)
    assert set(durations) == {str(c["id"]) for c in report["cases"]}
    unknown = {k for c in report["cases"] for k in c} - set(CASE) - CASE_UNCHECKED
    assert not unknown, f"{path.name}: record fields the shard check does not know: {unknown}"
