"""Coincidental passes: prove a passing prediction wrong with a small counterexample database.

Why: execution accuracy on one database passes a prediction whenever its result happens to
equal the gold's there (``Total > 10`` for ``Total >= 11`` on whole numbers, ``LIMIT 1`` for
``max()`` without a tie, a filter no row exercises). The test-suite evaluator (Zhong, Yu and
Klein, EMNLP 2020; ruiqi-zhong/TestSuiteEval ``fuzz/``) measured how often and fixed it for
Spider's own databases; this package does it for a team's own SQLite database, and shows the
database instead of only a score.

API (everything else here is private)::

    from pytest_queryeval.neighbours import Budget, search
    result = search(Path("chinook.sqlite"), gold_sql, predicted_sql, same, seed=0,
                    budget=Budget(databases=200, seconds=10))
    if result.counterexample:                   # a proof: re-run on a real, checked file
        print(result.counterexample.to_sql())   # the real DDL and a few INSERTs

``same(gold_table, predicted_table) -> bool`` is the case's own comparison (order, ties,
column alignment), so a counterexample separates the two under exactly the rule the case
passed by.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .search import Budget, Counterexample, SearchResult, search

__all__ = ["Budget", "Counterexample", "SearchResult", "search"]

#: Public name -> the submodule that defines it, imported on first use (as pluggy's
#: ``__init__`` does): ``neighbours/check.py`` reads the settings of every run, and a run
#: without the option must not import the search.
_LAZY = {"Budget": "search", "Counterexample": "search", "SearchResult": "search", "search": "search"}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    loaded = import_module(f".{module}", __name__)
    # importing the submodule bound its name here (``search`` the module): every public name
    # of it is bound now, so ``search`` is the function, as with the eager import
    for public, where in _LAZY.items():
        if where == module:
            globals()[public] = getattr(loaded, public)
    return globals()[name]
