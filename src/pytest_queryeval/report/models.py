"""The models table of every report (``aggregates.models`` and ``aggregates.model_comparison``,
:mod:`.model_pairs`): one row per model, each pair's McNemar test and the cases on which
the models disagree, as terminal lines, Markdown and HTML.

Why one module for three formats: the table's columns (which headline metrics, which spend)
are chosen once, so each report shows the same table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any

from ..figures.numbers import doc_num, doc_pct, num, pct, tokens, usd
from ..kindregistry import declared_names

_SHORT = {"execution_accuracy": "EX", "exact_set_match": "ESM", "soft_f1": "softF1",
          "row_match_f1": "rowF1", "entity_set_f1": "entF1", "json_similarity": "OJSS"}
#: (metric, header, statistic, format) of the spend columns a model's row shows when
#: recorded: formatted as the kind tables format them (tokens whole, dollars with a sign)
_SPEND: tuple[tuple[str, str, str, Callable[[float | None], str]], ...] = (
    ("prediction_seconds", "latency (s, mean)", "mean", num),
    ("completion_tokens", "tokens out", "total", tokens), ("cost_usd", "cost", "total", usd))


def _columns(agg: Mapping[str, Any],
             ) -> tuple[list[str], list[tuple[str, str, str, Callable[[float | None], str]]]]:
    """The headline metrics of the run's kinds that some model has, and the spend columns."""
    models: Mapping[str, Any] = agg.get("models") or {}
    have = {m for stats in models.values() for m in (stats.get("metrics") or {})}
    metrics: list[str] = []
    for kind in agg.get("by_kind") or {}:
        metrics.extend(m for m in declared_names(kind, "headline_metrics")
                       if m in have and m not in metrics)
    return metrics, [s for s in _SPEND if s[0] in have]


def table(agg: Mapping[str, Any], number: Callable[[float | None], str] = num,
          rate: Callable[[float | None], str] = pct) -> tuple[list[str], list[list[str]]]:
    """The models table's header and rows (cells as text)."""
    metrics, spend = _columns(agg)
    header = ["model", "cases", "pass", *[_SHORT.get(m, m) for m in metrics],
              *[h for _, h, _, _ in spend]]
    rows = []
    for model, stats in (agg.get("models") or {}).items():
        values = stats.get("metrics") or {}
        rows.append([model, str(stats.get("count")), rate(stats.get("pass_rate")),
                     *[number((values.get(m) or {}).get("mean")) for m in metrics],
                     *[show((values.get(m) or {}).get(stat)) for m, _, stat, show in spend]])
    return header, rows


def pair_text(pair: Mapping[str, Any]) -> str:
    """One pair's McNemar test as a sentence."""
    better = f"; {pair['better']} passes more" if pair.get("better") else ""
    return (f"{pair['a']} vs {pair['b']}: {pair['cases']} cases judged by both, "
            f"{pair['a_only']} passed by {pair['a']} only, {pair['b_only']} by {pair['b']} only; "
            f"exact McNemar p = {pair['p_value']:.4g}{better}")


def disagreement_text(item: Mapping[str, Any]) -> str:
    outcomes = item.get("outcomes") or {}
    said = ", ".join(f"{m} {o or 'not run'}" for m, o in outcomes.items())
    return f"{item['case']} ({said})"


def terminal_lines(agg: Mapping[str, Any], limit: int = 10) -> list[str]:
    """The models table, the pairs and up to ``limit`` disagreements; [] for one model."""
    if not agg.get("models"):
        return []
    header, rows = table(agg)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                       for i, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip()
             for r in [header, ["-" * w for w in widths], *rows]]
    cmp: Mapping[str, Any] = agg.get("model_comparison") or {}
    lines.extend(pair_text(p) for p in cmp.get("pairs") or ())
    count = int(cmp.get("disagreement_count") or 0)
    shown: Sequence[Mapping[str, Any]] = (cmp.get("disagreements") or [])[:limit]
    if count:
        more = f" (first {len(shown)})" if count > len(shown) else ""
        lines.append(f"models disagree on {count} case{'s' if count != 1 else ''}{more}:")
        lines.extend(f"  {disagreement_text(d)}" for d in shown)
    lines.append("")
    return lines


def markdown_lines(agg: Mapping[str, Any], cell: Callable[[str], str], limit: int = 50,
                   ) -> list[str]:
    """The ``## Models`` section (``cell`` escapes a table cell); [] for one model."""
    if not agg.get("models"):
        return []
    header, rows = table(agg, doc_num, doc_pct)
    out = ["## Models", "", "| " + " | ".join(header) + " |",
           "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|",
           *["| " + " | ".join(cell(c) for c in r) + " |" for r in rows], ""]
    cmp: Mapping[str, Any] = agg.get("model_comparison") or {}
    out.extend(f"- {cell(pair_text(p))}" for p in cmp.get("pairs") or ())
    count = int(cmp.get("disagreement_count") or 0)
    if count:
        shown = (cmp.get("disagreements") or [])[:limit]
        out.extend(["", f"The models disagree on {count} case{'s' if count != 1 else ''}"
                        f"{f' (the first {len(shown)})' if count > len(shown) else ''}:", "",
                    "| case | " + " | ".join(cmp.get("models") or []) + " |",
                    "|---|" + "---|" * len(cmp.get("models") or []),
                    *["| " + " | ".join([cell(str(d["case"])), *[
                        cell(str((d.get("outcomes") or {}).get(m) or "not run"))
                        for m in cmp.get("models") or []]]) + " |" for d in shown]])
    out.append("")
    return out


def html_section(agg: Mapping[str, Any], limit: int = 200) -> str:
    """The ``Models`` section of the HTML report; "" for one model."""
    if not agg.get("models"):
        return ""
    header, rows = table(agg, doc_num, doc_pct)
    cmp: Mapping[str, Any] = agg.get("model_comparison") or {}
    models: list[str] = list(cmp.get("models") or [])
    parts = ['<section id="models"><h2>Models</h2><table class="models"><thead><tr>',
             *[f"<th>{escape(h)}</th>" for h in header], "</tr></thead><tbody>"]
    parts.extend("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    parts.append("</tbody></table><ul>")
    parts.extend(f"<li>{escape(pair_text(p))}</li>" for p in cmp.get("pairs") or ())
    parts.append("</ul>")
    count = int(cmp.get("disagreement_count") or 0)
    if count:
        shown = (cmp.get("disagreements") or [])[:limit]
        parts.append(f"<p>The models disagree on {count} case{'s' if count != 1 else ''}"
                     f"{f' (the first {len(shown)})' if count > len(shown) else ''}:</p>"
                     '<table class="disagreements"><thead><tr><th>case</th>'
                     + "".join(f"<th>{escape(m)}</th>" for m in models) + "</tr></thead><tbody>")
        parts.extend("<tr><td>" + escape(str(d["case"])) + "</td>" + "".join(
            f"<td>{escape(str((d.get('outcomes') or {}).get(m) or 'not run'))}</td>"
            for m in models) + "</tr>" for d in shown)
        parts.append("</tbody></table>")
    parts.append("</section>")
    return "".join(parts)
