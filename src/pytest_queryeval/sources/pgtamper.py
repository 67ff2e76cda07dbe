"""The role wall's tests of a catalog changed in place since ``initdb`` (pgescape's kind 6,
``tampered``), the ones that hold whatever a superuser rewrote afterwards.

Why apart from :mod:`.pgescape`: its "row written after ``initdb``" test read a row's
``xmin`` against ``template0``'s ``pg_database`` row, which any later ``ALTER DATABASE
template0`` writes anew: ``ALLOW_CONNECTIONS true`` then ``false`` made every replacement
before it look as old as ``initdb``, and ``has_function_privilege(oid, oid, text)`` replaced
by ``SELECT false`` blinded the wall itself (a superuser's definer view read
``/etc/passwd``, ran ``COPY ... TO PROGRAM``: the forty-fifth re-probe's N14). And a builtin
row re-pointed in place (``UPDATE pg_operator SET oprcode = 'public.evil_eq'`` for
``int4 = int4``, a builtin aggregate's ``aggtransfn``) was read by no test at all: the
database's routine ran for every ``=`` of two integers and read employee with 0 (N15).
"""

from __future__ import annotations

__all__ = ["AFTER_INITDB", "TAMPERED_SQL"]

#: The builtins the role check (sqlalchemy.py's ``_ROLE_SQL``, ``_WRITABLE_SQL``,
#: pgescape's ``ESCAPES_SQL``, this module's) and agents/views.py's catalog read call by
#: name (views.py's ``_CALLED_HERE`` and ``text``). Every overload of each is ``LANGUAGE
#: internal`` from ``initdb`` on (``age`` aside: :data:`_SELF_USED` names its ``xid`` one).
_SELF_CALLED = ("pg_has_role", "has_function_privilege", "has_table_privilege",
                "has_schema_privilege", "pg_get_userbyid", "array_to_string", "unnest",
                "count", "bool_or", "quote_ident", "string_agg", "pg_get_functiondef",
                "pg_get_constraintdef", "pg_get_viewdef", "pg_get_expr", "text",
                "current_database", "name")
#: The operators those reads write, over the builtin types they compare: their routines run
#: for the checks' every ``OPERATOR(pg_catalog.=)``.
_SELF_OPERATORS = ("=", "<>", "<", ">", "<=", ">=", "~~", "!~~", "||", "~")
_SELF_TYPES = ("oid", "name", '"char"', "text", "int2", "int4", "int8", "xid", "bool")


def _qualified(names: tuple[str, ...], cast: str) -> str:
    """``names`` as a ``pg_catalog`` array literal of ``cast`` (a ``pg_catalog`` type)."""
    return ("ARRAY[" + ", ".join("'" + n.replace("'", "''") + "'" for n in names)
            + f"]::pg_catalog.{cast}[]")


_TYPES = ("ARRAY[" + ", ".join(f"'pg_catalog.{t}'::pg_catalog.regtype" for t in _SELF_TYPES)
          + "]::pg_catalog.oid[]")
#: Routine ``p`` is one the checks call themselves: a builtin named in :data:`_SELF_CALLED`,
#: ``age(xid)``, or the routine of a builtin operator of :data:`_SELF_OPERATORS` between two
#: of :data:`_SELF_TYPES`. The server runs a builtin ``internal`` routine by its OID whatever
#: its row says (fmgr's table of builtins); in ``sql`` the planner inlines the row's body
#: instead: so each must stay ``internal``, whatever its row's age (N14). Written with
#: ``= ANY`` and ``< ANY`` only: the planner inlines an operator's routine in SQL, not one a
#: ``ScalarArrayOpExpr`` calls, so an ``oideq`` made ``SELECT false`` cannot empty this
#: test as it empties every join on ``OPERATOR(pg_catalog.=)``.
_SELF_USED = f"""(p.oid OPERATOR(pg_catalog.<) ANY (ARRAY[16384]::pg_catalog.oid[]) AND (
    (p.pronamespace OPERATOR(pg_catalog.=) ANY (ARRAY[11]::pg_catalog.oid[])
     AND p.proname OPERATOR(pg_catalog.=) ANY ({_qualified(_SELF_CALLED, 'name')}))
    OR p.oid OPERATOR(pg_catalog.=) ANY (ARRAY['pg_catalog.age(pg_catalog.xid)'::
      pg_catalog.regprocedure]::pg_catalog.oid[])
    OR p.oid OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT o.oprcode FROM pg_catalog.pg_operator o
      WHERE o.oid OPERATOR(pg_catalog.<) ANY (ARRAY[16384]::pg_catalog.oid[])
        AND o.oprname OPERATOR(pg_catalog.=) ANY ({_qualified(_SELF_OPERATORS, 'name')})
        AND o.oprleft OPERATOR(pg_catalog.=) ANY ({_TYPES})
        AND o.oprright OPERATOR(pg_catalog.=) ANY ({_TYPES}))::pg_catalog.oid[])))"""

#: A catalog row written after ``initdb`` made ``template0``: its ``xmin`` newer than the
#: OLDER of two marks of ``template0`` (``{x}`` the row's alias). Its ``pg_database`` row's
#: ``xmin`` moves with any ``ALTER DATABASE template0`` (N14), its ``datfrozenxid`` only with
#: a ``VACUUM`` inside ``template0`` (``ALTER DATABASE`` copies it unchanged; VACUUM writes
#: it in place, leaving the row's ``xmin``): one of the two stays at ``initdb`` unless a
#: superuser both alters ``template0`` and vacuums in it (connections allowed), or an
#: anti-wraparound autovacuum moves the second after an ``ALTER`` moved the first. An age
#: below 0 is a row more than 2^31 transactions old (its ``xmin`` wrapped), read as old.
#: The builtins the checks call need no mark (:data:`_SELF_USED`).
AFTER_INITDB = ("(pg_catalog.age({x}.xmin) OPERATOR(pg_catalog.>=) 0 "
                "AND pg_catalog.age({x}.xmin) OPERATOR(pg_catalog.<) (SELECT GREATEST("
                "pg_catalog.age(d.xmin), pg_catalog.age(d.datfrozenxid)) "
                "FROM pg_catalog.pg_database d WHERE d.datname OPERATOR(pg_catalog.=) "
                "'template0'))")

_CAT = " OPERATOR(pg_catalog.||) "
_LT = " OPERATOR(pg_catalog.<) 16384::pg_catalog.oid"


def _oids(*columns: str) -> str:
    """The ``columns`` of one row, one a row (``unnest``), as ``pg_catalog.oid``."""
    return f"pg_catalog.unnest(ARRAY[{', '.join(columns)}]::pg_catalog.oid[])"


#: (the builtin row, the routine it calls): every builtin row (OID below 16384,
#: FirstNormalObjectId) of a catalog naming a routine the server calls for it with no
#: ``EXECUTE`` check: an operator's, an aggregate's, an operator family's support routine, a
#: type's I/O, a cast's, a range's, a conversion's, a builtin's planner support.
_CALLS = f"""
  SELECT 'operator ' {_CAT} o.oid::pg_catalog.regoperator::pg_catalog.text AS what,
    {_oids('o.oprcode', 'o.oprrest', 'o.oprjoin')} AS f
  FROM pg_catalog.pg_operator o WHERE o.oid{_LT}
  UNION ALL SELECT 'aggregate ' {_CAT} g.aggfnoid::pg_catalog.regprocedure::pg_catalog.text,
    {_oids('g.aggtransfn', 'g.aggfinalfn', 'g.aggcombinefn', 'g.aggserialfn',
           'g.aggdeserialfn', 'g.aggmtransfn', 'g.aggminvtransfn', 'g.aggmfinalfn')}
  FROM pg_catalog.pg_aggregate g WHERE g.aggfnoid{_LT}
  UNION ALL SELECT 'operator family ' {_CAT} f.opfname::pg_catalog.text {_CAT}
    ' support routine ' {_CAT} a.amprocnum::pg_catalog.text, a.amproc::pg_catalog.oid
  FROM pg_catalog.pg_amproc a JOIN pg_catalog.pg_opfamily f
    ON f.oid OPERATOR(pg_catalog.=) a.amprocfamily WHERE a.oid{_LT}
  UNION ALL SELECT 'type ' {_CAT} t.oid::pg_catalog.regtype::pg_catalog.text,
    {_oids('t.typinput', 't.typoutput', 't.typreceive', 't.typsend', 't.typmodin',
           't.typmodout', 't.typanalyze', 't.typsubscript')}
  FROM pg_catalog.pg_type t WHERE t.oid{_LT}
  UNION ALL SELECT 'cast ' {_CAT} c.castsource::pg_catalog.regtype::pg_catalog.text {_CAT}
    ' -> ' {_CAT} c.casttarget::pg_catalog.regtype::pg_catalog.text, c.castfunc
  FROM pg_catalog.pg_cast c WHERE c.oid{_LT}
  UNION ALL SELECT 'range type ' {_CAT} r.rngtypid::pg_catalog.regtype::pg_catalog.text,
    {_oids('r.rngcanonical', 'r.rngsubdiff')}
  FROM pg_catalog.pg_range r WHERE r.rngtypid{_LT}
  UNION ALL SELECT 'conversion ' {_CAT} v.conname::pg_catalog.text, v.conproc::pg_catalog.oid
  FROM pg_catalog.pg_conversion v WHERE v.oid{_LT}
  UNION ALL SELECT 'builtin ' {_CAT} p.oid::pg_catalog.regprocedure::pg_catalog.text {_CAT}
    ' (planner support)', p.prosupport::pg_catalog.oid
  FROM pg_catalog.pg_proc p WHERE p.oid{_LT}"""
#: (the builtin row, the operator it names): the planner swaps an operator for its
#: commutator or negator (``NOT (a = b)`` becomes ``a <> b``), an index or a sort runs an
#: operator family's member, ``min``/``max`` their sort operator.
_NAMES_OPERATOR = f"""
  SELECT 'operator ' {_CAT} o.oid::pg_catalog.regoperator::pg_catalog.text AS what,
    {_oids('o.oprcom', 'o.oprnegate')} AS f
  FROM pg_catalog.pg_operator o WHERE o.oid{_LT}
  UNION ALL SELECT 'operator family ' {_CAT} f.opfname::pg_catalog.text {_CAT} ' member',
    a.amopopr::pg_catalog.oid
  FROM pg_catalog.pg_amop a JOIN pg_catalog.pg_opfamily f
    ON f.oid OPERATOR(pg_catalog.=) a.amopfamily WHERE a.oid{_LT}
  UNION ALL SELECT 'aggregate ' {_CAT} g.aggfnoid::pg_catalog.regprocedure::pg_catalog.text,
    g.aggsortop::pg_catalog.oid
  FROM pg_catalog.pg_aggregate g WHERE g.aggfnoid{_LT}"""

#: Rows of pgescape's ``ESCAPES_SQL`` (kind 6, ``tampered``): a builtin the checks call in
#: a language other than ``internal`` (12), definer or given options (N14: pgescape's own
#: test may name it too, through joins this one does without); a builtin row
#: re-pointed at the database's routine or operator (OID from 16384: N15; a routine of the
#: database runs where the builtin's did, for every caller, unnamed by any query).
TAMPERED_SQL = f"""
  SELECT 6, 'tampered', 'builtin ' {_CAT} p.oid::pg_catalog.regprocedure::pg_catalog.text
    {_CAT} CASE WHEN p.prosecdef THEN ' marked SECURITY DEFINER'
      WHEN p.proconfig IS NOT NULL THEN ' given SET options'
      ELSE ' in LANGUAGE ' {_CAT} (SELECT l.lanname::pg_catalog.text
        FROM pg_catalog.pg_language l
        WHERE l.oid OPERATOR(pg_catalog.=) ANY (ARRAY[p.prolang])) END
    {_CAT} ' (the role check calls it: its own is internal)'
  FROM pg_catalog.pg_proc p
  WHERE {_SELF_USED}
    AND (p.prolang OPERATOR(pg_catalog.<>) ALL (ARRAY[12]::pg_catalog.oid[])
         OR p.prosecdef OR p.proconfig IS NOT NULL)
  UNION ALL
  SELECT 6, 'tampered', r.what {_CAT} ' re-pointed at the database''s routine ' {_CAT}
    r.f::pg_catalog.regprocedure::pg_catalog.text
  FROM ({_CALLS}) r WHERE r.f OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
  UNION ALL
  SELECT 6, 'tampered', r.what {_CAT} ' re-pointed at the database''s operator ' {_CAT}
    r.f::pg_catalog.regoperator::pg_catalog.text
  FROM ({_NAMES_OPERATOR}) r WHERE r.f OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid"""
