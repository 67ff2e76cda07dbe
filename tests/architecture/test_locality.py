"""Issue 40's four measured changes, each made in a temporary copy of the package as a new
contributor would make it: one new module plus one registry line, then a real run that uses
the new capability end to end. The count is taken from the copy itself (every file that
differs from the package), so a capability that still needs a second edit somewhere (a name
switched on outside its registry, a hand-made list) fails here before it costs a contributor.

docs/architecture.md ("Four recipes") shows the same four changes as text.

Each copy also runs the tests that state what every entry of its registry must satisfy
(:data:`PROPERTIES`): they are parametrized over the registry, so the new entry is checked
with the built-in ones and no test lists a registry's contents.
"""

from __future__ import annotations

import difflib
import filecmp
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import pytest_queryeval
from tests.support import dump, read_report, write_suite

PACKAGE = Path(pytest_queryeval.__file__).parent


@dataclass(frozen=True)
class Change:
    """One new module (dotted name and text) and the line added to one registry."""

    #: The new module, e.g. ``pytest_queryeval.metrics.row_count``.
    module: str
    text: str
    #: The registry's module and the line of it after which the new entry goes.
    registry: str
    after: str
    line: str


METRIC = Change(
    "pytest_queryeval.metrics.row_count",
    '''"""row_count_ratio: the smaller row count over the larger (1.0 when both are empty)."""

from __future__ import annotations

from ..results import ResultTable

ROW_COUNT_METRIC_NAMES = ("row_count_ratio",)


def row_count_metrics(gold: ResultTable, pred: ResultTable) -> dict[str, float]:
    most = max(len(gold.rows), len(pred.rows))
    return {"row_count_ratio": min(len(gold.rows), len(pred.rows)) / most if most else 1.0}
''',
    "pytest_queryeval.kinds.sql", "_SQL_METRICS: tuple[SqlMetric, ...] = (",
    '    SqlMetric(_names("pytest_queryeval.metrics.row_count", "ROW_COUNT_METRIC_NAMES"), "tables", '
    '_on_tables("pytest_queryeval.metrics.row_count", "row_count_metrics")),')

SOURCE = Change(
    "pytest_queryeval.sources.csvdir",
    '''"""``type: csvdir``: a folder of CSV files, one table each, queried as a DuckDB database
(built once per content, then opened read-only like any ``type: duckdb`` file)."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from .base import DEFAULT_TIMEOUT
from .duckdb import DuckdbSource


class CsvDirSource(DuckdbSource):
    type = "csvdir"

    @classmethod
    def from_spec(cls, name: str, spec: Mapping[str, object]) -> CsvDirSource:
        import duckdb

        files = sorted(Path(str(spec["directory"])).glob("*.csv"))
        digest = hashlib.sha256()
        for f in files:
            digest.update(f.name.encode() + b"\\0" + f.read_bytes())
        target = Path(tempfile.gettempdir()) / f"queryeval-csvdir-{digest.hexdigest()[:16]}.duckdb"
        if not target.exists():
            tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
            con = duckdb.connect(str(tmp))
            for f in files:
                path = str(f).replace("'", "''")
                con.execute(f'CREATE TABLE "{f.stem}" AS SELECT * FROM read_csv_auto(\\'{path}\\')')
            con.close()
            os.replace(tmp, target)
        timeout = spec.get("timeout", DEFAULT_TIMEOUT)
        return cls(name, target, timeout=float(timeout) if isinstance(timeout, int | float)
                   else DEFAULT_TIMEOUT)
''',
    "pytest_queryeval.sources", "SOURCE_TYPES: dict[str, SourceType] = {",
    '    "csvdir": SourceType("pytest_queryeval.sources.csvdir:CsvDirSource", '
    'frozenset({"directory", "timeout"}), _named("duckdb"), sql=True),')

REPORT = Change(
    "pytest_queryeval.report.csv_report",
    '''"""``--queryeval-csv``: one row per case and metric, for a spreadsheet or a dataframe."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from .._util.safefile import write_atomic


def write_csv(report: dict[str, Any], path: Path, comparison: object = None) -> None:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\\n")
    writer.writerow(["id", "outcome", "metric", "value"])
    for case in report.get("cases") or []:
        for name, value in sorted((case.get("metrics") or {}).items()):
            writer.writerow([case["id"], case.get("outcome"), name, value])
    write_atomic(path, out.getvalue())
''',
    "pytest_queryeval.report.formats", "REPORT_WRITERS: dict[str, ReportFile] = {",
    '    "csv": ReportFile("CSV report", "write one row per case and metric here", '
    '"pytest_queryeval.report.csv_report:write_csv"),')

PREDICTIONS = Change(
    "pytest_queryeval.predict.csvfile",
    '''"""``source: csv``: predictions in a CSV file with an ``id`` and a ``predicted`` column."""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from ..errors import PredictionError
from ..model import Case
from .base import Prediction


class CsvPredictor:
    fixed: ClassVar[bool] = True
    path_keys: ClassVar[tuple[str, ...]] = ("path",)

    @classmethod
    def from_spec(cls, spec: Mapping[str, object], base: Path, search: list[Path],
                  context: object = None) -> CsvPredictor:
        return cls((base / str(spec["path"])).resolve())

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
        return Prediction(rows[case.id])

    def paths(self) -> list[Path]:
        return [self.path]

    def ids(self) -> list[str]:
        return list(self._read())
''',
    "pytest_queryeval.predict", "PREDICTOR_SOURCES: dict[str, type[Predictor] | str] = {",
    '    "csv": "pytest_queryeval.predict.csvfile:CsvPredictor",')


#: The registry's property tests, run on a copy with its new entry: (test file, -k expression).
PROPERTIES = {
    "pytest_queryeval.sources.csvdir": ("tests/sql_sources/test_source_types.py", "every_entry"),
    "pytest_queryeval.report.csv_report": ("tests/reports/test_writers.py", "every_writer"),
    "pytest_queryeval.predict.csvfile": ("tests/predictions/test_predictor_contract.py",
                                         "every_source"),
}


def _properties(change: Change, copy: Path) -> None:
    """The registry's property tests pass on the copy, its new entry among their cases."""
    path, expression = PROPERTIES[change.module]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(copy), str(Path.cwd())])}
    env.pop("PYTEST_ADDOPTS", None)
    run = subprocess.run([sys.executable, "-m", "pytest", path, "-k", expression,
                          "-p", "no:cacheprovider", "-p", "no:randomly", "-v"],
                         env=env, capture_output=True, text=True, timeout=300)
    new = change.line.split('"')[1]  # the entry's name, a case id of the parametrized test
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"[{new}] PASSED" in run.stdout, run.stdout


def _file_of(root: Path, module: str) -> Path:
    parts = module.split(".")
    package = root.joinpath(*parts) / "__init__.py"
    return package if package.exists() else root.joinpath(*parts[:-1]) / f"{parts[-1]}.py"


def _apply(change: Change, root: Path) -> None:
    """The contributor's edit in the copy under ``root``: the module, then the line."""
    new = _file_of(root, change.module)
    assert not new.exists(), f"{change.module} exists already"
    new.write_text(change.text, encoding="utf-8")
    registry = _file_of(root, change.registry)
    lines = registry.read_text(encoding="utf-8").splitlines(keepends=True)
    (at,) = [i for i, line in enumerate(lines) if line.rstrip() == change.after]
    lines.insert(at + 1, change.line + "\n")
    registry.write_text("".join(lines), encoding="utf-8")


def _touched(original: Path, copy: Path) -> dict[str, int]:
    """Each module of ``copy`` that is new or differs from ``original``: how many of its
    lines were added or changed (a new module counts as 0)."""
    out: dict[str, int] = {}
    for path in sorted(copy.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        rel = path.relative_to(copy)
        before = original / rel
        if not before.exists():
            out[rel.as_posix()] = 0
        elif not filecmp.cmp(before, path, shallow=False):
            diff = difflib.ndiff(before.read_text(encoding="utf-8").splitlines(),
                                 path.read_text(encoding="utf-8").splitlines())
            out[rel.as_posix()] = sum(1 for d in diff if d[:1] in "+-")
    return out


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A copy of the installed package, first on the path of the runs below."""
    root = tmp_path / "copy"
    shutil.copytree(PACKAGE, root / "pytest_queryeval",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _pytest(copy: Path, suite: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(copy), str(Path.cwd())])}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run([sys.executable, "-m", "pytest", str(suite), "-p", "no:cacheprovider",
                           "-q", *args], cwd=suite, env=env, capture_output=True, text=True,
                          timeout=300)


def _chinook_like(path: Path) -> Path:
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE genre (genreid INTEGER PRIMARY KEY, name TEXT)")
        con.executemany("INSERT INTO genre VALUES (?, ?)",
                        [(1, "Rock"), (2, "Jazz"), (3, "Metal")])
    return path


def _sql_suite(root: Path, datasource: dict[str, object], predicted: str | None,
               extra: dict[str, object] | None = None,
               gold: object = "SELECT name FROM genre WHERE genreid <= 3") -> Path:
    case: dict[str, object] = {"id": "two-genres", "question": "Three genres?", "gold": gold}
    if predicted is not None:
        case["predicted"] = predicted
    write_suite(root, {"datasources": {"db": datasource}, **(extra or {})},
                {"test_q.yaml": dump({"kind": "sql", "datasource": "db", "cases": [case]})})
    return root


def _check_locality(change: Change, copy: Path) -> None:
    _apply(change, copy)
    touched = _touched(PACKAGE, copy / "pytest_queryeval")
    new = _file_of(copy, change.module).relative_to(copy / "pytest_queryeval").as_posix()
    registry = _file_of(copy, change.registry).relative_to(copy / "pytest_queryeval").as_posix()
    assert touched == {new: 0, registry: 1}


def test_a_metric_is_one_module_and_one_table_line(copy: Path, tmp_path: Path) -> None:
    _check_locality(METRIC, copy)
    suite = _sql_suite(tmp_path / "suite", {"type": "sqlite",
                                            "path": str(_chinook_like(tmp_path / "g.sqlite"))},
                       "SELECT name FROM genre WHERE genreid <= 2",
                       {"thresholds": {"row_count_ratio": 0.5}})
    run = _pytest(copy, suite, "--queryeval-json=r.json")
    assert run.returncode == 0, run.stdout + run.stderr  # 2/3 >= 0.5: a valid threshold, met
    (record,) = read_report(suite / "r.json")["cases"]
    assert record["metrics"]["row_count_ratio"] == pytest.approx(2 / 3)


def test_a_source_type_is_one_module_and_one_table_line(copy: Path, tmp_path: Path) -> None:
    pytest.importorskip("duckdb")
    _check_locality(SOURCE, copy)
    _properties(SOURCE, copy)
    data = tmp_path / "csv"
    data.mkdir()
    (data / "genre.csv").write_text("genreid,name\n1,Rock\n2,Jazz\n3,Metal\n", encoding="utf-8")
    # a gold per dialect: the source's entry says DuckDB, so the DuckDB gold runs
    suite = _sql_suite(tmp_path / "suite", {"type": "csvdir", "directory": str(data)},
                       "SELECT name FROM genre WHERE name <> 'Pop'",
                       gold={"duckdb": "SELECT name FROM genre WHERE genreid <= 3",
                             "sqlite": "SELECT no_such_column FROM genre"})
    run = _pytest(copy, suite, "--queryeval-json=r.json")
    assert run.returncode == 0, run.stdout + run.stderr
    (record,) = read_report(suite / "r.json")["cases"]
    assert record["outcome"] == "passed"
    assert record["metrics"]["execution_accuracy"] == 1.0
    assert record["details"]["gold_dialect"] == {"dialect": "duckdb"}


def test_a_report_format_is_one_module_and_one_table_line(copy: Path, tmp_path: Path) -> None:
    _check_locality(REPORT, copy)
    _properties(REPORT, copy)
    suite = _sql_suite(tmp_path / "suite", {"type": "sqlite",
                                            "path": str(_chinook_like(tmp_path / "g.sqlite"))},
                       "SELECT name FROM genre WHERE genreid <= 3")
    run = _pytest(copy, suite, "--queryeval-json=r.json", "--queryeval-csv=r.csv")
    assert run.returncode == 0, run.stdout + run.stderr
    rows = (suite / "r.csv").read_text(encoding="utf-8").splitlines()
    assert rows[0] == "id,outcome,metric,value"
    assert "two-genres,passed,execution_accuracy,1.0" in rows
    merged = subprocess.run(
        [sys.executable, "-c", "from pytest_queryeval.conclude.cli import main; "
         "raise SystemExit(main())", "merge", "r.json", "-o", "m.json", "--queryeval-csv",
         "m.csv"],
        cwd=suite, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(copy)})
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert (suite / "m.csv").read_text(encoding="utf-8").splitlines() == rows


def test_a_prediction_source_is_one_module_and_one_table_line(copy: Path,
                                                              tmp_path: Path) -> None:
    _check_locality(PREDICTIONS, copy)
    _properties(PREDICTIONS, copy)
    suite = _sql_suite(tmp_path / "suite", {"type": "sqlite",
                                            "path": str(_chinook_like(tmp_path / "g.sqlite"))},
                       None, {"predictions": {"source": "csv", "path": "preds.csv"}})
    (suite / "preds.csv").write_text(
        'id,predicted\ntwo-genres,SELECT name FROM genre ORDER BY genreid\nstray,SELECT 1\n',
        encoding="utf-8")
    run = _pytest(copy, suite, "--queryeval-json=r.json")
    assert run.returncode == 0, run.stdout + run.stderr
    (record,) = read_report(suite / "r.json")["cases"]
    assert record["outcome"] == "passed"
    assert "stray" in run.stdout + run.stderr  # the id that matches no case is warned about
    assert json.dumps(record["predicted"]) == json.dumps(
        "SELECT name FROM genre ORDER BY genreid")
