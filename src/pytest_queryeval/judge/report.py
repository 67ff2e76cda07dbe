"""What the judge forgave and overturned, for every report (issue 26 item 7).

Why a list, not only a mean: a reviewer must see exactly which failures the judge accepted and
why, beside the near misses that explain the same failures mechanically, before trusting a
``judge_ex`` gate. Built from the case records alone, so ``queryeval merge`` rebuilds it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .._util.wording import plural
from ..model import NO_DIFFICULTY

if TYPE_CHECKING:
    from ..model import RecordLike

#: Items shown per list in the terminal (the files hold all).
SHOWN = 20


def aggregate(records: Iterable[RecordLike]) -> dict[str, Any]:
    """``{"judged", "asked", "pinned", "rescued": [...], "overturned": [...], "errors": [...]}``;
    each item ``{id, kind, difficulty, category, reason}`` (errors: ``error``)."""
    out: dict[str, Any] = {"judged": 0, "asked": 0, "pinned": 0, "calls": 0, "rescued": [],
                           "overturned": [], "errors": [], "refused": None}
    for rec in records:
        judge = (rec.get("details") or {}).get("judge")
        if not isinstance(judge, Mapping):
            continue
        item = {"id": rec.get("id"), "kind": rec.get("kind"),
                "difficulty": rec.get("difficulty") or NO_DIFFICULTY,
                "category": judge.get("category"), "reason": judge.get("reason"),
                "pinned": bool(judge.get("pinned"))}
        if judge.get("refused") and out["refused"] is None:
            out["refused"] = judge["refused"]
        if judge.get("error"):
            out["errors"].append({**item, "error": judge["error"]})
            continue
        if "category" not in judge:
            continue
        out["judged"] += 1
        out["pinned" if judge.get("pinned") else "asked"] += 1
        out["calls"] += int(judge.get("calls") or 0)
        if judge.get("outcome") in ("rescued", "overturned"):
            out[judge["outcome"]].append(item)
    return out


def item_line(item: Mapping[str, Any]) -> str:
    """``id [kind/difficulty] category: reason`` (``(pinned)`` when the verdict was recorded)."""
    pinned = " (pinned)" if item.get("pinned") else ""
    return (f"{item.get('id')} [{item.get('kind')}/{item.get('difficulty')}] "
            f"{item.get('category')}{pinned}: {' '.join(str(item.get('reason') or '').split())}")


def summary_lines(agg: Mapping[str, Any] | None) -> list[str]:
    """The terminal's judge section (nothing when no case was judged)."""
    if not agg or not (agg.get("judged") or agg.get("errors")):
        return []
    lines = [f"judge: {agg['judged']} case{'s' if agg['judged'] != 1 else ''} judged "
             f"({agg['asked']} asked in {agg['calls']} call{'s' if agg['calls'] != 1 else ''}, "
             f"{agg['pinned']} pinned), {len(agg['rescued'])} rescued, "
             f"{len(agg['overturned'])} overturned, {plural(len(agg['errors']), 'judge error')}"]
    for key, title in (("rescued", "rescued by the judge (execution failed, the judge accepts)"),
                       ("overturned", "overturned by the judge (execution passed, the judge "
                                      "rejects)")):
        items = list(agg.get(key) or [])
        if items:
            lines.append(f"{title}:")
            lines.extend(f"  {item_line(i)}" for i in items[:SHOWN])
            if len(items) > SHOWN:
                lines.append(f"  ... {len(items) - SHOWN} more in the JSON report")
    for item in list(agg.get("errors") or [])[:SHOWN]:
        lines.append(f"  judge error in {item.get('id')}: {item.get('error')}")
    if agg.get("refused"):
        lines.append(f"  {agg['refused']}")
    return lines
