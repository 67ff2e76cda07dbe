"""Moved to :mod:`pytest_queryeval.suite.cases`; docs named this path.

Kept by the folder move (issue 40 item 3: the old import path keeps working): importing it gives that
module itself, so imports and patches written against the old path reach the
module the package uses.
"""

from __future__ import annotations

import sys

from .suite import cases as _moved

sys.modules[__name__] = _moved
