"""A prediction source is one module plus one registry line (issue 40 items 1 and 6).

``CsvPredictor`` below is written from scratch (no FilePredictor underneath) and registered by
one entry in ``PREDICTOR_SOURCES``: the engine, the unmatched-id warning and the reports must
treat it exactly as they treat ``source: file``, because they ask what it declares
(:class:`pytest_queryeval.predict.base.Predictor`), not what it is called.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, ClassVar

import pytest

from pytest_queryeval.engine import Evaluator
from pytest_queryeval.errors import AnswerFailed, PredictionError
from pytest_queryeval.model import Case
from pytest_queryeval.predict import PREDICTOR_SOURCES, Prediction
from tests.sdmx_cases import GDP, MEX, dump, sdmx_case, selection
from tests.support import make_case, run_report


class CsvPredictor:
    """Predictions in a CSV file: an ``id`` column and a ``predicted`` one (JSON text)."""

    fixed: ClassVar[bool] = True
    path_keys: ClassVar[tuple[str, ...]] = ("path",)

    @classmethod
    def from_spec(cls, spec: dict[str, Any], base: Path, search: list[Path],
                  context: object = None) -> CsvPredictor:
        return cls((base / spec["path"]).resolve())

    def __init__(self, path: Path) -> None:
        self.path = path
        self._rows: dict[str, str] | None = None

    def _read(self) -> dict[str, str]:
        if self._rows is None:
            with self.path.open(newline="", encoding="utf-8") as fh:
                self._rows = {row["id"]: row["predicted"] for row in csv.DictReader(fh)}
        return self._rows

    def predict(self, case: Case) -> Prediction:
        rows = self._read()
        if case.id not in rows:
            raise PredictionError(f"no prediction for case {case.id!r} in {self.path}")
        return Prediction(json.loads(rows[case.id]))

    def paths(self) -> list[Path]:
        return [self.path]

    def ids(self) -> list[str]:
        return list(self._read())


def _write_jsonl(path: Path, rows: dict[str, object]) -> None:
    path.write_text("".join(json.dumps({"id": k, "predicted": v}) + "\n" for k, v in rows.items()))


def _write_csv(path: Path, rows: dict[str, object]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "predicted"])
        writer.writerows([k, json.dumps(v)] for k, v in rows.items())


#: ``source:`` -> (file suffix, writer): the built-in file source and the new one, side by side
SOURCES = {"file": (".jsonl", _write_jsonl), "csv": (".csv", _write_csv)}


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one line a contributor adds to ``predict/__init__.py``."""
    monkeypatch.setitem(PREDICTOR_SOURCES, "csv", f"{__name__}:CsvPredictor")


def _preds(directory: Path, source: str, name: str, rows: dict[str, object]) -> Path:
    suffix, write = SOURCES[source]
    path = directory / f"{name}{suffix}"
    write(path, rows)
    return path


@pytest.mark.usefixtures("registered")
@pytest.mark.parametrize("source", sorted(SOURCES))
def test_the_engine_treats_a_fixed_source_as_fixed(tmp_path, source):
    """No pool request, one run however many repeats are asked, the value asked for ahead,
    a missing answer the suite's error (never the model's), unmatched ids found."""
    path = _preds(tmp_path, source, "preds", {"a": "SELECT 1", "gpd": "SELECT 2"})
    spec = {"source": source, "path": path.name}
    a, b = (make_case(id=i, prediction_source=spec, prediction_base=tmp_path, repeat=3)
            for i in ("a", "b"))
    evaluator = Evaluator()
    evaluator.cases = [a, b]
    assert evaluator.repeats(a) == 1
    assert evaluator.live_request(a) is None
    assert evaluator.requests(a) == []
    fixed = evaluator.fixed_prediction(a, hook_active=False)
    assert fixed is not None and fixed.value == "SELECT 1"
    assert evaluator.predict(a).value == "SELECT 1"
    with pytest.raises(PredictionError, match="no prediction for case 'b'") as missing:
        evaluator.predict(b)
    assert not isinstance(missing.value, AnswerFailed)
    assert evaluator.unmatched_prediction_ids() == [(path, ["gpd"])]


@pytest.mark.usefixtures("registered")
@pytest.mark.parametrize("source", sorted(SOURCES))
def test_the_command_line_override_of_a_fixed_source(tmp_path, source):
    from pytest_queryeval.predict import make_predictor

    path = _preds(tmp_path, source, "preds", {"a": "SELECT 1", "gpd": "SELECT 2"})
    override = make_predictor({"source": source, "path": path.name}, tmp_path, [])
    case = make_case(id="a", repeat=2)
    evaluator = Evaluator(override=override)
    evaluator.cases = [case]
    assert evaluator.repeats(case) == 1
    assert evaluator.live_request(case) is None
    assert evaluator.unmatched_prediction_ids() == [(path, ["gpd"])]


@pytest.mark.usefixtures("registered")
@pytest.mark.parametrize("source", sorted(SOURCES))
def test_a_suite_run_gets_what_a_predictions_file_gets(suite, source):
    """End to end: the suite accepts the name, a missing answer is the case's prediction
    error, the id matching no case is warned about, and the file outside the rootdir is shown
    relative to it in the report."""
    outside = suite.path.parent / f"{suite.path.name}-outside"
    outside.mkdir()
    path = _preds(outside, source, "preds", {"mex": selection(MEX), "gpd": selection(GDP)})
    suite.makefile(".yaml", queryeval=dump({"predictions": {
        "source": source, "path": f"../{outside.name}/{path.name}"}}))
    suite.makefile(".yaml", test_cases=dump({
        "kind": "sdmx", "thresholds": {"macro_precision": 1.0},
        "cases": [sdmx_case("gdp", selection(GDP)), sdmx_case("mex", selection(MEX))],
    }))
    result, report = run_report(suite)
    assert report.outcomes == {"gdp": "error", "mex": "passed"}
    shown = f"../{outside.name}/{path.name}"
    assert report.by_id["gdp"]["error"] == \
        f"prediction error: no prediction for case 'gdp' in {shown}"
    assert str(outside) not in json.dumps(report)
    result.stdout.fnmatch_lines(
        [f"*1 prediction id(s) in *{outside.name}/{path.name} match no collected case: 'gpd'*"])


def test_the_registry_and_its_users_agree():
    """The names a suite may give are the registry's plus ``inline``."""
    from pytest_queryeval.predict import INLINE, SOURCE_NAMES, source_class
    from pytest_queryeval.suite import config

    assert set(config.PREDICTION_SOURCES) == set(SOURCE_NAMES) == {*PREDICTOR_SOURCES, INLINE}
    assert source_class(INLINE) is None


@pytest.mark.parametrize("name", list(PREDICTOR_SOURCES))
def test_every_source_declares_what_the_engine_and_the_reports_ask(name):
    """What every registered source must satisfy, a built-in's or a plugin's (``test_locality``
    runs this on its copy with a new one): a fixed source reads its answers from files it
    names; a live one names none and asks each answer when wanted."""
    from pytest_queryeval.predict import source_class
    from pytest_queryeval.predict.base import LiveSource

    cls = source_class(name)
    assert cls is not None
    assert isinstance(cls.fixed, bool)
    assert all(isinstance(k, str) for k in cls.path_keys)
    for method in ("from_spec", "predict", "paths", "ids"):
        assert callable(getattr(cls, method)), (name, method)
    if cls.fixed:
        assert cls.path_keys, name
    else:
        assert cls.path_keys == () and issubclass(cls, LiveSource), name
    assert all(isinstance(k, str) for k in getattr(cls, "shown_keys", ()))


@pytest.mark.usefixtures("registered")
def test_one_registry_line_is_the_whole_wiring():
    from pytest_queryeval.predict import fixed_source, spec_paths
    from pytest_queryeval.suite import config

    assert "csv" in config.PREDICTION_SOURCES
    assert fixed_source({"source": "csv", "path": "p.csv"})
    assert spec_paths({"source": "csv", "path": "../p.csv"}, Path("/suite")) == \
        [Path("/suite/../p.csv")]
    assert spec_paths({"source": "python", "function": "m:f"}, Path("/suite")) == []


class SheetPredictor(CsvPredictor):
    """A fixed source whose file key is not ``path`` and that names a sheet first."""

    path_keys: ClassVar[tuple[str, ...]] = ("workbook",)
    shown_keys: ClassVar[tuple[str, ...]] = ("sheet",)


def test_the_report_line_walks_the_source_s_own_keys(monkeypatch: pytest.MonkeyPatch):
    """``describe_predictions`` asks the source's class which keys name it (``shown_keys``,
    then ``path_keys``): a registered source with keys of its own is described as a built-in
    one is (a hand-kept key tuple showed it as the bare ``sheet``)."""
    from pytest_queryeval.predict import describe_predictions

    monkeypatch.setitem(PREDICTOR_SOURCES, "sheet", f"{__name__}:SheetPredictor")
    assert describe_predictions({"source": "sheet", "workbook": "p.xlsx"}) == "sheet:p.xlsx"
    assert describe_predictions({"source": "sheet", "workbook": "p.xlsx", "sheet": "run2"}) == \
        "sheet:run2"
    # the built-ins as before; a URL loses its query string and its password
    assert describe_predictions({"source": "file", "path": "preds.jsonl"}) == "file:preds.jsonl"
    assert describe_predictions({"source": "http", "url": "http://u:pw@127.0.0.1/p?token=x"}) \
        == "http:http://u:***@127.0.0.1/p"
    assert describe_predictions({"source": "command", "command": ["run", "-x"]}) == \
        "command:run -x"
    assert describe_predictions({"source": "nosuch", "path": "p"}) == "nosuch"
