"""Prediction ids that match no case: a warning, given once per run (on the controller).

A typo in an id, or a case renamed after its predictions were made, leaves a prediction
silently unused; the case then reports "no prediction" and nothing points at the file. The
check needs the collected cases: in a serial run the process has them; under xdist each worker
collects the whole suite, so workers send their findings in ``workeroutput`` and the
controller warns once.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..engine import Evaluator
from ..errors import QueryEvalWarning
from ..predict.file import UNMATCHED_LISTED, unmatched_message

#: display path -> (number of unmatched ids, the first UNMATCHED_LISTED of them)
Found = dict[str, tuple[int, list[str]]]
#: The ``workeroutput`` key an xdist worker sends its findings under.
WORKER_KEY = "queryeval_unmatched"


def find(config: pytest.Config, evaluator: Evaluator,
         display: Callable[[Path], str]) -> Found | None:
    """The predictions files' ids that match no collected case; None on a partial run."""
    if not _whole_suite(config):
        return None
    found: Found = {}
    for path, ids in evaluator.unmatched_prediction_ids():
        found[display(path)] = (len(ids), ids[:UNMATCHED_LISTED])
    return found


def encode(found: Found) -> list[list[Any]]:
    """What a worker sends (``workeroutput[WORKER_KEY]``)."""
    return [[k, n, ids] for k, (n, ids) in found.items()]


def from_worker(found: Found, workeroutput: dict[str, Any]) -> None:
    """Controller: keep one copy of what the workers found (they all collect the same)."""
    for display, total, ids in workeroutput.get(WORKER_KEY) or []:
        found.setdefault(str(display), (int(total), [str(i) for i in ids]))


def warn(found: Found) -> tuple[list[str], list[str]]:
    """Issue the warnings; returns (summary lines, errors) — errors (prefixed, as the summary
    prints them) when ``-W error``."""
    lines: list[str] = []
    errors: list[str] = []
    for display, (total, ids) in sorted(found.items()):
        message = unmatched_message(display, total, ids)
        try:
            warnings.warn(QueryEvalWarning(message), stacklevel=1)
        except Warning:  # -W error: the user asked for warnings to fail the run
            errors.append(f"error: {message}")
            continue
        lines.append(f"warning: {message}")
    return lines, errors


def _whole_suite(config: pytest.Config) -> bool:
    """False when the command line names files, node ids or a sub-directory of a suite (a
    directory below one that holds a ``queryeval.yaml``): their cases are a part only, like
    ``-k`` or ``-m`` selects, and the other ids of a predictions file are not unmatched."""
    base = config.invocation_params.dir
    return not any("::" in arg or (base / Path(arg)).is_file()
                   or _inside_a_suite((base / Path(arg)).resolve(), config.rootpath)
                   for arg in config.args)


def _inside_a_suite(path: Path, rootdir: Path) -> bool:
    """A directory strictly below a directory with a ``queryeval.yaml`` (searched up to the
    rootdir, as the suite configuration is)."""
    if not path.is_dir():
        return False
    root = rootdir.resolve()
    for parent in path.parents:
        if (parent / "queryeval.yaml").is_file():
            return True
        if parent == root or root not in parent.parents:
            return False
    return False
