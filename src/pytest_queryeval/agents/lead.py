"""What comes before a statement's head and is no statement, and what marks a graph statement
anywhere in a text: one rule for every reader of an agent's texts (:mod:`.sweep`,
:mod:`.language`, :mod:`.statements`).

Why a module of its own: the search of a record (:mod:`.sweep`) and the parsers' reading
(:mod:`.language`) must skip the same things before a head, or a text one of them reads as a
statement the other reads as prose (issue 58, the eleventh re-probe), and neither may import
the other at its top.
"""

from __future__ import annotations

import re

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
#: What separates two words of a graph statement here: blanks and format characters; its
#: comments (``MERGE/**/(n:X)``) are read by :func:`graph_clause`, which searches the text
#: again with them left out. Possessive, as every repetition below: the clause is searched
#: anywhere in texts of up to 16 MiB, and a repetition given back at each clause word would
#: read the text again and again.
_GAP = rf"[\s{FORMAT_CHARS}]*+"
#: A variable or a label of a graph pattern: a word, or a backquoted name (``(`n`:`Pwned`)``).
_NAME = r"(?>[^\W\d]\w*+|`(?:[^`\n]|``){1,256}+`)"
#: A node pattern's labels (``:Person``, ``:A:B``, ``:A&B``, ``:A|B``, ``:!A``), then what
#: closes them (``)``, properties, a ``WHERE``).
_LABELS = (rf":{_GAP}!?{_GAP}{_NAME}(?:{_GAP}[:&|]{_GAP}!?{_GAP}{_NAME})*+{_GAP}"
           r"(?:\)|\{|\$|where\b)")
#: What follows an unlabelled node pattern (``(n)``, ``()``) in a statement, and never a
#: parenthesis of prose (``merge (join) the tables``): the end of the text or of the statement,
#: a relationship (``-[``, ``--(``, ``<-``), another pattern (``, (m)``), the end of a
#: subquery, a clause keyword that is no English word after a parenthesis (``RETURN``,
#: ``DETACH``, ``DELETE``, ``ON CREATE``...), or one that is (``WITH``, ``WHERE``, ``SET``...)
#: followed by the pattern's own variable (bare or in one call: ``WITH count(n)``), ``*``, a
#: number or a parameter (``merge (n) set n.x = 1``; not ``merge (join) with the orders``).
_AFTER_NODE = (
    rf"\){_GAP}(?:$|;|<?-{_GAP}(?:\[|-{_GAP}>?{_GAP}\()|,{_GAP}\(|\}}|"
    rf"(?:return|detach|delete|remove|unwind|foreach|merge|create|match|optional{_GAP}match|"
    rf"on{_GAP}(?:create|match))\b|"
    rf"(?:with|where|set|order{_GAP}by|limit|skip|union|using|use|load|call|yield)"
    # the variable, bare or in one call (``WITH count(n) AS c``, ``WHERE NOT id(n) = 1``)
    rf"{_GAP}(?:(?:not|distinct){_GAP})?(?:[^\W\d]\w*+{_GAP}\({_GAP}(?:distinct{_GAP})?)?"
    rf"(?:(?P=var)\b|\*|\d|\$))")
#: A graph clause that names a pattern or writes, anywhere in a text: ``MATCH (``, ``OPTIONAL
#: MATCH (``, ``CREATE (``, ``MERGE (`` with a node pattern (``PROFILE MATCH (n) DETACH DELETE
#: n``, ``USE films; MATCH (n) ...``, ``CREATE (`n`:`Pwned`)``, ``MERGE p = (n:X)``, ``MATCH p
#: = shortestPath((a)--(b))``), ``DETACH DELETE``, and ``FOREACH (x IN ... |``. Not a method
#: or a function of code (``re.match(``, ``pd.merge(left, right)``: after a ``.``, or with
#: arguments no node pattern holds), nor prose's parenthesis (``merge (join) the tables``): a
#: node pattern is labelled (``(:X)``, ``(n:X)``), holds properties (``(n {a: 1})``, ``(n
#: $p)``), or is followed as a statement follows it (:data:`_AFTER_NODE`). Matched ignoring
#: case; :func:`graph_clause` reads the comments too.
GRAPH_CLAUSE = (
    rf"(?<![\w.$`])(?:(?:match|create|merge)\b"
    # a path's variable, and its function (``MATCH p = shortestPath((a)-[*]-(b))``)
    rf"(?:{_GAP}{_NAME}{_GAP}={_GAP}(?:{_NAME}{_GAP}\({_GAP})?+)?+{_GAP}\({_GAP}"
    rf"(?P<var>{_NAME})?+{_GAP}(?:{_LABELS}|\{{|\$\w|{_AFTER_NODE})"
    rf"|detach[\s{FORMAT_CHARS}]++delete\b"
    rf"|foreach{_GAP}\({_GAP}{_NAME}{_GAP}in\b[^|]{{0,256}}+\|)")

_CLAUSE = re.compile(GRAPH_CLAUSE, re.IGNORECASE)
#: A comment of a graph statement (an unclosed one runs to the end of the text).
_COMMENT = re.compile(r"/\*(?:[^*]++|\*(?!/))*+(?:\*/|\Z)|//[^\n]*+")


def graph_clause(text: str) -> bool:
    """Whether ``text`` holds a graph clause (:data:`GRAPH_CLAUSE`), its comments read as the
    blanks they are (``CREATE/**/(:Pwned)``, ``MATCH (n) DETACH // x`` then ``DELETE n``):
    searched as it is, then with its comments left out. Both are one pass, whatever the
    text (a comment read inside the pattern would be read again at each clause word)."""
    if _CLAUSE.search(text) is not None:
        return True
    return ("/*" in text or "//" in text) and _CLAUSE.search(_COMMENT.sub(" ", text)) is not None
