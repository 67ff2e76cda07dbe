"""The references' session figures (TEXT2SPARQL, GERBIL QA, abstention with EHRSQL's RS) as rows

They are not means of per-case values, so the per-kind tables cannot show them; each report
lists them beside those tables, under the references' own labels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: (aggregate key, title, [(our name, the reference's label)]) in display order.
SECTIONS: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = (
    ("text2sparql", "TEXT2SPARQL (text2sparql-client evaluate)", (
        ("set_f1_ndcg", "set_F_ndcg"), ("set_precision", "set_P"), ("set_recall", "set_recall"),
        ("set_f1", "set_F"), ("ndcg", "ndcg"))),
    ("gerbil", "GERBIL QA (FMeasureCalculator)", (
        ("macro_f1_qald", "Macro F1 QALD"), ("micro_f1", "Micro F1 score"),
        ("micro_precision", "Micro Precision"), ("micro_recall", "Micro Recall"),
        ("macro_f1", "Macro F1 score"), ("macro_precision", "Macro Precision"),
        ("macro_recall", "Macro Recall"))),
    ("abstention", "Abstention; EHRSQL 2024 reliability score (scoring_utils.py)", (
        ("abstention_precision", "abstention precision"), ("abstention_recall", "abstention recall"),
        ("reliability_score_0", "RS(0)"), ("reliability_score_5", "RS(5)"),
        ("reliability_score_10", "RS(10)"), ("reliability_score_n", "RS(N)"))),
    ("clarification", "Clarification (asked when and only when it should)", (
        ("clarification_precision", "clarification precision"),
        ("clarification_recall", "clarification recall"))),
)


def reference_sections(agg: Mapping[str, Any]
                       ) -> list[tuple[str, int, list[tuple[str, str, float | None]]]]:
    """``[(title, questions, [(name, reference label, value)])]`` for the aggregates present
    (pass@k and pass^k of repeated cases first, per model too: :func:`pass_k_sections`).

    A value is ``None`` where the reference computes none (``set_f1_ndcg`` without an ordered
    question, ``macro_f1_qald`` when both macro averages are 0).
    """
    out = pass_k_sections(agg)
    for key, title, names in SECTIONS:
        section = agg.get(key)
        if not isinstance(section, Mapping):
            continue
        rows = [(name, label, section.get(name)) for name, label in names
                if name in section or name == "set_f1_ndcg"]
        out.append((title, int(section.get("questions") or 0), rows))
    return out


def pass_k_sections(agg: Mapping[str, Any]
                    ) -> list[tuple[str, int, list[tuple[str, str, float | None]]]]:
    """pass@k and pass^k for every k (``aggregates.pass_k``, :mod:`..metrics.pass_k`) as
    sections: the run's, then each model's in a run fanned out per model."""
    figures = agg.get("pass_k")
    if not isinstance(figures, Mapping):
        return []
    groups: list[tuple[str, Mapping[str, Any]]] = [("", figures)]
    models = figures.get("models")
    if isinstance(models, Mapping):
        groups.extend((f" [model {m}]", v) for m, v in models.items() if isinstance(v, Mapping))
    out = []
    for suffix, group in groups:
        runs = group.get("runs") or {}
        each = (f"{group.get('n')} runs each" if len(runs) <= 1
                else f"{'/'.join(str(n) for n in runs)} runs, k up to {group.get('n')}")
        title = (f"pass@k (HumanEval estimate_pass_at_k) and pass^k (tau-bench display_metrics), "
                 f"{each}{suffix}")
        rows: list[tuple[str, str, float | None]] = []
        for metric, label, ref in (("pass_at_k", "pass@", "pass@"), ("pass_hat_k", "pass^", "Pass^k k=")):
            values = group.get(metric) or {}
            rows.extend((f"{label}{k}", f"{ref}{k}", values[k]) for k in values)
        out.append((title, int(group.get("cases") or 0), rows))
    return out
