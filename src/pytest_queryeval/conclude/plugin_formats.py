"""The report formats of installed plugins, for ``queryeval merge`` (no pytest session).

A run learns them from the ``pytest_queryeval_report_formats`` hook as pytest registers each
plugin; ``queryeval merge`` asks the same plugins pytest would load: the installed ones
(``pytest11`` entry points), ``PYTEST_PLUGINS`` and its own ``-p MODULE`` options. Why: a
format an installed package adds is written after a merge exactly as after a run, with its
option.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator, Sequence
from importlib.metadata import entry_points

from ..report.formats import register_format

AddOption = Callable[..., object]


def add_plugin_option(add: AddOption) -> None:
    """``queryeval merge -p MODULE``."""
    add("-p", dest="plugins", action="append", default=[], metavar="MODULE",
        help="load this plugin module's report formats too (as pytest -p; the installed "
             "plugins and PYTEST_PLUGINS are loaded)")


def plugin_names(argv: Sequence[str]) -> list[str]:
    """The modules of ``-p NAME`` (or ``-pNAME``) in ``argv`` and of ``PYTEST_PLUGINS``."""
    names = [n.strip() for n in os.environ.get("PYTEST_PLUGINS", "").split(",") if n.strip()]
    args = list(argv)
    for i, arg in enumerate(args):
        if arg == "-p" and i + 1 < len(args):
            names.append(args[i + 1])
        elif arg.startswith("-p") and len(arg) > 2 and not arg.startswith("-p-"):
            names.append(arg[2:])
    return [n for n in names if not n.startswith("no:")]


def _plugins(argv: Sequence[str], problems: list[str]) -> Iterator[object]:
    for ep in entry_points(group="pytest11"):
        if ep.value.split(":")[0].startswith("pytest_queryeval"):
            continue  # this package's own formats are the built-in table
        try:
            yield ep.load()
        except Exception:  # a broken plugin is pytest's to refuse, not a merge's
            continue
    for name in plugin_names(argv):
        try:
            yield importlib.import_module(name)
        except ImportError as exc:
            problems.append(f"-p {name}: cannot import it ({exc})")


def register_plugin_formats(argv: Sequence[str]) -> list[str]:
    """Register the report formats the plugins return; the problems (a ``-p`` module that
    cannot be imported), usage errors of the merge."""
    problems: list[str] = []
    for plugin in _plugins(argv, problems):
        hook = getattr(plugin, "pytest_queryeval_report_formats", None)
        for name, entry in ((hook() if callable(hook) else None) or {}).items():
            register_format(name, entry)
    return problems
