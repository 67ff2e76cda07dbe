"""The routes by which a PostgreSQL query reaches a routine of the database it does not name:
a view's rule, a domain's ``CHECK`` (through domains over it, arrays of it, composite types
holding it), and a table's index expressions, constraints, partition key, statistics objects,
policies and range columns, which the planner folds before any statement runs. Read once a
source from the catalog (:meth:`.sqlalchemy.SqlAlchemySource._volatile_views_of`), each route
ends at the routines :func:`.pgguard.volatile_refusal` and :func:`.pgbodies.hidden_volatile`
refuse by name, so a query that reaches one unnamed is refused as a call of it is.

Why apart from :mod:`.pgguard`: the guard reads a query's text; this reads the database's
catalog, one SQL text per kind of object, and grew with each route a re-probe found.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .pgguard import SQL_TEXT_FUNCTIONS, SQL_TEXT_PREFIXES, TABLE_BY_NAME_FUNCTIONS, VOLATILE_ALLOWED

__all__ = ["CAST_ROUTINES_SQL", "DOMAIN_ROUTINES_SQL", "OPERATOR_ROUTINES_SQL", "TABLE_ROUTINES_SQL",
           "VIEW_ROUTINES_SQL", "reading_routines", "volatile_views"]


#: A view's rule (``r``): the routines it calls, by ``pg_depend`` (the database's routines,
#: and an operator's through its ``oprcode``) and by the node tree (``pg_rewrite.ev_action``:
#: a builtin's OID is pinned, so no ``pg_depend`` row names ``pg_terminate_backend``).
def _calls(catalog: str, obj: str, tree: str, fields: str) -> str:
    """The routines an object of ``catalog`` (``obj``: its oid's column) calls, by
    ``pg_depend`` and by its stored node tree ``tree`` (``fields``: the tree's call fields)."""
    depends = ("FROM pg_catalog.pg_depend d{join} WHERE d.classid OPERATOR(pg_catalog.=) "
               f"'pg_catalog.{catalog}'::pg_catalog.regclass AND d.objid OPERATOR(pg_catalog.=) "
               f"{obj} AND d.refclassid OPERATOR(pg_catalog.=) "
               "'pg_catalog.{ref}'::pg_catalog.regclass")
    return (f"SELECT d.refobjid AS f {depends.format(join='', ref='pg_proc')} "
            "UNION SELECT o.oprcode::pg_catalog.oid " + depends.format(
                join=" JOIN pg_catalog.pg_operator o ON o.oid OPERATOR(pg_catalog.=) d.refobjid",
                ref="pg_operator")
            + " UNION SELECT m[2]::pg_catalog.oid FROM pg_catalog.regexp_matches("
            f"{tree}::pg_catalog.text, '[:]({fields}) ([0-9]+)', 'g') m")


#: The columns after an object's name of :data:`VIEW_ROUTINES_SQL`'s and
#: :data:`DOMAIN_ROUTINES_SQL`'s rows for a routine ``p`` (in namespace ``n``) it calls.
_CALLED = """''::pg_catalog.text, n.nspname::pg_catalog.text,
       p.proname::pg_catalog.text, p.provolatile::pg_catalog.text,
       (p.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
        OR n.nspname::pg_catalog.text OPERATOR(pg_catalog.<>) ALL
             (ARRAY['pg_catalog', 'information_schema']::pg_catalog.text[]))"""
_RULE_CALLS = _calls("pg_rewrite", "r.oid", "r.ev_action", "funcid|opfuncid|aggfnoid|winfnoid")
#: The database's views (made after ``initdb``; a materialized view runs nothing when read):
#: each routine a view's rule calls, as ``(view, '', schema, routine, provolatile, own)``
#: (``own``: the database's, as :data:`ROUTINES_SQL` reads them), and each relation it reads,
#: as ``(view, relation, '', '', '', false)``: what a query reaches through a view, views over
#: views too (:func:`volatile_views`).
VIEW_ROUTINES_SQL = f"""
SELECT v.relname::pg_catalog.text, {_CALLED}
FROM pg_catalog.pg_rewrite r
JOIN pg_catalog.pg_class v ON v.oid OPERATOR(pg_catalog.=) r.ev_class
CROSS JOIN LATERAL ({_RULE_CALLS}) c
JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) c.f
JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
WHERE v.relkind OPERATOR(pg_catalog.=) 'v' AND v.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
UNION ALL
SELECT DISTINCT v.relname::pg_catalog.text, ref.relname::pg_catalog.text, '', '', '', false
FROM pg_catalog.pg_depend d
JOIN pg_catalog.pg_rewrite r ON r.oid OPERATOR(pg_catalog.=) d.objid
JOIN pg_catalog.pg_class v ON v.oid OPERATOR(pg_catalog.=) r.ev_class
JOIN pg_catalog.pg_class ref ON ref.oid OPERATOR(pg_catalog.=) d.refobjid
WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_rewrite'::pg_catalog.regclass
  AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
  AND v.relkind OPERATOR(pg_catalog.=) 'v' AND v.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
  AND v.oid OPERATOR(pg_catalog.<>) ref.oid
"""


#: The database's domains as :data:`VIEW_ROUTINES_SQL` gives views: each routine a domain's
#: ``CHECK`` calls (by ``pg_depend``, an operator's ``oprcode``, and the stored expression's
#: node tree), and as what it "reads" the domain under it, a domain array's element and a
#: composite type's (not a table's) attribute types: a cast to any of them runs the
#: ``CHECK``. ``SELECT 'x'::cwdd`` (a domain over a domain whose ``CHECK`` caught its own
#: ``DELETE``) was no write attempt, and one over ``pg_terminate_backend`` ended another
#: session (the forty-sixth re-probe's P8, P2).
DOMAIN_ROUTINES_SQL = f"""
SELECT t.typname::pg_catalog.text, {_CALLED}
FROM pg_catalog.pg_constraint c
JOIN pg_catalog.pg_type t ON t.oid OPERATOR(pg_catalog.=) c.contypid
CROSS JOIN LATERAL ({_calls("pg_constraint", "c.oid", "c.conbin", "funcid|opfuncid")}) k
JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) k.f
JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
WHERE c.contype OPERATOR(pg_catalog.=) 'c' AND t.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
UNION ALL
SELECT t.typname::pg_catalog.text, b.typname::pg_catalog.text, '', '', '', false
FROM pg_catalog.pg_type t JOIN pg_catalog.pg_type b ON b.oid OPERATOR(pg_catalog.=) t.typbasetype
WHERE t.typtype OPERATOR(pg_catalog.=) 'd' AND b.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
UNION ALL
SELECT a.typname::pg_catalog.text, e.typname::pg_catalog.text, '', '', '', false
FROM pg_catalog.pg_type a JOIN pg_catalog.pg_type e ON e.oid OPERATOR(pg_catalog.=) a.typelem
WHERE a.typcategory OPERATOR(pg_catalog.=) 'A' AND e.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
UNION ALL
SELECT ct.typname::pg_catalog.text, at.typname::pg_catalog.text, '', '', '', false
FROM pg_catalog.pg_type ct
JOIN pg_catalog.pg_class r ON r.oid OPERATOR(pg_catalog.=) ct.typrelid
  AND r.relkind OPERATOR(pg_catalog.=) 'c'
JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) r.oid
  AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
JOIN pg_catalog.pg_type at ON at.oid OPERATOR(pg_catalog.=) a.atttypid
WHERE at.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
"""


def _table_calls(obj: str, catalog: str, oid: str, tree: str | None, where: str) -> str:
    """:data:`TABLE_ROUTINES_SQL`'s rows for the routines an object of a table calls: ``obj``,
    a ``FROM`` of ``catalog``'s rows joined to the table ``c`` (``where`` names which), by
    ``pg_depend`` of the object's ``oid`` and, with ``tree``, its stored node trees."""
    calls = (_calls(catalog, oid, tree, "funcid|opfuncid") if tree else
             f"SELECT d.refobjid AS f FROM pg_catalog.pg_depend d WHERE d.classid "
             f"OPERATOR(pg_catalog.=) 'pg_catalog.{catalog}'::pg_catalog.regclass AND d.objid "
             f"OPERATOR(pg_catalog.=) {oid} AND d.refclassid OPERATOR(pg_catalog.=) "
             "'pg_catalog.pg_proc'::pg_catalog.regclass")
    return f"""SELECT c.relname::pg_catalog.text, {_CALLED}
FROM {obj}
CROSS JOIN LATERAL ({calls}) k
JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) k.f
JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
WHERE {where} AND c.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid"""


#: The database's tables as :data:`VIEW_ROUTINES_SQL` gives views: each routine the planner
#: or a scan of a table runs unwritten (an index's expressions and predicate, a ``CHECK``, a
#: partition key, a statistics object's expressions, which the planner folds; a row-level
#: security policy; a range type's ``subtype_diff`` and ``canonical`` of a column), and as
#: what it "reads" each inheritance child and partition, whose objects a read of the parent
#: plans too. ``SELECT count(*) FROM cpar``, a child's index over an ``IMMUTABLE`` routine
#: that ran ``DELETE`` and caught the refusal, signalled another session or set parallel
#: query back on for its own read, was no write attempt and counted nothing (the
#: forty-seventh re-probe's Q1, Q2, Q5).
TABLE_ROUTINES_SQL = "\nUNION ALL\n".join([
    _table_calls("pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid "
                 "OPERATOR(pg_catalog.=) i.indrelid", "pg_class", "i.indexrelid",
                 "pg_catalog.concat_ws(' ', i.indexprs, i.indpred)",
                 "(i.indexprs IS NOT NULL OR i.indpred IS NOT NULL)"),
    _table_calls("pg_catalog.pg_constraint o JOIN pg_catalog.pg_class c ON c.oid "
                 "OPERATOR(pg_catalog.=) o.conrelid", "pg_constraint", "o.oid", "o.conbin",
                 "o.contype OPERATOR(pg_catalog.=) 'c'"),
    _table_calls("pg_catalog.pg_policy o JOIN pg_catalog.pg_class c ON c.oid "
                 "OPERATOR(pg_catalog.=) o.polrelid", "pg_policy", "o.oid",
                 "pg_catalog.concat_ws(' ', o.polqual, o.polwithcheck)", "true"),
    _table_calls("pg_catalog.pg_class c", "pg_class", "c.oid", None,
                 "c.relkind OPERATOR(pg_catalog.=) 'p'"),
    _table_calls("pg_catalog.pg_statistic_ext o JOIN pg_catalog.pg_class c ON c.oid "
                 "OPERATOR(pg_catalog.=) o.stxrelid", "pg_statistic_ext", "o.oid", None, "true"),
    f"""SELECT c.relname::pg_catalog.text, {_CALLED}
FROM pg_catalog.pg_attribute a
JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) a.attrelid
JOIN pg_catalog.pg_range r ON r.rngtypid OPERATOR(pg_catalog.=) a.atttypid
JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) ANY
     (ARRAY[r.rngsubdiff::pg_catalog.oid, r.rngcanonical::pg_catalog.oid])
JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
WHERE a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
  AND c.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid""",
    """SELECT p.relname::pg_catalog.text, c.relname::pg_catalog.text, '', '', '', false
FROM pg_catalog.pg_inherits i
JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) i.inhrelid
JOIN pg_catalog.pg_class p ON p.oid OPERATOR(pg_catalog.=) i.inhparent""",
    # and the database's types of its columns (a cast from one runs its routine: R2)
    """SELECT c.relname::pg_catalog.text, t.typname::pg_catalog.text, '', '', '', false
FROM pg_catalog.pg_attribute a
JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) a.attrelid
JOIN pg_catalog.pg_type t ON t.oid OPERATOR(pg_catalog.=) a.atttypid
WHERE a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
  AND t.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
  AND c.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid"""])

#: The database's operators, by symbol, as :data:`VIEW_ROUTINES_SQL` gives views: the routine
#: each calls, and as what it "reads" its negator and commutator, which the planner calls for
#: it (``SELECT 'a' %%% 'b'`` ran a routine that ``SELECT kop('a', 'b')`` was refused for:
#: the forty-seventh re-probe's R2).
OPERATOR_ROUTINES_SQL = f"""
SELECT o.oprname::pg_catalog.text, {_CALLED}
FROM pg_catalog.pg_operator o
JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) o.oprcode
JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
WHERE o.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
UNION ALL
SELECT o.oprname::pg_catalog.text, x.oprname::pg_catalog.text, '', '', '', false
FROM pg_catalog.pg_operator o
JOIN pg_catalog.pg_operator x ON x.oid OPERATOR(pg_catalog.=) ANY
     (ARRAY[o.oprnegate, o.oprcom]::pg_catalog.oid[])
WHERE o.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
"""

#: The database's casts, by the names of their source and target types (a cast may be
#: implicit: ``SELECT c::text FROM ktt`` ran the routine of a cast from ``kt``, the type of
#: ``ktt.c``, the forty-seventh re-probe's R2), each with the routine it calls.
CAST_ROUTINES_SQL = f"""
SELECT t.typname::pg_catalog.text, {_CALLED}
FROM pg_catalog.pg_cast c
JOIN pg_catalog.pg_type t ON t.oid OPERATOR(pg_catalog.=) c.castsource
JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) c.castfunc
JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
WHERE c.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
"""


def reading_routines(routines: Iterable[tuple[Any, ...]],
                     found: Mapping[str, str]) -> list[tuple[str, str, str, str, str, bool]]:
    """:func:`volatile_views` rows for the database's routines (:data:`.pgguard.ROUTINES_SQL`'s
    rows) whose body names a relation, type, operator or routine in ``found``: a query that
    calls one reaches it (``ksf()``, a ``STABLE`` SQL routine counting a refused table,
    ran the routine of that table's child index: the forty-seventh re-probe's R2)."""
    out: list[tuple[str, str, str, str, str, bool]] = []
    for name, _volatility, _lang, body, *_ in routines:
        text = str(body or "").lower()
        words = set(re.findall(r"[\w$]+", text)) | set(re.findall(r'"([^"]+)"', text))
        out += [(str(name).lower(), hit, "", "", "", False) for hit in sorted(words & found.keys())
                if hit != str(name).lower()]
    return out


def volatile_views(rows: Iterable[tuple[str, str, str, str, str, bool]],
                   hidden: Callable[[], dict[str, str]], noun: str = "view",
                   found_before: Mapping[str, str] | None = None) -> dict[str, str]:
    """The database's views (:data:`VIEW_ROUTINES_SQL`'s rows), lower-cased, whose rule calls
    a routine a predicted query may not call by name (volatile outside
    :data:`VOLATILE_ALLOWED`, or one of the database's in ``hidden()``, read only when a
    view calls one of those: :func:`hidden_volatile`'s), directly or through
    the views they read, each with what it calls: ``SELECT n FROM kv45``, ``kv45`` a view over
    a VOLATILE routine calling ``pg_terminate_backend``, ended a concurrent run's session,
    where ``SELECT kfn()`` was refused (the forty-fifth re-probe's N9). ``found_before``: the
    relations found so of another kind (tables, for the views over them); the result holds
    them too."""
    found: dict[str, str] = dict(found_before or {})
    reads: list[tuple[str, str]] = []
    for view, relation, schema, name, volatility, own in rows:
        view = str(view).lower()
        if relation:
            reads.append((view, str(relation).lower()))
        elif schema == "pg_catalog" and (name in SQL_TEXT_FUNCTIONS | TABLE_BY_NAME_FUNCTIONS
                                         or str(name).startswith(SQL_TEXT_PREFIXES)):
            # a builtin the guard refuses by name, reached through an operator the database
            # made over it (``@?@`` over ts_stat ran SQL given as text: 47b R5)
            found.setdefault(view, f"calls {name}(), which runs SQL given as text or reads "
                                   "tables named by a value")
        elif volatility == "v" and not (schema == "pg_catalog" and name in VOLATILE_ALLOWED):
            found.setdefault(view, f"calls {name}(), which is volatile (pg_proc.provolatile "
                                   "= 'v')")
        elif own and (inner := hidden().get(str(name).lower())) is not None:
            found.setdefault(view, f"calls {name}(), declared STABLE or IMMUTABLE but " + (
                "running what no reading here follows" if inner == "?" else
                f"calling {inner}(), which is volatile"))
    while more := {v: f"reads {'' if r in (found_before or {}) else noun + ' '}{r}, which "
                      f"{found[r]}" for v, r in reads
                   if r in found and v not in found}:
        found.update(more)
    return found
