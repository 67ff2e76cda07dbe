"""Moved to :mod:`pytest_queryeval.report.outcome`; docs named this path.

Kept by the floors move (issue 51 item 1: the old import path keeps working): importing it gives
that module itself, so imports and patches written against the old path reach the module the
package uses.
"""

from __future__ import annotations

import sys

from ..report import outcome as _moved

sys.modules[__name__] = _moved
