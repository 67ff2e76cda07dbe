"""Every reference artifact end to end (issue 48 item 6): its suite made from ``tests/data``
(through ``queryeval-import`` where the benchmark has an importer), run as a user runs it, in
strict gating, serially, with ``-n 2``, and as three shards then ``queryeval merge``; each
run's JSON headline is the figure the reference printed, exactly (no tolerance, every digit),
with the artifact's empty, unparsable and missing answers in it; and the three runs' records
are one (times and run bookkeeping aside: ``e2e/support.py``'s normaliser).

The artifacts are the table of :mod:`.artifacts`; a module fixture runs each one once and all
the assertions read its runs. The entries with empty answers (TEXT2SPARQL, GERBIL) fail where an
empty answer is recorded as an abstention in a suite that has no abstention case (before issue 48
item 1): the case then has no reference metric and leaves the session's averages."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.support import Run, assert_same, normalise, run_merge, run_pytest
from tests.support import Report

from .artifacts import ARTIFACTS, BOLT_URL, Artifact

#: Each artifact's tests on one xdist worker, so its six runs are made once, not once per
#: worker (``tests/together.py`` splits the group by the module fixture's parameter).
pytestmark = pytest.mark.xdist_group("tests.conformance.test_reference_runs")

SHARDS = 3
WAYS = ("serial", "xdist", "merged")


@pytest.fixture(scope="module", params=ARTIFACTS, ids=[a.name for a in ARTIFACTS])
def artifact(request: pytest.FixtureRequest) -> Artifact:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def runs(artifact: Artifact, shared_data: Path, request: pytest.FixtureRequest,
         tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """The artifact's suite and its three ways of running, made once per artifact."""
    folder = tmp_path_factory.mktemp(artifact.name)
    artifact.build(shared_data, folder)
    unstick = _bolt(artifact, folder, request)
    options = ("--queryeval-gating=strict", *artifact.options)
    out = {"serial": run_pytest(folder, "serial", *options, formats=(), junit=False)}
    unstick()
    out["xdist"] = run_pytest(folder, "xdist", "-n", "2", *options, formats=(), junit=False)
    shards = []
    for i in range(1, SHARDS + 1):
        unstick()
        shard = run_pytest(folder, f"shard{i}", f"--queryeval-shard={i}/{SHARDS}", *options,
                           formats=(), junit=False)
        assert shard.reports["json"].is_file(), shard.explain()
        shards.append(shard.reports["json"])
    out["merged"] = run_merge(folder, "merged", shards, *artifact.options, formats=())
    for run in out.values():
        assert run.reports["json"].is_file(), run.explain()
    return out


@pytest.mark.parametrize("way", WAYS)
def test_headline_is_the_reference_figure(artifact: Artifact, runs: dict[str, Run], way: str,
                                          shared_data: Path) -> None:
    assert artifact.headline(runs[way].json) == artifact.expected(shared_data), (
        f"{artifact.name} ({way}): the headline is not {artifact.source}")


def _bolt(artifact: Artifact, folder: Path,
          request: pytest.FixtureRequest) -> Callable[[], None]:
    """A Bolt artifact's config pointed at the fixture's server; what resets the server's
    listener between runs (a run's closing driver leaves it stuck: the fixture's docstring)."""
    if not artifact.bolt:
        return lambda: None
    server = request.getfixturevalue("bolt_server")
    config = folder / "queryeval.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace(BOLT_URL, server.url),
                      encoding="utf-8")
    server.unstick()
    return server.unstick  # type: ignore[no-any-return]


def _records(artifact: Artifact, run: Run) -> Report:
    report = run.json
    if artifact.runs_in_any_order:
        for case in report["cases"]:
            repeat = (case.get("details") or {}).get("repeat") or {}
            if isinstance(repeat.get("runs"), list):
                repeat["runs"].sort(key=lambda r: json.dumps(normalise({"run": r})["run"],
                                                             sort_keys=True))
            if isinstance(repeat.get("statuses"), list):
                repeat["statuses"].sort()
        for flaky in report.get("flaky") or []:
            if isinstance(flaky.get("statuses"), list):
                flaky["statuses"].sort()
    return report


def test_every_way_of_running_records_the_same(artifact: Artifact,
                                                runs: dict[str, Run]) -> None:
    serial = _records(artifact, runs["serial"])
    assert serial["cases"], runs["serial"].explain()
    for way in WAYS[1:]:
        assert_same(serial, _records(artifact, runs[way]),
                    f"{artifact.name}: serial against {way}")
