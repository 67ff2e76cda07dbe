"""Baselines: a committed JSON report, how it is stored and how a run compares to it."""
