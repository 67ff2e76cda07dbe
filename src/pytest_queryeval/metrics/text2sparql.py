"""TEXT2SPARQL'25/'26 metrics: ``set_precision``, ``set_recall``, ``set_f1``, ``ndcg`` and the
session aggregate ``set_f1_ndcg``.

Reference: AKSW/text2sparql-client @ 980e0e16f78a2a52f6ba7e193b035ebfdde17403,
``text2sparql_client/utils/evaluation_metrics.py`` (``DBpediaDict2PytrecDict.tranform``,
``Evaluation``, ``combine_averages``) and ``commands/evaluate.py``; the measures are
pytrec_eval 0.5's (trec_eval 9.0.8: ``m_set_P.c``, ``m_set_recall.c``, ``m_set_F.c``,
``m_ndcg.c``, ``form_res_rels.c``). Transcribed, not imported: the plugin does not depend on
pytrec_eval. Per-item agreement with the reference run unmodified is asserted in
tests/text2sparql/ (oracle in tests/data/text2sparql/).

Why the numbers can surprise (each one is the reference's, kept on purpose):

* The answer is a *set* of value strings: every value of every projected variable, datatype and
  language tag dropped, each with relevance (gold) or score (prediction) 1.
* ASK becomes ``{"true": 1}`` or ``{"true": 0}``. The document is "true" either way, so a
  predicted ``false`` against a gold ``true`` scores 1, and a gold ``false`` scores 0 whatever
  is predicted (no relevant document).
* An empty gold answer set scores 0 on every measure, even against an empty prediction.
* ``ndcg`` never sees the predicted order: every score is 1, and trec_eval ranks ties by
  document name, descending. It is computed only for questions whose features include
  ``RESULT_ORDER_MATTERS``.
* ``set_f1_ndcg`` (the reference's ``set_F_ndcg``) is the mean over questions of ``ndcg`` where
  computed and ``set_f1`` otherwise, *plus one more term*: the reference's loop also visits its
  ``average`` entry, which by then holds the mean ``ndcg``. With no ordered question the
  reference computes no ``set_F_ndcg`` at all (``None`` here).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import repeat
from operator import attrgetter, ge, is_not, itemgetter
from typing import Any

from ..results import ResultTable, Term
from ._alignment_search import np_mean

#: The feature that asks for ``ndcg`` (questions YAML ``features``).
RESULT_ORDER_MATTERS = "RESULT_ORDER_MATTERS"
#: The reference's own names, for readers of its output files.
REFERENCE_NAMES = {"set_precision": "set_P", "set_recall": "set_recall", "set_f1": "set_F",
                   "ndcg": "ndcg", "set_f1_ndcg": "set_F_ndcg"}

#: A pytrec_eval judgement or run for one question: value string -> relevance / score.
AnswerDict = dict[str, int]


def answers_from_json(result: Mapping[str, Any]) -> AnswerDict:
    """``DBpediaDict2PytrecDict.tranform`` on SPARQL 1.1 JSON results, for one question."""
    if "boolean" in result:
        return {"true": 1 if result["boolean"] else 0}
    out: AnswerDict = {}
    for var in result["head"]["vars"]:
        for binding in result["results"]["bindings"]:
            if var in binding:
                out[binding[var]["value"]] = 1
    return out


def answers_from_table(table: ResultTable) -> AnswerDict:
    """The same answer dict from a result table (an ASK result is one boolean cell)."""
    if is_ask(table):
        return {"true": 1 if table.rows[0][0] else 0}
    out: AnswerDict = {}
    rows = table.rows
    for index in range(len(table.columns)):
        column = list(map(itemgetter(index), rows))
        if set(map(type, column)) <= _TERM_OR_NONE:  # in C: a large result's every cell
            out.update(dict.fromkeys(map(_TERM_VALUE, filter(_BOUND, column)), 1))
            continue
        for cell in column:
            if cell is not None:
                out[_value(cell)] = 1
    return out


_TERM_OR_NONE = frozenset({Term, type(None)})
_TERM_VALUE = attrgetter("value")
_BOUND = partial(is_not, None)


def is_ask(table: ResultTable) -> bool:
    """An ASK result as the kinds hold it: one column, one row, one Python bool."""
    return (len(table.columns) == 1 and len(table.rows) == 1
            and isinstance(table.rows[0][0], bool))


def _value(cell: object) -> str:
    value = getattr(cell, "value", None)  # an RDF Term: its lexical form only
    return value if isinstance(value, str) else str(cell)


def question_metrics(gold: Mapping[str, int], pred: Mapping[str, int], *,
                     order_matters: bool = False) -> dict[str, float]:
    """pytrec_eval's set_P / set_recall / set_F (and ndcg) for one question, bit for bit."""
    num_ret = len(pred)
    # the reference's two loops, counted in C (a large result's answers, both sides)
    num_rel = sum(map(ge, gold.values(), repeat(1)))
    rel_ret = sum(map(ge, map(gold.get, pred, repeat(0)), repeat(1)))
    precision = rel_ret / num_ret if num_ret else 0.0
    recall = rel_ret / num_rel if num_rel else 0.0
    f1 = 0.0
    if rel_ret:
        # m_set_F.c: (x + 1.0) * P * R / (x * P + R) with x = 1.0
        f1 = (1.0 + 1.0) * precision * recall / (1.0 * precision + recall)
    out = {"set_precision": precision, "set_recall": recall, "set_f1": f1}
    if order_matters:
        out["ndcg"] = ndcg(gold, pred)
    return out


def ndcg(gold: Mapping[str, int], pred: Mapping[str, int]) -> float:
    """trec_eval's ``ndcg`` with gains = relevance levels (m_ndcg.c).

    The run is ranked by score, descending, ties broken by document name, descending
    (``comp_sim_docno``); the prediction's own order plays no part. An empty judgement list is
    undefined behaviour in trec_eval (the reference hung on it once): 0.0 here, what it returns
    when it does return.
    """
    ranked = sorted(sorted(pred, reverse=True), key=lambda doc: -pred[doc])  # stable
    results_dcg = 0.0
    for i, doc in enumerate(ranked):
        gain = float(gold[doc]) if gold.get(doc, -1) >= 0 else 0.0
        if gain != 0:
            results_dcg += gain / math.log2(i + 2)
    ideal = sorted((rel for rel in gold.values() if rel > 0), reverse=True)
    ideal_dcg = 0.0
    for i, rel in enumerate(ideal):
        ideal_dcg += float(rel) / math.log2(i + 2)
    return results_dcg / ideal_dcg if ideal_dcg > 0.0 else 0.0


@dataclass(frozen=True)
class Question:
    """One question's metrics, in the reference's question order."""

    metrics: Mapping[str, float | None]
    order_matters: bool


def _measure(question: Question, name: str) -> float:
    """A question's measure; one that a report read back holds as null (a NaN written to JSON,
    a record edited or of another version) or lacks counts 0, as the reference scores a
    question it got no answer for (``commands/evaluate.py``: a missing response is an empty
    result, every measure 0), never a crash of the whole aggregate."""
    value = question.metrics.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return 0.0
    return float(value)


def aggregate(questions: Sequence[Question] | Iterable[Question]) -> dict[str, object]:
    """The reference's ``average`` entry: numpy means of each measure and ``set_f1_ndcg``.

    numpy's mean is reproduced bit for bit (pairwise summation); ``set_f1_ndcg`` is
    ``statistics.fmean`` (an exact ``fsum``) over the per-question terms plus the mean ``ndcg``.
    """
    qs = list(questions)
    out: dict[str, object] = {"questions": len(qs)}
    if not qs:
        return out
    for name in ("set_precision", "set_recall", "set_f1"):
        out[name] = np_mean([_measure(q, name) for q in qs])
    ordered = [q for q in qs if q.order_matters]
    if not ordered:
        out["set_f1_ndcg"] = None
        return out
    mean_ndcg = np_mean([_measure(q, "ndcg") for q in ordered])
    out["ndcg"] = mean_ndcg
    terms = [_measure(q, "ndcg" if q.order_matters else "set_f1") for q in qs]
    terms.append(mean_ndcg)  # the reference's loop visits its "average" entry too
    out["set_f1_ndcg"] = math.fsum(terms) / len(terms)
    out["ordered_questions"] = len(ordered)
    return out
