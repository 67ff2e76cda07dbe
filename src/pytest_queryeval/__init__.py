"""pytest-queryeval: regression tests for natural-language-to-query systems.

The public names are imported on first use (PEP 562): pytest imports this package in every run
of every project where the plugin is installed, and a project without a suite must not pay for
the case model and result tables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .conclude.pycheck import CaseFailed, check
    from .model import Case, Scored, Threshold
    from .results import ResultTable, Term

__version__ = "0.1.0"
__all__ = ["Case", "CaseFailed", "ResultTable", "Scored", "Term", "Threshold", "__version__",
           "check"]

_LAZY = {"Case": "model", "Scored": "model", "Threshold": "model", "ResultTable": "results",
         "Term": "results", "check": "conclude.pycheck", "CaseFailed": "conclude.pycheck"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
