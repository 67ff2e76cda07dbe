"""The tables a PostgreSQL transaction read, from the backend's own counters.

Why the counters and not only the plan: the plan names the relations a query scans, but the
planner itself runs the database's routines while it plans, and they read what they like. An
index expression or a partial index's predicate (folded when the relation cache is built), an
inheritance child's ``CHECK`` (constraint exclusion), an extended statistics expression, a
partition key expression, a range type's ``subtype_diff`` (range selectivity), a domain's
``CHECK`` on a constant cast: each ran a PL/pgSQL routine reading ``employee`` while a query
of other tables was planned, its error carried every last name, and the plan, which failed,
named none of it (the forty-fifth re-probe's N1-N8). The catalog's reading of routines
(:mod:`pytest_queryeval.agents.views`) follows each such route once found; the counters need
no route: every scan, index scan and block a backend reads is counted against its relation
in the transaction's statistics (``pg_stat_get_xact_*``), whoever asked for it.

The counters are read before and after the statement, in the same transaction, the
statement in a savepoint rolled back before the second reading (whatever it set, a
``search_path`` too, is undone, and an error leaves the transaction usable); counts are not
transactional, so what the rolled-back statement read stays counted. A backend's counts not
yet sent to the statistics system carry over from earlier transactions, hence the
difference. ``track_counts`` off (a server setting) counts nothing: the count is then
unknown, never lower.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any, NamedTuple

from .pgescape import BUILDERS_SQL, EXPRESSIONS, RUNNERS_SQL, TEXT, TREES

__all__ = [
    "COUNTING",
    "SAVEPOINT",
    "SERIAL_OPTIONS",
    "Blinders",
    "blinders",
    "builder",
    "counted",
    "counters",
    "serial",
    "still_serial",
    "touched",
]

#: Whether the statements run now are an agent case's, whose reads are counted: the counts
#: cost four round trips a statement, which a prediction outside an agent case does not pay.
COUNTING: ContextVar[bool] = ContextVar("queryeval_pg_counting", default=False)


@contextlib.contextmanager
def counted() -> Iterator[None]:
    """The statements run inside are counted (:data:`COUNTING`)."""
    token = COUNTING.set(True)
    try:
        yield
    finally:
        COUNTING.reset(token)

#: The savepoint a counted statement runs in.
SAVEPOINT = "queryeval_counted"

#: Each relation outside the system schemas with something counted in this transaction: by
#: its table (an index's and a TOAST table's counts are their table's: an index-only scan
#: reads no block of the table), schema-qualified, and the sum of its counts; and by each of
#: its ancestors, a partition's partitioned tables and an inheritance child's parents
#: (``pg_inherits``, all the way up): a partitioned table has no storage, so its counts are
#: its partitions', and a forbidden ``staff`` read through a routine counted only
#: ``staff_a`` and ``staff_b``, as did a read of the partition alone, which the plan's and
#: the text's accounts count as the parent's (the forty-sixth re-probe's P3). Fully
#: qualified: a query may have changed ``search_path`` before a reading that is not rolled
#: back.
_COUNT = """pg_catalog.pg_stat_get_xact_numscans(s.oid)
         OPERATOR(pg_catalog.+) pg_catalog.pg_stat_get_xact_blocks_fetched(s.oid)
         OPERATOR(pg_catalog.+) pg_catalog.pg_stat_get_xact_tuples_returned(s.oid)
         OPERATOR(pg_catalog.+) pg_catalog.pg_stat_get_xact_tuples_fetched(s.oid)"""
_COUNTERS_SQL = f"""
WITH RECURSIVE counted (rel, n) AS (
  SELECT COALESCE(i.indrelid, o.oid, s.oid), {_COUNT}
  FROM pg_catalog.pg_class s
  LEFT JOIN pg_catalog.pg_index i ON i.indexrelid OPERATOR(pg_catalog.=) s.oid
  LEFT JOIN pg_catalog.pg_class o ON o.reltoastrelid OPERATOR(pg_catalog.=) s.oid
    AND s.relkind OPERATOR(pg_catalog.=) 't'
  WHERE s.relkind OPERATOR(pg_catalog.=) ANY
        (ARRAY['r', 'p', 'm', 'i', 't']::pg_catalog."char"[])
    AND {_COUNT} OPERATOR(pg_catalog.>) 0
  UNION ALL
  SELECT h.inhparent, counted.n FROM counted
  JOIN pg_catalog.pg_inherits h ON h.inhrelid OPERATOR(pg_catalog.=) counted.rel
)
SELECT pg_catalog.current_setting('track_counts'), n.nspname::pg_catalog.text,
       c.relname::pg_catalog.text, counted.n
FROM counted
JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) counted.rel
JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
WHERE n.nspname OPERATOR(pg_catalog.<>) ALL
      (ARRAY['pg_catalog', 'information_schema', 'pg_toast']::pg_catalog.name[])
UNION ALL SELECT pg_catalog.current_setting('track_counts'), NULL, NULL, 0
"""


class CountsOff(Exception):
    """``track_counts`` is off: the server counts no read."""


def counters(rows: Callable[[str], Sequence[Sequence[Any]]]) -> dict[str, int]:
    """The transaction's counts so far, by ``schema.table`` lower-cased; ``rows`` runs a
    statement on the transaction's connection and gives its rows. Raises
    :class:`CountsOff`."""
    out: dict[str, int] = {}
    for setting, schema, name, count in rows(_COUNTERS_SQL):
        if str(setting).lower() not in ("on", "true", "1"):
            raise CountsOff("the server's track_counts is off: it counts no table read")
        if schema is not None and name is not None:
            key = f"{schema}.{name}".lower()
            out[key] = out.get(key, 0) + int(count)
    return out


def touched(before: dict[str, int], after: dict[str, int]) -> frozenset[str]:
    """The tables counted more in ``after`` than in ``before``."""
    return frozenset(name for name, count in after.items() if count > before.get(name, 0))


#: The settings under which a read escapes the counters: a parallel worker's reads are counted
#: in the worker, which reports them when it exits, never in the backend that asked
#: (``pg_stat_get_xact_*`` is that backend's own); ``track_counts`` off counts nothing.
_BLINDING = ("max_parallel_workers", "max_parallel_workers_per_gather", "force_parallel_mode",
             "debug_parallel_query", "track_counts", "parallel_leader_participation")

#: Run before each counted statement, in its transaction: parallel query off for the rest of
#: it (``SET LOCAL``: the leader then reads all a plan reads, itself), and whether the
#: session's own values, those ``RESET`` restores, are off too (:data:`SERIAL_OPTIONS`).
SERIAL_SQL = """
SELECT pg_catalog.set_config('max_parallel_workers_per_gather', '0', true),
       pg_catalog.set_config('max_parallel_workers', '0', true),
       (SELECT pg_catalog.count(*) FROM pg_catalog.pg_settings s
        WHERE s.name OPERATOR(pg_catalog.=) ANY
              (ARRAY['max_parallel_workers', 'max_parallel_workers_per_gather']::pg_catalog.text[])
          AND s.reset_val OPERATOR(pg_catalog.=) '0')
"""

#: A counted connection's startup options (libpq's ``options``): parallel query off as the
#: session's own value, the one ``RESET`` restores, so a routine's ``RESET ALL`` (or ``SET ...
#: TO DEFAULT``, or an ``EXCEPTION`` block's rollback) leaves it off. A ``SET LOCAL`` alone was
#: undone by ``RESET ALL`` with no setting named, and the reads after it ran in parallel
#: workers the counters never see (the fifty-fifth re-probe's B1); a list of the spellings of
#: a reset grew each round, the session's own value needs none.
SERIAL_OPTIONS = ("-c max_parallel_workers_per_gather=0 -c max_parallel_workers=0 "
                  "-c parallel_leader_participation=on")

#: What could turn parallel query back on (or ``track_counts`` off) while a counted statement
#: runs: the first of the database's routines with a ``SET`` clause of a blinding setting (a
#: routine's own setting wins over the session's inside it), or a body that names one or
#: calls ``set_config`` (a ``BEGIN ATOMIC`` body's definition read as its body: the
#: forty-ninth re-probe's L1; the forty-sixth re-probe's P1 and P11: a routine behind a domain or
#: an index expression read ``employee`` in a parallel worker, or with ``SET track_counts =
#: off``, and every count was 0). ``{privileged}`` is where the role may set
#: ``track_counts`` itself (PostgreSQL 15's parameter privileges). Read once a source, as the
#: other catalog readings are: a read-only role cannot change the answer.
_BLINDERS_SQL = r"""
SELECT r.routine, r.text, r.hit, {privileged}, r.reset
FROM (SELECT 1) AS one LEFT JOIN (
  SELECT n.nspname::pg_catalog.text OPERATOR(pg_catalog.||) '.'
           OPERATOR(pg_catalog.||) p.proname::pg_catalog.text AS routine, b.hit,
         CASE WHEN b.hit THEN NULL ELSE b.body END AS text,
         t.body OPERATOR(pg_catalog.~*) '{reset}' AS reset
  FROM pg_catalog.pg_proc p
  JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
  CROSS JOIN LATERAL (
    SELECT {text} AS body,
           pg_catalog.array_to_string(p.proconfig, ' ') AS config) AS t
  CROSS JOIN LATERAL (
    SELECT t.body OPERATOR(pg_catalog.~*) '{words}'
           OR t.config OPERATOR(pg_catalog.~*) '{words}' AS hit,
           t.body) AS b
  WHERE p.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
    AND (b.hit OR t.body OPERATOR(pg_catalog.~*) 'u&'
         OR t.body OPERATOR(pg_catalog.~*) '{reset}')
  UNION ALL
  SELECT 'aggregate ' OPERATOR(pg_catalog.||) a.aggfnoid::pg_catalog.regproc::pg_catalog.text
           OPERATOR(pg_catalog.||) ' calls ' OPERATOR(pg_catalog.||) f.proname::pg_catalog.text,
         true, NULL, false
  FROM pg_catalog.pg_aggregate a JOIN pg_catalog.pg_proc f ON f.oid OPERATOR(pg_catalog.=) ANY
    (ARRAY[a.aggtransfn, a.aggfinalfn, a.aggcombinefn, a.aggmtransfn, a.aggminvtransfn,
           a.aggmfinalfn]::pg_catalog.oid[])
  WHERE a.aggfnoid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
    AND f.proname::pg_catalog.text OPERATOR(pg_catalog.~*) '{words}'
  UNION ALL
  SELECT e.what, true, NULL, false FROM ({expressions}) AS e
  WHERE e.t OPERATOR(pg_catalog.~*) '{words}'
  UNION ALL
  SELECT pg_catalog.pg_describe_object(s.cls, s.obj, 0), true, NULL, false
  FROM ({trees}) AS s
  WHERE s.obj OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
    AND s.tree OPERATOR(pg_catalog.~) (':funcid ' OPERATOR(pg_catalog.||)
        'pg_catalog.set_config(text,text,boolean)'::pg_catalog.regprocedure::pg_catalog.oid
        ::pg_catalog.text OPERATOR(pg_catalog.||) '\M')
) AS r ON true
ORDER BY 1
"""
#: A routine whose text says ``RESET ALL`` blinds only a session whose own values of parallel
#: query are on (:data:`SERIAL_OPTIONS` not applied: a driver without libpq's options, a
#: pooler that drops them).
_RESET_WORDS = r"\mreset\M.*\mall\M"
_WORDS = "|".join((*_BLINDING, "set_config"))
#: A Unicode-escaped name or string of a body, and a ``UESCAPE`` clause's character: such a
#: name may spell a blinding setting (``SET LOCAL U&"max\005fparallel\005fworkers" = 8`` ran a
#: routine's reads in a parallel worker and no read was counted: the fifty-fourth re-probe's
#: N2, H1), so it is read decoded, with each escape character the body declares.
_ESCAPED = re.compile(r"""u&\s*(["'])((?:(?!\1).|\1\1)*)\1""", re.IGNORECASE | re.DOTALL)
_UESCAPE = re.compile(r"uescape(?:\s|/\*.*?\*/|--[^\n]*\n)*'(.)'", re.IGNORECASE | re.DOTALL)
_BLINDING_WORD = re.compile(_WORDS.replace(r"\m", r"\b").replace(r"\M", r"\b"),
                            re.IGNORECASE | re.DOTALL)


def blinders_sql(parameter_privileges: bool) -> str:
    """:data:`_BLINDERS_SQL` for a server with (PostgreSQL 15 and later) or without parameter
    privileges."""
    privileged = ("pg_catalog.has_parameter_privilege('track_counts', 'SET')"
                  if parameter_privileges else "false")
    return _BLINDERS_SQL.format(words=_WORDS, privileged=privileged, expressions=EXPRESSIONS,
                                reset=_RESET_WORDS, text=TEXT.format(q="p"), trees=TREES)


class Blinders(NamedTuple):
    """Why the counts could be blinded on a database and role ("" where nothing could)."""

    #: in any session
    always: str
    #: in a session whose own values of parallel query are on (:data:`SERIAL_OPTIONS` not
    #: applied): a routine's ``RESET ALL`` restores them
    unpinned: str = ""


def blinders(rows: Callable[[str], Sequence[Sequence[Any]]],
             parameter_privileges: bool, trusted: Sequence[str] = ()) -> Blinders:
    """Why the counts could be blinded on this database and role: what :func:`serial`
    raises. ``trusted``: the routines the datasource's ``trusted_routines`` vouches for
    (:func:`builder`)."""
    found = list(rows(blinders_sql(parameter_privileges)))
    reset = ""
    for routine, text, hit, _, resets in found:
        if routine is None:
            continue
        what = f"the database's {routine}" if " " in routine else \
            f"the database's routine {routine}()"
        if hit or escaped_blinder(str(text or "")):
            return Blinders(f"{what} may change a setting the counts "
                            f"depend on ({', '.join(_BLINDING)}, by its SET clause, by name, by "
                            "a Unicode-escaped name or through set_config): what it reads might "
                            "not be counted")
        if resets and not reset:
            reset = (f"{what} runs RESET ALL, and the session's own values of parallel query "
                     "are not off (its connection was opened without the startup options "
                     f"{SERIAL_OPTIONS!r}): what it reads after it might not be counted")
    if built := builder(rows, trusted):
        return Blinders(built)
    if any(privileged for _, _, _, privileged, _ in found):
        return Blinders("the role may SET track_counts (a parameter privilege): a query could "
                        "turn the counts off")
    return Blinders("", reset)


def builder(rows: Callable[[str], Sequence[Sequence[Any]]], trusted: Sequence[str]) -> str:
    """Why a routine of the database could blind the counts though no text names a setting:
    it builds what it runs (:data:`.pgescape.BUILDERS_SQL`), so it may set parallel query on
    around its reads, and the server runs it where no query names it; "" when there is none
    the datasource's ``trusted_routines`` does not vouch for (``schema.name``, ``name``, or
    ``*`` for every routine)."""
    vouched = {_as_written(str(n)) for n in trusted}
    if "*" not in vouched:
        for (what,) in rows(RUNNERS_SQL):
            return (f"the database's {what} runs a builtin that runs SQL given as text "
                    "(query_to_xml, ts_rewrite...), so SQL held as data (a table's rows) may "
                    "set parallel query on around what it reads, which would then not be "
                    "counted (drop it, or vouch for the database with trusted_routines: ['*'])")
    for signature, types, schema, name in rows(BUILDERS_SQL):
        if not all(isinstance(t, str) for t in (signature, types, schema, name)):
            # a builtin the read calls gave no name (``quote_ident`` replaced in C: 67a L2)
            return ("the catalog's read of the database's routines gave no name for one of "
                    "them: a function it calls may be replaced, so the routines that build "
                    "what they run cannot be told")
        if "*" in vouched or not vouched.isdisjoint(_vouching(signature, types, schema, name)):
            continue
        return (f"the database's routine {signature} builds the statements it runs (EXECUTE, "
                "a builtin running SQL given as text) or is in a language no reading here "
                "follows: the server may run it where no query names it (a type's or a "
                "range's support routine, a domain's CHECK), and it could set parallel query "
                "on around what it reads, which would then not be counted (list it under the "
                "datasource's trusted_routines if it sets no such setting, or drop it or "
                "move it out of the role's reach)")
    return ""


def _vouching(signature: str, types: str, schema: str, name: str) -> frozenset[str]:
    """The ``trusted_routines`` entries (:func:`_as_written`) that vouch for the routine the
    server quotes ``schema.name``: its signature, with or without its arguments' names, which
    names it alone; its qualified name and its name, each of which names every overload. The
    schema and the name are the catalog's own fields, never a cut of their joined text:
    ``evil."public.helper"(text)`` was vouched for by ``public.helper`` and set parallel query
    on around a read no count saw (64a V2)."""
    return frozenset(_as_written(t) for t in (signature, types, f"{schema}.{name}", name))


def _as_written(text: str) -> str:
    """A routine's name or signature as the server reads it: folded to lower case but inside
    double quotes, and with no white space but one between two words (``"Public".helper (t
    text)`` is ``"Public".helper(t text)``), so an entry matches a name the way a query's
    name does."""
    out: list[str] = []
    for k, part in enumerate(re.split(r'("(?:[^"]|"")*")', text)):
        if k % 2:
            out.append(part)
            continue
        part = re.sub(r"\s*([(),.])\s*", r"\1", " ".join(part.split()).lower())
        out.append(part)
    return "".join(out).strip()


#: Parallel query still off, and the counts on, after a counted statement: a routine's
#: ``RESET ALL`` undid the ``SET LOCAL``, and a later read ran in a parallel worker (the
#: fifty-fifth re-probe's B1).
_STILL_SERIAL_SQL = """
SELECT pg_catalog.current_setting('max_parallel_workers_per_gather'),
       pg_catalog.current_setting('max_parallel_workers'),
       pg_catalog.current_setting('track_counts')
"""


def still_serial(rows: Callable[[str], Sequence[Sequence[Any]]]) -> str:
    """Why the counts of the statement just run are not established ("" when parallel query
    is still off and the counts on, as :func:`serial` left them)."""
    for per_gather, workers, counts in rows(_STILL_SERIAL_SQL):
        if (str(per_gather), str(workers), str(counts).lower()) != ("0", "0", "on"):
            return ("the statement changed the settings the counts depend on (parallel query "
                    f"max_parallel_workers_per_gather={per_gather}, max_parallel_workers="
                    f"{workers}, track_counts={counts}): what it read might not be counted")
    return ""


def escaped_blinder(text: str) -> bool:
    """Whether a Unicode-escaped name or string of ``text``, decoded, names a blinding
    setting or ``set_config`` (an escape that cannot be decoded, or a ``UESCAPE`` whose
    character is not read, is taken for one)."""
    escapes = {"\\", *_UESCAPE.findall(text)}
    if "uescape" in text.lower() and len(escapes) == 1:
        return True
    for match in _ESCAPED.finditer(text):
        for escape in escapes:
            try:
                decoded = re.sub(re.escape(escape) + r"(?:\+([0-9a-fA-F]{6})|([0-9a-fA-F]{4}))",
                                 lambda h: chr(int(h[1] or h[2], 16)), match[2])
            except ValueError:
                return True
            if _BLINDING_WORD.search(decoded):
                return True
    return False


def serial(rows: Callable[[str], Sequence[Sequence[Any]]], blinded: Blinders) -> None:
    """Parallel query off for the transaction's counted statements; raises
    :class:`CountsOff` with ``blinded`` (:func:`blinders`) when the counts could be blinded."""
    if blinded.always:
        raise CountsOff(blinded.always)
    pinned = [int(r[2]) for r in rows(SERIAL_SQL)] == [2]
    if blinded.unpinned and not pinned:
        raise CountsOff(blinded.unpinned)
