"""Old spellings that keep working for one release, each named in a deprecation warning.

Each concept has one name (docs/reference.md, "Glossary"); "verdict" used to name five. A
team's CI scripts, ini files and case files written against the old names must not break on
the upgrade that renamed them, so the old spelling is read, and the warning says what to write
instead. Standard library only: ``queryeval merge`` and the case reader use it outside pytest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

#: Deprecated spellings (old -> new), accepted for one release with a deprecation warning
#: (docs/reference.md, Glossary).
RENAMED_OPTIONS = {"--queryeval-verdict": "--queryeval-gating"}
RENAMED_INI = {"queryeval_verdict": "queryeval_gating"}

#: Case and suite keys (old -> new).
RENAMED_KEYS = {"repeat_verdict": "repeat_rule"}


class QueryevalDeprecationWarning(DeprecationWarning):
    """A spelling that still works and will be removed in the next release."""


def deprecated_spellings(ns: Any, getini: Callable[[str], Any] | None = None
                         ) -> Iterator[tuple[str, str]]:
    """(old, new) for each deprecated option (and ini value, where ``getini`` is given) in use.

    ``ns`` holds the dests of :func:`..plugin.declare.add_report_options` (pytest's ``config.option``
    or ``queryeval merge``'s arguments)."""
    for old, new in RENAMED_OPTIONS.items():
        if getattr(ns, old.removeprefix("--").replace("-", "_"), None) is not None:
            yield old, new
    for old, new in (RENAMED_INI.items() if getini is not None else ()):
        assert getini is not None
        if getini(old):
            yield f"ini {old}", f"ini {new}"


def renamed_key(mapping: Mapping[str, Any], new: str) -> str | None:
    """The old spelling of ``new`` that ``mapping`` uses instead (None: none)."""
    old = next((o for o, n in RENAMED_KEYS.items() if n == new), None)
    return old if old is not None and old in mapping and new not in mapping else None
