"""What comes before a statement's head and is no statement, and what marks a graph statement
anywhere in a text: one rule for every reader of an agent's texts (:mod:`.sweep`,
:mod:`.language`, :mod:`.statements`).

Why a module of its own: the search of a record (:mod:`.sweep`) and the parsers' reading
(:mod:`.language`) must skip the same things before a head, or a text one of them reads as a
statement the other reads as prose (issue 58, the eleventh re-probe), and neither may import
the other at its top.
"""

from __future__ import annotations

#: Unicode's format characters (category Cf: the BOM U+FEFF, U+200B, U+2060, U+00AD, the
#: bidirectional controls...): invisible, and no word. SQLite and DuckDB run ``\ufeffDELETE
#: FROM Genre``, DuckDB ``\u200bDELETE`` and ``\u2060DELETE`` too (issue 58, the eleventh
#: re-probe), so before a statement's head they are skipped like blanks
#: (tests/agents/test_counts_eleventh_probe.py checks the list against ``unicodedata``).
FORMAT_CHARS = ("\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
                "\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
                "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
                "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f")
#: What comes before a statement's head and is no statement: blanks, format characters,
#: comments and empty ``;``-parts (``/**/;DELETE FROM Genre``: the engines skip an empty
#: statement), then its opening brackets.
LEAD = (rf"(?:[\s;{FORMAT_CHARS}]|--[^\n]*(?:\n|$)|/\*[\s\S]*?\*/|#[^\n]*(?:\n|$))*"
        rf"(?:\([\s{FORMAT_CHARS}]*)*")
#: A graph clause that names a pattern or writes, anywhere in a text: ``MATCH (``, ``OPTIONAL
#: MATCH (``, ``DETACH DELETE``, ``CREATE (``, ``MERGE (`` (``PROFILE MATCH (n) DETACH DELETE
#: n``, ``USE films; MATCH (n) ...``).
GRAPH_CLAUSE = r"\b(?:match|create|merge)\s*\(|\bdetach\s+delete\b"
