"""What a PostgreSQL role can reach that acts past its read-only, rolled-back transaction.

Why a check of the role and not of each query: ``SET TRANSACTION READ ONLY`` stops the
session's own writes, and a least-privilege role cannot read server files or run programs.
A database can still hand such a role another's powers: a ``SECURITY DEFINER`` routine runs
as its owner, a routine in a language the server does not sandbox (``c``, ``internal``,
``plpython3u``) made outside an extension is any builtin under a second name, dblink opens a
connection of its own outside the transaction, and a foreign table reads server files, runs
a program (``file_fdw``) or another session (``postgres_fdw``). A query reaches them unnamed:
through a view, an operator, a cast, a domain's ``CHECK``, a row-level security policy, a
parent table, an operator class (the forty-second re-probe's Q1, Q2, Q7, Q11 to Q14, Q19,
Q20: a host file in the report, a file written, a program run, a table deleted in the
suite's database, a later case's gold changed). No reading of a query's text can follow
every such route, so the wall is the role's: a datasource whose role can reach one is
refused before any query runs, as a role that can write is, unless ``allow_privileged``.
"""

from __future__ import annotations

from typing import Any

from .pgtamper import AFTER_INITDB, TAMPERED_SQL

__all__ = [
    "BUILDERS_SQL",
    "CALLED_UNCHECKED",
    "ESCAPES_SQL",
    "EXPRESSIONS",
    "EXTENSION_MEMBER",
    "MAY_EXECUTE",
    "REVOCABLE_KINDS",
    "RUNNERS_SQL",
    "TEXT",
    "TREES",
    "TYPE_MEMBER",
    "escapes_found",
]

#: Extension libraries whose functions act outside the transaction or below the tables'
#: grants (dblink's own are the ``dblink`` route's): the contrib modules that change what a
#: transaction cannot roll back or read below the tables' grants, each revoked from PUBLIC by
#: its own script: a grant back made ``pg_truncate_visibility_map`` change a table's
#: visibility map for good from the read-only transaction (the forty-third re-probe's R11).
_LIBRARIES = tuple(f"'$libdir/{m}'" for m in (
    "adminpack", "pageinspect", "pg_visibility", "pg_surgery", "pg_walinspect", "pg_prewarm",
    "pg_buffercache", "pg_freespacemap", "pgrowlocks", "pgstattuple", "amcheck",
    "old_snapshot", "pg_stat_statements"))
#: A routine the server calls with no EXECUTE check of the caller's: an operator class's
#: support routine (sorting's comparison), an aggregate's, a type's, a range's, an operator's
#: estimator (the forty-third re-probe's R14: a definer comparison revoked from PUBLIC ran as
#: the superuser for an ORDER BY).
#: Of them, the routines an aggregate or an operator class (a sort's comparison, a hash) has
#: the server run for a query that names neither (no route of :mod:`.pgroutes` leads there).
_UNROUTED_ROWS = """
    SELECT a.amproc FROM pg_catalog.pg_amproc a
    UNION ALL SELECT pg_catalog.unnest(ARRAY[g.aggtransfn, g.aggfinalfn, g.aggcombinefn,
      g.aggserialfn, g.aggdeserialfn, g.aggmtransfn, g.aggminvtransfn, g.aggmfinalfn]::
      pg_catalog.oid[]) FROM pg_catalog.pg_aggregate g"""
CALLED_UNCHECKED = f"""({_UNROUTED_ROWS}
    UNION ALL SELECT pg_catalog.unnest(ARRAY[t.typinput, t.typoutput, t.typreceive, t.typsend,
      t.typmodin, t.typmodout, t.typanalyze, t.typsubscript]::pg_catalog.oid[])
      FROM pg_catalog.pg_type t
    UNION ALL SELECT pg_catalog.unnest(ARRAY[r.rngcanonical, r.rngsubdiff]::pg_catalog.oid[])
      FROM pg_catalog.pg_range r
    UNION ALL SELECT pg_catalog.unnest(ARRAY[o.oprcode, o.oprrest, o.oprjoin]::
      pg_catalog.oid[]) FROM pg_catalog.pg_operator o
    UNION ALL SELECT c.castfunc FROM pg_catalog.pg_cast c)"""
_UNROUTED = f"({_UNROUTED_ROWS})"


def _depends(deptype: str, on: str = "") -> str:
    """A condition: routine ``p`` has a ``pg_depend`` row of ``deptype`` (on a row of the
    catalog ``on``, when given). Every name and operator is ``pg_catalog``'s (an ``=`` of
    the database's on the search path would decide it otherwise)."""
    of = (f"AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.{on}'::pg_catalog.regclass "
          if on else "")
    return ("EXISTS (SELECT 1 FROM pg_catalog.pg_depend d WHERE d.classid "
            "OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass "
            f"AND d.objid OPERATOR(pg_catalog.=) p.oid {of}"
            f"AND d.deptype OPERATOR(pg_catalog.=) '{deptype}'::pg_catalog.\"char\")")


#: A routine the server made for a type of the database (a range type's constructors, in
#: ``internal``): the type's, not a second name of a builtin (the forty-third re-probe's M2).
#: A condition on routine ``p``; agents/views.py's catalog read leaves such routines out too.
TYPE_MEMBER = _depends("i", "pg_type")
#: Builtins that reach server files (superuser-only unless granted: a grant is an escape;
#: ``pg_read_file_old``, adminpack's old name, checks for a superuser itself).
_FILE_BUILTINS = ("'lo_export'", "'lo_import'", "'pg_read_file'", "'pg_read_binary_file'",
                  "'pg_ls_dir'", "'pg_stat_file'", "'pg_file_write'")
#: A builtin whose initial privileges (``pg_init_privs``, ``privtype 'i'``: what ``initdb``
#: left) give PUBLIC no EXECUTE: initdb revoked it, for it reads the server's files or
#: settings (``pg_hba_file_rules``, ``pg_show_all_file_settings``, ``pg_ls_logdir``,
#: ``pg_config``), or acts on other sessions and the server. Granted back, to PUBLIC or to a
#: role the role may become, it passed the wall, and a view over it put ``pg_hba.conf``'s
#: rules and ``postgresql.conf``'s settings in a passing case's report (the forty-fifth
#: re-probe's N10). A builtin with no such row was PUBLIC's from the start. A condition on
#: routine ``p``.
_KEPT_FROM_PUBLIC = """EXISTS (SELECT 1 FROM pg_catalog.pg_init_privs i
    WHERE i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
      AND i.objoid OPERATOR(pg_catalog.=) p.oid AND i.objsubid OPERATOR(pg_catalog.=) 0
      AND i.privtype OPERATOR(pg_catalog.=) 'i'::pg_catalog."char"
      AND NOT EXISTS (SELECT 1 FROM pg_catalog.aclexplode(i.initprivs) a
                      WHERE a.grantee OPERATOR(pg_catalog.=) 0::pg_catalog.oid
                        AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'))"""
#: An extension's member routine (``deptype 'e'``).
_EXTENSION_MEMBER = EXTENSION_MEMBER = _depends("e")
#: Routine ``p`` may be executed by the role or by any role it may become (``MEMBER``, with
#: or without ``INHERIT``: ``SET ROLE``, or ``set_config('role', ...)`` in any routine, needs
#: no ``INHERIT``): ``has_function_privilege`` of the current user alone follows only
#: ``INHERIT`` memberships, and ``lo_export`` granted to a ``NOLOGIN`` group the role was a
#: ``NOINHERIT`` member of passed the check (the forty-fourth re-probe's R1b). The roles are
#: those ``_ROLE_SQL`` (sources/sqlalchemy.py) reads the attributes of.
MAY_EXECUTE = ("EXISTS (SELECT 1 FROM pg_catalog.pg_roles m WHERE "
                "pg_catalog.pg_has_role(current_user, m.oid, 'MEMBER') "
                "AND pg_catalog.has_function_privilege(m.oid, p.oid, 'EXECUTE'))")
#: What the role reaches of routine ``p``: what it may execute, and what the server calls
#: for it unchecked.
_REACHED = (f"({MAY_EXECUTE} "
            f"OR p.oid OPERATOR(pg_catalog.=) ANY (ARRAY{CALLED_UNCHECKED}))")

#: A catalog row written after ``initdb`` made ``template0``: a builtin replaced in place
#: keeps its OID under 16384 but not its row version (``CREATE OR REPLACE FUNCTION
#: pg_catalog.initcap(text) ... LANGUAGE sql`` over a table, ``CREATE OR REPLACE VIEW
#: pg_catalog.pg_roles`` that blinded this very check: the forty-third re-probe's R3, R6,
#: R9). Only what a replacement changes is read this way (an SQL body, a view's rule): a
#: ``GRANT`` writes a new row too. Its mark, and the tests that need none (N14, N15), are
#: :mod:`.pgtamper`'s.
_AFTER_INITDB = AFTER_INITDB

#: The builtins that signal a backend. PUBLIC may execute them (on the sessions of its own
#: role): the source warns of that, and refuses the role where a routine of the database
#: names one in its body, which a cast, an index expression or a view runs unnamed (the
#: forty-sixth re-probe's P2: ``SELECT 'x'::kdd``, a domain over a domain whose ``CHECK``
#: ran ``pg_terminate_backend``, ended another session of the role, and the call passed).
_SIGNALS = "pg_(terminate|cancel)_backend"
#: Routine ``{q}``'s text: its body, or a ``BEGIN ATOMIC`` body's definition (its ``prosrc``
#: is empty: such a state function calling ``pg_terminate_backend`` outright was no
#: signalling routine, the forty-ninth re-probe's K2), and its parameters' defaults, which a
#: call without those arguments runs (``a text DEFAULT pg_catalog.set_config(...)``: the
#: fifty-seventh re-probe's B3, Y1).
TEXT = ("pg_catalog.concat_ws(' ', CASE WHEN {q}.prosqlbody IS NULL THEN {q}.prosrc "
         "ELSE pg_catalog.pg_get_functiondef({q}.oid) END, "
         "pg_catalog.pg_get_expr({q}.proargdefaults, 0))")
#: The role may execute a signal builtin.
_MAY_SIGNAL = ("EXISTS (SELECT 1 FROM pg_catalog.pg_proc s WHERE s.oid OPERATOR(pg_catalog.<) "
               "16384::pg_catalog.oid AND s.proname OPERATOR(pg_catalog.~) "
               f"'^{_SIGNALS}$' AND " + MAY_EXECUTE.replace("p.oid", "s.oid") + ")")
#: The database's expressions a routine's query reaches unnamed, each as (what, its text):
#: views, ``CHECK`` constraints (a domain's too), policies, column defaults, indexes. A state
#: function reading a view, a domain or a table with a policy over ``pg_terminate_backend``
#: ended another session (the fiftieth re-probe's V1).
EXPRESSIONS = """
    SELECT 'view ' OPERATOR(pg_catalog.||) c.oid::pg_catalog.regclass::pg_catalog.text AS what,
           pg_catalog.pg_get_viewdef(c.oid) AS t
    FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
      AND c.relkind OPERATOR(pg_catalog.=) ANY (ARRAY['v', 'm']::pg_catalog.char[])
    UNION ALL
    SELECT 'constraint ' OPERATOR(pg_catalog.||) n.conname::pg_catalog.text,
           pg_catalog.pg_get_constraintdef(n.oid)
    FROM pg_catalog.pg_constraint n WHERE n.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
    UNION ALL
    SELECT 'policy ' OPERATOR(pg_catalog.||) p.polname::pg_catalog.text,
           pg_catalog.concat_ws(' ', pg_catalog.pg_get_expr(p.polqual, p.polrelid),
                                pg_catalog.pg_get_expr(p.polwithcheck, p.polrelid))
    FROM pg_catalog.pg_policy p
    UNION ALL
    SELECT 'a default of ' OPERATOR(pg_catalog.||) d.adrelid::pg_catalog.regclass::pg_catalog.text,
           pg_catalog.pg_get_expr(d.adbin, d.adrelid)
    FROM pg_catalog.pg_attrdef d WHERE d.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
    UNION ALL
    SELECT 'index ' OPERATOR(pg_catalog.||) i.indexrelid::pg_catalog.regclass::pg_catalog.text,
           pg_catalog.pg_get_indexdef(i.indexrelid)
    FROM pg_catalog.pg_index i WHERE i.indexrelid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
"""
#: The database's stored expression trees, each as (the catalog, the object, its tree as
#: text): a routine's parameter defaults and ``BEGIN ATOMIC`` body, column and domain
#: defaults, constraints, index expressions and predicates, policies, rules (a view's
#: query), trigger conditions, statistics and partition key expressions. A call in any of
#: them is ``{FUNCEXPR :funcid <oid> ...}`` however it was spelled, so a builtin is found
#: by its oid where the texts above would need each spelling of its name (a parameter's
#: ``DEFAULT pg_catalog.set_config(...)`` was in no text read: the fifty-seventh re-probe's
#: B3).
TREES = """
    SELECT 'pg_catalog.pg_proc'::pg_catalog.regclass AS cls, p.oid AS obj,
           pg_catalog.concat_ws(' ', p.proargdefaults::pg_catalog.text,
                                p.prosqlbody::pg_catalog.text) AS tree
    FROM pg_catalog.pg_proc p
    UNION ALL SELECT 'pg_catalog.pg_attrdef'::pg_catalog.regclass, d.oid, d.adbin::pg_catalog.text
    FROM pg_catalog.pg_attrdef d
    UNION ALL SELECT 'pg_catalog.pg_constraint'::pg_catalog.regclass, n.oid,
           n.conbin::pg_catalog.text FROM pg_catalog.pg_constraint n
    UNION ALL SELECT 'pg_catalog.pg_class'::pg_catalog.regclass, i.indexrelid,
           pg_catalog.concat_ws(' ', i.indexprs::pg_catalog.text, i.indpred::pg_catalog.text)
    FROM pg_catalog.pg_index i
    UNION ALL SELECT 'pg_catalog.pg_policy'::pg_catalog.regclass, o.oid,
           pg_catalog.concat_ws(' ', o.polqual::pg_catalog.text, o.polwithcheck::pg_catalog.text)
    FROM pg_catalog.pg_policy o
    UNION ALL SELECT 'pg_catalog.pg_rewrite'::pg_catalog.regclass, r.oid,
           pg_catalog.concat_ws(' ', r.ev_qual::pg_catalog.text, r.ev_action::pg_catalog.text)
    FROM pg_catalog.pg_rewrite r
    UNION ALL SELECT 'pg_catalog.pg_trigger'::pg_catalog.regclass, g.oid,
           g.tgqual::pg_catalog.text FROM pg_catalog.pg_trigger g
    UNION ALL SELECT 'pg_catalog.pg_type'::pg_catalog.regclass, t.oid,
           t.typdefaultbin::pg_catalog.text FROM pg_catalog.pg_type t
    UNION ALL SELECT 'pg_catalog.pg_statistic_ext'::pg_catalog.regclass, x.oid,
           x.stxexprs::pg_catalog.text FROM pg_catalog.pg_statistic_ext x
    UNION ALL SELECT 'pg_catalog.pg_class'::pg_catalog.regclass, k.partrelid,
           k.partexprs::pg_catalog.text FROM pg_catalog.pg_partitioned_table k
"""
#: (A C or ``internal`` routine's text is its symbol: ``tsquery_rewrite_query`` is
#: ``ts_rewrite(tsquery, text)`` under any name, and xml2's ``xpath_table`` runs the query it
#: builds from its arguments: each set parallel query on around a read, the sixty-second
#: re-probe's A, B, E. ``u&`` starts a word: ``'menu&drinks'`` is no escape, 62a D.)
#: A body that may name them where no text does: a statement built at run time (``EXECUTE
#: 'SELECT pg_' || 'terminate' || ...`` in an aggregate's state function ended another session:
#: the forty-eighth re-probe's S2), a builtin running SQL given as text, a Unicode-escaped name.
_BUILT = ("\\mexecute\\M|query_to_xml|cursor_to_xml|ts_stat|ts_rewrite|tsquery_rewrite"
          "|crosstab|connectby|xpath_table|dblink|\\mu&"
          "|\\mdo\\M\\s+(e?''|\\$|language)")
#: A condition: routine ``{q}`` builds what it runs (:data:`_BUILT`) or is in a language no
#: reading follows. Read for the routines of the slots the server calls with no query naming
#: them and no route of :mod:`.pgroutes` leading there (:data:`_UNROUTED`: an aggregate's, an
#: operator class's), and their callees: a view, a domain, an index, an operator, a cast or a
#: query naming such a routine is refused where the query runs.
_BUILT_BY = (f"(({TEXT}) OPERATOR(pg_catalog.~*) '{_BUILT}' OR {{q}}.prolang "
             "OPERATOR(pg_catalog.<>) ALL (SELECT l.oid FROM pg_catalog.pg_language l WHERE "
             "l.lanname OPERATOR(pg_catalog.=) ANY "
             "(ARRAY['sql', 'plpgsql', 'internal', 'c']::pg_catalog.name[])))")

#: Every routine of the database (an extension's too: a superuser's ``ALTER EXTENSION ... ADD
#: FUNCTION`` makes any routine one; no contrib extension ships one) that builds what it runs or is in
#: a language no reading follows (:data:`_BUILT_BY`) and that the role reaches: it may
#: execute it, or the server calls it unchecked (a type's, a range's, an operator's, a
#: cast's, an aggregate's, an operator class's). Such a routine could set parallel query on
#: around its reads, where the counts do not see them, and the server runs it where no query
#: names it: a type's ``typmod_in`` or ``send``, a range's ``subtype_diff`` estimating a
#: multirange column, a domain's ``CHECK`` on a routine's ``OUT`` column (the sixty-first
#: re-probe's T1 to T4; each round before found another spelling of a name).
BUILDERS_SQL = f"""
SELECT pg_catalog.quote_ident(n.nspname::pg_catalog.text) OPERATOR(pg_catalog.||) '.'
         OPERATOR(pg_catalog.||) pg_catalog.quote_ident(p.proname::pg_catalog.text)
         OPERATOR(pg_catalog.||) '(' OPERATOR(pg_catalog.||)
         pg_catalog.pg_get_function_identity_arguments(p.oid) OPERATOR(pg_catalog.||) ')',
       pg_catalog.quote_ident(n.nspname::pg_catalog.text) OPERATOR(pg_catalog.||) '.'
         OPERATOR(pg_catalog.||) pg_catalog.quote_ident(p.proname::pg_catalog.text)
         OPERATOR(pg_catalog.||) '(' OPERATOR(pg_catalog.||)
         pg_catalog.oidvectortypes(p.proargtypes) OPERATOR(pg_catalog.||) ')',
       pg_catalog.quote_ident(n.nspname::pg_catalog.text),
       pg_catalog.quote_ident(p.proname::pg_catalog.text)
FROM pg_catalog.pg_proc p
JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
WHERE p.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
  AND {_BUILT_BY.format(q="p")} AND {_REACHED}
ORDER BY 1
"""

#: The database's objects that call a C or ``internal`` routine running SQL given as text
#: (:data:`_BUILT` on its symbol: ``query_to_xml``, ``ts_rewrite``'s ``tsquery_rewrite_query``,
#: a builtin's too) where no routine's text shows it: an operator's or a cast's function, an
#: aggregate's, and any stored expression tree (a view's, a domain's ``CHECK``, a default, an
#: index...). ``CREATE OPERATOR #~# (..., FUNCTION = pg_catalog.ts_rewrite)``, an aggregate
#: over it, a view over ``query_to_xml(c.q, ...)`` of a table's rows, ran ``set_config`` held
#: as data around a read, and no count saw it (the sixty-third re-probe's A, B, B2).
RUNNERS_SQL = rf"""
WITH r AS (
  SELECT p.oid FROM pg_catalog.pg_proc p
  JOIN pg_catalog.pg_language l ON l.oid OPERATOR(pg_catalog.=) p.prolang
  WHERE l.lanname OPERATOR(pg_catalog.=) ANY (ARRAY['internal', 'c']::pg_catalog.name[])
    AND p.prosrc OPERATOR(pg_catalog.~*) '{_BUILT}'
)
SELECT 'operator ' OPERATOR(pg_catalog.||) o.oid::pg_catalog.regoperator::pg_catalog.text
FROM pg_catalog.pg_operator o
WHERE o.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
  AND ARRAY[o.oprcode, o.oprrest, o.oprjoin]::pg_catalog.oid[] OPERATOR(pg_catalog.&&)
      ARRAY(SELECT r.oid FROM r)
UNION ALL
SELECT 'aggregate ' OPERATOR(pg_catalog.||) g.aggfnoid::pg_catalog.regprocedure::pg_catalog.text
FROM pg_catalog.pg_aggregate g
WHERE g.aggfnoid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
  AND ARRAY[g.aggtransfn, g.aggfinalfn, g.aggcombinefn, g.aggserialfn, g.aggdeserialfn,
            g.aggmtransfn, g.aggminvtransfn, g.aggmfinalfn]::pg_catalog.oid[]
      OPERATOR(pg_catalog.&&) ARRAY(SELECT r.oid FROM r)
UNION ALL
SELECT 'cast ' OPERATOR(pg_catalog.||) pg_catalog.pg_describe_object(
         'pg_catalog.pg_cast'::pg_catalog.regclass, c.oid, 0)
FROM pg_catalog.pg_cast c
WHERE c.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
  AND c.castfunc OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT r.oid FROM r))
UNION ALL
SELECT pg_catalog.pg_describe_object(s.cls, s.obj, 0)
FROM ({TREES}) AS s CROSS JOIN r
WHERE s.obj OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
  AND s.tree OPERATOR(pg_catalog.~) (':funcid ' OPERATOR(pg_catalog.||)
      r.oid::pg_catalog.text OPERATOR(pg_catalog.||) '\M')
ORDER BY 1
LIMIT 1
"""

#: (kind, name, how many of that kind) for every route the current role can take; the
#: names are cut to five a kind. The routines are those the role, or a role it may become,
#: may EXECUTE (what an operator, cast or policy calls is checked against the caller too);
#: a foreign table is one whatever its grants (a view of its owner or a parent table
#: reaches it). An aggregate is ``internal`` in the catalog; its own routines are rows of
#: their own.
ESCAPES_SQL = f"""
SELECT kind, name, count(*) OVER (PARTITION BY kind) FROM (
  SELECT 1 AS o, 'definer' AS kind, p.oid::pg_catalog.regprocedure::pg_catalog.text AS name
  FROM pg_catalog.pg_proc p
  WHERE p.prosecdef AND NOT pg_catalog.pg_has_role(current_user, p.proowner, 'USAGE')
    AND {_REACHED}
  UNION ALL
  SELECT 2, 'unsandboxed', p.oid::pg_catalog.regprocedure::pg_catalog.text
    OPERATOR(pg_catalog.||) ' (LANGUAGE ' OPERATOR(pg_catalog.||) l.lanname::pg_catalog.text
    OPERATOR(pg_catalog.||) ')'
  FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_language l ON l.oid OPERATOR(pg_catalog.=)
    p.prolang
  WHERE (NOT l.lanpltrusted
         OR l.lanname OPERATOR(pg_catalog.=) ANY (ARRAY['c', 'internal']::pg_catalog.name[]))
    AND {_REACHED}
    AND p.prokind OPERATOR(pg_catalog.<>) 'a' AND NOT {TYPE_MEMBER}
    AND p.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
    AND (l.lanname OPERATOR(pg_catalog.<>) ALL (ARRAY['c', 'internal']::pg_catalog.name[])
         OR NOT {_EXTENSION_MEMBER}
         OR p.probin OPERATOR(pg_catalog.=) ANY (ARRAY[{", ".join(_LIBRARIES)}]))
    AND p.probin IS DISTINCT FROM '$libdir/dblink'
  UNION ALL
  SELECT 3, 'dblink', p.oid::pg_catalog.regprocedure::pg_catalog.text
  FROM pg_catalog.pg_proc p
  WHERE (p.proname OPERATOR(pg_catalog.~~) 'dblink%'
         OR p.prosrc OPERATOR(pg_catalog.~~) 'dblink%')
    AND {MAY_EXECUTE}
  UNION ALL
  SELECT 4, 'file', p.oid::pg_catalog.regprocedure::pg_catalog.text
  FROM pg_catalog.pg_proc p
  WHERE p.proname OPERATOR(pg_catalog.=) ANY (ARRAY[{", ".join(_FILE_BUILTINS)}]::pg_catalog.name[])
    AND {MAY_EXECUTE}
  UNION ALL
  SELECT 4, 'granted', p.oid::pg_catalog.regprocedure::pg_catalog.text
  FROM pg_catalog.pg_proc p
  WHERE p.oid OPERATOR(pg_catalog.<) 16384::pg_catalog.oid AND {_KEPT_FROM_PUBLIC}
    AND {MAY_EXECUTE}
    AND p.proname OPERATOR(pg_catalog.<>) ALL (ARRAY[{", ".join(_FILE_BUILTINS)}]::pg_catalog.name[])
  UNION ALL
  SELECT 5, 'foreign', c.oid::pg_catalog.regclass::pg_catalog.text
  FROM pg_catalog.pg_class c WHERE c.relkind OPERATOR(pg_catalog.=) 'f'
  UNION ALL
  SELECT 6, 'tampered', 'LANGUAGE ' OPERATOR(pg_catalog.||) l.lanname::pg_catalog.text
    OPERATOR(pg_catalog.||) ' marked trusted'
  FROM pg_catalog.pg_language l
  WHERE l.lanpltrusted
    AND l.lanname OPERATOR(pg_catalog.=) ANY (ARRAY['c', 'internal']::pg_catalog.name[])
  UNION ALL
  SELECT 6, 'tampered', 'builtin ' OPERATOR(pg_catalog.||)
    p.oid::pg_catalog.regprocedure::pg_catalog.text OPERATOR(pg_catalog.||) CASE
      WHEN p.prosecdef THEN ' marked SECURITY DEFINER after initdb, runs as its owner '
        OPERATOR(pg_catalog.||) pg_catalog.pg_get_userbyid(p.proowner)::pg_catalog.text
      WHEN p.proconfig IS NOT NULL THEN ' given SET options after initdb ('
        OPERATOR(pg_catalog.||) pg_catalog.array_to_string(p.proconfig, ', ')
        OPERATOR(pg_catalog.||) ')'
      ELSE ' in LANGUAGE ' OPERATOR(pg_catalog.||) l.lanname::pg_catalog.text
        OPERATOR(pg_catalog.||) ', its row written after initdb' END
  FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_language l ON l.oid OPERATOR(pg_catalog.=)
    p.prolang
  WHERE p.oid OPERATOR(pg_catalog.<) 16384::pg_catalog.oid
    AND (p.prosecdef OR p.proconfig IS NOT NULL
         OR (l.lanname OPERATOR(pg_catalog.<>) ALL
               (ARRAY['c', 'internal']::pg_catalog.name[]) AND {_AFTER_INITDB.format(x='p')}))
  UNION ALL
  SELECT 6, 'tampered', 'cast ' OPERATOR(pg_catalog.||) c.castsource::pg_catalog.regtype::
    pg_catalog.text OPERATOR(pg_catalog.||) ' -> ' OPERATOR(pg_catalog.||)
    c.casttarget::pg_catalog.regtype::pg_catalog.text
  FROM pg_catalog.pg_cast c
  WHERE c.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
    AND c.castsource OPERATOR(pg_catalog.<) 16384::pg_catalog.oid
    AND c.casttarget OPERATOR(pg_catalog.<) 16384::pg_catalog.oid
  UNION ALL
  SELECT 6, 'tampered', 'system view ' OPERATOR(pg_catalog.||)
    r.ev_class::pg_catalog.regclass::pg_catalog.text
  FROM pg_catalog.pg_rewrite r
  WHERE r.oid OPERATOR(pg_catalog.<) 16384::pg_catalog.oid AND {_AFTER_INITDB.format(x='r')}
  UNION ALL {TAMPERED_SQL}
  UNION ALL
  SELECT 7, 'signalling', p.oid::pg_catalog.regprocedure::pg_catalog.text
  FROM pg_catalog.pg_proc p
  WHERE p.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
    AND ({TEXT.format(q='p')} OPERATOR(pg_catalog.~*) '{_SIGNALS}'
         OR (p.oid OPERATOR(pg_catalog.=) ANY (ARRAY{_UNROUTED})
             AND ({_BUILT_BY.format(q='p')} OR EXISTS (
               SELECT 1 FROM pg_catalog.pg_proc q
               WHERE q.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid
                 AND {_BUILT_BY.format(q='q')}
                 AND pg_catalog.strpos(pg_catalog.lower({TEXT.format(q='p')}),
                                       pg_catalog.lower(q.proname::pg_catalog.text))
                     OPERATOR(pg_catalog.>) 0))))
    AND {_MAY_SIGNAL}
  UNION ALL
  SELECT 7, 'signalling', x.what FROM ({EXPRESSIONS}) x
  WHERE x.t OPERATOR(pg_catalog.~*) '{_SIGNALS}' AND {_MAY_SIGNAL}
  UNION ALL
  SELECT 7, 'signalling', s.proname::pg_catalog.text OPERATOR(pg_catalog.||) '() as the '
    OPERATOR(pg_catalog.||) 'function of an operator, a cast, an aggregate or a type'
  FROM pg_catalog.pg_proc s
  WHERE s.oid OPERATOR(pg_catalog.<) 16384::pg_catalog.oid
    AND s.proname OPERATOR(pg_catalog.~) '^{_SIGNALS}$'
    AND s.oid OPERATOR(pg_catalog.=) ANY (ARRAY{CALLED_UNCHECKED})
    AND {_MAY_SIGNAL}
) e ORDER BY o, name
"""

#: The kinds of :data:`ESCAPES_SQL` whose every object is a routine a ``REVOKE EXECUTE ...
#: FROM PUBLIC`` takes back (a foreign table, a catalog changed in place are not): the
#: ``enforce`` copy revokes these (agents/pgplant.py).
REVOCABLE_KINDS = ("definer", "unsandboxed", "dblink", "file", "granted")

_PHRASES = {
    "definer": "can execute routines that run as another role (SECURITY DEFINER)",
    "unsandboxed": "can execute routines of the database in a language the server does not "
                   "sandbox (a builtin's second name, or code of its own)",
    "dblink": "can execute dblink (statements on a connection of its own, outside the "
              "read-only transaction)",
    "file": "can execute functions that read or write server files",
    "granted": "can execute builtins granted EXECUTE after initdb, which revoked it from "
               "PUBLIC (server files and settings, other sessions, the server itself)",
    "foreign": "reaches foreign tables (server files, programs or other servers, through "
               "the table, a view or a parent table)",
    "tampered": "is checked against a catalog changed in place since initdb (no check made "
                "through it can be trusted)",
    "signalling": "can signal the other sessions of its own role, and routines of the "
                  "database call the signal functions (a cast, an index or a view runs them "
                  "unnamed; REVOKE EXECUTE on pg_cancel_backend and pg_terminate_backend FROM "
                  "PUBLIC)",
}


def escapes_found(conn: Any, run: Any) -> list[str]:
    """Each route of :data:`ESCAPES_SQL` the role of ``conn`` can take, as a phrase naming
    up to five of its objects (``run(conn, sql)`` returns the rows: the caller's driver
    spelling); [] when none."""
    found: dict[str, tuple[list[str], int]] = {}
    for kind, name, count in run(conn, ESCAPES_SQL):
        names, _ = found.setdefault(str(kind), ([], int(count)))
        if len(names) < 5:
            names.append(str(name))
    return [f"{_PHRASES[kind]}: {', '.join(names)}"
            + (f" and {count - len(names)} more" if count > len(names) else "")
            for kind, (names, count) in found.items()]
