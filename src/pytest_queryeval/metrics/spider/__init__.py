"""Spider structural SQL evaluation, agreeing item by item with the official evaluator.

Hardness, exact set match (values and DISTINCT dropped, foreign keys canonicalised, FROM-table
check of the current taoyds/spider ``evaluation.py``; the older multi-table-only check behind
``legacy_from_check``) and the ten partial components, plus the evaluator's aggregation and
table. See ``docs/spider-conformance.md`` for the measured agreement.
"""

from __future__ import annotations

from ...sources.spider_tables import Schema
from .aggregate import LEVELS, aggregate, format_table
from .match import COMPONENTS, OFFICIAL_NAMES, StructureResult, hardness, structure_scores
from .parse import SpiderParseError, parse_sql

#: Every per-case metric name this package produces.
METRICS: tuple[str, ...] = (
    "exact_set_match", *(f"{c}_{m}" for c in COMPONENTS for m in ("acc", "rec", "f1")))

__all__ = [
    "COMPONENTS",
    "LEVELS",
    "METRICS",
    "OFFICIAL_NAMES",
    "Schema",
    "SpiderParseError",
    "StructureResult",
    "aggregate",
    "format_table",
    "hardness",
    "parse_sql",
    "structure_scores",
]
