"""Spider hardness (easy / medium / hard / extra), as ``Evaluator.eval_hardness`` computes it.

Counts are taken on the raw parse of the gold (before values and DISTINCT are dropped) and keep
the evaluator's quirks: HAVING adds nothing to component 1, a NOT in WHERE and every element of
the HAVING list that is not a plain condition (the ``'and'``/``'or'`` strings) count as an
aggregation, and FROM subqueries are not nested queries. The public :func:`hardness` of a query
text (parse, schema-backed cache) is in :mod:`.match`, which this module does not import.
"""

from __future__ import annotations

from collections.abc import Sequence

from .parse import SQL

_LIKE = 9  # WHERE_OPS.index("like")

LEVELS = ("easy", "medium", "hard", "extra")


def _has_agg(unit: Sequence[object]) -> bool:
    return bool(unit[0] != 0)


def count_component1(sql: SQL) -> int:
    count = 0
    if sql["where"]:
        count += 1
    if sql["groupBy"]:
        count += 1
    if sql["orderBy"]:
        count += 1
    if sql["limit"] is not None:
        count += 1
    units = sql["from"]["table_units"]
    if units:
        count += len(units) - 1
    conds = sql["from"]["conds"], sql["where"], sql["having"]
    count += sum(1 for c in conds for tok in c[1::2] if tok == "or")
    count += sum(1 for c in conds for unit in c[::2] if unit[1] == _LIKE)
    return count


def nested_sqls(sql: SQL) -> list[SQL]:
    """Subqueries of conditions plus the set-operation operands (``get_nestedSQL``)."""
    nested = []
    for cond in (sql["from"]["conds"], sql["where"], sql["having"]):
        for unit in cond[::2]:
            if type(unit[3]) is dict:
                nested.append(unit[3])
            if type(unit[4]) is dict:
                nested.append(unit[4])
    for op in ("intersect", "except", "union"):
        if sql[op] is not None:
            nested.append(sql[op])
    return nested


def count_component2(sql: SQL) -> int:
    return len(nested_sqls(sql))


def count_others(sql: SQL) -> int:
    agg = sum(1 for unit in sql["select"][1] if _has_agg(unit))
    agg += sum(1 for unit in sql["where"][::2] if _has_agg(unit))
    agg += sum(1 for unit in sql["groupBy"] if _has_agg(unit))
    if sql["orderBy"]:
        units = sql["orderBy"][1]
        agg += sum(1 for u in units if u[1] and _has_agg(u[1]))
        agg += sum(1 for u in units if u[2] and _has_agg(u[2]))
    agg += sum(1 for unit in sql["having"] if _has_agg(unit))
    count = 1 if agg > 1 else 0
    if len(sql["select"][1]) > 1:
        count += 1
    if len(sql["where"]) > 1:
        count += 1
    if len(sql["groupBy"]) > 1:
        count += 1
    return count


def counts(sql: SQL) -> tuple[int, int, int]:
    """``(component1, component2, others)`` of a raw parsed query."""
    return count_component1(sql), count_component2(sql), count_others(sql)


def level(comp1: int, comp2: int, others: int) -> str:
    if comp1 <= 1 and others == 0 and comp2 == 0:
        return "easy"
    if (others <= 2 and comp1 <= 1 and comp2 == 0) or (comp1 <= 2 and others < 2 and comp2 == 0):
        return "medium"
    if ((others > 2 and comp1 <= 2 and comp2 == 0)
            or (2 < comp1 <= 3 and others <= 2 and comp2 == 0)
            or (comp1 <= 1 and others == 0 and comp2 <= 1)):
        return "hard"
    return "extra"


def hardness_of(sql: SQL) -> str:
    return level(*counts(sql))
