"""The Spider SQL grammar: a recursive-descent reimplementation of taoyds/spider
``process_sql.py`` (Apache-2.0), written from its documented semantics.

Why not a general SQL parser: the official numbers depend on this grammar's exact coverage and
quirks (aliases scanned once over the whole query so a subquery's ``T1`` rebinds the outer one;
trailing tokens ignored; ``IS NULL`` unparsable; FROM resolved before SELECT; one set operation
per level). A prediction the official parser rejects must be rejected here too, or exact-match
and partial scores drift from every published Spider figure.

The output is the evaluator's own structure (tuples, lists and dicts compared with ``==``):

``col_unit = (agg_id, col_id, is_distinct)``, ``val_unit = (unit_op, col_unit1, col_unit2)``,
``cond_unit = (not_op, op_id, val_unit, val1, val2)``, ``condition = [cond, 'and'|'or', ...]``,
``sql = {select: (distinct, [(agg_id, val_unit)]), from: {table_units, conds}, where, groupBy,
orderBy: [] | (dir, [val_unit]), having, limit, intersect, except, union}``.

With ``schema=None`` names are not resolved (every name is accepted); the structure, and so
the hardness, is the same as with the schema for any query that parses against it.

``strict=True`` (schema-free) accepts only the part of the grammar whose dict loses nothing of
the text: every token consumed, names that are plain identifiers and no SQL keyword (a whole
ORDER BY item may be a select item's position, read as a column as the lenient parse does),
commas between SELECT, GROUP BY and ORDER BY items, JOIN before every table but the first,
values that are exactly one column, number, quoted string or parenthesised subquery, NOT only
before IN, LIKE and BETWEEN, no IS / EXISTS, no parentheses around a query of the set
operations. The dict is the one the lenient parse gives, with two exceptions; otherwise
strictness only refuses.
A column value also ends at OR (the lenient scan drops the OR branch after one). And a table
alias without AS (``FROM track t JOIN genre g``, as real users' golds write it) is read as
``FROM track AS t`` where the word after it can only follow a table (JOIN, ON, a clause or
set-operation word, ``)``, the end): process_sql reads it as a second table, which a strict
parse refuses, so every such query would go to sqlglot. The bare alias is not mapped (the AS
scan is process_sql's, and names stay unresolved without a schema); the dict's shape, all that
:mod:`..sql_hardness` reads when it counts the seq2SQL criteria on it instead of parsing the
query again with sqlglot, is the one the AS form gives.

Why one module of this size: one method per ``process_sql`` function keeps the grammar
checkable against the reference side by side, and the strict checks sit in the same methods
(what a strict parse refuses is decided where that token is read); split, each half would
restate where the other stands in the token stream.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from ...sources.spider_tables import Schema
from .tokenize import TokenizeError, tokenize

CLAUSE_KEYWORDS = frozenset(
    ("select", "from", "where", "group", "order", "limit", "intersect", "union", "except"))
JOIN_KEYWORDS = frozenset(("join", "on", "as"))
WHERE_OPS = ("not", "between", "=", ">", "<", ">=", "<=", "!=", "in", "like", "is", "exists")
UNIT_OPS = ("none", "-", "+", "*", "/")
AGG_OPS = ("none", "max", "min", "count", "sum", "avg")
COND_OPS = ("and", "or")
SQL_OPS = ("intersect", "union", "except")
ORDER_OPS = ("desc", "asc")

_WHERE_OP_ID = {op: i for i, op in enumerate(WHERE_OPS)}
_UNIT_OP_ID = {op: i for i, op in enumerate(UNIT_OPS)}
_AGG_ID = {op: i for i, op in enumerate(AGG_OPS)}
_BETWEEN = _WHERE_OP_ID["between"]
_STOP_CLAUSE = CLAUSE_KEYWORDS | {")", ";"}
_STOP_COND = _STOP_CLAUSE | JOIN_KEYWORDS
_VALUE_END = CLAUSE_KEYWORDS | JOIN_KEYWORDS | {",", ")", "and"}

#: Words a strict parse refuses as a table, alias or column name: the grammar's own words and
#: the SQL keywords a general parser (sqlglot, for one) may read as syntax where a name stands.
#: tests/spider/test_sql_hardness_fast.py checks sqlglot's keywords against it (``anti``,
#: ``asof``, ``semi``: a JOIN's kind to sqlglot where a bare table alias stands).
STRICT_RESERVED = frozenset((
    *CLAUSE_KEYWORDS, *JOIN_KEYWORDS, *WHERE_OPS, *AGG_OPS, *COND_OPS, *ORDER_OPS,
    "all", "alter", "anti", "any", "asof", "by", "case", "cast", "collate", "connect_by_root",
    "create", "cross", "cube", "current_catalog", "current_date", "current_time",
    "current_timestamp", "current_user", "default", "describe", "distinct", "drop", "else",
    "end", "escape", "false", "fetch", "filter", "for", "full", "glob", "grant", "having", "if",
    "ilike", "inner", "insert", "interval", "into", "isnull", "lateral", "left", "localtime",
    "localtimestamp", "lock", "natural", "notnull", "null", "nulls", "offset", "outer", "over",
    "partition", "partitioned_by", "qualify", "regexp", "returning", "revoke", "right", "rlike",
    "rollback", "rollup", "semi", "session_user", "similar", "some", "straight_join",
    "tablesample", "then", "true",
    "uncache", "using", "values", "when", "window", "with", "xor",
))
_STRICT_NOT_OPS = frozenset((_WHERE_OP_ID["in"], _WHERE_OP_ID["like"], _BETWEEN))
_STRICT_REFUSED_OPS = frozenset((_WHERE_OP_ID["is"], _WHERE_OP_ID["exists"]))
_IDENT = re.compile(r"[a-z_][a-z0-9_]*")
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")
_DIGITS = re.compile(r"[0-9]+")
_SPLIT_OPERATOR = re.compile(r"[<>!]\s+=")
#: The words after which a bare word following a table can only be its alias (with ``)`` and
#: the end of the text); a comma is not one, as comma joins are refused.
_AFTER_TABLE = frozenset(
    ("join", "on", "where", "group", "order", "limit", "having", "intersect", "union", "except",
     ")"))
#: What may follow a position in ORDER BY (with the end of the text).
_AFTER_POSITION = frozenset((*ORDER_OPS, ",", "limit", "intersect", "union", "except", ")"))
#: A column value ends at OR too: the lenient scan runs to the next AND and drops an OR branch
#: (``ON a = b OR c = d`` reads as ``ON a = b``), which a strict parse keeps.
_STRICT_VALUE_END = _VALUE_END | {"or"}

SQL = dict[str, Any]
#: ``(agg_id, col_id, distinct)``; a rebuilt unit for comparison holds None for ``distinct``.
ColUnit = tuple[int, str, bool | None]
#: ``(unit_op, col_unit1, col_unit2)``; the second column only with an arithmetic operator.
ValUnit = tuple[int, ColUnit, ColUnit | None]


class SpiderParseError(ValueError):
    """The query is outside the Spider grammar (or not valid for the schema)."""


def empty_sql() -> SQL:
    """What the evaluator scores when a prediction does not parse."""
    return {"except": None, "from": {"conds": [], "table_units": []}, "groupBy": [],
            "having": [], "intersect": None, "limit": None, "orderBy": [],
            "select": [False, []], "union": None, "where": []}


@functools.lru_cache(maxsize=4096)
def _tokens(query: str) -> tuple[str, ...]:
    """:func:`tokenize`, once per text: a gold is parsed three times (its difficulty at
    collection, ``sql_hardness``'s strict parse, and against its schema), and tokenising was
    half of each parse."""
    return tuple(tokenize(query))


def parse_sql(query: str, schema: Schema | None, *, strict: bool = False) -> SQL:
    """Parse one query the way ``process_sql.get_sql`` does; raise :class:`SpiderParseError`.
    ``strict`` (with ``schema=None``): refuse what the dict would not represent whole."""
    try:
        toks = list(_tokens(query))  # a copy: the parse may drop a trailing ';'
    except TokenizeError as exc:
        raise SpiderParseError(str(exc)) from None
    if strict:
        if schema is not None:
            raise ValueError("a strict parse resolves no names")
        if _SPLIT_OPERATOR.search(query):  # the tokens merge '> =' into '>=': not the text
            raise SpiderParseError("strict: an operator split by spaces")
        while toks and toks[-1] == ";":  # a trailing ';' ends the statement, nothing else
            toks.pop()
        if ";" in toks:
            raise SpiderParseError("strict: ';' inside the query")
    try:
        return _Parser(toks, schema, strict).parse()
    except SpiderParseError:
        raise
    except IndexError:
        raise SpiderParseError("unexpected end of query") from None
    except (KeyError, ValueError, TypeError, RecursionError) as exc:
        raise SpiderParseError(f"{type(exc).__name__}: {exc}") from None


def _plain_name(tok: str) -> bool:
    """A strict parse's test of a name: a plain identifier, no keyword, no masked value."""
    return bool(_IDENT.fullmatch(tok)) and tok not in STRICT_RESERVED and "__val_" not in tok


def _fail(msg: str) -> SpiderParseError:
    return SpiderParseError(msg)


class _Parser:
    __slots__ = ("aliases", "n", "schema", "strict", "toks")

    def __init__(self, toks: list[str], schema: Schema | None, strict: bool = False) -> None:
        self.toks = toks
        self.n = len(toks)
        self.schema = schema
        self.strict = strict
        aliases: dict[str, str] = {}
        for i, tok in enumerate(toks):
            if tok == "as":
                aliases[toks[i + 1]] = toks[i - 1]
        if schema is not None:
            for table in schema.tables:
                if table in aliases:
                    raise _fail(f"Alias {table} has the same name in table")
                aliases[table] = table
        self.aliases = aliases

    # -- name resolution -----------------------------------------------------------------
    def table(self, tok: str) -> str:
        if self.schema is None:
            return self.aliases.get(tok, tok)
        try:
            return self.aliases[tok]
        except KeyError:
            raise _fail(f"unknown table or alias {tok!r}") from None

    def id_of(self, key: str) -> str:
        if self.schema is None:
            return "__all__" if key == "*" else f"__{key}__"
        try:
            return self.schema.id_map[key]
        except KeyError:
            raise _fail(f"unknown table or column {key!r}") from None

    def parse(self) -> SQL:
        idx, sql = self.sql(0)
        if self.strict and idx != self.n:
            raise _fail(f"strict: tokens left from {self.toks[idx]!r}")
        return sql

    def _name(self, tok: str) -> None:
        """Strict: a table, alias or column name is a plain identifier and no keyword."""
        if not _plain_name(tok):
            raise _fail(f"strict: {tok!r} is no plain name")

    # -- grammar (one method per process_sql function) --------------------------------------
    def col(self, idx: int, default_tables: list[str] | None) -> tuple[int, str]:
        tok = self.toks[idx]
        if self.strict:
            self._strict_col(idx)
        if tok == "*":
            return idx + 1, self.id_of(tok)
        if "." in tok:
            parts = tok.split(".")
            if len(parts) != 2:
                raise _fail(f"bad column reference {tok!r}")
            alias, col = parts
            return idx + 1, self.id_of(self.table(alias) + "." + col)
        if not default_tables:
            raise _fail("Default tables should not be None or empty")
        if self.schema is None:
            return idx + 1, f"__{self.table(default_tables[0])}.{tok}__"
        for alias in default_tables:
            table = self.table(alias)
            try:
                cols = self.schema.tables[table]
            except KeyError:
                raise _fail(f"unknown table {table!r}") from None
            if tok in cols:
                return idx + 1, self.id_of(table + "." + tok)
        raise _fail(f"unknown column {tok!r}")

    def _strict_col(self, idx: int) -> None:
        """``*`` only as ``SELECT *``, ``SELECT DISTINCT *`` or ``count(*)``; else a plain name
        or ``alias.name``."""
        toks = self.toks
        tok = toks[idx]
        if tok == "*":
            before = toks[max(idx - 2, 0):idx]
            if before[-1:] == ["select"] or before in (["select", "distinct"], ["count", "("]):
                return
            raise _fail("strict: '*' outside SELECT * and count(*)")
        parts = tok.split(".")
        if len(parts) > 2:
            raise _fail(f"bad column reference {tok!r}")
        for part in parts:
            self._name(part)

    def col_unit(self, toks: list[str], idx: int,
                 default_tables: list[str] | None) -> tuple[int, tuple[int, str, bool]]:
        if self.strict:
            start = idx
            end, unit = self._col_unit(toks, idx, default_tables)
            if toks is not self.toks and end != len(toks):
                raise _fail("strict: a value is more than one column")
            if unit[2] and unit[0] == 0 and not (  # DISTINCT only right inside count( ...
                    start >= 2 and toks[start] == "distinct" and toks[start - 1] == "("
                    and toks[start - 2] in _AGG_ID):
                raise _fail("strict: DISTINCT outside an aggregate")
            return end, unit
        return self._col_unit(toks, idx, default_tables)

    def _col_unit(self, toks: list[str], idx: int,
                  default_tables: list[str] | None) -> tuple[int, tuple[int, str, bool]]:
        n = len(toks)
        is_block = False
        distinct = False
        if toks[idx] == "(":
            is_block = True
            idx += 1
        agg = _AGG_ID.get(toks[idx])
        if agg is not None:
            idx += 1
            if not (idx < n and toks[idx] == "("):
                raise _fail(f"expected '(' after {AGG_OPS[agg]}")
            idx += 1
            if toks[idx] == "distinct":
                idx += 1
                distinct = True
            idx, col_id = self.col_in(toks, idx, default_tables)
            if not (idx < n and toks[idx] == ")"):
                raise _fail("expected ')' after aggregated column")
            idx += 1
            return idx, (agg, col_id, distinct)
        if toks[idx] == "distinct":
            idx += 1
            distinct = True
        idx, col_id = self.col_in(toks, idx, default_tables)
        if is_block:
            if toks[idx] != ")":
                raise _fail("expected ')'")
            idx += 1
        return idx, (0, col_id, distinct)

    def col_in(self, toks: list[str], idx: int,
               default_tables: list[str] | None) -> tuple[int, str]:
        if toks is self.toks:
            return self.col(idx, default_tables)
        # parse_value parses a slice of the token list: resolve against the slice
        saved, saved_n = self.toks, self.n
        self.toks, self.n = toks, len(toks)
        try:
            return self.col(idx, default_tables)
        finally:
            self.toks, self.n = saved, saved_n

    def val_unit(self, idx: int, default_tables: list[str] | None) -> tuple[int, Any]:
        toks, n = self.toks, self.n
        is_block = False
        if toks[idx] == "(":
            is_block = True
            idx += 1
        unit_op = 0
        col_unit2 = None
        idx, col_unit1 = self.col_unit(toks, idx, default_tables)
        if idx < n and toks[idx] in _UNIT_OP_ID:
            unit_op = _UNIT_OP_ID[toks[idx]]
            idx += 1
            idx, col_unit2 = self.col_unit(toks, idx, default_tables)
        if is_block:
            if toks[idx] != ")":
                raise _fail("expected ')'")
            idx += 1
        return idx, (unit_op, col_unit1, col_unit2)

    def table_unit(self, idx: int) -> tuple[int, str, str]:
        toks = self.toks
        if self.strict:
            self._name(toks[idx])
            if idx + 1 < self.n and toks[idx + 1] == "as":
                self._name(toks[idx + 2])
        key = self.table(toks[idx])
        if self.strict and self._bare_alias(idx + 1):
            return idx + 2, self.id_of(key), key
        idx += 3 if idx + 1 < self.n and toks[idx + 1] == "as" else 1
        return idx, self.id_of(key), key

    def _bare_alias(self, idx: int) -> bool:
        """Strict: ``toks[idx]`` is a table alias written without AS. The lenient grammar (as
        process_sql) reads such a word as a second table, so only the strict one takes it, and
        only where nothing else could stand: a plain name followed by a word that only follows
        a table reference (or the end). The alias is not put into :attr:`aliases` (that map is
        process_sql's scan for AS): with no schema names stay unresolved, and the counts read
        no name, only the dict's shape, which is the one ``FROM t AS x`` gives."""
        toks, n = self.toks, self.n
        if idx >= n or not _plain_name(toks[idx]):
            return False
        return idx + 1 == n or toks[idx + 1] in _AFTER_TABLE

    def value(self, idx: int, default_tables: list[str] | None) -> tuple[int, Any]:
        toks, n = self.toks, self.n
        start = idx
        is_block = False
        if toks[idx] == "(":
            is_block = True
            idx += 1
        tok = toks[idx]
        val: SQL | str | float | ColUnit
        if self.strict:
            if tok == "select" and not is_block:
                raise _fail("strict: a subquery without parentheses")
            if '"' in tok and not (len(tok) >= 2 and tok[0] == tok[-1] == '"'
                                   and tok.count('"') == 2):
                raise _fail(f"strict: {tok!r} is no quoted string")
        if tok == "select":
            idx, val = self.sql(idx)
        elif '"' in tok:
            val = tok
            idx += 1
        else:
            try:
                val = float(tok)
                if self.strict and not _NUMBER.fullmatch(tok):
                    raise _fail(f"strict: {tok!r} is no plain number")
                idx += 1
            except ValueError:
                end = idx
                stop = _STRICT_VALUE_END if self.strict else _VALUE_END
                while end < n and toks[end] not in stop:
                    end += 1
                _, val = self.col_unit(toks[start:end], 0, default_tables)
                idx = end
        if is_block:
            if toks[idx] != ")":
                raise _fail("expected ')' after value")
            idx += 1
        return idx, val

    def condition(self, idx: int, default_tables: list[str] | None) -> tuple[int, list[Any]]:
        toks, n = self.toks, self.n
        conds: list[Any] = []
        while idx < n:
            idx, val_unit = self.val_unit(idx, default_tables)
            not_op = False
            if toks[idx] == "not":
                not_op = True
                idx += 1
            if not (idx < n and toks[idx] in _WHERE_OP_ID):
                got = toks[idx] if idx < n else "end of query"
                raise _fail(f"Error condition: expected an operator, got {got!r}")
            op_id = _WHERE_OP_ID[toks[idx]]
            idx += 1
            if self.strict and (op_id in _STRICT_REFUSED_OPS
                                or (not_op and op_id not in _STRICT_NOT_OPS)):
                raise _fail(f"strict: {'not ' if not_op else ''}{WHERE_OPS[op_id]} refused")
            val2 = None
            if op_id == _BETWEEN:
                idx, val1 = self.value(idx, default_tables)
                if toks[idx] != "and":
                    raise _fail("expected 'and' in between")
                idx += 1
                idx, val2 = self.value(idx, default_tables)
            else:
                idx, val1 = self.value(idx, default_tables)
            if self.strict and op_id == _WHERE_OP_ID["in"] and type(val1) is not dict:
                raise _fail("strict: IN without a subquery")
            conds.append((not_op, op_id, val_unit, val1, val2))
            if idx < n and toks[idx] in _STOP_COND:
                break
            if idx < n and toks[idx] in COND_OPS:
                conds.append(toks[idx])
                idx += 1
                if self.strict and (idx >= n or toks[idx] in _STOP_COND):
                    raise _fail("strict: AND / OR ends a condition")
            elif self.strict and idx < n:
                raise _fail("strict: two predicates without AND / OR")
        if self.strict and not conds:
            raise _fail("strict: an empty condition")
        return idx, conds

    def select(self, idx: int, default_tables: list[str]) -> tuple[int, Any]:
        toks, n = self.toks, self.n
        if toks[idx] != "select":
            raise _fail("'select' not found")
        idx += 1
        distinct = False
        if idx < n and toks[idx] == "distinct":
            idx += 1
            distinct = True
        units = []
        while idx < n and toks[idx] not in CLAUSE_KEYWORDS:
            agg = _AGG_ID.get(toks[idx], 0)
            if toks[idx] in _AGG_ID:
                idx += 1
                if self.strict and not (idx < n and toks[idx] == "("):
                    raise _fail("strict: an aggregate without '('")
            idx, val_unit = self.val_unit(idx, default_tables)
            units.append((agg, val_unit))
            if idx < n and toks[idx] == ",":
                idx += 1
                if self.strict and (idx >= n or toks[idx] in CLAUSE_KEYWORDS):
                    raise _fail("strict: ',' ends the SELECT list")
            elif self.strict and idx < n and toks[idx] not in CLAUSE_KEYWORDS:
                raise _fail("strict: SELECT items without ','")
        if self.strict and not units:
            raise _fail("strict: nothing selected")
        return idx, (distinct, units)

    def from_(self, start: int) -> tuple[int, list[Any], list[Any], list[str]]:
        toks, n = self.toks, self.n
        try:
            idx = toks.index("from", start) + 1
        except ValueError:
            raise _fail("'from' not found") from None
        default_tables: list[str] = []
        table_units: list[Any] = []
        conds: list[Any] = []
        while idx < n:
            is_block = False
            joined = False
            if toks[idx] == "(":
                is_block = True
                idx += 1
                if self.strict and (table_units or toks[idx] != "select"):
                    raise _fail("strict: '(' in FROM other than a first FROM subquery")
            if toks[idx] == "select":
                if self.strict and not is_block:
                    raise _fail("strict: a FROM subquery without parentheses")
                idx, sub = self.sql(idx)
                table_units.append(("sql", sub))
            else:
                if idx < n and toks[idx] == "join":
                    idx += 1
                    joined = True
                if self.strict and joined != bool(table_units):
                    raise _fail("strict: JOIN before every table but the first")
                idx, table_id, table_name = self.table_unit(idx)
                table_units.append(("table_unit", table_id))
                default_tables.append(table_name)
            if self.strict and idx < n and toks[idx] == "on" and not joined:
                raise _fail("strict: ON without JOIN")
            if idx < n and toks[idx] == "on":
                idx += 1
                idx, these = self.condition(idx, default_tables)
                if conds:
                    conds.append("and")
                conds.extend(these)
            if is_block:
                if toks[idx] != ")":
                    raise _fail("expected ')' in FROM")
                idx += 1
            if idx < n and toks[idx] in _STOP_CLAUSE:
                break
        if self.strict and not table_units:
            raise _fail("strict: an empty FROM")
        return idx, table_units, conds, default_tables

    def group_by(self, idx: int, default_tables: list[str]) -> tuple[int, list[Any]]:
        toks, n = self.toks, self.n
        units: list[Any] = []
        if idx >= n or toks[idx] != "group":
            return idx, units
        idx += 1
        if toks[idx] != "by":
            raise _fail("expected 'by' after 'group'")
        idx += 1
        while idx < n and toks[idx] not in _STOP_CLAUSE:
            idx, unit = self.col_unit(toks, idx, default_tables)
            units.append(unit)
            if idx < n and toks[idx] == ",":
                idx += 1
                if self.strict and (idx >= n or toks[idx] in _STOP_CLAUSE):
                    raise _fail("strict: ',' ends GROUP BY")
            else:
                break
        if self.strict and not units:
            raise _fail("strict: an empty GROUP BY")
        return idx, units

    def order_by(self, idx: int, default_tables: list[str]) -> tuple[int, Any]:
        toks, n = self.toks, self.n
        units: list[Any] = []
        direction = "asc"
        if idx >= n or toks[idx] != "order":
            return idx, units
        idx += 1
        if toks[idx] != "by":
            raise _fail("expected 'by' after 'order'")
        idx += 1
        while idx < n and toks[idx] not in _STOP_CLAUSE:
            if self.strict and self._position(idx):
                key = f"{self.table(default_tables[0])}.{toks[idx]}"
                idx, unit = idx + 1, (0, (0, self.id_of(key), False), None)
            else:
                idx, unit = self.val_unit(idx, default_tables)
            units.append(unit)
            if idx < n and toks[idx] in ORDER_OPS:
                direction = toks[idx]
                idx += 1
            if idx < n and toks[idx] == ",":
                idx += 1
                if self.strict and (idx >= n or toks[idx] in _STOP_CLAUSE):
                    raise _fail("strict: ',' ends ORDER BY")
            else:
                break
        if self.strict and not units:
            raise _fail("strict: an empty ORDER BY")
        return idx, (direction, units)

    def _position(self, idx: int) -> bool:
        """Strict: ``ORDER BY 2 DESC, 1``, a select item's position as a whole ORDER BY item.
        The lenient grammar reads the number as a column (the dict above, process_sql's); the
        strict one refuses it as a name, yet to sqlglot it is one plain operand too, with no
        aggregate, so the counts are those of a column."""
        toks, n = self.toks, self.n
        return bool(_DIGITS.fullmatch(toks[idx])) and (
            idx + 1 == n or toks[idx + 1] in _AFTER_POSITION)

    def sql(self, start: int) -> tuple[int, SQL]:
        toks, n = self.toks, self.n
        idx = start
        is_block = False
        if toks[idx] == "(":
            if self.strict:
                raise _fail("strict: a parenthesised query of the set operations")
            is_block = True
            idx += 1
        from_end, table_units, from_conds, default_tables = self.from_(start)
        out: SQL = {"from": {"table_units": table_units, "conds": from_conds}}
        select_end, out["select"] = self.select(idx, default_tables)
        if self.strict and toks[select_end] != "from":  # its FROM, not a later query's
            raise _fail("strict: SELECT not followed by its FROM")
        idx = from_end
        where: list[Any] = []
        if idx < n and toks[idx] == "where":
            idx, where = self.condition(idx + 1, default_tables)
        out["where"] = where
        idx, out["groupBy"] = self.group_by(idx, default_tables)
        having: list[Any] = []
        if idx < n and toks[idx] == "having":
            idx, having = self.condition(idx + 1, default_tables)
        out["having"] = having
        idx, out["orderBy"] = self.order_by(idx, default_tables)
        limit = None
        if idx < n and toks[idx] == "limit":
            idx += 2
            if self.strict and not _DIGITS.fullmatch(toks[idx - 1]):
                raise _fail("strict: LIMIT without a plain count")
            limit = int(toks[idx - 1])
        out["limit"] = limit
        while idx < n and toks[idx] == ";":
            idx += 1
        if is_block:
            if toks[idx] != ")":
                raise _fail("expected ')' closing a subquery")
            idx += 1
        while idx < n and toks[idx] == ";":
            idx += 1
        out["intersect"] = out["except"] = out["union"] = None
        if idx < n and toks[idx] in SQL_OPS:
            op = toks[idx]
            idx, out[op] = self.sql(idx + 1)
        return idx, out
