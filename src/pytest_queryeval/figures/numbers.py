"""How the reports print a number: one place, so a score reads the same in every report.

The terminal prints a missing number as ``-`` and a rate as ``91.7%``; the Markdown and HTML
reports, read as documents, as an en dash and ``91.7 %`` (:func:`doc_num`, :func:`doc_pct`).
"""

from __future__ import annotations

from functools import partial
from typing import SupportsFloat


def signed(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:+.{digits}f}"


def num(value: SupportsFloat | None, digits: int = 3, *, missing: str = "-") -> str:
    return missing if value is None else f"{float(value):.{digits}f}"


def pct(value: SupportsFloat | None, *, missing: str = "-", unit: str = "%") -> str:
    """A rate (0..1) as a percentage with one decimal."""
    return missing if value is None else f"{float(value) * 100:.1f}{unit}"


doc_num = partial(num, missing="–")
doc_pct = partial(pct, missing="–", unit=" %")


def seconds(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}s"


def usd(v: float | None) -> str:
    """Dollars with the digits a per-case cost needs ($0.000123) and cents for big sums."""
    if v is None:
        return "-"
    return f"${v:,.2f}" if v >= 100 else f"${v:.4f}" if v >= 0.01 else f"${v:.6f}"


def tokens(v: float | None) -> str:
    """A count of tokens: whole, with thousands separated (a total is never fractional)."""
    return "-" if v is None else f"{v:,.0f}"
