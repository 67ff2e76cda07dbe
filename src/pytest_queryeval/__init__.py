"""pytest-queryeval: regression tests for natural-language-to-query systems."""

from __future__ import annotations

from .model import Case, Scored, Threshold
from .results import ResultTable, Term

__version__ = "0.1.0"
__all__ = ["Case", "ResultTable", "Scored", "Term", "Threshold", "__version__"]
