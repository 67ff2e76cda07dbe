"""The baseline comparison's documented entry point (docs/reports.md, "API summary").

Compare a JSON report with a committed baseline, print the comparison, read and write baseline
files, without pytest. The code lives where its concern is: :mod:`..baseline.compare` (the
comparison), :mod:`..baseline.store` (the files) and :mod:`.terminal` (the text).
"""

from __future__ import annotations

from ..baseline.compare import (
    GLOBAL,
    Comparison,
    MetricDelta,
    OutcomeChange,
    compare,
    model_of,
    parse_max_drop,
)
from ..baseline.significance import parse_significance
from ..baseline.store import compact_baseline, expand_baseline, load_baseline, write_baseline
from ..figures.columns import is_spider_component
from .terminal import format_comparison

__all__ = [
    "GLOBAL",
    "Comparison",
    "MetricDelta",
    "OutcomeChange",
    "compact_baseline",
    "compare",
    "expand_baseline",
    "format_comparison",
    "is_spider_component",
    "load_baseline",
    "model_of",
    "parse_max_drop",
    "parse_significance",
    "write_baseline",
]
