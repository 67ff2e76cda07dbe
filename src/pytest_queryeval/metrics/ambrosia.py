"""Ambrosia's metrics for a question with several readings, as its reference computes them.

Reference: saparina/ambrosia ``src/evaluation/metrics.py`` at commit
7de80a41f1ad4f01aed9bb55e734654688b572a8 (``evaluate_predicted_statements`` and what it calls:
``compare_query_results``, ``sort_key``, ``sort_with_different_types``, ``duplicate_exact``,
``count_unique_results``, ``remove_duplicate_results``; the errors of
``src/evaluation/exceptions.py``). The names below are the reference's, so that a reader can
put the two side by side; ``tests/data/ambrosia/oracle.json`` holds the reference's own outputs
(run unmodified on SQLite fixtures), which ``tests/ambiguity/test_ambrosia_oracle.py`` compares
with these, digit for digit.

What it computes, over the gold queries (one per reading) and the predicted queries:

* the golds must return pairwise different results (exactly: the same rows in the same
  order, ``1 == 1.0``), else :class:`DublicatesError` (the reference's spelling); a gold that
  fails is :class:`GoldQueryExecutionError`. Two golds of the same text count twice in the
  denominator of ``recall`` but once as found, as the reference keys them by text;
* predictions are de-duplicated by text; a prediction finds a gold when
  :func:`compare_query_results` holds: with ``order by`` in the gold's lowered text, row by
  row (the cells of each row sorted, so the column order never matters), else the multiset
  of all cells (rows flattened: ``[(1, 2)]`` equals ``[(1,), (2,)]``). An empty predicted
  result never finds anything, not even a gold that is empty too;
* ``recall`` = found golds / golds, ``precision`` = predictions that find a gold / unique
  predictions (0 with none), ``f1_score``, ``all_found``, and the counts the reference
  reports (``num_queries``, ``num_unique_queries``, ``unique_results``,
  ``unique_results_filtered``, ``execution_errors``).

Where the reference depends on hash order or crashes, :data:`DETERMINISTIC` (the default)
differs, and :data:`AMBROSIA` is the reference's behaviour:

* **Order.** It de-duplicates with ``list(set(pred_statements))``, an order that changes with
  ``PYTHONHASHSEED``. Recall, precision, F1 and ``all_found`` never depend on it; which
  predictions :func:`remove_duplicate_results` keeps does (its pairwise test is not
  transitive when only one of two texts says ``order by``), and with it ``unique_results``
  and ``unique_results_filtered`` (and ``precision`` with ``remove_duplicates_predictions``).
  Here the order is the first occurrence of each text; ``AMBROSIA`` takes ``list(set(...))``
  of this process.
* **Failed predictions.** ``remove_duplicate_results`` compares a non-empty result with a
  failed prediction's ``None`` and raises ``TypeError`` (``len(None)`` or iterating it)
  whenever a failed prediction comes after a non-empty one in that order: with hash
  randomisation, about half the runs of a question with one failing and one working
  prediction crash, and the reference's ``eval.py`` then drops the question from every
  average. Here a failed prediction equals nothing; ``AMBROSIA`` raises :class:`ReferenceCrash`.
* **No golds.** ``recall`` divides by zero; here, as in the reference, it raises
  (:class:`ReferenceCrash`): a suite cannot have such a case (a located error).

The reference's ``unique_results`` is counted after ``remove_duplicate_results`` has already
removed keys from the same dictionary, so it always equals ``unique_results_filtered`` in its
default mode: reproduced as it is.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Final, Literal, TypedDict

REFERENCE = "saparina/ambrosia src/evaluation/metrics.py @7de80a41"
#: The SQL kind's metrics of an ``interpretations:`` case, in the reference's order.
AMBROSIA_METRIC_NAMES = ("interpretation_recall", "interpretation_precision",
                         "interpretation_f1", "all_found")
#: Our default: first-occurrence order, a failed prediction equals nothing, no crash.
DETERMINISTIC: Final = "deterministic"
#: The reference: ``list(set(...))`` order of this process, its ``TypeError`` raised.
AMBROSIA: Final = "ambrosia"
Mode = Literal["deterministic", "ambrosia"]
MODES: tuple[str, ...] = (DETERMINISTIC, AMBROSIA)

#: One cell as SQLite (or a datasource) returns it.
Cell = object
Rows = Sequence[Sequence[Cell]]


class ReferenceCrash(ValueError):
    """Where the reference raises something that is not one of its own errors."""


class DublicatesError(ValueError):
    """Two golds return the same result (the reference's name and spelling)."""

    def __init__(self, duplicates: tuple[tuple[Cell, ...], ...], duplicate_idx: int) -> None:
        self.duplicates = duplicates
        #: 1-based position, among the golds of distinct text, of the second of the two.
        self.duplicate_idx = duplicate_idx
        super().__init__(f"Duplicates - {duplicate_idx} is the same: {duplicates}")


class GoldQueryExecutionError(ValueError):
    """A gold query failed (the reference's name)."""

    def __init__(self, query: str, original: str) -> None:
        self.query = query
        self.original = original
        super().__init__(f"{original} occurred during the execution of query: {query}")


class PredQueryExecutionError:
    """A predicted query that failed: its text and message (the reference's
    ``to_dict``); a value, not raised."""

    def __init__(self, query: str, original: str) -> None:
        self.query = query
        self.original = original

    def to_dict(self) -> dict[str, str]:
        return {"query": self.query, "original_exception": self.original}


Result = list[tuple[Cell, ...]] | PredQueryExecutionError


class AmbrosiaMetrics(TypedDict):
    """``evaluate_predicted_statements``'s dictionary, key for key."""

    recall: float
    precision: float
    f1_score: float
    num_queries: int
    num_unique_queries: int
    unique_results: int
    unique_results_filtered: int
    execution_errors: list[dict[str, str]]
    all_found: bool
    #: Not the reference's: which golds were found and which predictions found one
    #: (by position in the list given, and in the de-duplicated predictions, ``statements``:
    #: first occurrences, or the reference's hash order under ``mode="ambrosia"``).
    found: list[bool]
    matched: list[bool]
    statements: list[str]


def sort_key(x: Cell) -> tuple[int, float | str]:
    """None first, then numbers by value, then everything else by ``str``."""
    if x is None:
        return (0, "")
    if isinstance(x, int | float):
        return (1, float(x))
    return (2, str(x))


def sort_with_different_types(arr: Sequence[Cell]) -> list[Cell]:
    return sorted(arr, key=sort_key)


def compare_query_results(predicted_results: Rows | None, gold_results: Rows | None,
                          order_by: bool = False, *, strict: bool = False) -> bool:
    """The reference's comparison. ``None`` is a failed query: with ``strict``, where the
    reference would take its ``len`` or iterate it, :class:`ReferenceCrash`; else unequal."""
    if not predicted_results:
        return False
    if gold_results is None:
        if strict:
            what = "object of type 'NoneType' has no len()" if order_by \
                else "'NoneType' object is not iterable"
            raise ReferenceCrash(f"TypeError: {what} (remove_duplicate_results compares a "
                                 "result with a failed prediction)")
        return False
    if order_by:
        if len(gold_results) != len(predicted_results):
            return False
        width = len(gold_results[0])
        if any(len(row) != width for row in [*gold_results, *predicted_results]):
            return False
        for gold_row, predicted_row in zip(gold_results, predicted_results, strict=True):
            if tuple(sort_with_different_types(gold_row)) != \
                    tuple(sort_with_different_types(predicted_row)):
                return False
        return True
    flat_gold = Counter(item for row in gold_results for item in row)
    flat_predicted = Counter(item for row in predicted_results for item in row)
    return flat_gold == flat_predicted


def duplicate_exact(results: Sequence[Rows]) -> tuple[bool, tuple[tuple[Cell, ...], ...] | None,
                                                       int | None]:
    """The first result equal (rows in order, Python equality) to an earlier one, and its
    1-based position."""
    seen: set[tuple[tuple[Cell, ...], ...]] = set()
    for idx, result in enumerate(results):
        hashable = tuple(map(tuple, result))
        if hashable in seen:
            return True, hashable, idx + 1
        seen.add(hashable)
    return False, None, None


def count_unique_results(results: Sequence[Result]) -> int:
    """Distinct results, every failed prediction one value."""
    seen: set[tuple[tuple[Cell, ...], ...] | None] = set()
    for result in results:
        seen.add(None if isinstance(result, PredQueryExecutionError)
                 else tuple(map(tuple, result)))
    return len(seen)


def remove_duplicate_results(all_pred_exec_outputs: dict[str, Result], *,
                             strict: bool = False) -> dict[str, Result]:
    """Each later prediction whose result equals an earlier kept one removed, in place (the
    reference mutates its argument, and its callers read the same dictionary afterwards)."""
    keys_to_remove: list[str] = []
    processed_queries = list(all_pred_exec_outputs)
    for i, query1 in enumerate(processed_queries):
        if query1 in keys_to_remove:
            continue
        value1 = all_pred_exec_outputs[query1]
        result1 = None if isinstance(value1, PredQueryExecutionError) else value1
        for query2 in processed_queries[i + 1:]:
            if query2 in keys_to_remove:
                continue
            value2 = all_pred_exec_outputs[query2]
            result2 = None if isinstance(value2, PredQueryExecutionError) else value2
            order_by = "order by" in query1.lower() or "order by" in query2.lower()
            if compare_query_results(result1, result2, order_by, strict=strict):
                keys_to_remove.append(query2)
    for key in keys_to_remove:
        del all_pred_exec_outputs[key]
    return all_pred_exec_outputs


def unique_statements(pred_statements: Sequence[str], mode: Mode) -> list[str]:
    """The predictions de-duplicated by text: first occurrences, or the reference's
    ``list(set(...))`` (this process's hash order)."""
    if mode == AMBROSIA:
        return list(set(pred_statements))
    return list(dict.fromkeys(pred_statements))


def score_predicted_statements(
        pred_statements: Sequence[str],
        gold_sql_queries: Sequence[str],
        execute: Callable[[str], list[tuple[Cell, ...]]],
        failure: type[Exception] | tuple[type[Exception], ...],
        remove_duplicates_predictions: bool = False,
        *, mode: Mode = DETERMINISTIC,
        order: Callable[[Sequence[str]], list[str]] | None = None) -> AmbrosiaMetrics:
    """``evaluate_predicted_statements`` on any engine: ``execute`` returns a query's rows or
    raises one of ``failure`` (the reference's ``sqlite3.DatabaseError``). ``order``, when
    given, replaces the de-duplication's order (the tests pass the order a reference run
    recorded)."""
    strict = mode == AMBROSIA
    all_gold_exec_outputs = _gold_outputs(gold_sql_queries, execute, failure)
    exec_acc_per_gold_queries = dict.fromkeys(all_gold_exec_outputs, False)

    num_queries = len(pred_statements)
    statements = order(pred_statements) if order is not None \
        else unique_statements(pred_statements, mode)
    all_pred_exec_outputs, execution_errors = _predicted_outputs(statements, execute, failure)
    if remove_duplicates_predictions:
        all_pred_exec_outputs = remove_duplicate_results(all_pred_exec_outputs, strict=strict)

    exec_acc_per_pred_queries = dict.fromkeys(statements, False)
    _mark_matches(all_pred_exec_outputs, all_gold_exec_outputs, exec_acc_per_pred_queries,
                  exec_acc_per_gold_queries)

    if not gold_sql_queries:
        raise ReferenceCrash("ZeroDivisionError: division by zero (no gold queries)")
    found = sum(exec_acc_per_gold_queries.values())
    recall = found / len(gold_sql_queries)
    all_found = found == len(gold_sql_queries)
    precision: float = sum(exec_acc_per_pred_queries.values()) / len(statements) \
        if statements else 0
    f1_score: float = 2 * precision * recall / (precision + recall) \
        if precision + recall > 0 else 0

    found_by_position = [exec_acc_per_gold_queries[q] for q in gold_sql_queries]
    matched = [exec_acc_per_pred_queries[q] for q in statements]
    if not remove_duplicates_predictions:
        remove_duplicate_results(all_pred_exec_outputs, strict=strict)
    unique = count_unique_results(list(all_pred_exec_outputs.values()))
    return AmbrosiaMetrics(
        recall=recall, precision=precision, f1_score=f1_score, num_queries=num_queries,
        num_unique_queries=len(statements), unique_results=unique,
        unique_results_filtered=unique, execution_errors=execution_errors,
        all_found=all_found, found=found_by_position, matched=matched,
        statements=list(statements))


def _gold_outputs(gold_sql_queries: Sequence[str],
                  execute: Callable[[str], list[tuple[Cell, ...]]],
                  failure: type[Exception] | tuple[type[Exception], ...],
                  ) -> dict[str, list[tuple[Cell, ...]]]:
    """Each gold's rows, by text; a gold that fails, or two that return the same rows (the
    readings cannot be told apart), stop the scoring as the reference's do."""
    all_gold_exec_outputs: dict[str, list[tuple[Cell, ...]]] = {}
    for query in gold_sql_queries:
        try:
            all_gold_exec_outputs[query] = execute(query)
        except failure as e:
            raise GoldQueryExecutionError(query, str(e)) from e
    has_duplicates, duplicates, duplicate_idx = duplicate_exact(
        list(all_gold_exec_outputs.values()))
    if has_duplicates and duplicates is not None and duplicate_idx is not None:
        raise DublicatesError(duplicates, duplicate_idx)
    return all_gold_exec_outputs


def _predicted_outputs(statements: Sequence[str],
                       execute: Callable[[str], list[tuple[Cell, ...]]],
                       failure: type[Exception] | tuple[type[Exception], ...],
                       ) -> tuple[dict[str, Result], list[dict[str, str]]]:
    """Each prediction's rows, by text, or its failure (the reference's
    ``PredQueryExecutionError``: that query's failure, never the case's); and the failures
    listed as the reference records them."""
    all_pred_exec_outputs: dict[str, Result] = {}
    execution_errors: list[dict[str, str]] = []
    for query in statements:
        try:
            all_pred_exec_outputs[query] = execute(query)
        except failure as e:
            error = PredQueryExecutionError(query, str(e))
            all_pred_exec_outputs[query] = error
            execution_errors.append(error.to_dict())
    return all_pred_exec_outputs, execution_errors


def _mark_matches(all_pred_exec_outputs: dict[str, Result],
                  all_gold_exec_outputs: dict[str, list[tuple[Cell, ...]]],
                  exec_acc_per_pred_queries: dict[str, bool],
                  exec_acc_per_gold_queries: dict[str, bool]) -> None:
    """Every gold a prediction's rows equal marked found, and that prediction matched (the
    gold's ORDER BY decides whether order counts)."""
    for pred_query, pred_exec_output in all_pred_exec_outputs.items():
        if isinstance(pred_exec_output, PredQueryExecutionError):
            continue
        for gold_query, gold_exec_output in all_gold_exec_outputs.items():
            if compare_query_results(pred_exec_output, gold_exec_output,
                                     order_by="order by" in gold_query.lower()):
                exec_acc_per_gold_queries[gold_query] = True
                exec_acc_per_pred_queries[pred_query] = True


def evaluate_predicted_statements(
        file_name: str, pred_statements: Sequence[str], gold_sql_queries: Sequence[str],
        remove_duplicates_predictions: bool = False, *, mode: Mode = DETERMINISTIC,
        order: Callable[[Sequence[str]], list[str]] | None = None) -> AmbrosiaMetrics:
    """The reference's function on a SQLite file, one connection for every query as it has
    (a prediction that writes is seen by the ones after it there too)."""
    conn = sqlite3.connect(file_name)
    try:
        cursor = conn.cursor()

        def execute(query: str) -> list[tuple[Cell, ...]]:
            cursor.execute(query)
            return [tuple(row) for row in cursor.fetchall()]

        return score_predicted_statements(pred_statements, gold_sql_queries, execute,
                                          sqlite3.DatabaseError, remove_duplicates_predictions,
                                          mode=mode, order=order)
    finally:
        conn.close()
