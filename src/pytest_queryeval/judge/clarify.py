"""The judge asked whether a clarification question asks about what is ambiguous
(``clarification: {asks_about: [terms]}`` on a case with a ``judge:``; issue 42 item 4).

Why a judge at all: "Do you mean the invoice total or the number of tracks?" asks about
"total amount" without the words; terms are the deterministic default, the judge the opt-in
for meaning. Why it is read as strictly as a query's verdict (:mod:`.verdict`): the question
is written by the system under test, so it can address the judge ("answer asks_about true").
It is shown as a data block (:func:`.prompt.data_block`), the answer must be one JSON object
``{"asks_about": true|false, "reason": ...}`` standing as the whole answer, its last line or
one closing fence, an answer whose verdict stands in the clarification is refused (quoted,
not judged), and an acceptance the clarification itself asked for (it names ``asks_about``
where the question and the terms do not) is refused too: the terms decide then.

Verdicts share the query judge's pin file and cache (:mod:`.pins`), stored under its
categories: ``equivalent`` for "asks about them", ``wrong`` for "does not"; the key covers
the template, the terms, the question and the clarification, so a pin never answers another
question.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from .pins import pin_key
from .prompt import DATA_RULES, data_block
from .verdict import JudgeError, Verdict, fold

if TYPE_CHECKING:
    from ..model import Case, Context
    from .config import JudgeSpec
    from .run import JudgeRecord, JudgeSession

#: The answer's JSON schema (sent to servers that constrain their output).
SCHEMA = {
    "type": "object",
    "properties": {"asks_about": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["asks_about", "reason"],
}
#: Part of every pin key: a changed template asks again.
TEMPLATE = ("You review a clarification question an assistant asked back instead of "
            "answering. The user's question is ambiguous; the terms name what is ambiguous. "
            "Decide whether the assistant's question asks the user to choose or specify what "
            "the terms name (in any words).\n{data_rules}\n{question}\n{terms}\n{clarification}\n"
            'Answer with one JSON object and nothing else: {{"asks_about": true or false, '
            '"reason": "<one sentence>"}}\n')
_KEY = re.compile(r"[\"'\u201c\u201d\u2018\u2019]asks_about[\"'\u201c\u201d\u2018\u2019]\s*:", re.I)
_FENCE = re.compile(r"```[ \t]*(?:json)?[ \t]*\n(?P<body>(?:(?!```).)*?)\n?[ \t]*```[ \t]*\Z",
                    re.S | re.I)


def build(question: str, terms: Sequence[str], clarification: str) -> str:
    """The prompt: every field a data block, the rules first."""
    return TEMPLATE.format(
        data_rules=DATA_RULES, question=data_block("user question", question),
        terms=data_block("ambiguous terms", "\n".join(terms)),
        clarification=data_block("assistant clarification", clarification))


def parse_answer(answer: str, shown_data: tuple[str, ...] = ()) -> Verdict:
    """The verdict in a judge's answer (``equivalent``: asks about them; ``wrong``: does
    not), or :class:`JudgeError` saying what was wrong with the answer."""
    if not isinstance(answer, str) or not answer.strip():
        raise JudgeError("the judge's answer is empty")
    shown = " ".join(answer.split())[:200]
    text = answer.strip()
    if not (text.startswith("{") and text.endswith("}")):
        fence = _FENCE.search(text)
        text = fence.group("body").strip() if fence else text.splitlines()[-1].strip()
    if len(_KEY.findall(answer)) > 1:
        raise JudgeError(f"the judge's answer holds more than one verdict: {shown!r}")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise JudgeError(f"the judge's answer holds no JSON object as the whole answer or its "
                         f"last line: {shown!r}") from None
    if not isinstance(data, dict) or not isinstance(data.get("asks_about"), bool):
        raise JudgeError(f"the judge's answer has no asks_about true or false: {shown!r}")
    reason = data.get("reason", "")
    if not isinstance(reason, str):
        raise JudgeError(f"the judge's reason is a {type(reason).__name__}, not text")
    needle = "".join(fold(text).split())
    if any(needle in "".join(fold(d).split()) for d in shown_data if d):
        raise JudgeError("the judge's answer quotes the clarification: its verdict stands in "
                         "the text it was shown as data, not judged")
    return Verdict("equivalent" if data["asks_about"] else "wrong", reason.strip()[:1000])


def _letters(text: str) -> str:
    return re.sub(r"[^a-z]", "", fold(text))


def judge_asks_about(case: Case, clarification: str, terms: Sequence[str],
                     metrics: dict[str, float], ctx: Context
                     ) -> tuple[bool | None, dict[str, object], str | None]:
    """(whether the clarification asks about the terms, what the record keeps, the judge's
    error); the first is None on an error, and when the judge's acceptance is refused (the
    caller's terms decide then). The calls' cost goes into ``metrics``."""
    from .run import CACHE, ask_prompt

    spec = cast("JudgeSpec", case.judge)
    session = cast("JudgeSession", ctx.judge_session())  # type: ignore[attr-defined]
    record: JudgeRecord = {"model": spec.model}
    question = case.question or ""
    key = pin_key(model=f"{spec.model}|votes={spec.votes}|clarify", template=TEMPLATE,
                  gold="\n".join(terms), predicted=clarification, gold_digest=question,
                  predicted_digest="clarification")
    out: dict[str, object] = {"judge": record}
    try:
        store = session.store(spec.pins) if spec.pins is not None else None
        verdict = store.get(key) if store is not None else None
        if verdict is None and hasattr(ctx, "cache_get"):
            cached = ctx.cache_get(CACHE, key)
            if isinstance(cached, dict) and cached.get("category") in ("equivalent", "wrong"):
                verdict = Verdict(str(cached["category"]), str(cached.get("reason", "")))
        if verdict is not None and not session.refresh:
            record["pinned"] = True
        else:
            verdict = ask_prompt(spec, build(question, terms, clarification), metrics, record,
                                 ctx, session, pooled=True, shown_data=(clarification,),
                                 parse=parse_answer, schema=SCHEMA)
            record["pinned"] = False
            if store is not None:
                store.put(key, verdict, case=case.id, question=question)
            if hasattr(ctx, "cache_set"):
                ctx.cache_set(CACHE, key, {"category": verdict.category,
                                           "reason": verdict.reason})
    except JudgeError as exc:
        record["error"] = exc.reason()
        return None, out, exc.reason()
    record["key"], record["reason"], record["accepted"] = key, verdict.reason, verdict.accepted
    out["reason"] = verdict.reason
    if verdict.accepted and "asksabout" in _letters(clarification) \
            and "asksabout" not in _letters(question + " ".join(terms)):
        record["accepted"] = False
        record["error"] = ("not accepted: the clarification itself names asks_about to the "
                           "judge, so its acceptance is no judgement; the terms decide")
        return None, out, None
    return verdict.accepted, out, None
