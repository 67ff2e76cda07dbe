"""What the rehearsal (:mod:`.rehearsal`) reads in the copy's reply before it lets a
prediction reach a FalkorDB server: each row as it comes (:class:`Reading`), for what the
server's Bolt listener could not send intact.

Why apart from the rehearsal's process handling: these are the listener's limits, measured
on FalkorDB 4.16.3 (a temporal value stops it, a point is written with a byte too many, a
message over 64 KiB is framed wrong, a reply nested past the driver's recursion is lost),
and each grows with the next one found.
"""

from __future__ import annotations

from typing import Any

from ..errors import ReadRefused
from .values import DEFAULT_MAX_VALUES, TooManyValues

#: FalkorDB's compact reply codes of a local date-time, a date, a local time, a duration.
_TEMPORAL_CODES = frozenset({13, 14, 15, 16})
#: FalkorDB's compact reply code of a point: its Bolt listener writes one with an extra null
#: after it (4.16), so every later value of its row, list or map is read one place late (the
#: twentieth re-probe's P1: a wrong prediction passed, an honest reordered one failed).
_POINT_CODES = frozenset({11})
_ARRAY, _EDGE, _NODE, _PATH, _MAP = 6, 7, 8, 9, 10

#: The most bytes one Bolt message may have: FalkorDB's listener (4.16.3) writes a longer one
#: as one chunk whose 16-bit size is cut to its low bits, and the driver then reads the rest
#: as further messages (the ninth re-probe forged the next queries' results that way).
MAX_MESSAGE = 65_535
#: How deep a reply's lists and maps may nest: the driver reads each level in a recursion of
#: its own (480 levels passed Python's limit: the ninth re-probe's M2).
MAX_NESTING = 200


class Reading:
    """What a rehearsal's rows say, read one at a time: whether a value the server's Bolt
    listener cannot write is in them, how many there are, and the largest a row's Bolt
    message could be; and how many values they hold, past ``max_values``
    :class:`~.values.TooManyValues` (raised as the row is read: the rest of the reply is not)."""

    def __init__(self, longest_name: int, max_values: int = DEFAULT_MAX_VALUES) -> None:
        self.longest_name = longest_name
        self.max_values = max_values
        self.values = 0
        self.temporal = False
        self.point = False
        self.rows = 0
        self.largest = 0
        self.deepest = 0

    def __call__(self, values: Any) -> None:
        self.rows += 1
        if not self.temporal and _holds([None, [values], None], _TEMPORAL_CODES):
            self.temporal = True
        if not self.point and _holds([None, [values], None], _POINT_CODES):
            self.point = True
        size, depth, held = _bolt_bound(values, self.longest_name)
        self.values += held
        if self.values > self.max_values:
            raise TooManyValues
        self.largest = max(self.largest, size)
        self.deepest = max(self.deepest, depth)

    def verdict(self, reply: Any) -> None:
        if self.temporal:
            raise ReadRefused("the query's reply holds a date, a local time or date-time, or "
                               "a duration, which a FalkorDB server's Bolt listener cannot "
                               "write (it stops the server); return toString(...) of it")
        if self.point:
            raise ReadRefused("the query's reply holds a point, which a FalkorDB server's Bolt "
                               "listener writes wrong (every later value of its row is read "
                               "one place late); return its fields (p.latitude, p.longitude)")
        header = reply[0] if isinstance(reply, list) and reply else []
        fields = sum(8 + len(str(c[-1]).encode()) for c in header if isinstance(c, list))
        if self.largest > MAX_MESSAGE or fields + 64 > MAX_MESSAGE:
            raise ReadRefused(f"a row of the query's reply (or its column names) may take "
                               f"more than {MAX_MESSAGE:,} bytes in one Bolt message, which "
                               "a FalkorDB server's listener cannot send intact (it cuts the "
                               "message's size to 16 bits)")
        if self.deepest > MAX_NESTING:
            raise ReadRefused(f"the query's reply nests values more than {MAX_NESTING} deep, "
                              "deeper than the Bolt driver reads (it recurses once a level)")


def _bolt_bound(value: Any, longest_name: int) -> tuple[int, int, int]:
    """At least the bytes a compact reply's value takes in a Bolt message (PackStream), its
    labels, types and keys each counted at the longest name the copy has; how deep its
    lists and maps nest; and how many values it holds (as :func:`.values.count` counts the
    driver's: a node or a relationship one, and one each of its properties)."""
    size = 7  # the RECORD's structure and its list's header
    name = 5 + longest_name
    deepest = held = 0
    stack: list[tuple[Any, int]] = [(v, 1) for v in value] if isinstance(value, list) else []
    while stack:
        item, depth = stack.pop()
        held += 1
        deepest = max(deepest, depth)
        if not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], int):
            size += 9
            continue
        code, body = item
        inner: list[Any] = []
        if code in (1, 3, 4, 5):  # null, integer, boolean, float
            size += 9
        elif code == 2:
            size += 5 + len(str(body).encode("utf-8"))
        elif code in (_ARRAY, _PATH):
            size += 5 + 3 * 9
            inner = body if isinstance(body, list) else []
        elif code == _MAP and isinstance(body, list):
            size += 5 + sum(5 + len(str(k).encode("utf-8")) for k in body[0::2])
            inner = body[1::2]
        elif code in (_NODE, _EDGE) and isinstance(body, list) and body:
            labels = body[1] if code == _NODE and isinstance(body[1], list) else [0]
            props = body[-1] if isinstance(body[-1], list) else []
            size += 2 + 4 * 9 + 4 * 30 + 5 + name * len(labels) + 5 + name * len(props)
            inner = [[p[1], p[2]] for p in props if isinstance(p, list) and len(p) == 3]
        elif code == 12 and isinstance(body, list):  # a vector: a list of floats
            size += 5 + 9 * len(body)
        else:
            size += 40
        stack.extend((x, depth + 1) for x in inner)
    return size, deepest, held


def _holds(reply: Any, codes: frozenset[int]) -> bool:
    """Whether a compact reply's rows hold a value of one of ``codes`` anywhere (a property of
    a node, a relationship on a path, a list item, a map value)."""
    if not isinstance(reply, list) or len(reply) < 3 or not isinstance(reply[1], list):
        return False
    stack: list[Any] = [v for row in reply[1] if isinstance(row, list) for v in row]
    while stack:
        value = stack.pop()
        if not isinstance(value, list) or len(value) != 2 or not isinstance(value[0], int):
            continue
        code, body = value
        if code in codes:
            return True
        if not isinstance(body, list):
            continue
        if code in (_ARRAY, _PATH):
            stack.extend(body)
        elif code == _MAP:
            stack.extend(body[1::2])
        elif code in (_NODE, _EDGE) and body and isinstance(body[-1], list):
            stack.extend([p[1], p[2]] for p in body[-1] if isinstance(p, list) and len(p) == 3)
    return False


