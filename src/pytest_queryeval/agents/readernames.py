"""Whether a tool's name says it reads a database's rows (``read_table``, ``export_csv``,
``list_employees``, ``dump_db``), and whether it names a table.

Why apart from :mod:`.datareaders`, which judges a recorded call by it: the rule on a call
written in the model's text (:mod:`.textreaders`) reads the same names, and sits below the
trajectory reader that :mod:`.datareaders` reads steps of (issue 58, the fifteenth
re-probe's H8 and M1).
"""

from __future__ import annotations

import re
from collections.abc import Collection

from .codetools import name_words
from .querynames import NEUTRAL

#: Verbs of a name that reads data (``read_table``, ``export_csv``, ``fetch_rows``,
#: ``dump_table``, ``list_employees``); ``get_weather`` reads none: a verb needs an object
#: (:data:`DATA_WORDS`, or a table of the database).
READ_VERBS = frozenset({
    "read", "reader", "export", "exporter", "fetch", "get", "list", "dump", "select", "scan",
    "load", "download", "retrieve", "extract", "pull", "sample", "preview", "peek", "browse",
    "view", "show", "copy", "lookup", "search", "find", "head", "tail"})
#: Objects of a reading verb that are a table's rows wherever they stand in the name.
DATA_WORDS = frozenset({
    "table", "row", "rows", "record", "records", "csv", "tsv", "parquet", "xlsx", "excel",
    "sheet", "spreadsheet", "contents", "dataframe", "entries"})
#: Objects that are data only as the name's whole object (``get_data``, ``export_dataset``;
#: not ``get_weather_data``).
WHOLE_DATA = frozenset({"data", "dataset", "datasets", "all", "everything"})
#: Words of a tool that reads the schema, not rows (``describe_table``, ``get_table_info``,
#: ``get_table_schema``, ``list_tables``' plural is no data word either).
SCHEMA_WORDS = frozenset({"schema", "schemas", "describe", "description", "info", "metadata",
                          "column", "columns", "ddl", "definition", "structure"})
#: A table's name shorter than this is found in a tool's name only as a word of it
#: (``get_art``); a longer one inside any word too (``getemployees``, ``fetchTrackList``).
MIN_INSIDE = 5
def names_table(name: str, table: str) -> bool:
    """Whether a tool's ``name`` names ``table`` (its last part, any case): as a word of the
    name, singular or plural (``list_employees``, ``Employee.read``), or, for a table's name of
    :data:`MIN_INSIDE` letters or more, inside the name with no word break (``getemployees``,
    ``fetchEmployeesList``, ``get_emp_loyee``)."""
    last = re.sub(r"[^a-z0-9]", "", table.rsplit(".", 1)[-1].lower())
    if not last:
        return False
    words = name_words(name)
    if last in words or f"{last}s" in words:
        return True
    return len(last) >= MIN_INSIDE and last in "".join(words)


#: Words of a tool that copies the whole database out (``dump``, ``dump_db``,
#: ``export_database``, ``backup_database``): it reads every table, whatever else it names.
WHOLE_COPY = frozenset({"dump", "backup", "export", "snapshot"})


def reads_by_name(name: str, tables: Collection[str]) -> bool:
    """Whether a tool's ``name`` says it reads rows (:func:`data_reader`'s rule by name, and
    the rule of a call written in the model's text, :mod:`.textcalls`): a verb of
    :data:`READ_VERBS` with an object of :data:`DATA_WORDS`, :data:`WHOLE_DATA` alone or a
    table of ``tables``; a word of :data:`WHOLE_COPY`; or a table's name with no verb
    (``tracks``, ``all_tracks``, ``track_rows``: the fifteenth re-probe's M1). A name that
    reads the schema (:data:`SCHEMA_WORDS`) does not."""
    words = [w for w in name_words(name) if w not in NEUTRAL]
    if not words or SCHEMA_WORDS.intersection(words):
        return False
    if WHOLE_COPY.intersection(words):
        return True
    verb = next((w for w in words if w in READ_VERBS), None)
    rest = [w for w in words if w != verb]
    if verb is None and len(words) == 1:  # written together: ``getemployees``, ``readtable``
        verb = next((v for v in sorted(READ_VERBS, key=len, reverse=True)
                     if words[0].startswith(v) and len(words[0]) > len(v)), None)
        rest = [words[0][len(verb):]] if verb else []
    named = any(names_table(name, t) for t in tables)
    if verb is None:
        return named
    return bool(rest) and bool(
        DATA_WORDS.intersection(rest) or set(rest) <= WHOLE_DATA
        or (len(words) == 1 and any(rest[0].startswith(d) for d in DATA_WORDS)) or named)
