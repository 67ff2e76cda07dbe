"""``--queryeval-shard I/N``: one CI runner's share of a suite, by a stable hash of the case id.

The hash (SHA-256, not Python's salted ``hash``) gives every runner the same partition without
talking to the others, whatever the order or the subset of files each collects; a case keeps its
shard when other cases are added or removed. The shards' JSON reports are put back together by
``queryeval merge`` (:mod:`pytest_queryeval.merge`).
"""

from __future__ import annotations

import hashlib


def parse_shard(value: str) -> tuple[int, int]:
    """``"2/4"`` as (2, 4); a ValueError says what is wrong."""
    text = value.strip()
    left, sep, right = text.partition("/")
    if not sep or not left.strip().isdigit() or not right.strip().isdigit():
        raise ValueError(f"--queryeval-shard={value}: expected I/N, e.g. 1/4")
    index, total = int(left), int(right)
    if total < 1 or not 1 <= index <= total:
        raise ValueError(f"--queryeval-shard={value}: I must be between 1 and N (N >= 1)")
    return index, total


def shard_of(key: str, total: int) -> int:
    """The 1-based shard of a case id (or a node id for items that are not cases)."""
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % total + 1
