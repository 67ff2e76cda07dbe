"""One check for the numbers a suite writes: timeouts, row and byte limits, counts.

Why one: each reader had its own ``isinstance(v, int | float) and v > 0``, which lets through
``.inf`` (a timeout that never fires), ``.nan`` (every comparison false: it failed later, inside
the sandbox, as an internal error) and ``1.0e+999``. Here a number is finite, of the right type,
and within a documented range; the message says which, and the caller says where.
"""

from __future__ import annotations

import math
import sys
from typing import TypeGuard

#: The longest timeout a suite may set, in seconds (one day): longer is a mistake, and
#: deadlines further out overflow the C timeouts they are handed to.
MAX_SECONDS = 86_400.0
#: The largest row, byte or memory limit a suite may set (2**53: exact as a float as well).
MAX_COUNT = 2 ** 53


def is_number(value: object) -> TypeGuard[int | float]:
    """An int or float, not a bool (YAML's ``true`` is an int to Python)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_finite(value: object) -> TypeGuard[int | float]:
    """A number that is finite as a float too: ``math.isfinite`` raises OverflowError on an
    int beyond a float's range (a 400-digit YAML integer), where this says False."""
    if not is_number(value):
        return False
    if isinstance(value, int):
        return abs(value) <= _FLOAT_MAX
    return math.isfinite(value)


_FLOAT_MAX = int(sys.float_info.max)


def number(value: object, *, minimum: float | None = None, maximum: float | None = None,
           positive: bool = False, integer: bool = False) -> float | int:
    """``value`` if it is a finite number in range, else ValueError saying what is expected.

    ``positive`` excludes 0 (``minimum`` includes its bound); ``integer`` asks for a whole
    number (an integral float such as ``100.0`` is taken as the int).
    """
    want = _expected(minimum, maximum, positive, integer)
    if not is_finite(value):
        raise ValueError(f"must be {want}, not {short_repr(value)}")
    result: float | int = value
    if integer and isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"must be {want}, not {short_repr(value)}")
        result = int(value)
    if (positive and result <= 0) or (minimum is not None and result < minimum) \
            or (maximum is not None and result > maximum):  # int/float comparisons are exact
        raise ValueError(f"must be {want}, not {short_repr(value)}")
    return result


def seconds(value: object) -> float:
    """A timeout: a positive finite number of seconds, at most :data:`MAX_SECONDS`."""
    return float(number(value, positive=True, maximum=MAX_SECONDS))


def count(value: object, *, minimum: int = 1, maximum: int = MAX_COUNT) -> int:
    """A row, byte or item count: a whole number from ``minimum`` to ``maximum``."""
    return int(number(value, minimum=minimum, maximum=maximum, integer=True))


def option_limit(key: str, value: object) -> float | int:
    """A limit option by its name: ``*timeout`` keys are :func:`seconds`, ``max_rows`` and the
    other ``max_*`` keys a positive :func:`count` (an integral float is taken as the int)."""
    if key.endswith("timeout"):
        return seconds(value)
    return count(value)


def _expected(minimum: float | None, maximum: float | None, positive: bool,
              integer: bool) -> str:
    if positive or (integer and minimum == 1):
        text = "a positive number"
    elif minimum is not None:
        text = f"a number >= {_plain(minimum)}"
    else:
        text = "a finite number"
    bounds = [*(["a whole number"] if integer else []),
              *([f"at most {_plain(maximum)}"] if maximum is not None else [])]
    return text + (f" ({', '.join(bounds)})" if bounds else "")


def _plain(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


def short_repr(value: object) -> str:
    """``repr`` of the value, short (a 4,000-character string stays readable)."""
    text = repr(value) if not isinstance(value, int) or value.bit_length() < 200 \
        else f"an integer of {value.bit_length():,} bits"
    return text if len(text) <= 60 else text[:57] + "..."
