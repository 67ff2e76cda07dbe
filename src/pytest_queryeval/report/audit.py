"""The gold audit's findings in the reports: the JSON report's ``audit`` section and the
terminal's table."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._util.wording import plural
from ..audit import ERROR, WARNING

if TYPE_CHECKING:
    from ..model import RecordLike


def findings_table(records: Iterable[RecordLike]) -> list[dict[str, Any]]:
    """Every finding of the run, one row each, located: ``file:line`` of the case, errors
    first, then by file and line."""
    rows: list[dict[str, Any]] = []
    for rec in records:
        for f in ((rec.get("details") or {}).get("audit") or {}).get("findings") or []:
            rows.append({"id": rec.get("id"), "file": rec.get("file"), "line": rec.get("line"),
                         "kind": rec.get("kind"), **f})
    rows.sort(key=lambda r: (r["severity"] != ERROR, str(r["file"]), int(r["line"] or 0),
                             str(r["id"]), str(r["code"])))
    return rows


def audit_report(records: Sequence[RecordLike], mode: str) -> dict[str, Any]:
    """The ``audit`` section of the JSON report."""
    rows = findings_table(records)
    audited = [r for r in records if r.get("outcome") not in ("skipped",)]
    counts = Counter(r["severity"] for r in rows)
    return {"mode": mode, "cases": len(audited),
            "cases_with_findings": len({(r["file"], r["id"]) for r in rows}),
            "errors": counts.get(ERROR, 0), "warnings": counts.get(WARNING, 0),
            "by_code": dict(sorted(Counter(r["code"] for r in rows).items())),
            "findings": rows}


def summary_lines(audit: Mapping[str, Any], limit: int = 50) -> list[str]:
    """The terminal's findings table."""
    rows = audit.get("findings") or []
    head = (f"gold audit: {plural(int(audit.get('cases', 0)), 'case')}, "
            f"{plural(int(audit.get('errors', 0)), 'error')}, "
            f"{plural(int(audit.get('warnings', 0)), 'warning')}")
    if audit.get("mode") == "warn" and audit.get("errors"):
        head += " (--queryeval-audit-golds=warn: reported, not failed)"
    lines = [head]
    for r in rows[:limit]:
        gold = f" gold[{r['gold']}]" if r.get("gold") is not None else ""
        lines.append(f"  {r['severity'].upper():7} {r['code']:22} {r['file']}:{r['line']} "
                     f"{r['id']}{gold}: {r['message']}")
    if len(rows) > limit:
        lines.append(f"  ... {len(rows) - limit} more findings in the JSON report")
    if not rows:
        lines.append("  OK: no finding")
    return lines
