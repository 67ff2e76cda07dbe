"""Prompts for a chat model, and the query taken back out of its reply.

Templates are Python format strings over :data:`PLACEHOLDERS` (``{question}``,
``{evidence}``, ``{kind}``, ``{db_id}``, ``{schema}``, ``{dialect}``); a literal brace is written twice
(``{{``). A template naming any other field is refused when the source is built, so a typo
fails the cases with its name instead of sending ``{qestion}`` to a paid model.

Few-shot examples come from other cases of the suite (the same kind; the same datasource
first), never from the case itself nor from a case asking the same question: a model shown
the gold of the question it answers would score what it was told, not what it knows.

The reply's query is the first fenced block in the kind's language (```` ```sql ````,
```` ```sparql ````, ```` ```json ````), else the first fenced block without a language,
else the first fenced block, else the whole reply; how it was found is recorded
(``details.prediction.extraction``), since a model that stops fencing its answers changes
what is scored.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Sequence
from typing import Any

from ..errors import PredictionError
from ..kindregistry import declared_text, declares
from ..model import MISSING, Case

PLACEHOLDERS = ("question", "evidence", "kind", "db_id", "schema", "dialect")

DEFAULT_SYSTEM = (
    "You translate questions into {language} for the data described by the user. Answer with "
    "exactly one {language} {what} in a ```{fence} fenced block, and nothing else."
)
#: The user message when ``prompt:`` is not given (sections without content are left out).
DEFAULT_PROMPT = "{schema_section}{evidence_section}Question: {question}"
#: The user message of a few-shot example when ``example_prompt:`` is not given.
DEFAULT_EXAMPLE_PROMPT = "{evidence_section}Question: {question}"

_FENCE = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)\n(?P<body>.*?)"
                    r"(?:(?<=\n)[ \t]*(?P=fence)[`~]*[ \t]*$|\Z)", re.DOTALL | re.MULTILINE)


def check_template(template: object, key: str) -> str:
    """``template`` itself when it is a string naming only :data:`PLACEHOLDERS`."""
    if not isinstance(template, str):
        raise PredictionError(f"predictions.{key}: must be a string (a prompt template)")
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as exc:
        raise PredictionError(f"predictions.{key}: {exc} (write a literal brace as {{{{ or "
                              "}}}})") from None
    for name in fields:
        if name not in PLACEHOLDERS:
            shown = name or "{}"
            hint = "" if shown.isidentifier() else "; write a literal brace as {{ or }}"
            raise PredictionError(f"predictions.{key}: unknown placeholder {{{shown}}} "
                                  f"(known: {', '.join('{' + p + '}' for p in PLACEHOLDERS)})"
                                  f"{hint}")
    return template


def evidence_of(case: Case) -> str:
    """``{evidence}``: the case's ``evidence`` (BIRD's hint) and ``external_knowledge``
    (LiveSQLBench's), one after the other; ``""`` when it has neither."""
    parts = [case.evidence, case.external_knowledge]
    return "\n".join(p for p in parts if p)


def fields_of(case: Case, schema: str) -> dict[str, str]:
    db_id = case.options.get("db_id", case.raw.get("db_id")) or case.datasource or ""
    return {"question": case.question or "", "evidence": evidence_of(case), "kind": case.kind,
            "db_id": str(db_id), "schema": schema, "dialect": dialect_of_case(case)}


def dialect_of_case(case: Case) -> str:
    """``{dialect}``: the SQL dialect the case's source runs (``sqlite``, ``duckdb``,
    ``postgres``; a fanned-out case's own source), empty for other kinds."""
    if case.dialect:
        return case.dialect
    from ..sources.dialects import dialect_of

    return (dialect_of(case.source_spec) or "") if case.source_spec else ""


def render(template: str | None, default: str, fields: dict[str, str]) -> str:
    if template is not None:
        return template.format_map(fields)
    schema, evidence = fields["schema"], fields["evidence"]
    return default.format(
        schema_section=f"Schema:\n{schema}\n\n" if schema else "",
        evidence_section=f"Evidence: {evidence}\n\n" if evidence else "", **fields)


def system_prompt(template: str | None, kind: str, fields: dict[str, str]) -> str:
    if template is not None:
        return template.format_map(fields)
    name = declared_text(kind, "language_name") or kind
    what = "object" if name == "JSON" else "query"
    return DEFAULT_SYSTEM.format(language=name, what=what, fence=_fence(kind) or "")


def _fence(kind: str) -> str | None:
    """The fence language a kind's answer is written in (its ``fence_language``)."""
    return declared_text(kind, "fence_language")


def gold_answer(case: Case) -> str | None:
    """The text a few-shot example answers with: its (first) gold in a fence, None for a
    case with nothing to show (no gold, a recorded result only)."""
    gold: Any = case.gold
    if declares(case.kind, "conversation"):
        gold = _sdmx_target(case)
    elif isinstance(gold, dict) and declares(case.kind, "gold_by_dialect"):  # this source's
        gold = gold.get(dialect_of_case(case), next(iter(gold.values()), None))
    if isinstance(gold, list) and declares(case.kind, "gold_alternatives"):
        gold = gold[0] if gold else None
    if gold is None or gold is MISSING:
        return None
    if not isinstance(gold, str):
        import json

        gold = json.dumps(gold, ensure_ascii=False)
    return f"```{_fence(case.kind) or ''}\n{gold.strip()}\n```"


def _sdmx_target(case: Case) -> Any:
    turns = case.raw.get("conversation")
    targets = [t["target"] for t in turns if isinstance(t, dict) and "target" in t] \
        if isinstance(turns, list) else []
    return targets[0] if len(targets) == 1 else (targets or None)


def pick_examples(case: Case, cases: Iterable[Case], count: int) -> list[Case]:
    """Up to ``count`` other cases to show as worked examples: same kind, with a gold and no
    errors, the same datasource first; never ``case`` nor one asking the same question."""
    if count <= 0:
        return []
    question = (case.question or "").strip().casefold()
    same: list[Case] = []
    other: list[Case] = []
    for c in cases:
        if c is case or c.id == case.id or c.kind != case.kind or c.errors:
            continue
        if (c.question or "").strip().casefold() == question or not c.question:
            continue
        if gold_answer(c) is None:
            continue
        (same if c.datasource == case.datasource else other).append(c)
    return (same + other)[:count]


def extract_query(reply: str, kind: str) -> tuple[str, str]:
    """``(query, how)``: the block in the kind's language, else an unlabelled one, else the
    first one, else the whole reply. PredictionError when nothing is left."""
    blocks = [(m["info"].strip().split()[0].lower() if m["info"].strip() else "", m["body"])
              for m in _FENCE.finditer(reply)]
    lang = _fence(kind) or kind
    chosen: tuple[str, str] | None = None
    how = "whole reply"
    for want, label in ((lang, f"```{lang} block"), ("", "unlabelled fenced block")):
        hit = next((b for b in blocks if b[0] == want), None)
        if hit is not None:
            chosen, how = hit, label
            break
    if chosen is None and blocks:
        chosen = blocks[0]
        how = f"```{chosen[0]} block (not {lang})"
    if chosen is not None and len(blocks) > 1:
        how += f", first of {len(blocks)} blocks"
    text = (chosen[1] if chosen is not None else reply).strip()
    if not text:
        raise PredictionError(f"the model's reply holds no query ({how} is empty): "
                              f"{_excerpt(reply)!r}")
    return text, how


def has_fenced_block(reply: str) -> bool:
    """Whether ``reply`` holds a fenced block that :func:`extract_query` would take."""
    return ("```" in reply or "~~~" in reply) and _FENCE.search(reply) is not None


def _excerpt(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "..."


def messages(system: str, examples: Sequence[tuple[str, str]], prompt: str,
             history: Sequence[dict[str, str]] = ()) -> list[dict[str, str]]:
    """The chat: the system message, each example as a user/assistant turn pair, a
    conversation's earlier turns as they were said (docs/conversations.md), the case."""
    out = [{"role": "system", "content": system}]
    for question, answer in examples:
        out += [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]
    out += [{"role": m["role"], "content": m["content"]} for m in history]
    out.append({"role": "user", "content": prompt})
    return out
