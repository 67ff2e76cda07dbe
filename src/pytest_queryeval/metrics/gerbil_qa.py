"""GERBIL QA (QALD) metrics: ``qald_precision``, ``qald_recall``, ``qald_f1`` per question and the
session aggregates ``macro_f1_qald`` and ``micro_f1`` (with plain macro/micro P/R/F).

Reference: dice-group/gerbil, branch ``QuestionAnswering`` @ 794c41a14d73ba554ae28a397d415db0d68ae67b,
``src/main/java/org/aksw/gerbil/evaluate/impl/FMeasureCalculator.java`` (last changed in
c35d2ca8): ``calculateMeasuresQALD``, ``calculateMeasures``, ``calculateF1QALD``,
``calculateMacroFMeasure``, ``calculateMicroFMeasure``. The arithmetic is transcribed operation
for operation (Java doubles are IEEE binary64 like Python floats, and the sums run left to right
in question order as the Java loops do), checked against that code compiled and run
(tests/data/gerbil/) and against GERBIL's own fixture ``QanaryWebServiceFmeasureTest``.

Why the numbers can surprise (the reference's rules, kept):

* Two per-question rules. The QALD rule (``qald_*``): nothing to find and nothing found is
  P = R = F = 1; **an empty system answer is P = 1, R = 0**; no true positive otherwise is 0.
  The plain rule (behind ``macro_*``) gives the empty system answer P = 0.
* ``macro_f1_qald`` ("Macro F1 QALD") is the harmonic mean of the macro-averaged QALD precision
  and recall, **not** the mean of ``qald_f1``; it is NaN (0/0) when both averages are 0.
* ``micro_*`` add tp / fp / fn over all questions first, then apply the plain rule.
* An empty gold answer set against an empty answer is 1 under both rules; against any answer, 0.

The counts are those of the answer value sets (tp = |A ∩ G|, fp = |A \\ G|, fn = |G \\ A|):
GERBIL's ``QAMatchingsCounter`` also maps literal answers to knowledge-base resources and follows
owl:sameAs, which needs its triple index and is not reproduced.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..results import ResultTable

#: Per-question metric names.
QALD_METRIC_NAMES = ("qald_precision", "qald_recall", "qald_f1")
#: Session aggregate names, beside GERBIL's own labels.
AGGREGATE_LABELS = {
    "macro_f1_qald": "Macro F1 QALD",
    "macro_precision": "Macro Precision", "macro_recall": "Macro Recall",
    "macro_f1": "Macro F1 score",
    "micro_precision": "Micro Precision", "micro_recall": "Micro Recall",
    "micro_f1": "Micro F1 score",
}


@dataclass(frozen=True)
class Counts:
    """GERBIL's ``EvaluationCounts`` for one question."""

    tp: int
    fp: int
    fn: int

    def to_json(self) -> dict[str, int]:
        return {"tp": self.tp, "fp": self.fp, "fn": self.fn}


def counts(gold: Iterable[str], answer: Iterable[str]) -> Counts:
    """tp / fp / fn of two answer value sets (duplicates collapse, as in GERBIL's sets)."""
    g, a = set(gold), set(answer)
    tp = len(g & a)
    return Counts(tp, len(a) - tp, len(g) - tp)


def measures_qald(c: Counts) -> tuple[float, float, float]:
    """``calculateMeasuresQALD``: precision, recall, F1 under the QALD rule."""
    if c.tp == 0:
        if c.fp == 0 and c.fn == 0:
            return 1.0, 1.0, 1.0
        if c.fp == 0:
            return 1.0, 0.0, 0.0  # the annotator has no answer
        return 0.0, 0.0, 0.0
    return _usual(c)


def measures(c: Counts) -> tuple[float, float, float]:
    """``calculateMeasures``: the plain rule (macro and micro figures)."""
    if c.tp == 0:
        if c.fp == 0 and c.fn == 0:
            return 1.0, 1.0, 1.0
        return 0.0, 0.0, 0.0
    return _usual(c)


def _usual(c: Counts) -> tuple[float, float, float]:
    precision = float(c.tp) / float(c.tp + c.fp)
    recall = float(c.tp) / float(c.tp + c.fn)
    return precision, recall, (2 * precision * recall) / (precision + recall)


def question_metrics(c: Counts) -> dict[str, float]:
    p, r, f = measures_qald(c)
    return {"qald_precision": p, "qald_recall": r, "qald_f1": f}


def _div(a: float, b: float) -> float:
    """Java double division: x/0.0 is NaN or ±Infinity, never an exception."""
    if b == 0.0:
        if a == 0.0 or a != a:
            return float("nan")
        return float("inf") if a > 0 else float("-inf")
    return a / b


def aggregate(all_counts: Iterable[Counts]) -> dict[str, object]:
    """Macro (plain and QALD) and micro figures over the questions, in their order.

    With no question GERBIL divides by zero: every macro figure is NaN there, reported as
    ``None``; micro figures are the plain rule on zero counts (1.0).
    """
    cs = list(all_counts)
    n = len(cs)
    plain = [0.0, 0.0, 0.0]
    qald = [0.0, 0.0, 0.0]
    tp = fp = fn = 0
    for c in cs:
        for acc, values in ((plain, measures(c)), (qald, measures_qald(c))):
            acc[0] += values[0]
            acc[1] += values[1]
            acc[2] += values[2]
        tp, fp, fn = tp + c.tp, fp + c.fp, fn + c.fn
    plain = [_div(v, n) for v in plain]
    qald = [_div(v, n) for v in qald]
    f1_qald = _div(2 * qald[0] * qald[1], qald[0] + qald[1])
    micro = measures(Counts(tp, fp, fn))
    out: dict[str, object] = {
        "questions": n,
        "macro_f1_qald": f1_qald,
        "macro_precision": plain[0], "macro_recall": plain[1], "macro_f1": plain[2],
        "micro_precision": micro[0], "micro_recall": micro[1], "micro_f1": micro[2],
        "qald_macro_precision": qald[0], "qald_macro_recall": qald[1],
        "tp": tp, "fp": fp, "fn": fn,
    }
    return {k: (None if isinstance(v, float) and v != v else v) for k, v in out.items()}


def counts_from_json(value: Mapping[str, Any]) -> Counts:
    """A record's ``{"tp", "fp", "fn"}`` back into :class:`Counts`."""
    return Counts(int(value["tp"]), int(value["fp"]), int(value["fn"]))


def answers_from_table(table: ResultTable) -> set[str]:
    """A QALD answer set: every projected value (as TEXT2SPARQL's), an ASK result as the one
    string ``"true"`` or ``"false"`` (QALD's boolean answer)."""
    from .text2sparql import answers_from_table as values
    from .text2sparql import is_ask

    if is_ask(table):
        return {"true" if table.rows[0][0] else "false"}
    return set(values(table))
