"""A pinned clock: ``now:`` on a datasource makes ``CURRENT_DATE`` and its kin mean one instant.

Why: a gold that asks for "orders of the last 30 days" returns another result every day, so a
suite written today fails next month with no model change (BIRD-Interact#11 and #12 report golds
of this kind). Rewriting every spelling of "now" in gold and prediction alike to the same
literal instant, before either runs, makes the case mean what it meant when it was written and
keeps the comparison fair. The rewrite is done on sqlglot's parse (never on the text), so a
column named ``now_playing`` or a string ``'now'`` outside a date function is left alone, and
each rewrite is recorded (the case's details say what was replaced).

Spellings replaced, per dialect: ``CURRENT_DATE``, ``CURRENT_TIME``, ``CURRENT_TIMESTAMP``,
``LOCALTIMESTAMP``, ``now()``, ``today()``, ``get_current_timestamp()``,
``transaction_timestamp()``, ``statement_timestamp()``, ``clock_timestamp()``, and the ``'now'``
(or ``'today'``) argument of SQLite's ``date``, ``time``, ``datetime``, ``julianday``,
``unixepoch`` and ``strftime`` and of a PostgreSQL cast (``'now'::date``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlglot import exp

#: Function names (upper case) that read the clock, by what they return.
_TIMESTAMP_CALLS = frozenset({"NOW", "GET_CURRENT_TIMESTAMP", "TRANSACTION_TIMESTAMP",
                              "STATEMENT_TIMESTAMP", "CLOCK_TIMESTAMP"})
_DATE_CALLS = frozenset({"TODAY"})
#: SQLite's date and time functions, whose 'now' argument is the clock.
_SQLITE_TIME_FUNCTIONS = frozenset({"DATE", "TIME", "DATETIME", "JULIANDAY", "UNIXEPOCH",
                                    "STRFTIME"})


@dataclass
class Rewritten:
    sql: str
    #: What was replaced, in order: ``CURRENT_DATE -> '2024-05-01'``.
    replaced: list[str] = field(default_factory=list)


def parse_instant(value: object) -> dt.datetime:
    """``now:`` as written in YAML (a date, a timestamp, or their ISO text); ValueError names
    the accepted forms."""
    if isinstance(value, dt.datetime):
        instant = value
    elif isinstance(value, dt.date):
        instant = dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        try:
            instant = dt.datetime.fromisoformat(value.strip())
        except ValueError:
            raise ValueError(f"now: {value!r} is not an ISO date or timestamp "
                             "(2024-05-01 or 2024-05-01T12:00:00)") from None
    else:
        raise ValueError(f"now: expected an ISO date or timestamp, got {type(value).__name__}")
    if instant.tzinfo is not None:
        instant = instant.astimezone(dt.UTC).replace(tzinfo=None)
    return instant


def pin_clock(sql: str, instant: dt.datetime, dialect: str = "sqlite") -> Rewritten:
    """``sql`` with every reading of the clock replaced by ``instant``; the text is returned
    unchanged when nothing reads the clock, or when sqlglot cannot read it."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except Exception:
        return Rewritten(sql)
    out = Rewritten(sql)
    literals = _Literals(instant, dialect)
    for node in list(tree.walk()):
        new: exp.Expression | None = None
        if isinstance(node, exp.CurrentDate):
            new = literals.date()
        elif isinstance(node, exp.CurrentTime):
            new = literals.time()
        elif isinstance(node, exp.CurrentTimestamp | exp.Localtimestamp) or (
                isinstance(node, exp.Anonymous) and str(node.this).upper() in _TIMESTAMP_CALLS):
            new = literals.timestamp()
        elif isinstance(node, exp.Anonymous) and str(node.this).upper() in _DATE_CALLS:
            new = literals.date()
        elif (isinstance(node, exp.Literal) and node.is_string
              and str(node.this).strip().lower() in ("now", "today") and _reads_clock(node)):
            new = exp.Literal.string(literals.text(date_only=str(node.this).strip().lower()
                                                   == "today"))
        if new is not None:
            out.replaced.append(f"{node.sql(dialect=dialect)} -> {new.sql(dialect=dialect)}")
            node.replace(new)
    if out.replaced:
        out.sql = tree.sql(dialect=dialect)
    return out


def _reads_clock(literal: exp.Expression) -> bool:
    """A 'now' string is the clock as the argument of a SQLite time function (sqlglot may wrap
    it in a conversion node of its own: ``strftime('%Y', 'now')`` parses as ``TimeToStr`` over
    ``TsOrDsToTimestamp``) or of a cast (``'now'::date``)."""
    from sqlglot import exp

    parent = literal.parent
    while isinstance(parent, exp.TsOrDsToTimestamp | exp.TsOrDsToDate | exp.StrToTime):
        parent = parent.parent
    if isinstance(parent, exp.Cast | exp.Date | exp.TimeToStr):
        return True
    return isinstance(parent, exp.Anonymous) and str(parent.this).upper() in \
        _SQLITE_TIME_FUNCTIONS


class _Literals:
    """The instant as each dialect writes a date, a time and a timestamp literal."""

    def __init__(self, instant: dt.datetime, dialect: str) -> None:
        self.instant = instant
        self.dialect = dialect

    def text(self, date_only: bool = False) -> str:
        return self.instant.date().isoformat() if date_only else \
            self.instant.isoformat(sep=" ", timespec="seconds")

    def _typed(self, text: str, type_name: str) -> Any:
        from sqlglot import exp

        if self.dialect == "sqlite":  # SQLite's clock functions return text
            return exp.Literal.string(text)
        return exp.cast(exp.Literal.string(text), type_name)

    def date(self) -> Any:
        return self._typed(self.instant.date().isoformat(), "DATE")

    def time(self) -> Any:
        return self._typed(self.instant.time().isoformat(timespec="seconds"), "TIME")

    def timestamp(self) -> Any:
        return self._typed(self.text(), "TIMESTAMP")
