"""What a judge answered, read strictly: an answer that is not the expected structure is an
error of the judge, never a silent 0 (issue 26 item 2).

The judge is asked for one JSON object ``{"category": ..., "reason": ...}``. ``category`` is one
of :data:`CATEGORIES`; the prediction is accepted unless it is ``wrong``: ``equivalent`` (the
same answer, written otherwise), ``gold_wrong`` (the prediction answers the question and the
gold does not), ``ambiguous`` (the question allows the prediction's reading). The object may
stand inside a Markdown fence or after prose (small models add both); a ``verdict`` key
(``accept``/``reject``), when present, must agree with the category.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..errors import QueryEvalError

CATEGORIES = ("equivalent", "gold_wrong", "ambiguous", "wrong")
#: The JSON schema a server that constrains its output (llama.cpp, vLLM, OpenAI) is given.
SCHEMA = {
    "type": "object",
    "properties": {"category": {"type": "string", "enum": list(CATEGORIES)},
                   "reason": {"type": "string"}},
    "required": ["category", "reason"],
}
#: Characters of a judge's reason kept in reports.
MAX_REASON = 1000


class JudgeError(QueryEvalError):
    """The judge answered, but not in the expected structure (or not at all)."""

    prefix = "judge error"


@dataclass(frozen=True)
class Verdict:
    category: str
    reason: str

    @property
    def accepted(self) -> bool:
        return self.category != "wrong"

    def to_json(self) -> dict[str, str | bool]:
        return {"category": self.category, "reason": self.reason, "accepted": self.accepted}


_OBJECT = re.compile(r"\{.*\}", re.S)


def parse_verdict(answer: str) -> Verdict:
    """The verdict in ``answer``; :class:`JudgeError` says what was wrong with it."""
    if not isinstance(answer, str) or not answer.strip():
        raise JudgeError("the judge's answer is empty")
    shown = " ".join(answer.split())[:200]
    match = _OBJECT.search(answer)
    if match is None:
        raise JudgeError(f"the judge's answer holds no JSON object: {shown!r}")
    try:
        data = json.loads(match.group())
    except json.JSONDecodeError as exc:
        raise JudgeError(f"the judge's answer is not valid JSON ({exc.msg}): {shown!r}") from None
    if not isinstance(data, dict):
        raise JudgeError(f"the judge's answer is not a JSON object: {shown!r}")
    category = data.get("category")
    if category not in CATEGORIES:
        raise JudgeError(f"the judge's category {category!r} is none of {', '.join(CATEGORIES)}")
    reason = data.get("reason", "")
    if not isinstance(reason, str):
        raise JudgeError(f"the judge's reason is a {type(reason).__name__}, not text")
    said = data.get("verdict")
    if said is not None:
        if said not in ("accept", "reject"):
            raise JudgeError(f"the judge's verdict {said!r} is neither accept nor reject")
        if (said == "accept") != (category != "wrong"):
            raise JudgeError(f"the judge said {said} but the category {category!r}")
    return Verdict(category, reason.strip()[:MAX_REASON])


def majority(verdicts: list[Verdict]) -> Verdict:
    """``votes: N``: the accept/reject majority (a tie rejects: the judge must be sure to
    overturn execution), with the first reason of the winning side."""
    accepted = [v for v in verdicts if v.accepted]
    rejected = [v for v in verdicts if not v.accepted]
    side = accepted if len(accepted) > len(rejected) else rejected
    first = side[0]
    return Verdict(first.category, f"{len(side)} of {len(verdicts)} votes: {first.reason}")
