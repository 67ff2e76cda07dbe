"""A lossless JSON codec for :class:`ResultTable` values (the gold-result cache).

JSON alone would turn ``Decimal('1.10')`` into a float, a date into a string and bytes into
nothing, and a cached gold result must compare exactly like a freshly executed one. Plain
JSON scalars (``int``, ``float``, ``str``, ``bool``, ``None``) stay as they are; every other
value becomes a one-key tagged object (``{"$decimal": "1.10"}``). Tags cannot collide with
real cells because a mapping is never a plain cell: JSON/dict cells are tagged too.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
import uuid
import zoneinfo
from decimal import Decimal
from typing import Any

from ..results import (
    GraphNode,
    GraphPath,
    GraphRelationship,
    ResultTable,
    Term,
    well_formed,
)

#: Bumped when the encoding changes, so stale cache entries are ignored. 2: a graph engine's
#: node, relationship and path keep their class (``$node``, ``$relationship``, ``$path``): a
#: cached gold decoded as plain maps would no longer score as the engine's values.
VERSION = 2
#: The classes of a graph engine's values, by tag (each a ``dict``: checked before one).
_GRAPH_TAGS: tuple[tuple[str, type[dict[str, Any]]], ...] = (
    ("$node", GraphNode), ("$relationship", GraphRelationship), ("$path", GraphPath))


class CodecError(ValueError):
    """A value the codec cannot represent losslessly (the result is then not cached)."""


def encode_value(v: object) -> object:
    if v is None or isinstance(v, bool | int | str):
        return v
    if isinstance(v, float):
        if math.isfinite(v):
            return v
        return {"$float": repr(v)}  # 'nan', 'inf', '-inf'
    if isinstance(v, Decimal):
        return {"$decimal": str(v)}
    if isinstance(v, bytes | bytearray | memoryview):
        return {"$bytes": base64.b64encode(bytes(v)).decode("ascii")}
    # datetime before date: a datetime is a date.
    if isinstance(v, dt.datetime):
        # isoformat keeps only the offset: a named zone and the fold are needed to restore a
        # wall time inside a DST gap or fold exactly (such datetimes never equal an offset one)
        if isinstance(v.tzinfo, zoneinfo.ZoneInfo):
            return {"$zoned": [v.replace(tzinfo=None).isoformat(), v.tzinfo.key, v.fold]}
        return {"$datetime": v.isoformat()}
    if isinstance(v, dt.date):
        return {"$date": v.isoformat()}
    if isinstance(v, dt.time):
        return {"$time": v.isoformat()}
    if isinstance(v, dt.timedelta):
        return {"$timedelta": [v.days, v.seconds, v.microseconds]}
    if isinstance(v, uuid.UUID):
        return {"$uuid": str(v)}
    if isinstance(v, Term):
        return {"$term": [v.type, v.value, v.datatype, v.lang]}
    if isinstance(v, tuple) and type(v).__name__ == "Duration" \
            and type(v).__module__.startswith("neo4j.time"):
        # the neo4j driver's duration (a type: bolt source's): a tuple, but kept as its class
        return {"$duration": list(v)}
    if isinstance(v, tuple):
        return {"$tuple": [encode_value(x) for x in v]}
    if isinstance(v, list):
        return {"$list": [encode_value(x) for x in v]}
    if isinstance(v, dict):
        tag = next((t for t, cls in _GRAPH_TAGS if type(v) is cls), "$map")
        return {tag: [[encode_value(k), encode_value(x)] for k, x in v.items()]}
    raise CodecError(f"cannot encode a {type(v).__name__} cell losslessly")


def decode_value(v: object) -> Any:
    if not isinstance(v, dict):
        return v
    if len(v) != 1:
        raise CodecError(f"not an encoded cell: {v!r}")
    (tag, x), = v.items()
    if tag == "$float":
        return float(x)
    if tag == "$decimal":
        return Decimal(x)
    if tag == "$bytes":
        return base64.b64decode(x)
    if tag == "$datetime":
        return dt.datetime.fromisoformat(x)
    if tag == "$zoned":
        naive = dt.datetime.fromisoformat(x[0])
        return naive.replace(tzinfo=zoneinfo.ZoneInfo(x[1]), fold=int(x[2]))
    if tag == "$date":
        return dt.date.fromisoformat(x)
    if tag == "$time":
        return dt.time.fromisoformat(x)
    if tag == "$timedelta":
        return dt.timedelta(days=x[0], seconds=x[1], microseconds=x[2])
    if tag == "$uuid":
        return uuid.UUID(x)
    if tag == "$term":
        return Term(x[0], x[1], x[2], x[3])
    if tag == "$duration":  # written only where the neo4j driver made one
        import importlib

        months, days, seconds, nanoseconds = x
        return importlib.import_module("neo4j.time").Duration(
            months=months, days=days, seconds=seconds, nanoseconds=nanoseconds)
    if tag == "$tuple":
        return tuple(decode_value(i) for i in x)
    if tag == "$list":
        return [decode_value(i) for i in x]
    if tag == "$map":
        return {decode_value(k): decode_value(i) for k, i in x}
    graph = next((cls for t, cls in _GRAPH_TAGS if t == tag), None)
    if graph is not None:  # an engine's shape only (a cached file is untrusted input)
        value = graph((decode_value(k), decode_value(i)) for k, i in x)
        if not well_formed(value):
            raise CodecError(f"a malformed {tag} cell")
        return value
    raise CodecError(f"unknown cell tag {tag!r}")


def encode_table(table: ResultTable) -> dict[str, object]:
    """A JSON-safe mapping from which :func:`decode_table` rebuilds an equal table."""
    return {
        "v": VERSION,
        "columns": list(table.columns),
        "rows": [[encode_value(c) for c in row] for row in table.rows],
        "truncated": table.truncated,
        "seconds": table.seconds,
        "meta": encode_value(dict(table.meta)),
    }


def decode_table(data: object) -> ResultTable:
    """Inverse of :func:`encode_table`; raises :class:`CodecError` on anything else."""
    if not isinstance(data, dict) or data.get("v") != VERSION:
        raise CodecError("not an encoded result table of this version")
    try:
        meta = decode_value(data.get("meta", {"$map": []}))
        return ResultTable(
            columns=[str(c) for c in data["columns"]],
            rows=[tuple(decode_value(c) for c in row) for row in data["rows"]],
            truncated=bool(data.get("truncated", False)),
            seconds=float(data.get("seconds", 0.0)),
            meta=meta if isinstance(meta, dict) else {},
        )
    except (KeyError, TypeError, ValueError, IndexError, ArithmeticError, RecursionError) as e:
        # a cache file is untrusted: {"$term": [1]}, a timedelta past its range, a nesting past
        # Python's recursion (the sixteenth re-probe's C1) are a miss, never the case's error
        raise CodecError(f"malformed encoded table: {type(e).__name__}: {e}") from None
