"""Why a run must not become the baseline, or is only part of the suite.

A baseline is the accepted state of the whole suite: a refresh from a filtered, interrupted or
erroring run would silently drop cases from it or accept errors, so the reasons are computed
in one place for the plugin's controller and for ``queryeval merge``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .._util.wording import shortlist


def partial_run(args: Sequence[str], invocation_dir: Path, suite: Path,
                patterns: Sequence[str], collected: set[Path]) -> list[str]:
    """Why the command-line arguments select only part of the suite: node ids, or a path
    inside the suite directory while the suite has case files outside it."""
    why: list[str] = []
    inside: list[Path] = []
    for arg in args:
        if "::" in arg:
            why.append(f"explicit node id {arg}")
            continue
        path = (invocation_dir / arg).resolve()
        if path != suite and suite in path.parents:
            inside.append(path)
    if inside:
        missed = sorted({p for pattern in patterns for p in suite.rglob(pattern)
                         if p.is_file() and not any(part.startswith(".") for part in
                                                    p.relative_to(suite).parts)
                         and p.resolve() not in collected})
        if missed:
            names = shortlist([str(p.relative_to(suite)) for p in missed], 3)
            why.append(f"the suite's case files {names} were not run")
    return why


def update_refusals(*, filters: Sequence[str], interrupted: bool, stopped: str | None,
                    errors: Sequence[str]) -> list[str]:
    """Why this run must not become the baseline (empty: it may). A filtered or cut-short run
    would silently drop cases from it, and errors would enter it as the accepted state."""
    why = [f"the run was filtered ({', '.join(filters)})"] if filters else []
    if interrupted:
        why.append("the run was interrupted")
    if stopped:
        why.append(f"the run stopped early ({stopped})")
    if errors:
        shown = shortlist(errors, 3)
        why.append(f"{len(errors)} case(s) ended in an error ({shown})")
    return why
