"""Where the baseline file is.

The baseline path is resolved by one rule for reading (``--queryeval-baseline``) and writing
(``--queryeval-update-baseline``), so a bare name written by one run is the file the next run
compares with, whichever directory pytest is started from: beside the suite
(:func:`..suite.config.suite_dir`, which the plugin passes in).
"""

from __future__ import annotations

from pathlib import Path

#: ini ``queryeval_baseline``'s default.
DEFAULT_BASELINE = "queryeval-baseline.json"


def baseline_file(cli_value: str | None, ini_value: str, *, suite: Path, invocation_dir: Path,
                  rootdir: Path) -> Path:
    """The baseline of the run: ``--queryeval-baseline`` when given, else ini
    ``queryeval_baseline``. A bare file name lies beside the suite (:func:`..suite.config.suite_dir`) for
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
