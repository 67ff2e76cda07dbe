"""Moved to :mod:`pytest_queryeval.metrics.embeddings`; docs named this path.

Kept by the folder move (issue 40 item 3: the old import path keeps working): importing it gives that
module itself, so imports and patches written against the old path reach the
module the package uses.
"""

from __future__ import annotations

import sys

from .metrics import embeddings as _moved

sys.modules[__name__] = _moved
