"""The ``queryeval`` fixture: a case written in a test function, scored by the machinery of a
YAML case, landing in the same records, reports, gates and baseline.

Why the record rides on the test's own report: the controller gathers records from
``pytest_runtest_logreport`` (on xdist, from the workers' reports), keyed by node id, so a test
function that scored a case is, to every report, gate, shard merge and resume, one more case.
That is also why a test scores one case: parametrize for many (one node id, one record).
The exception is a ``datasource`` list, the case file's fan-out: its sources are only known
when the test runs, so the one test scores the case once per source, and the other sources'
records ride on the same report (``queryeval_more``), each named ``<node id>[<source>]``.

Why a run of several models parametrizes the test (:func:`fan_out`): a YAML case is one item
per model (``<id>[<model>]``, a marker per model, ``-m`` and shards and resume see each), and
the fields of a Python case are only known when its test runs, after collection. The test is
made one item per model at collection (``test_shop[model-a]``), each item scoring the case as
that model's; a case that writes its own prediction is asked of no model, so it is scored by
the first model's item, without a model, and the others skip.
"""

from __future__ import annotations

import contextlib
import inspect
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .. import kinds as kind_registry
from ..engine import run_case
from ..report.records import CaseRecord, case_record, final_outcome
from ..report.terminal import failure_text
from ..suite.config import with_cli_models
from ..suite.models import marker_name
from ..suite.pycase import cases_from_fields, fans_out, fields_ahead
from .nodes import MORE_RECORDS, RECORD, RUNNER, Runner, _property

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..engine import Evaluator
    from ..model import Case
    from ..predict import Prediction
    from ..predict.pool import RequestKey
    from ..suite.config import SuiteConfig

    _Request = tuple[RequestKey, str, int, Callable[[], Prediction]]

#: The requests made ahead for Python cases (:func:`requests_ahead`): each pool key, the node
#: id of the test it was made for and the fields read then (as :func:`_fingerprint`).
AHEAD = pytest.StashKey[dict[tuple[str, int], tuple[str, str]]]()


def _caller_line(path: Path) -> int:
    """The line of the ``check`` call in the test file (where a located error points)."""
    frame = inspect.currentframe()
    try:
        while frame is not None:
            if Path(frame.f_code.co_filename) == path:
                return frame.f_lineno
            frame = frame.f_back
    finally:
        del frame
    return 1


class QueryEval:
    """What the ``queryeval`` fixture gives a test: :meth:`check`."""

    def __init__(self, item: pytest.Item, runner: Runner, model: str | None = None) -> None:
        self._item, self._runner = item, runner
        #: the model this item was fanned out for (:func:`fan_out`), None in a run of one
        self._model = model
        self._scored = False

    def case(self, **fields: object) -> Case:
        """The case ``fields`` describe, read as a YAML case of this test file's folder would
        be (its ``queryeval.yaml`` chain gives the datasources and defaults)."""
        return self.cases(**fields)[0]

    def cases(self, **fields: object) -> list[Case]:
        """The cases ``fields`` describe: one, or one per source of a ``datasource`` list."""
        runner, path = self._runner, Path(self._item.path)
        return cases_from_fields(
            fields, path=path, display=runner.display(path), line=_caller_line(path),
            suite=_suite(runner, path.parent), is_metric=runner.is_metric,
            ini_thresholds=runner.options.ini_thresholds,
            extra_names=lambda kind: runner.custom_metrics.get(kind, ()),
            cli_thresholds=runner.options.cli_thresholds, model=self._model)

    def check(self, **fields: object) -> CaseRecord:
        """Score the case ``fields`` describe (``kind``, ``id``, ``question``, ``gold``,
        ``predicted``, ``datasource``, ``thresholds`` and every other key of a YAML case);
        the scored record when it passes, else the test fails with the case's diff (an
        ``xfail`` by the baseline's verdict when the run gates on one)."""
        if self._scored:
            raise pytest.UsageError(
                f"{self._item.nodeid}: queryeval.check scores one case per test (its record "
                "is the test's): parametrize the test over the cases")
        self._scored = True
        runner, item = self._runner, self._item
        if self._model is not None and not fans_out(fields) \
                and self._model != next(iter(_suite(runner, Path(item.path).parent).models)):
            pytest.skip(f"case {fields.get('id')!r} writes its own prediction: asked of no "
                        "model, it is scored once, by the first model's test")
        cases = self.cases(**fields)
        asked = self._asked_ahead(cases, fields)
        fanned = isinstance(fields.get("datasource"), list | tuple)
        scored = [self._score(case, f"{item.nodeid}[{case.datasource}]" if fanned
                              else item.nodeid, fanned) for case in cases]
        records = [record for record, _ in scored]
        if asked:  # taken: a second run of the test in this session asks again
            runner.evaluator.forget(asked)
        item.stash[RECORD] = records[0]
        if fanned:  # every source's case its own record, as the case file's items are
            item.stash[MORE_RECORDS] = records[1:]
        xfail = next((why for _, why in scored if why), None)
        if xfail and not item.config.option.runxfail \
                and all(r.get("status") == "passed" or why for r, why in scored):
            pytest.xfail(xfail)
        failing = [r for r in records if r.get("status") != "passed"]
        if failing:
            pytest.fail("\n\n".join(failure_text(
                r, spider_components=runner.options.report.spider_table,
                verbose=item.config.get_verbosity() > 0) for r in failing), pytrace=False)
        return records[0]

    def _asked_ahead(self, cases: list[Case], fields: Mapping[str, object],
                     ) -> list[tuple[str, int]]:
        """The keys of the requests made ahead for this test and these fields (taken from
        the pool); one made for another test, or for other fields than this test gives now
        (a global changed meanwhile), is not this case's answer: it is asked again."""
        ahead = self._item.config.stash.get(AHEAD, {})
        if not ahead:
            return []
        evaluator = self._runner.evaluator
        mine = (self._item.nodeid, _fingerprint(fields))
        keys = [key for case in cases for key in ((case.id, r) for r in
                                                  range(evaluator.repeats(case)))
                if key in ahead]
        stale = [key for key in keys if ahead[key] != mine]
        if stale:
            evaluator.forget(stale)
        return [key for key in keys if ahead[key] == mine]

    def _score(self, case: Case, nodeid: str, fanned: bool) -> tuple[CaseRecord, str | None]:
        """``case`` scored (or carried by a resume, or audited), with its baseline verdict's
        xfail reason; ``nodeid`` names its record (one per source when ``fanned``)."""
        runner, item = self._runner, self._item
        if case.difficulty is None and not case.errors:  # as a collected case gets it
            with contextlib.suppress(Exception):
                case.difficulty = kind_registry.get_kind(case.kind).difficulty(case)
        runner.evaluator.cases.append(case)
        runner.records_read  # noqa: B018 (decided before the first case is scored)
        audit = runner.options.audit
        resume = runner.options.resume
        record: CaseRecord | None = None
        if resume is not None and not case.errors and not audit:
            from .resume import identity

            carried = resume.carried(case, identity(case, runner.options.predictions), nodeid)
            if carried is not None:
                record = carried
        if record is None:
            if audit:  # the gold is checked, as a case file's is; no model is asked
                from ..audit import audit_outcome

                outcome = audit_outcome(case, runner.evaluator, audit)
            else:
                outcome = run_case(case, runner.evaluator)
            record = case_record(case, outcome, nodeid, item.config.rootpath,
                                 runner.evaluator.scrubber)
            if not audit and runner.records_read:
                from .resume import identity

                record["identity"] = identity(case, runner.options.predictions)
        xfail = None
        if runner.verdicts is not None and not audit \
                and item.get_closest_marker("xfail") is None:
            record["baseline_status"], record["standing"], xfail = runner.verdicts.decide(record)
        if fanned:  # each record's outcome is its own case's, not the test's
            record["outcome"] = final_outcome(record, "call", record.get("status") == "passed",
                                              False, bool(xfail))
        if runner.options.junit_properties:
            item.user_properties.append(("queryeval.kind", case.kind))
            for metric, value in sorted(record["metrics"].items()):
                item.user_properties.append(_property(metric, value))
        return record, xfail


def _suite(runner: Runner, folder: Path) -> SuiteConfig:
    """The suite config governing ``folder``, with the command line's models, as a case file
    of that folder reads it (:class:`~.nodes.QueryEvalFile`)."""
    return with_cli_models(runner.finder.for_directory(folder), runner.options.cli_models,
                           runner.options.fans_out_no_model)


def fan_out(metafunc: pytest.Metafunc, runner: Runner, fixture: str) -> None:
    """A test using the fixture, in a folder whose suite compares models: one item per model
    (``[<model>]``, its model's marker), as a case file's case (the module docstring)."""
    models = list(_suite(runner, Path(metafunc.definition.path).parent).models)
    if not models:
        return
    params = []
    for model in models:
        mark = runner.mark(marker_name(model), "queryeval model")
        params.append(pytest.param(model, id=model, marks=() if mark is None else (mark,)))
    metafunc.parametrize(fixture, params, indirect=True)


def fixture_value(request: pytest.FixtureRequest, wake: object) -> QueryEval:
    """The fixture's object; ``wake`` wakes a sleeping plugin (a run of Python cases only)."""
    config = request.config
    runner = config.stash.get(RUNNER, None)
    if runner is None:
        runner = wake(config)  # type: ignore[operator]
    return QueryEval(request.node, runner, getattr(request, "param", None))


def requests_ahead(item: pytest.Item, evaluator: Evaluator, *, hook_active: bool,
                   taken: set[tuple[str, int]]) -> list[_Request]:
    """The pool requests of a test that scores its case through the fixture, when its
    ``check`` fields can be read before it runs (:func:`~..suite.pycase.fields_ahead`): a
    Python case is then asked ahead of scoring as a YAML case is. [] for any other test (its
    case is asked when it runs, as before) and for a case whose key an earlier item holds
    (``taken``: a case id asked twice); never raises."""
    if "queryeval" not in getattr(item, "fixturenames", ()) or \
            not isinstance(item, pytest.Function):
        return []
    runner = item.config.stash[RUNNER]
    if runner.options.audit:
        return []
    callspec = getattr(item, "callspec", None)
    params = dict(callspec.params) if callspec is not None else {}
    model = params.pop("queryeval", None)  # the fixture's own parameter: the model (fan_out)
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    known = {k: v for k, v in params.items() if _direct(defs.get(k))}
    try:
        fields = fields_ahead(item.obj, known)
        if fields is None:
            return []
        fingerprint = _fingerprint(fields)
        cases = QueryEval(item, runner, model).cases(**fields)
        fanned = isinstance(fields.get("datasource"), list | tuple)
        if any(_carried(runner, case, item.nodeid, fanned) for case in cases):
            return []
        wanted = [r for case in cases for r in evaluator.requests(case, hook_active=hook_active)]
    except Exception:  # read when it runs, where its problem is reported
        return []
    if any(r[0] in taken for r in wanted):
        return []
    ahead = item.config.stash.setdefault(AHEAD, {})
    ahead.update((r[0], (item.nodeid, fingerprint)) for r in wanted)
    return wanted


def _direct(defs: object) -> bool:
    """Whether a test argument is a direct ``parametrize`` value (its last fixture definition
    is pytest's pseudo-fixture returning the value), not a fixture's."""
    if not isinstance(defs, list | tuple) or not defs:
        return False
    func = getattr(defs[-1], "func", None)
    return getattr(func, "__name__", "") == "get_direct_param_fixture_func"


def _carried(runner: Runner, case: Case, nodeid: str, fanned: bool) -> bool:
    """Whether ``--queryeval-resume`` carries the case's record (it is not asked)."""
    resume = runner.options.resume
    if resume is None:
        return False
    from .resume import identity

    name = f"{nodeid}[{case.datasource}]" if fanned else nodeid
    return resume.carried(case, identity(case, runner.options.predictions), name) is not None


def _fingerprint(fields: Mapping[str, object]) -> str:
    """The fields as they were when read: the test's own call is compared with it."""
    return json.dumps(fields, sort_keys=True, default=repr)
