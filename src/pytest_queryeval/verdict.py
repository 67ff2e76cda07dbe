"""Where the baseline file is, and what a case's outcome means against it.

The baseline path is resolved by one rule for reading (``--queryeval-baseline``) and writing
(``--queryeval-update-baseline``), so a bare name written by one run is the file the next run
compares with, whichever directory pytest is started from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .config import ConfigFinder

#: ini ``queryeval_baseline``'s default.
DEFAULT_BASELINE = "queryeval-baseline.json"


def suite_dir(finder: ConfigFinder, case_dirs: Iterable[Path], rootdir: Path) -> Path:
    """The directory of the outermost ``queryeval.yaml`` governing the run's case files (the
    rootdir when there is none): where a baseline given by a bare file name lives."""
    configs = sorted({p.parent for d in case_dirs for p in finder.for_directory(d).files},
                     key=lambda p: (len(p.parts), str(p)))
    return configs[0] if configs else rootdir


def baseline_file(cli_value: str | None, ini_value: str, *, suite: Path, invocation_dir: Path,
                  rootdir: Path) -> Path:
    """The baseline of the run: ``--queryeval-baseline`` when given, else ini
    ``queryeval_baseline``. A bare file name lies beside the suite (:func:`suite_dir`) for
    both; a relative path with a directory is taken from the current directory on the command
    line and from the rootdir in the ini file, as pytest's own path options are."""
    value, base = (cli_value, invocation_dir) if cli_value else (ini_value or DEFAULT_BASELINE,
                                                                 rootdir)
    path = Path(value)
    if path.is_absolute():
        return path.resolve()
    if "/" not in value and "\\" not in value:
        return (suite / value).resolve()
    return (base / value).resolve()


def describe_predictions(spec: Mapping[str, Any] | None) -> str | None:
    """A suite's ``predictions:`` as one short line for the report (``file:preds.jsonl``)."""
    if not spec:
        return None
    source = str(spec.get("source"))
    for key in ("path", "function", "callable", "url", "command", "model"):
        value = spec.get(key)
        if isinstance(value, str):
            if key == "url":  # its query string may carry tokens: never shown
                from .secrets import mask_url

                value = mask_url(value.split("?", 1)[0])
            return f"{source}:{value}"
        if isinstance(value, list):
            return f"{source}:{' '.join(map(str, value))}"
    return source


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
            names = ", ".join(str(p.relative_to(suite)) for p in missed[:3])
            more = f" and {len(missed) - 3} more" if len(missed) > 3 else ""
            why.append(f"the suite's case files {names}{more} were not run")
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
        shown = ", ".join(errors[:3]) + (f" and {len(errors) - 3} more" if len(errors) > 3 else "")
        why.append(f"{len(errors)} case(s) ended in an error ({shown})")
    return why
