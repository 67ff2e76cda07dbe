"""How far a judge agrees with expert labels: Cohen's kappa, precision, recall, false positives
and negatives, and how often its verdict flips when asked again.

Each figure is computed with the same floating-point operations, in the same order, as
scikit-learn 1.9 (``cohen_kappa_score``, ``precision_score``, ``recall_score`` with their
defaults), so the values are equal to the last digit and a team can compare its judge with the
published ones (ROSE-VEC reports scikit-learn's kappa). scikit-learn is not a dependency: the
tests compare with it. A positive is "the prediction is correct" (the expert's ``true``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Agreement:
    """A judge's verdicts against expert labels on the same items."""

    items: int
    tp: int
    fp: int
    fn: int
    tn: int
    #: NaN when undefined (both sides give one and the same label throughout).
    kappa: float
    precision: float
    recall: float

    def to_json(self) -> dict[str, float | int | None]:
        return {"items": self.items, "tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn,
                "kappa": None if math.isnan(self.kappa) else self.kappa,
                "precision": self.precision, "recall": self.recall}


def agreement(expert: Sequence[bool], judge: Sequence[bool]) -> Agreement:
    """The judge's agreement with the experts on items given in the same order."""
    if len(expert) != len(judge):
        raise ValueError(f"{len(expert)} expert labels but {len(judge)} verdicts")
    tp = sum(1 for e, j in zip(expert, judge, strict=True) if e and j)
    fp = sum(1 for e, j in zip(expert, judge, strict=True) if not e and j)
    fn = sum(1 for e, j in zip(expert, judge, strict=True) if e and not j)
    tn = len(expert) - tp - fp - fn
    return Agreement(len(expert), tp, fp, fn, tn, cohen_kappa(expert, judge),
                     _ratio(tp, tp + fp), _ratio(tp, tp + fn))


def _ratio(num: int, den: int) -> float:
    """scikit-learn's ``zero_division="warn"``: 0.0 when the denominator is 0."""
    return num / den if den else 0.0


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> float:
    """``sklearn.metrics.cohen_kappa_score(a, b)`` for two label sequences of booleans.

    The confusion matrix over the labels present (sorted), ``expected = outer(column sums, row
    sums) / total``, ``1 - sum(off-diagonal observed) / sum(off-diagonal expected)``; NaN where
    scikit-learn returns its ``replace_undefined_by`` default (a zero denominator).
    """
    labels = sorted(set(a) | set(b))
    index = {label: i for i, label in enumerate(labels)}
    n = len(labels)
    confusion = [[0.0] * n for _ in range(n)]
    for x, y in zip(a, b, strict=True):
        confusion[index[x]][index[y]] += 1.0
    sum0 = [sum(confusion[i][j] for i in range(n)) for j in range(n)]  # column sums
    sum1 = [sum(row) for row in confusion]
    total = sum(sum0)
    if total == 0:
        return math.nan
    numerator = 0.0
    denominator = 0.0
    for i in range(n):  # the flattened matrix, in order, as numpy sums fewer than 8 values
        for j in range(n):
            weight = 0.0 if i == j else 1.0
            numerator += weight * confusion[i][j]
            denominator += weight * (sum0[i] * sum1[j] / total)
    if denominator == 0:
        return math.nan
    return float(1 - numerator / denominator)


def flip_rate(asks: Sequence[Sequence[bool]]) -> float:
    """The share of items whose verdict was not the same every time it was asked (items asked
    once do not count)."""
    repeated = [v for v in asks if len(v) > 1]
    if not repeated:
        return 0.0
    return sum(1 for v in repeated if len(set(v)) > 1) / len(repeated)
