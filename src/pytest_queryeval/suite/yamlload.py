"""Moved to :mod:`pytest_queryeval._yaml.yamlload`; tests named this path.

Kept by the floors move (issue 51 item 1: the old import path keeps working): importing it gives
that module itself, so imports and patches written against the old path reach the module the
package uses. The loader moved below predict/, whose predictions files it reads too.
"""

from __future__ import annotations

import sys

from .._yaml import yamlload as _moved

sys.modules[__name__] = _moved
