"""The text-call rule's floor (:mod:`.textcalls`, rule 5): a write statement, or a read of a
forbidden table, anywhere in the model's text, whatever its format.

Why apart from the rules that read call syntax: the floor reads the text as an engine does
(comments of any length removed by one linear scan, nested as DuckDB and PostgreSQL nest
them and not, as SQLite does; names in any quotes, SQLite's and DuckDB's single quotes too;
``FROM`` lists of any length, walked by :mod:`.fromlists`), and grows with each dialect's
forms; the call rules grow with each harness's formats. Every pattern here is linear in the
text (the fifteenth re-probe's H1-H4, H9 and L2: the bounded comment pattern let a longer
comment keep ``DELETE`` and ``FROM`` apart, and its retries took seconds on 1 MB).
"""

from __future__ import annotations

import re

from ..sources.sqlcomments import readings as _readings
from ..sources.sqlfunctions import INDEX_READERS, STATISTICS_CATALOGS
from .fromlists import forbidden_read, words
from .lead import FORMAT_CHARS
from .textmarkup import has_markup, lined
from .textwrites import write_finding

__all__ = ["INVISIBLE", "floor_finding", "words"]


#: What an engine skips inside a statement: a format character (``DEL\u00adETE``), and a
#: comment (``DELETE/**/FROM``, ``DELETE -- x`` then a new line), read as a blank
#: (:func:`_readings`).
INVISIBLE = re.compile(f"[{FORMAT_CHARS}]")


#: Every blank an engine skips as a space (a no-break space, the Unicode spaces, a tab), and
#: a line's end however written (``\r\n``, ``\r``): DuckDB runs ``FROM\u00a0Employee``, and a
#: fence's tag line may end in ``\r\n`` (the eighteenth re-probe's N2, N3).
_BLANKS = str.maketrans({c: " " for c in "\t\x1f\xa0\u1680\u2000\u2001\u2002\u2003\u2004"
                         "\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"})
#: What else ends a line for Python's ``str.splitlines()`` (a vertical tab, a form feed, the
#: file, group and record separators, NEL, U+2028, U+2029): an extractor that splits lines so
#: reads a fence whose tag line ends in U+2028 as a fence (the nineteenth re-probe's H4: its
#: ``VACUUM`` ran), and an engine reads each as a blank. Read both ways (:func:`blanks`).
_BREAKS = "\v\f\x1c\x1d\x1e\x85\u2028\u2029"
_AS_BREAK = str.maketrans({c: "\n" for c in _BREAKS})
_AS_BLANK = str.maketrans({c: " " for c in _BREAKS})


#: The blanks above that an engine reads as a name's character: SQLite any non-ASCII one,
#: DuckDB NEL, U+1680, U+2028, U+2029 and the separators ``\x1c``-``\x1f``. ``FROM Genre
#: g\x851, Employee`` is an alias ``g\x851`` and a join to ``Employee`` (both engines), which
#: read with the character a blank was ``g 1``, the list's end (issue 58, the twenty-fifth
#: re-probe's F4): so such a text is also read with each of them a name's ``_``.
_NAMELIKE = "\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007" \
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
_AS_NAME = str.maketrans({c: "_" for c in _NAMELIKE})


def blanks(text: str) -> list[str]:
    """``text`` with each blank a space and each line's end a ``\n``; where it holds a line
    break of :data:`_BREAKS`, read both as a line's end and as a blank (``SET``, a vertical
    tab, ``threads = 1`` is a statement on one line); where it holds a blank an engine reads
    as a name's (:data:`_NAMELIKE`), also with each such blank a name's character."""
    lined = text.replace("\r\n", "\n").replace("\r", "\n")
    named = [lined.translate(_AS_NAME).translate(_BLANKS).translate(_AS_BLANK)] if any(
        c in lined for c in _NAMELIKE) else []
    text = lined.translate(_BLANKS)
    if not any(c in text for c in _BREAKS):
        return [text, *named]
    return [text.translate(_AS_BREAK), text.translate(_AS_BLANK), *named]


def floor_finding(seen: str, coded: str, forbidden: tuple[str, ...], cased: tuple[str, ...] = ()
                  ) -> tuple[int, str, str] | None:
    """Rule 5: a write statement, or a read of a forbidden table, anywhere in the text
    (``seen``: in lower case, its format characters removed; ``coded``: the same of the text
    as code gives it to a tool), as ``(where, the reading, what)``, or None. Each text is
    read as an engine reads it (a comment a blank, nested or not: :func:`_readings`) and
    as written, and with only the comments outside string literals a blank (``strings``): a
    ``--`` in a string (``SELECT '--'; DELETE/**/FROM Genre``) is no comment. A text with
    markup is read with each tag a line's end too (:func:`~.textmarkup.lined`), with each tag's
    quotes read and with its attributes ending at the first ``>`` (a regex extractor's
    reading). ``cased``: the texts before lower case, whose comments are read there too where
    they hold a ``$``, as a dollar quote's tag is (``$A$ $a$--$A$`` is one string, and lower
    case made it a string and a comment: the forty-second re-probe's Q10 class)."""
    if "u&" in seen or "u&" in coded:  # PostgreSQL's ``U&"employe\0065"``: as the server reads
        from .textjudge import unicode_escaped

        seen, coded = seen + "\n" + unicode_escaped(seen), coded + "\n" + unicode_escaped(coded)
    texts = [*blanks(seen), *blanks(coded)]
    texts += [lined(text, quoted) for text in texts if has_markup(text)  # a statement's place
              for quoted in (True, False)]
    # as written, and with the comments blanks in each way (nested or not; each engine
    # family's quotes, all at once, or none)
    readings = [reading for text in texts for reading in _readings(text)]
    readings += [reading.lower() for text in cased if "$" in text and text.lower() != text
                 for blank in blanks(text) for reading in _readings(blank)]
    for plain in dict.fromkeys(readings):
        match = write_finding(plain)
        if match is not None:
            return match.start(), plain, f"writes: {' '.join(match.group().split())[:80]!r}"
        start = forbidden_read(plain, forbidden)
        if start is not None:
            return start, plain, "reads a forbidden table"
        start = _every_table(plain) if forbidden else None
        if start is not None:
            return start, plain, "reads every table's statistics or a table named at run time"
    return None


#: The catalogs of each table's statistics and the readers of an index (the ledger's
#: :data:`~..sources.sqlfunctions.STATISTICS_CATALOGS` and ``INDEX_READERS``), read in a
#: ``FROM`` list as a forbidden table is (:func:`~.fromlists.forbidden_read`).
_CATALOGS = tuple(sorted(STATISTICS_CATALOGS | INDEX_READERS))
#: A schema reader given anything but one string literal (``pragma_show('Tr' || 'ack')``):
#: the table it reads is named at run time.
_COMPUTED_READER = re.compile(
    r"(?<![\w$])pragma_(?:show|table_x?info|index_list|foreign_key_list|foreign_key_check"
    r"|integrity_check|quick_check|storage_info)[\"`]?\s*\((?!\s*'[^'\n]{0,256}+'\s*\))"
    # a check of a table's keys reads the tables they reference (the ledger's every table)
    r"|(?<![\w$])pragma_foreign_key_check[\"`]?\s*\(")


def _every_table(plain: str) -> int | None:
    """Where ``plain`` reads what the ledger counts as every forbidden table (a catalog of each
    table's row count, an index's reader, a schema reader of a table named at run time), or
    None: the floor read none of them (``SELECT estimated_size FROM duckdb_tables() WHERE
    table_name = 'Track'`` in a ``sql`` fence: the thirty-fourth re-probe's L3)."""
    computed = _COMPUTED_READER.search(plain)
    found = [at for at in (forbidden_read(plain, _CATALOGS),
                           computed.start() if computed else None) if at is not None]
    return min(found) if found else None
