"""PostgreSQL's names as the server keeps them: the first 63 bytes (``NAMEDATALEN`` less one).

Why: the server cuts a longer name where it reads it, in a query and in a routine's body
alike, so ``public.hid_xxx...xyyyyyyy()`` (70 bytes) calls the routine ``hid_xxx...x`` (63),
and ``FROM sales.orders_xxx...xyyyyyyy`` reads ``sales.orders_xxx...x``. Every reading that
matched a name as written against the catalog's missed both: a routine that turned parallel
query on read a forbidden table uncounted, and the case passed with ``forbidden_tables`` 0
(issue 58, the fifty-eighth re-probe's T1, T2).
"""

from __future__ import annotations

__all__ = ["MAX_NAME_BYTES", "NAME_CHARS", "NAME_START", "clipped", "clipped_parts", "keys_of"]

#: The bytes of a name the server keeps.
MAX_NAME_BYTES = 63
#: The characters of an unquoted name, as a regular expression's class body: any character
#: past ASCII too (``sales.éorders``, ``hid·x``: Python's ``\w`` has no ``·``, and a reading
#: that began a name with an ASCII letter read ``orders``: the fifty-ninth re-probe's U3,
#: U4). And the characters one may begin with.
NAME_CHARS = r"\w$\u0080-\U0010ffff"
NAME_START = r"A-Za-z_\u0080-\U0010ffff"


def clipped(name: str) -> str:
    """``name`` as the server keeps it: its first :data:`MAX_NAME_BYTES` bytes of UTF-8, cut at
    a character's boundary (as ``pg_mbcliplen`` cuts it)."""
    raw = name.encode("utf-8", "surrogatepass")
    if len(raw) <= MAX_NAME_BYTES:
        return name
    return raw[:MAX_NAME_BYTES].decode("utf-8", "ignore")


def clipped_parts(name: str) -> str:
    """A dotted name (``sales.orders``) with each part :func:`clipped`."""
    return ".".join(clipped(part) for part in name.split("."))


def keys_of(name: str) -> set[str]:
    """The lower-cased keys a name as written may stand for: itself, and what the server keeps
    of it, cut on the bytes as written before any lower-casing (Python's lower case changes
    the length of some letters, the Kelvin sign 3 bytes to 1, ``İ`` 2 to 3: a spelling cut
    after it missed the routine the server ran, the fifty-ninth re-probe's U1)."""
    return {name.lower(), clipped_parts(name).lower(), clipped_parts(name.lower())}
