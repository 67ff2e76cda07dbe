"""Where each datasource was written, so a problem found only when its source opens is
located like one found while loading.

Why here and not in the suite config: :func:`~pytest_queryeval.sources.open_source` locates
its errors with it, and sources sit below the suite reading (they never import it); the suite
config only records what it read (:func:`define`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ..errors import ConfigError

#: (name, resolved spec) -> (file, its line, line of each key). A problem found only when the
#: source opens (an unknown ``type``, a bad ``timeout``, in
#: :func:`~pytest_queryeval.sources.open_source`) is located from here like one found while
#: loading. Per process; an xdist worker loads the configuration itself.
_DEFINED: dict[str, tuple[str, int, dict[str, int]]] = {}


def _spec_key(name: str, spec: Mapping[str, object]) -> str:
    return json.dumps([name, spec], sort_keys=True, default=repr)


def define(name: str, spec: Mapping[str, object], file: str, line: int,
           key_lines: dict[str, int]) -> None:
    """Record that datasource ``name`` with the resolved ``spec`` was written at ``file``'s
    ``line``, each of its keys at ``key_lines``."""
    _DEFINED[_spec_key(name, spec)] = (file, line, key_lines)


def locate_datasource(exc: ConfigError, name: str, spec: Mapping[str, object]) -> ConfigError:
    """``exc`` with the file and line where datasource ``name`` (and the key it names) was
    written, when it has none and ``spec`` came from a ``queryeval.yaml``."""
    if exc.file is not None:
        return exc
    found = _DEFINED.get(_spec_key(name, spec))
    if found is None:
        return exc
    file, line, key_lines = found
    parts = (exc.key or "").split(".")
    if len(parts) > 2 and parts[0] == "datasources" and parts[1] == name:
        line = key_lines.get(parts[2], line)
    return ConfigError(exc.message, file, line, exc.key)


def defined_at(name: str, spec: Mapping[str, object], key: str | None = None,
               ) -> tuple[str, int] | None:
    """The file and line where datasource ``name``'s ``key`` was written (that of the
    datasource when no key is asked for or the key was not written there); None when
    ``spec`` came from no ``queryeval.yaml``. A source that fails when a case first uses it
    (a missing database file, a server that is down) names the line a user has to fix."""
    found = _DEFINED.get(_spec_key(name, spec))
    if found is None:
        return None
    file, line, key_lines = found
    return file, key_lines.get(key, line) if key is not None else line
