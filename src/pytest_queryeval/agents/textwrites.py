"""The floor's write half (:func:`~.textfloor.floor_finding`, the text-call rule's rule 5): a
write statement anywhere in the model's text, whatever its format.

Why apart from the floor's read half (:mod:`.textfloor`): the writes grow with each engine's
statements (SQLite's, DuckDB's, PostgreSQL's, a graph language's), the forbidden reads with
each dialect's ``FROM`` forms; each is read on its own. Every pattern here is linear in the
text.
"""

from __future__ import annotations

import re

#: An article where a statement names its object (``delete from the cache``): prose.
_ARTICLE = (r"(?!(?:the|a|an|this|that|these|those|my|your|our|their|its|his|her|some|all|"
            r"any|each|every|it|them)\b)")
_OBJECT = r"[\w\"`\['][\w.\"`\[\]$']*"
#: The object a write names after its words: after a blank (not an article), or a quoted name
#: right after them (``DELETE FROM"Genre"``, which SQLite runs).
_NAMED = rf"(?:\s+{_ARTICLE}|\s*(?=[\"`\['])){_OBJECT}"
_KIND = (r"(?:or\s+replace\s+)?(?:temp\w*\s+|unique\s+|materialized\s+|node\s+|rel\s+)?"
         r"(?:(?:virtual\s+)?table|view|index|database|schema|trigger|function|procedure|sequence|macro|"
         rf"secret|graph)\s+{_ARTICLE}{_OBJECT}")
#: A write statement anywhere in a text (lower case), SQL's, SPARQL's or a graph language's:
#: what no honest final answer needs to write (the floor: found wherever it is, whatever the
#: format). Each branch starts with its word (:func:`words`).
_WRITE = re.compile(
    rf"delete(?<![\w]delete)(?:\s+from{_NAMED}|\s+{_OBJECT}\s+where\b|"
    r"\s+data\s*\{|\s+where\s*\{)|"
    rf"insert(?<![\w]insert)(?:\s+(?:or\s+\w+\s+|(?:ignore|low_priority|delayed|high_priority)"
    rf"\s+){{0,2}}into{_NAMED}|\s+data\s*\{{)|"
    rf"update(?<![\w]update)(?:\s+(?:or\s+(?:rollback|abort|replace|fail|ignore)|only|ignore|"
    rf"low_priority)){{0,3}}{_NAMED}(?:\s+(?:as\s+)?\w+)?"
    rf"(?:\s+(?:not\s+indexed|indexed\s+by\s+{_OBJECT}))?(?:\s+|(?<=[\"`\]']))set(?![\w$])|"
    rf"replace(?<![\w]replace)\s+into{_NAMED}|"
    rf"merge(?<![\w]merge)(?:\s+into\s+{_ARTICLE}{_OBJECT}|\s*\(\s*\w*\s*:)|"
    rf"upsert(?<![\w]upsert)\s+into\s+{_ARTICLE}{_OBJECT}|"
    rf"create(?<![\w]create)(?:\s+{_KIND}|\s*\(\s*\w*\s*:)|"
    rf"drop(?<![\w]drop)(?:\s+{_KIND}|\s+(?:silent\s+)?(?:graph\s*<|default\b|named\b|all\b))|"
    rf"alter(?<![\w]alter)\s+{_KIND}|"
    rf"truncate(?<![\w]truncate)(?:\s+{_KIND}|\s+(?:table\s+)?{_OBJECT}\s*;)|"
    r"attach(?<![\w]attach)\s+(?:database\s+)?(?:if\s+not\s+exists\s+)?(?:['\"]|[\w.]+\s+as\s)|"
    r"detach(?<![\w]detach)\s+(?:database\b|delete\b)|"
    r"vacuum(?<![\w]vacuum)\s+(?:[\w\"`\[\]]+\s+)?into\b|"
    r"pragma(?<![\w]pragma)\s+[\w.]+\s*[=(]|"
    r"copy(?<![\w]copy)\s+[\w.\"`\[\]]+\s+(?:from|to)\s+['\"]|"
    r"clear(?<![\w]clear)\s+(?:silent\s+)?(?:graph\s*<|default\b|named\b|all\b)|"
    r"set(?<![\w]set)\s+\w+\s*(?:\.\s*\w+\s*=|:\s*\w+)|"
    r"remove(?<![\w]remove)\s+\w+\s*[.:]\s*\w+")


#: A maintenance statement (``ANALYZE``, ``REINDEX x;``, ``VACUUM``, DuckDB's ``CHECKPOINT``,
#: which the plugin's judge counts writes) alone at a statement's head (a line's, after ``;``,
#: a fence or a quote, after blanks of any number: the sixteenth re-probe's H3), the
#: name of one object at most after it: not a word of a sentence (``Analyze the data.``).
_MAINTENANCE = re.compile(
    r"(?:^|[;`'\"])[ \t]*+(?:analy[sz]e|reindex|vacuum|(?:force[ \t]+)?checkpoint)"
    r"(?:[ \t]+[\w\"`\['][\w\"`\]']*(?:\.[\w\"`\['][\w\"`\]']*)?)?[ \t]*(?:;|$)",
    re.MULTILINE)


def write_finding(plain: str) -> re.Match[str] | None:
    """Where ``plain`` (a reading of the model's text in lower case) writes, or None."""
    return _WRITE.search(plain) or _MAINTENANCE.search(plain)
