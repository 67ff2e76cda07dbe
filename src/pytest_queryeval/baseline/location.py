"""Where the baseline file is.

The baseline path is resolved by one rule for reading (``--queryeval-baseline``) and writing
(``--queryeval-update-baseline``), so a bare name written by one run is the file the next run
compares with, whichever directory pytest is started from.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: config imports report.baseline, which imports baseline
    from ..suite.config import ConfigFinder

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
