"""``pytest_queryeval.check``: a case written in Python scored outside pytest (a notebook, a
script, another test runner), by the same reader and engine as a YAML case.

Why one evaluator per folder, kept: opening a datasource (a sandbox worker, a server
connection) costs more than scoring a case, and a script checks many cases of one suite.
"""

from __future__ import annotations

import inspect
import threading
from pathlib import Path

from ..engine import Evaluator, run_case
from ..errors import QueryEvalError
from ..report.records import CaseRecord, case_record
from ..report.terminal import failure_text
from ..suite.config import ConfigFinder
from ..suite.pycase import case_from_fields

_LOCK = threading.Lock()
_EVALUATORS: dict[Path, tuple[ConfigFinder, Evaluator]] = {}


class CaseFailed(AssertionError):
    """A case checked with :func:`check` did not pass; ``record`` is its scored record and
    the message the diff a failing YAML case prints."""

    def __init__(self, record: CaseRecord) -> None:
        super().__init__(failure_text(record))
        self.record = record


def _caller() -> tuple[Path, int]:
    frame = inspect.currentframe()
    try:
        here = Path(__file__).resolve()
        while frame is not None:
            path = Path(frame.f_code.co_filename)
            if path.resolve() != here and path.exists():
                return path.resolve(), frame.f_lineno
            frame = frame.f_back
    finally:
        del frame
    return Path.cwd() / "<python>", 1


def _evaluator(root: Path) -> tuple[ConfigFinder, Evaluator]:
    with _LOCK:
        pair = _EVALUATORS.get(root)
        if pair is None:
            pair = _EVALUATORS[root] = (ConfigFinder(root), Evaluator(search_paths=[root]))
        return pair


def check(*, directory: str | Path | None = None, raise_on_failure: bool = True,
          **fields: object) -> CaseRecord:
    """Score the case ``fields`` describe, with the datasources and defaults of the
    ``queryeval.yaml`` chain governing ``directory`` (default: the calling file's folder, up
    to the current directory); the record, or :class:`CaseFailed` when it does not pass (with
    ``raise_on_failure``). A problem of the suite itself raises :class:`QueryEvalError`."""
    path, line = _caller()
    folder = Path(directory).resolve() if directory is not None else path.parent
    root = Path.cwd().resolve()
    if root not in (folder, *folder.parents):
        root = folder
    finder, evaluator = _evaluator(root)
    suite = finder.for_directory(folder)
    problems = [p for report in finder.reports.values() for p in report.problems]
    if problems:
        raise QueryEvalError("\n".join(map(str, problems)))
    display = str(path.relative_to(root)) if root in path.parents else path.name
    case = case_from_fields(fields, path=path, display=display, line=line, suite=suite)
    record = case_record(case, run_case(case, evaluator), f"{display}::{case.id}", root,
                         evaluator.scrubber)
    record["outcome"] = record.get("status")  # (in a run, pytest's report decides it)
    if raise_on_failure and record.get("status") != "passed":
        raise CaseFailed(record)
    return record
