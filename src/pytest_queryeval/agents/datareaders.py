"""Calls of tools the plugin does not serve that read a database's tables without a statement
(``read_table {"table": "Track"}``, ``export_csv``, ``getemployees {}``), and the tables a
call's name and arguments name.

Why a rule of its own: such a tool holds no statement to judge and is not replayed, so what it
read was simply left out: ``read_table {"table": "Track"}`` and ``export_csv {"table":
"Track"}`` passed ``rows_read: {max: 10}`` with the 1 row the plugin's own call read, a
forbidden table spelled with a JSON escape (``{"table": "\\u0045mployee"}``) or written into a
name without a word break (``getemployees``) passed ``forbidden_tables: {max: 0}`` (issue 58,
the fourteenth re-probe's F6, M1, M2). A name cannot say all a tool did (a tool answering
``Employee`` rows under ``get_staff_directory`` is beyond it), so the rule reads what a name
and its arguments say, and ``docs/agent-metrics.md`` gives it.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from .codetools import name_words
from .querynames import NEUTRAL
from .readernames import SCHEMA_WORDS, reads_by_name
from .readernames import names_table as names_table  # the rule of a call's name, for .unrun

if TYPE_CHECKING:
    from ..model import Case, Context
    from .trajectory import Step

#: Values of a call's arguments read at most; past them, what it names is not known.
MAX_VALUES = 100_000


def argument_texts(step: Step) -> list[str] | None:
    """The texts of a call's arguments as its tool reads them: the raw text, every key and
    string value of its JSON decoded (``\\u0045mployee`` is ``Employee``; JSON in a text
    read too), and what it ran (``executed``); None past :data:`MAX_VALUES`."""
    out = [step.arguments_text]
    budget = [MAX_VALUES]
    _texts(step.arguments if step.arguments is not None else step.arguments_text, out, budget)
    if step.executed is not None:
        out.append(step.executed)
        _texts(step.executed, out, budget)
    return None if budget[0] <= 0 else out


def _texts(value: object, out: list[str], budget: list[int], depth: int = 0) -> None:
    budget[0] -= 1
    if budget[0] <= 0 or depth > 64:
        budget[0] = 0
        return
    if isinstance(value, str):
        out.append(value)
        if value.lstrip()[:1] in ("{", "[", '"'):
            with contextlib.suppress(ValueError, RecursionError):
                _texts(json.loads(value), out, budget, depth + 1)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            out.append(str(key))
            _texts(item, out, budget, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            _texts(item, out, budget, depth + 1)


def _bare(text: str) -> str:
    """A text naming a table as a statement would (``"main"."Track"``, ``[Track]``): its last
    part, unquoted, lower case."""
    return re.sub(r"[\"`\[\]\s]", "", text).rsplit(".", 1)[-1].lower()


def data_reader(step: Step, tables: Collection[str]) -> str | None:
    """Why a call of a tool the plugin does not serve (nor one that runs code, nor a query
    tool: their own rules) may have read rows of the database, or None: its name says it reads
    data (a verb of :data:`READ_VERBS` with an object of :data:`DATA_WORDS` or a table of the
    database: ``read_table``, ``export_csv``, ``list_tracks``, ``getemployees``; or a verb and
    :data:`WHOLE_DATA` alone: ``get_data``), or an argument is a table's name (``{"table":
    "Track"}``, ``{"tables": ["main.Track"]}``). A tool whose name reads the schema
    (:data:`SCHEMA_WORDS`: ``describe_table``, ``get_table_info``) is none, nor one naming
    neither (``get_weather {"city": "Paris"}``, ``calculator``, ``mcp__db__list_tables``).
    ``tables``: the database's tables, lower case."""
    words = [w for w in name_words(step.name) if w not in NEUTRAL]
    if not words or SCHEMA_WORDS.intersection(words):
        return None
    where = f"tool call {step.index} ({step.name[:80]!r}), a tool the plugin does not serve,"
    if reads_by_name(step.name, tables):
        return f"{where} reads data by its name: what it ran and read is not counted"
    texts = argument_texts(step) if tables else []
    if texts is None:
        return f"{where} has more arguments than are read: what it read is not known"
    named = next((t for t in texts[1:] if len(t) <= 256 and _bare(t) in tables), None)
    if named is not None:
        return (f"{where} names the table {_bare(named)!r} in its arguments: what it ran and "
                "read is not counted")
    return None


def case_tables(case: Case, context: Context) -> frozenset[str]:
    """The tables (and views) of the case's datasource, lower case, each also by its last
    name; none when it lists none (a graph, a SPARQL endpoint) or cannot be reached."""
    from ..errors import QueryEvalError

    try:
        lister = getattr(context.source(case), "tables", None)
        listed = lister()[0] if callable(lister) else ()
    except (QueryEvalError, TypeError, ValueError, IndexError, OSError):
        return frozenset()
    names = {str(t).lower() for t in listed}
    return frozenset(names | {t.rsplit(".", 1)[-1] for t in names})
