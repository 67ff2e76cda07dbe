"""Load sdmx1 (and so numpy) up front when available.

pytester's in-process runs unload modules first imported inside them, and numpy's C extension
cannot be imported twice per process; importing it here keeps it loaded for every test.
"""

from __future__ import annotations

import contextlib

with contextlib.suppress(ImportError):
    import sdmx  # noqa: F401
