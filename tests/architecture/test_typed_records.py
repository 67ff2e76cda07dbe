"""Every report writer takes the typed case record (issue 51 item 3).

The case record is typed from the engine (:class:`pytest_queryeval.model.CaseRecord`) to every
writer: a writer's parameter holding a record or a list of them names the record's type
(``CaseRecord``, ``RecordLike`` for one read back from a JSON report, ``SlimRecord`` for a
merge's slim one, ``Report``), never a plain ``dict[str, Any]``, ``Mapping[str, Any]`` or
``Any``: those hid which fields a writer reads, and a writer typed so got slim records after
``queryeval merge`` without its type saying so. Read from the source with ``ast``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest_queryeval

ROOT = Path(pytest_queryeval.__file__).parent
#: The writers: the report files and terminal lines, the end of the run and ``queryeval
#: merge``, the baseline, and the failure section pytest prints.
WRITERS = ("report", "conclude", "baseline", "plugin/failure_section.py")
#: The parameter names that hold a case record or a list of them.
RECORD_NAMES = frozenset({"record", "records", "rec", "recs", "case", "cases",
                          "case_record", "case_records"})
#: The names a typed record parameter's annotation uses.
TYPED = frozenset({"CaseRecord", "RecordLike", "SlimRecord", "Report"})
#: The names of a plain mapping (``object``, for a value not yet checked to be a record, is
#: what a checker takes: :mod:`pytest_queryeval.report.shardcheck`).
PLAIN = frozenset({"dict", "Dict", "Mapping", "MutableMapping", "Any"})
#: (module, function): why its record parameter is a plain dict.
ALLOWED: dict[tuple[str, str], str] = {
    ("report/caps.py", "cap_record"): "the record maker caps the raw dict it is building, "
        "before it is a CaseRecord (report/records.py casts it after the caps)",
}


def _names(node: ast.expr) -> set[str]:
    return ({n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            | {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
            | {n.value for n in ast.walk(node)
               if isinstance(n, ast.Constant) and isinstance(n.value, str)})


def _modules() -> list[Path]:
    out: list[Path] = []
    for where in WRITERS:
        path = ROOT / where
        out.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    return out


def untyped_record_parameters(path: Path, root: Path = ROOT) -> list[str]:
    """``function(parameter: annotation)`` for each record parameter of ``path`` typed as a
    plain mapping, or not typed at all."""
    rel = path.relative_to(root).as_posix()
    found = []
    for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) or \
                (rel, fn.name) in ALLOWED:
            continue
        args = fn.args
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
            if arg.arg not in RECORD_NAMES:
                continue
            ann = arg.annotation
            names = _names(ann) if ann is not None else set()
            if ann is None or (not names & TYPED and names & PLAIN):
                shown = ast.unparse(ann) if ann is not None else "untyped"
                found.append(f"{rel}:{fn.lineno} {fn.name}({arg.arg}: {shown})")
    return found


def test_no_writer_takes_a_record_as_a_plain_mapping() -> None:
    found = [hit for path in _modules() for hit in untyped_record_parameters(path)]
    assert found == []


def test_the_check_finds_a_plain_record_parameter(tmp_path: Path) -> None:
    """On real source: a plain ``Mapping[str, Any]`` record is found, a typed one is not."""
    (tmp_path / "report").mkdir()
    module = tmp_path / "report" / "probe.py"
    module.write_text("from typing import Any\nfrom collections.abc import Mapping, Sequence\n"
                      "def a(record: Mapping[str, Any]) -> None: ...\n"
                      "def b(records: Sequence[RecordLike]) -> None: ...\n"
                      "def c(cases: list[dict[str, Any]], case_id: str) -> None: ...\n",
                      encoding="utf-8")
    assert untyped_record_parameters(module, tmp_path) == [
        "report/probe.py:3 a(record: Mapping[str, Any])",
        "report/probe.py:5 c(cases: list[dict[str, Any]])"]


def test_every_allowed_function_still_exists() -> None:
    """An allowance whose function is gone is removed, so the list only shrinks."""
    for rel, name in ALLOWED:
        tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
        assert any(isinstance(n, ast.FunctionDef) and n.name == name for n in ast.walk(tree))


def test_every_built_in_writer_takes_the_typed_report() -> None:
    """Each writer of :data:`~pytest_queryeval.report.formats.REPORT_WRITERS` (and the junit
    XML's) takes the one typed report, whose ``records()`` gives the full records after a run
    and after ``queryeval merge`` alike."""
    import inspect
    from importlib.util import find_spec

    from pytest_queryeval.conclude import load_writer
    from pytest_queryeval.report.formats import REPORT_WRITERS
    from pytest_queryeval.report.junit import write_junit

    writers = {name: load_writer(entry) for name, entry in REPORT_WRITERS.items()
               if entry.needs is None or find_spec(entry.needs[0]) is not None}
    writers["junit"] = write_junit
    first = {name: next(iter(inspect.signature(fn).parameters.values())).annotation
             for name, fn in writers.items()}
    assert first == dict.fromkeys(writers, "Report")
