"""Prediction ids that match no case: a warning, given once per run (on the controller).

A typo in an id, or a case renamed after its predictions were made, leaves a prediction
silently unused; the case then reports "no prediction" and nothing points at the file. The
check needs the collected cases: in a serial run the process has them; under xdist each worker
collects the whole suite, so workers send their findings in ``workeroutput`` and the
controller warns once.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

from .collect import State
from .errors import QueryEvalWarning
from .predict.file import UNMATCHED_LISTED, unmatched_message

#: display path -> (number of unmatched ids, the first UNMATCHED_LISTED of them)
Found = dict[str, tuple[int, list[str]]]
_FOUND = pytest.StashKey[Found]()
_WORKER_KEY = "queryeval_unmatched"


def after_collection(config: pytest.Config, state: State) -> None:
    """Check the predictions files against every collected case (not on a partial run)."""
    if not _whole_suite(config):
        return
    found: Found = {}
    for path, ids in state.session.unmatched_prediction_ids():
        found[state.display(path)] = (len(ids), ids[:UNMATCHED_LISTED])
    if hasattr(config, "workerinput"):
        config.workeroutput[_WORKER_KEY] = [  # type: ignore[attr-defined]
            [k, n, ids] for k, (n, ids) in found.items()]
    else:
        config.stash[_FOUND] = found


def from_worker(config: pytest.Config, workeroutput: dict[str, Any]) -> None:
    """Controller: keep one copy of what the workers found (they all collect the same)."""
    found = config.stash.setdefault(_FOUND, {})
    for display, total, ids in workeroutput.get(_WORKER_KEY) or []:
        found.setdefault(str(display), (int(total), [str(i) for i in ids]))


def warn(config: pytest.Config) -> tuple[list[str], list[str]]:
    """Issue the warnings; returns (summary lines, errors) — errors (prefixed, as the summary
    prints them) when ``-W error``."""
    lines: list[str] = []
    errors: list[str] = []
    for display, (total, ids) in sorted(config.stash.get(_FOUND, {}).items()):
        message = unmatched_message(display, total, ids)
        try:
            warnings.warn(QueryEvalWarning(message), stacklevel=1)
        except Warning:  # -W error: the user asked for warnings to fail the run
            errors.append(f"error: {message}")
            continue
        lines.append(f"warning: {message}")
    return lines, errors


def _whole_suite(config: pytest.Config) -> bool:
    """False when the command line names files or node ids: their cases are a part only,
    and the other ids of a predictions file are not unmatched."""
    base = config.invocation_params.dir
    return not any("::" in arg or (base / Path(arg)).is_file() for arg in config.args)
