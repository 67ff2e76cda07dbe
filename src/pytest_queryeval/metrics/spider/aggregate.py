"""Per-hardness aggregation and the table the official ``evaluation.py`` prints (match mode).

The evaluator's averaging rules are kept because published tables use them: accuracy averages
only items whose prediction has the component, recall only items whose gold has it, F1 is
computed from those two means, and F1 is 1 when both means are 0 (hence IUEN F1 = 1.000 for
easy/medium). A level without items prints 0 everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .match import COMPONENTS, OFFICIAL_NAMES, StructureResult

LEVELS = ("easy", "medium", "hard", "extra", "all")


def aggregate(results: Iterable[StructureResult | Mapping[str, Any]]) -> dict[str, object]:
    """``{level: {count, exact, partial: {component: {acc, rec, f1}}}}`` for easy, medium,
    hard, extra and all (JSON-safe). Items are results or their ``to_details()`` mappings."""
    sums: dict[str, dict[str, Any]] = {
        lv: {"count": 0, "exact": 0,
             "partial": {c: [0, 0, 0, 0] for c in COMPONENTS}}  # acc, n_acc, rec, n_rec
        for lv in LEVELS
    }
    for res in results:
        if isinstance(res, StructureResult):
            hardness, exact, partial = res.hardness, res.exact, res.partial
        else:
            hardness, exact, partial = res["hardness"], res["exact"], res["partial"]
        for lv in (hardness, "all"):
            s = sums[lv]
            s["count"] += 1
            s["exact"] += exact
            for comp in COMPONENTS:
                item = partial[comp]
                p = s["partial"][comp]
                if item[4] > 0:  # pred_total
                    p[0] += item[0]
                    p[1] += 1
                if item[3] > 0:  # label_total
                    p[2] += item[1]
                    p[3] += 1
    out: dict[str, object] = {}
    for lv in LEVELS:
        s = sums[lv]
        count = s["count"]
        level: dict[str, Any] = {"count": count, "exact": 0.0, "partial": {}}
        for comp in COMPONENTS:
            level["partial"][comp] = {"acc": 0.0, "rec": 0.0, "f1": 0.0}
        if count:
            level["exact"] = s["exact"] / count
            for comp in COMPONENTS:
                acc_sum, n_acc, rec_sum, n_rec = s["partial"][comp]
                acc: float = acc_sum / n_acc if n_acc else 0.0
                rec: float = rec_sum / n_rec if n_rec else 0.0
                f1 = 1.0 if acc == 0 and rec == 0 else 2.0 * acc * rec / (acc + rec)
                level["partial"][comp] = {"acc": acc, "rec": rec, "f1": f1}
        out[lv] = level
    return out


def format_table(agg: dict[str, Any]) -> str:
    """The official ``print_scores(scores, "match")`` output, line for line."""
    row = "{:20} {:<20.3f} {:<20.3f} {:<20.3f} {:<20.3f} {:<20.3f}"
    lines = ["{:20} {:20} {:20} {:20} {:20} {:20}".format("", *LEVELS),
             "{:20} {:<20d} {:<20d} {:<20d} {:<20d} {:<20d}".format(
                 "count", *(agg[lv]["count"] for lv in LEVELS)),
             "",
             "====================== EXACT MATCHING ACCURACY =====================",
             row.format("exact match", *(agg[lv]["exact"] for lv in LEVELS)),
             "",
             "---------------------PARTIAL MATCHING ACCURACY----------------------"]
    sections = (("acc", None),
                ("rec", "---------------------- PARTIAL MATCHING RECALL ----------------------"),
                ("f1", "---------------------- PARTIAL MATCHING F1 --------------------------"))
    for key, title in sections:
        if title:
            lines.append(title)
        for comp in COMPONENTS:
            lines.append(row.format(OFFICIAL_NAMES[comp],
                                    *(agg[lv]["partial"][comp][key] for lv in LEVELS)))
    return "\n".join(lines) + "\n"
