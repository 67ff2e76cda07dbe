"""The names and keys of the two graph source types (``type: ladybug``, ``type: bolt``).

Why a module of their own: the registry hook (:mod:`.plugin`) runs in every pytest run where
the plugin is installed and needs only these names to register the types; importing the
sources for them imported the guard, the cost bounds, the Bolt client and the rehearsal
(about 0.3 s in every run, a suite without a graph too). The sources import them from here.
"""

from __future__ import annotations

LADYBUG = "ladybug"
LADYBUG_KEYS = frozenset({"path", "timeout", "max_rows", "max_memory", "max_values"})
BOLT = "bolt"
BOLT_KEYS = frozenset({"url", "database", "user", "password_env", "timeout", "max_rows",
                       "version", "rehearse", "max_memory", "max_values"})
