"""The keys the plugin itself reads from a SQL datasource, and their checks.

Why apart from the sources: ``writable: sandbox`` (dml/ddl tasks may run on throwaway copies of
the datasource, :mod:`.tasks`) and ``now:`` (the pinned clock, :mod:`.clock`) are read by the
plugin before any query and never reach the source; they are checked when the suite is loaded
(config.py), so a typo in either fails the cases that use the datasource with the file and
line, before any case runs, instead of surfacing per case (or never, for ``now``).
"""

from __future__ import annotations

from typing import Any

PLUGIN_KEYS = frozenset({"writable", "now"})
#: Datasource types that accept :data:`PLUGIN_KEYS`.
PLUGIN_KEY_TYPES = ("sqlite", "duckdb", "sqlalchemy")


def plugin_key_problems(spec: dict[str, Any]) -> list[tuple[str, str]]:
    """``writable`` and ``now`` of a datasource, checked when the suite loads: a typo in
    either would otherwise surface only when a case runs (or never, for ``now``)."""
    problems: list[tuple[str, str]] = []
    for key in sorted(PLUGIN_KEYS & set(spec)):
        if spec.get("type") not in PLUGIN_KEY_TYPES:
            problems.append((key, f"only SQL datasources ({', '.join(PLUGIN_KEY_TYPES)}) "
                                  f"take {key}:"))
        elif key == "writable" and spec[key] not in ("sandbox", False):
            problems.append((key, f"must be 'sandbox' (dml/ddl tasks run on throwaway copies "
                                  f"of this datasource) or false, not {spec[key]!r}"))
        elif key == "now":
            from .clock import parse_instant

            try:
                parse_instant(spec[key])
            except ValueError as exc:
                problems.append((key, str(exc)))
    return problems
