"""The typed-value encoding of the reference oracles' ``make_oracle.py`` scripts
(``tests/data/spider2``, ``tests/data/livesqlbench``): JSON cannot hold a Decimal, a NaN, a
date or bytes, so each is written as ``{"$tag": text}``; :func:`dec` reads them back."""

from __future__ import annotations

import base64
import datetime as dt
from decimal import Decimal
from typing import Any


def dec(v: Any) -> Any:
    """A value of an oracle file, decoded (lists element by element)."""
    if isinstance(v, list):
        return [dec(x) for x in v]
    if not isinstance(v, dict):
        return v
    (tag, x), = v.items()
    if tag == "$decimal":
        return Decimal(x)
    if tag == "$float":
        return float(x)
    if tag == "$datetime":
        return dt.datetime.fromisoformat(x)
    if tag == "$date":
        return dt.date.fromisoformat(x)
    if tag == "$time":
        return dt.time.fromisoformat(x)
    if tag == "$bytes":
        return base64.b64decode(x)
    if tag == "$tuple":
        return tuple(dec(y) for y in x)
    assert tag == "$dict"
    return {k: dec(y) for k, y in x.items()}
