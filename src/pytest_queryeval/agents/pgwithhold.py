"""What ``enforce: true`` protects, withheld by the server from the agent's role on a PostgreSQL
copy (:mod:`.pgplant` makes the copy and the role).

Why the barriers go past the target itself: PostgreSQL checks the grants and applies the
row-level security policies of the relation a query names, not of the rows' own table, and a
view reads its tables with its owner's rights. The forty-fifth re-probe read every protected
thing around a barrier placed on the target only: a column granted to ``PUBLIC`` (N18), another
tenant's rows through a view or a materialized view (N17), through a partition's parent or a
parent's partition (N16). So:

- a privilege is revoked from ``PUBLIC`` and every role the agent's role belongs to as well;
- a ``table:`` or ``column:`` target's privilege is revoked on every ancestor and descendant
  of the table too (``pg_inherits``, both ways: a parent's scan returns its children's rows
  under the parent's grants, and a partition has grants of its own);
- a ``where:`` target's restrictive policy is put on every ancestor and descendant too,
  naming the hidden rows by their physical table and ``ctid`` (``tableoid``), so a scan of
  any of them hides the same rows and nothing else;
- with a ``where:`` target, every view of the copy reads as its caller
  (``security_invoker``, PostgreSQL 15 and later), every materialized view is revoked (its
  rows are stored, whatever the policy), and the database's ``LEAKPROOF`` routines are made
  ``NOT LEAKPROOF`` (the planner may call a leakproof routine on a row before the policy's
  check); before 15 a view reaching a hidden table is revoked too.

No ``FORCE ROW LEVEL SECURITY``: the policies are the agent's role's only, so forcing them on
the owner would hide nothing more (a view reading as its caller no longer lends the agent the
owner's exemption), and the gold, run as the datasource's role on the same copy, must see
every row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..sources.pgtamper import AFTER_INITDB
from .canaries import Target

_FAMILY_SQL = """
WITH RECURSIVE up(oid) AS (
  SELECT %(oid)s::oid UNION SELECT i.inhparent FROM pg_inherits i JOIN up ON i.inhrelid = up.oid),
down(oid) AS (
  SELECT %(oid)s::oid UNION SELECT i.inhrelid FROM pg_inherits i JOIN down ON i.inhparent = down.oid)
SELECT c.oid, format('%%I.%%I', n.nspname, c.relname) FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.oid IN (SELECT oid FROM up UNION SELECT oid FROM down) ORDER BY 1
"""
_REACH_SQL = """
WITH RECURSIVE reach(oid) AS (
  SELECT unnest(%(hidden)s::oid[])
  UNION
  SELECT r.ev_class FROM pg_rewrite r
  JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
  JOIN reach ON d.refclassid = 'pg_class'::regclass AND d.refobjid = reach.oid)
SELECT c.relkind::text, format('%%I.%%I', n.nspname, c.relname) FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE (c.relkind = 'v' AND c.oid IN (SELECT oid FROM reach))
   OR (c.relkind = 'm' AND c.oid >= 16384)
ORDER BY 2
"""
#: Every view the database made (oid 16384 and up), in whatever schema: a superuser's view
#: in ``information_schema`` read with its owner's rights, past the policy (69a W3).
_VIEWS_SQL = """
SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'v' AND c.oid >= 16384 ORDER BY 1
"""
#: The routines the database marked ``LEAKPROOF``: the planner may run one on a row before a
#: restrictive policy's check, and one raising its argument gave the agent a hidden
#: tenant's value in its error (69a W4); a builtin's row rewritten after ``initdb`` too
#: (``ALTER FUNCTION pg_catalog.current_setting(text) LEAKPROOF`` gave a hidden canary in
#: ``unrecognized configuration parameter``: the seventieth re-probe's W5).
_LEAKPROOF_SQL = f"""
SELECT p.oid::regprocedure::text FROM pg_proc p
WHERE p.proleakproof AND p.prokind = 'f'
  AND (p.oid >= 16384 OR {AFTER_INITDB.format(x="p")})
ORDER BY 1
"""


#: The database's event triggers: one on ``ddl_command_end`` ran after each of the
#: withholding's own statements and undid it (``ALTER TABLE ... DISABLE ROW LEVEL
#: SECURITY`` after ``CREATE POLICY``, ``GRANT ... TO PUBLIC`` after ``REVOKE``: the seventieth
#: re-probe's E1).
_EVENT_TRIGGERS_SQL = """
SELECT format('ALTER EVENT TRIGGER %I DISABLE', evtname) FROM pg_event_trigger
WHERE evtenabled <> 'D' ORDER BY 1
"""


def quiet(conn: Any) -> None:
    """The copy's event triggers disabled before the planting's own DDL (``COMMENT ON``,
    ``GRANT``, ``REVOKE``, ``CREATE POLICY``): the copy is the run's own, and what the
    database runs on DDL is no part of what the agent reads. What the datasource's role may
    not disable (another role's event trigger) is the planting's error."""
    for (statement,) in _catalog_rows(conn, _EVENT_TRIGGERS_SQL):
        conn.execute(statement)


#: What of the database runs on an update of a relation of ``family``: its triggers and
#: rules, and the routines of the database (oid 16384 and up) its checks, its columns'
#: domains' checks, its generated columns, its index expressions and its statistics objects
#: call. Each ran on the planting's updates, or on the ``ANALYZE`` after them, with the
#: original values in sight, and kept them where the agent reads: at ``COMMIT`` (a deferred
#: constraint trigger), in the catalogs (``COMMENT ON``, ``CREATE VIEW``, ``ALTER DATABASE
#: ... SET``), through a second connection (``dblink_exec``), or in another column of the
#: row (``NEW.prev := OLD.last_name``), none of which a count of this backend's writes sees
#: (the seventy-second re-probe's D1, M2, B1, B2, I1, K1 to K4, R1, A1).
_LOGIC_SQL = """
WITH RECURSIVE fam(oid) AS (SELECT unnest(%(family)s::oid[])),
doms(oid) AS (
  SELECT a.atttypid FROM pg_attribute a JOIN fam ON a.attrelid = fam.oid
  WHERE a.attnum > 0 AND NOT a.attisdropped
  UNION SELECT t.typbasetype FROM pg_type t JOIN doms ON t.oid = doms.oid
  WHERE t.typtype = 'd'),
parts(classid, objid) AS (
  SELECT 'pg_constraint'::regclass::oid, c.oid FROM pg_constraint c
  WHERE c.conrelid IN (SELECT oid FROM fam) OR c.contypid IN (SELECT oid FROM doms)
  UNION ALL SELECT 'pg_class'::regclass::oid, i.indexrelid FROM pg_index i
  WHERE i.indrelid IN (SELECT oid FROM fam)
  UNION ALL SELECT 'pg_attrdef'::regclass::oid, d.oid FROM pg_attrdef d
  WHERE d.adrelid IN (SELECT oid FROM fam)
  UNION ALL SELECT 'pg_statistic_ext'::regclass::oid, x.oid FROM pg_statistic_ext x
  WHERE x.stxrelid IN (SELECT oid FROM fam))
SELECT format('trigger %%s on %%s', t.tgname, t.tgrelid::regclass) FROM pg_trigger t
WHERE NOT t.tgisinternal AND t.tgenabled <> 'D' AND t.tgrelid IN (SELECT oid FROM fam)
UNION
SELECT format('rule %%s on %%s', r.rulename, r.ev_class::regclass) FROM pg_rewrite r
WHERE r.ev_type <> '1' AND r.ev_enabled <> 'D' AND r.ev_class IN (SELECT oid FROM fam)
UNION
SELECT format('routine %%s', p.oid::regprocedure) FROM pg_depend d
JOIN parts ON parts.classid = d.classid AND parts.objid = d.objid
JOIN pg_proc p ON d.refclassid = 'pg_proc'::regclass AND d.refobjid = p.oid
WHERE p.oid >= 16384
ORDER BY 1
"""


def refuse_logic(conn: Any, tables: Sequence[str]) -> None:
    """Raise :class:`~.canaries.PlantError` when the database would run logic of its own on
    the planting's updates of ``tables`` (qualified and quoted) or their inheritance
    families (:data:`_LOGIC_SQL` says what and why): nothing is planted, and the error names
    what runs. Disabling it instead left what a trigger keeps in step holding the originals
    (71a K1), and counting what was written missed the catalogs, other backends and
    ``COMMIT`` (72a)."""
    from .canaries import PlantError

    family: set[int] = set()
    for qualified in tables:
        (oid,) = conn.execute("SELECT %s::pg_catalog.regclass::pg_catalog.oid",
                              [qualified]).fetchone()
        family.update(int(o) for o, _ in _catalog_rows(conn, _FAMILY_SQL, {"oid": int(oid)}))
    found = [str(r[0]) for r in _catalog_rows(conn, _LOGIC_SQL, {"family": sorted(family)})]
    if found:
        raise PlantError(
            "the database runs logic of its own on an update of the protected tables ("
            + ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
            + "): it would see the original values as the canaries are planted and could keep "
            "them where the agent reads, so nothing is planted (drop or disable it in the "
            "suite's database, or protect other data)")


#: What this backend wrote and has not reported yet, by relation: the counts of earlier
#: transactions too (they are flushed between transactions at most once a second), so a
#: transaction's own writes are the difference across it. Nothing is flushed inside a
#: transaction block.
_WRITTEN_SQL = """
SELECT relid, relid::regclass::text, n_tup_ins, n_tup_upd, n_tup_del
FROM pg_stat_xact_user_tables WHERE n_tup_ins + n_tup_upd + n_tup_del > 0
"""


def writes(conn: Any) -> dict[int, tuple[str, int, int, int]]:
    """The rows each relation was written so far, by this backend, unreported (inserted,
    updated, deleted), with its name: read at a transaction's start for :func:`wrote_only`,
    and by it at the end. Each reading first makes the transaction's deferred constraints
    immediate, which fires those still pending, so that a check deferred to ``COMMIT``
    (72a D1), or one a trigger deferred again on the way, runs before the count."""
    conn.execute("SET CONSTRAINTS ALL IMMEDIATE")
    return {int(oid): (str(name), int(ins), int(upd), int(dele))
            for oid, name, ins, upd, dele in _catalog_rows(conn, _WRITTEN_SQL)}


def wrote_only(conn: Any, before: Mapping[int, tuple[str, int, int, int]],
               updated: Mapping[int, int]) -> None:
    """Raise :class:`~.canaries.PlantError` unless the current transaction, since ``before``
    (:func:`writes`), updated exactly ``updated`` (relation oid -> rows) and wrote nothing
    else: the database's triggers, rules, foreign-key cascades and the routines of its
    checks run on the planting's updates, with the original values in sight, and kept them
    where the agent reads (an audit trigger, a check's routine copying the table, a cascade
    into a table whose policy named rows by ctid: the seventieth re-probe's A1, T1, the
    seventy-first's M1, C1, X1). Disabling the triggers instead left what they keep in step
    stale, the originals (71a K1)."""
    from .canaries import PlantError

    odd = []
    for oid, (name, ins, upd, dele) in sorted(writes(conn).items()):
        _, ins0, upd0, dele0 = before.get(oid, (name, 0, 0, 0))
        done = (ins - ins0, upd - upd0, dele - dele0)
        if done != (0, updated.get(oid, 0), 0):
            odd.append(f"{name} ({done[0]} inserted, {done[1]} updated, {done[2]} deleted)")
    if odd:
        raise PlantError(
            "the planting's updates wrote more than the protected cells: " + "; ".join(odd[:5])
            + ". A trigger, a rule, a foreign-key cascade or a check's routine of the database "
            "ran on them and may keep the original values where the agent reads, so nothing "
            "is planted (disable it in the suite's database, or protect other data)")


def _catalog_rows(conn: Any, sql: str,
                  params: Mapping[str, Any] | Sequence[Any] | None = None) -> list[Any]:
    """``sql``'s rows read with ``pg_catalog`` alone on the path: a database whose path puts
    ``public`` first held a ``public.unnest(oid[])`` returning nothing, or a ``public.format(text,
    name, name)`` naming a decoy, closer than the builtins these reads call, and a materialized
    view or a table under a ``where:`` target was never withheld (the sixty-eighth re-probe's W1
    to W3). The path is set back after."""
    (path,) = conn.execute("SELECT pg_catalog.current_setting('search_path')").fetchone()
    conn.execute("SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', false)")
    try:
        return list(conn.execute(sql, params).fetchall())
    finally:
        conn.execute("SELECT pg_catalog.set_config('search_path', %s, false)", [path])


def ident(name: str) -> str:
    """``name`` quoted as a PostgreSQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def withhold(conn: Any, role: str, targets: Sequence[Target], tables: Sequence[str],
             rows: Mapping[str, Mapping[int, set[str]]]) -> None:
    """What ``targets`` protect, withheld from ``role``: a table's grant revoked, a column
    left out of its table's column grants, a tenant's rows hidden by a restrictive row-level
    security policy on the rows the ``where:`` target selected before planting (``rows``:
    qualified table -> physical table's oid -> ctids; the filter may read a column that now
    holds canaries), under a permissive policy that lets the rest through; each on the
    target's whole inheritance family (N16), revoked from ``PUBLIC`` too (N18), and the
    copy's views made to read as the agent (N17). ``tables``: each target's table,
    qualified and quoted. The module's docstring says why."""
    grantees = _grantees(conn, role)
    denied: dict[str, set[str]] = {}
    hidden: dict[int, str] = {}
    for n, (target, qualified) in enumerate(zip(targets, tables, strict=True)):
        (oid,) = conn.execute("SELECT %s::pg_catalog.regclass::pg_catalog.oid",
                              [qualified]).fetchone()
        family = [(int(o), str(name)) for o, name in
                  _catalog_rows(conn, _FAMILY_SQL, {"oid": int(oid)})]
        if target.where:
            _hide(conn, role, family, n, rows.get(qualified, {}), hidden)
            continue
        for _, name in family:
            denied.setdefault(name, set()).add("*" if target.column is None
                                               else target.column.lower())
    revoked = {name: _revoke(conn, role, grantees, name, gone) for name, gone in denied.items()}
    if hidden:
        _views(conn, grantees, sorted(hidden))
    _verify(conn, role, revoked, sorted(hidden))


#: What the agent's role may still read of a relation: a row of each check that failed.
_HELD_SQL = """
SELECT c.oid::regclass::text, 'row security is off' FROM pg_class c
WHERE c.oid = ANY (%(hidden)s::oid[]) AND NOT c.relrowsecurity
UNION ALL
SELECT c.oid::regclass::text, 'no tenant policy' FROM pg_class c
WHERE c.oid = ANY (%(hidden)s::oid[]) AND NOT EXISTS (
  SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid AND NOT p.polpermissive)
UNION ALL
SELECT t.name, 'readable' FROM unnest(%(tables)s::text[]) AS t(name)
WHERE has_any_column_privilege(%(role)s, t.name::regclass, 'SELECT')
UNION ALL
SELECT c.name || '.' || c.col, 'readable' FROM unnest(%(rels)s::text[], %(cols)s::text[])
  AS c(name, col)
WHERE has_column_privilege(%(role)s, c.name::regclass, c.col, 'SELECT')
ORDER BY 1
"""


def _verify(conn: Any, role: str, denied: Mapping[str, set[str]], hidden: Sequence[int]
            ) -> None:
    """Raise :class:`~.canaries.PlantError` unless each barrier the withholding made holds
    now: what else runs in the copy may undo one (an event trigger undid each, the
    seventieth re-probe's E1; those are disabled first, :func:`quiet`), and a case must
    never run against a barrier that is not there."""
    from .canaries import PlantError

    whole = sorted(name for name, gone in denied.items() if "*" in gone)
    cols = [(name, col) for name, gone in sorted(denied.items()) if "*" not in gone
            for col in sorted(gone)]
    failed = _catalog_rows(conn, _HELD_SQL, {
        "hidden": list(hidden), "tables": whole, "role": role,
        "rels": [n for n, _ in cols], "cols": [c for _, c in cols]})
    if failed:
        raise PlantError("the withholding does not hold in the copy: " + "; ".join(
            f"{name}: {why}" for name, why in failed[:5]))


def _hide(conn: Any, role: str, family: Sequence[tuple[int, str]], n: int,
          rows: Mapping[int, set[str]], hidden: dict[int, str]) -> None:
    """The ``n``-th target's ``rows`` (physical table's oid -> ctids) hidden from ``role`` on
    every relation of ``family``: PostgreSQL applies only the named relation's policies, so a
    policy on a partition alone let its parent's scan serve its rows (the forty-fifth
    re-probe's N16), and one on a parent let the partition's. A row is named by its physical
    table and ctid, the same in a scan of any relation of the family."""

    # the builtins named: an unqualified ``=`` is resolved when the policy is made, and a
    # ``public.=(oid, integer)`` giving false, an exact match where the builtin is
    # ``oid = oid``, made the policy hide nothing (69a W1)
    parts = [f"(tableoid OPERATOR(pg_catalog.=) {int(oid)}::pg_catalog.oid AND ctid "
             "OPERATOR(pg_catalog.=) ANY ('{" + ",".join(f'"{c}"' for c in sorted(ctids))
             + "}'::pg_catalog.tid[]))"
             for oid, ctids in sorted(rows.items()) if ctids]
    cond = " OR ".join(parts) or "false"
    for oid, name in family:
        if oid not in hidden:
            hidden[oid] = name
            conn.execute(f"ALTER TABLE {name} ENABLE ROW LEVEL SECURITY")
            conn.execute(f"CREATE POLICY qe_rows ON {name} FOR SELECT TO {ident(role)} "
                         "USING (true)")
        conn.execute(f"CREATE POLICY qe_tenant_{n} ON {name} AS RESTRICTIVE FOR SELECT TO "
                     f"{ident(role)} USING (NOT ({cond}))")


#: A relation's stored generated columns computed from any of the columns named: a
#: ``reverse(last_name)`` column stayed granted under a ``column: last_name`` target and
#: gave every protected value (the seventieth re-probe's G1).
_GENERATED_SQL = """
SELECT DISTINCT a.attname FROM pg_attribute a
JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
JOIN pg_depend dep ON dep.classid = 'pg_attrdef'::regclass AND dep.objid = d.oid
  AND dep.refclassid = 'pg_class'::regclass AND dep.refobjid = a.attrelid
JOIN pg_attribute s ON s.attrelid = dep.refobjid AND s.attnum = dep.refobjsubid
WHERE a.attrelid = %s::regclass AND a.attgenerated <> '' AND lower(s.attname) = ANY (%s::text[])
"""


def _revoke(conn: Any, role: str, grantees: str, name: str, gone: set[str]) -> set[str]:
    """``SELECT`` on ``name`` revoked from ``grantees``; with only columns ``gone`` (no
    ``*``), the table's other columns granted to ``role`` again, but for the generated
    columns computed from those. A relation of the family without the column (an
    inheritance parent of the child that added it) keeps its grant. What is withheld: ``*``,
    or the columns as the catalog names them (none for such a parent)."""

    cols = [str(c) for (c,) in _catalog_rows(
        conn, "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
        "AND NOT attisdropped ORDER BY attnum", [name])]
    if "*" not in gone:
        gone = gone | {str(c).lower() for (c,) in _catalog_rows(
            conn, _GENERATED_SQL, [name, sorted(gone)])}
    if "*" not in gone and not any(c.lower() in gone for c in cols):
        return set()
    conn.execute(f"REVOKE SELECT ON {name} FROM {grantees}")  # its column grants too
    keep = [c for c in cols if c.lower() not in gone] if "*" not in gone else []
    if keep:
        conn.execute(f"GRANT SELECT ({', '.join(ident(c) for c in keep)}) ON {name} TO "
                     f"{ident(role)}")
    return {"*"} if "*" in gone else {c for c in cols if c.lower() in gone}


def _views(conn: Any, grantees: str, hidden: Sequence[int]) -> None:
    """The copy's views read as their caller, so the tenant policy applies to the agent
    through them (a view reads with its owner's rights, and the owner is exempt from the
    policy: the forty-fifth re-probe's N17 read the other tenant's rows through one), in
    every schema (69a W3: one in ``information_schema``); every materialized view of the
    database revoked, since its rows are stored and no policy hides them, and what it was
    made from cannot always be told (69a W2: ``query_to_xml`` over the table's name in a
    string left no dependency); the database's ``LEAKPROOF`` routines made ``NOT
    LEAKPROOF``, so the planner checks the policy before it calls one (69a W4). Before
    PostgreSQL 15 (no ``security_invoker``) a view reaching a hidden relation is revoked
    too. What the datasource's role may not alter is the planting's error."""
    invoker = int(conn.info.server_version) >= 150000
    if invoker:
        for (name,) in _catalog_rows(conn, _VIEWS_SQL):
            conn.execute(f"ALTER VIEW {name} SET (security_invoker = true)")
    for kind, name in _catalog_rows(conn, _REACH_SQL, {"hidden": list(hidden)}):
        if kind == "m" or not invoker:
            conn.execute(f"REVOKE SELECT ON {name} FROM {grantees}")
    for (routine,) in _catalog_rows(conn, _LEAKPROOF_SQL):
        conn.execute(f"ALTER FUNCTION {routine} NOT LEAKPROOF")


def _grantees(conn: Any, role: str) -> str:
    """``role``, ``PUBLIC`` and every role ``role`` is a member of (directly or not), as a
    ``REVOKE``'s list: a privilege any of them holds is the agent's too (N18)."""

    rows = _catalog_rows(
        conn, "WITH RECURSIVE up(oid) AS (SELECT oid FROM pg_roles WHERE rolname = %s UNION "
        "SELECT m.roleid FROM pg_auth_members m JOIN up ON m.member = up.oid) "
        "SELECT r.rolname FROM up JOIN pg_roles r ON r.oid = up.oid WHERE r.rolname <> %s "
        "ORDER BY 1", [role, role])
    return ", ".join([ident(role), "PUBLIC", *(ident(str(r[0])) for r in rows)])
