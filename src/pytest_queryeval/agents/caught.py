"""Whether a write attempt on a PostgreSQL datasource can be counted at all.

Why per database and not per query: ``write_attempts`` counts a write the read-only
transaction refused, and a routine of the database that handles errors hides that refusal.
The server runs such routines where no query names them (an aggregate's state function, a
type's default operator class comparison for an ``ORDER BY`` or a range literal), and
``SELECT wagg(b) FROM wt`` ran a caught ``DELETE`` and passed ``write_attempts: {max: 0}``
with 0 (the forty-eighth re-probe's S1). Under such a handler any refused write is hidden,
whatever it comes from (a parameter's default, a view's ``FOR UPDATE``, a domain's ``CHECK``:
the forty-ninth re-probe's W1 to W4), so a database that holds a routine handling the refusal
of a write leaves every agent case on it without that count, as a database whose routines
could blind the counts of tables read does (:func:`~..sources.pgreads.blinders`): an error
naming the routine, never a count of 0.
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any

from ..errors import CountUnknown, QueryEvalError

__all__ = ["uncountable_writes"]

#: The most routines read (a catalog over it is an unknown count, not a partial reading).
MAX_ROUTINES = 100_000

_read: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def uncountable_writes(source: Any) -> str:
    """Why no write attempt on ``source`` can be counted ("" when it can, and on every
    datasource but PostgreSQL), read once a source (a read-only role cannot change the
    answer). Raises :class:`CountUnknown` when the catalog cannot be read."""
    if getattr(source, "dialect", None) != "postgres":
        return ""
    with contextlib.suppress(KeyError, TypeError):
        return _read[source]
    from ..sources.base import whole_rows
    from ..sources.pgbodies import CATCHING_SQL, DO_LANGUAGES_SQL, caught_writes

    try:
        why = caught_writes(whole_rows(source, CATCHING_SQL, MAX_ROUTINES),
                            [row[0] for row in whole_rows(source, DO_LANGUAGES_SQL, 100)])
    except QueryEvalError as exc:
        raise CountUnknown(f"the database's routines could not be read ({exc.reason()})") \
            from None
    with contextlib.suppress(TypeError):
        _read[source] = why
    return why
