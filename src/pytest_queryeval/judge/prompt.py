"""The judge's prompt: what it must see to judge well, within a budget (issue 26 item 3).

Why both queries and both results: ROSE's measurements found a judge without the gold passed
30 to 55 wrong answers where one with it passed 3, and a judge without the results has to
execute SQL in its head. The results are cut to :data:`CELL_BUDGET` cells (rows kept whole,
the first ones), with a note saying how much was left out, so a large result neither drowns the
prompt nor silently looks complete. The near-miss relaxations already found (``rows match
ignoring order``) are given as facts, not conclusions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: Cells of each result shown to the judge.
CELL_BUDGET = 200
#: Characters of one shown cell.
CELL_CHARS = 80

SQL_TEMPLATE = """You are an expert {language} reviewer. Decide whether the predicted query \
answers the question correctly. The gold query was written by an annotator and can itself be \
wrong; the results below come from executing both queries on the real database.

Question: {question}
{evidence}Schema:
{schema}

Gold query:
{gold}

Gold result ({gold_shape}):
{gold_result}

Predicted query:
{predicted}

Predicted result ({predicted_shape}):
{predicted_result}
{near_misses}
Answer with one JSON object and nothing else:
{{"category": "equivalent" | "gold_wrong" | "ambiguous" | "wrong", "reason": "<one sentence>"}}
equivalent: the prediction gives the answer the question asks for, like the gold;
gold_wrong: the prediction answers the question and the gold does not;
ambiguous: the question allows the prediction's reading;
wrong: the prediction does not answer the question.
"""


@dataclass(frozen=True)
class Shown:
    """A result as the prompt shows it."""

    text: str
    shape: str


def show_result(columns: Sequence[str], rows: Sequence[Sequence[Any]],
                budget: int = CELL_BUDGET) -> Shown:
    """The first rows that fit in ``budget`` cells, one per line, and a note when cut."""
    width = max(1, len(columns))
    keep = max(1, budget // width) if rows else 0
    lines = [" | ".join(columns)]
    for row in rows[:keep]:
        lines.append(" | ".join(_cell(v) for v in row))
    shape = f"{len(rows)} row{'s' if len(rows) != 1 else ''}, {len(columns)} column" \
            f"{'s' if len(columns) != 1 else ''}"
    if len(rows) > keep:
        lines.append(f"[cut: the first {keep} of {len(rows)} rows shown]")
    return Shown("\n".join(lines), shape)


def _cell(value: Any) -> str:
    text = "NULL" if value is None else str(getattr(value, "value", value))
    text = " ".join(text.split())
    return text if len(text) <= CELL_CHARS else text[:CELL_CHARS - 1] + "…"


def build_prompt(*, question: str, gold: str, predicted: str, gold_result: Shown,
                 predicted_result: Shown, schema: str = "", evidence: str = "",
                 near_misses: Sequence[str] = (), language: str = "SQL",
                 template: str = SQL_TEMPLATE) -> str:
    """The prompt for one case (``template`` may be a suite's own, with the same fields)."""
    facts = "".join(f"- {m}\n" for m in near_misses)
    return template.format(
        language=language, question=question.strip(),
        evidence=f"Evidence: {evidence.strip()}\n" if evidence.strip() else "",
        schema=schema.strip() or "(not available)", gold=gold.strip(),
        predicted=predicted.strip(), gold_result=gold_result.text,
        gold_shape=gold_result.shape, predicted_result=predicted_result.text,
        predicted_shape=predicted_result.shape,
        near_misses=f"\nFound by comparing the results:\n{facts}" if facts else "")
