"""Moved to :mod:`pytest_queryeval.kinds.goldchecks.query`; docs/auditing.md names this path
(a custom kind's ``query_rules()`` answers ``SQL_RULES`` or ``SPARQL_RULES``, its ``audit`` may
call ``audit_query``).

Kept by the floors move (issue 51 item 1: the old import path keeps working): importing it gives
that module itself, so imports and patches written against the old path reach the module the
package uses. The names the docs give are imported here too, for type checkers.
"""

from __future__ import annotations

import sys

from ..kinds.goldchecks import query as _moved
from ..kinds.goldchecks.query import SPARQL_RULES as SPARQL_RULES
from ..kinds.goldchecks.query import SQL_RULES as SQL_RULES
from ..kinds.goldchecks.query import QueryRules as QueryRules
from ..kinds.goldchecks.query import audit_query as audit_query

sys.modules[__name__] = _moved
