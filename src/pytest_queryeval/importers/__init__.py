"""Converters from other benchmarks' formats to queryeval case files."""

from __future__ import annotations
