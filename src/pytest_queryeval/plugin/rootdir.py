"""The rootdir pytest would have chosen had it known the plugin's options.

Why: pytest decides its rootdir and ini file from the command line's paths before it loads any
``pytest11`` plugin (pytest-dev/pytest#8846), so no plugin option is known to that first parse.
``pytest --queryeval-baseline ../runs/base.json`` then takes ``../runs/base.json`` for a test
path: the rootdir moves to the common parent, and with it the node ids, the cache (answers
paid for again), the shard of each case and ``queryeval merge``'s "another suite" check.
pytest's own ``--junitxml ../out/j.xml`` is known to that parse and does not move it.

So when one of the plugin's options was given with its value as the next word (only then:
``--opt=value`` never reaches pytest as a path), :func:`redecide` parses the command line
again with every option known and decides the setup as pytest would have. When that gives
another rootdir or ini file, the decision is replaced before the initial conftests are loaded,
and what pytest already took from the wrong ini file is taken again from the right one: its
``addopts`` (prepended to the arguments; ``-p`` plugins loaded), its ``pythonpath``, and its
``minversion`` and ``required_plugins`` are checked. A pytest whose internals differ from those
known here gives a usage error that names the option and the fix (attach the value with ``=``)
instead of a run with the wrong rootdir.
"""

from __future__ import annotations

import copy
import inspect
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

#: ini values pytest checks before its plugins are loaded (``addopts`` and ``pythonpath``
#: aside), with the check run again when the right ini file sets them otherwise.
_READ_EARLY = {"minversion": "_checkversion", "required_plugins": "_validate_plugins"}


def redecide(config: pytest.Config, parser: pytest.Parser, args: list[str],
             given: Sequence[str]) -> None:
    """Re-decide pytest's rootdir and ini file with every option known (module docstring);
    ``given``: the plugin's options that were given as ``--opt value``."""
    try:
        from _pytest.config.findpaths import determine_setup
    except ImportError:  # pragma: no cover - another pytest
        _refuse(config, given, None)
    try:
        namespace = parser.parse_known_args(args, namespace=copy.copy(config.option))
    except pytest.UsageError:
        return  # pytest's own parse reports it, with its usage line
    accepted = inspect.signature(determine_setup).parameters
    kwargs: dict[str, Any] = {
        "inifile": namespace.inifilename, "args": list(namespace.file_or_dir),
        "rootdir_cmd_arg": namespace.rootdir or None,
        "invocation_dir": config.invocation_params.dir,
        "override_ini": namespace.override_ini}
    setup = determine_setup(**{k: v for k, v in kwargs.items() if k in accepted})
    rootpath, inipath, inicfg = setup[0], setup[1], setup[2]
    if (rootpath, inipath) == (config.rootpath, config.inipath):
        return
    ini_attr = "_inicfg" if hasattr(config, "_inicfg") else "inicfg"
    if not hasattr(config, "_rootpath") or not hasattr(config, "_inicache"):
        _refuse(config, given, rootpath)  # pragma: no cover - another pytest
    early = {name: config.getini(name) for name in ("addopts", "pythonpath", *_READ_EARLY)}
    wrong = (config.rootpath, config.inipath, getattr(config, ini_attr))
    _set(config, ini_attr, rootpath, inipath, inicfg, setup[3] if len(setup) > 3 else None)
    now = {name: config.getini(name) for name in early}
    added = list(early["addopts"])
    checks: list[Any] = [getattr(config, check, None) for name, check in _READ_EARLY.items()
                         if now[name] != early[name]]
    if None in checks or args[:len(added)] != added:
        _set(config, ini_attr, *wrong, None)
        _refuse(config, given, rootpath)
    for check in checks:
        check()
    args[:] = [*now["addopts"], *args[len(added):]]
    if now["addopts"] != early["addopts"]:
        config.pluginmanager.consider_preparse(now["addopts"], exclude_only=False)
    for path in early["pythonpath"]:
        if str(path) in sys.path:
            sys.path.remove(str(path))
    for path in reversed(now["pythonpath"]):
        sys.path.insert(0, str(path))
    known = parser.parse_known_args(args, namespace=copy.copy(config.option))
    if known.confcutdir is None:  # pytest's default, from the ini file or rootdir
        known.confcutdir = str(inipath.parent if inipath is not None else rootpath)
    config.known_args_namespace = known


def _set(config: pytest.Config, ini_attr: str, rootpath: Path, inipath: Path | None,
         inicfg: Any, ignored: Any) -> None:
    target: Any = config
    target._rootpath = rootpath
    target._inipath = inipath
    setattr(target, ini_attr, inicfg)
    if ignored is not None and hasattr(target, "_ignored_config_files"):
        target._ignored_config_files = ignored
    target._inicache.clear()
    config._parser.extra_info["rootdir"] = str(rootpath)
    config._parser.extra_info["inifile"] = str(inipath)


def _refuse(config: pytest.Config, given: Sequence[str], rootpath: Path | None) -> Any:
    options = ", ".join(f"{o}=VALUE" for o in given)
    moved = f" (rootdir {config.rootpath}, not {rootpath})" if rootpath is not None else ""
    raise pytest.UsageError(
        f"pytest took the value of {', '.join(given)} for a test path{moved}: it decides its "
        f"rootdir before it knows a plugin's options; attach the value with '=': {options}")
