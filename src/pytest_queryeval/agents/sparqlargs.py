"""SPARQL in an agent's calls on a SPARQL datasource (``type: rdf`` or ``sparql``): the texts of
another tool's argument that are SPARQL requests, and the judge of an unrun SPARQL text.

Why a module of its own: the statement rules (:mod:`.statements`) read SQL and graph shapes,
and ``fuseki {"input": "DELETE WHERE { ?s ?p ?o }"}``, ``INSERT DATA {...}``, ``CLEAR ALL``,
``LOAD <file:///etc/passwd>`` match none of them, so on a SPARQL datasource such a call passed
``write_attempts: {max: 0}`` with 0 while the same text through ``run_query`` is refused and
counted (issue 58, the twelfth re-probe's H9). A text is a SPARQL request only when the
datasource's own guard parses it (:func:`~..sources.sparqlguard.classify`: rdflib's query and
update grammars, in its sandbox worker), so prose (``delete the temp file``, ``select the
best plot``) stays prose; the judge (:func:`judge_for`) is that guard's verdict: an update is a
write attempt, a query is a read unless the datasource would refuse it for reaching outside
its graph (``SERVICE``, ``FROM <file:...>`` on a local graph).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from .lead import LEAD
from .statements import all_texts, query_tool
from .toolnames import PLUGIN_TOOLS, plugin_tool
from .trajectory import Step

#: The first word of a SPARQL request (a query's prologue or form, an update's operation):
#: only a text starting so is handed to the guard's parser.
_HEAD = re.compile(LEAD + r"(?:prefix|base|select|ask|construct|describe|insert|delete|with|"
                   r"load|clear|drop|create|add|move|copy)\b", re.IGNORECASE)
#: The guard's forms of a text that is a SPARQL request.
_REQUESTS = frozenset({"UPDATE", "SELECT", "ASK", "CONSTRUCT", "DESCRIBE"})
#: A word of a write (what an unrun text no parser reads is judged on, as the ledger does).
_WRITE_WORD = re.compile(r"\b(?:create|merge|set|delete|remove|drop|alter|detach|insert|load|"
                         r"clear|copy|move|add|export|import|install|attach)\b", re.IGNORECASE)


def sparql_requests(steps: Sequence[Step], judged: Callable[[Step], Sequence[str]]
                    ) -> list[tuple[Step, str]]:
    """The texts of each call of a tool that is neither the plugin's nor query-named (whose
    texts the replay reads already) that the SPARQL guard parses as a request, and that
    ``judged(step)`` (the texts the replay judges of it) does not hold: what a harness serving
    that tool (``fuseki``, ``graphdb``) may have run. Arguments and what the tool recorded it
    ran are both read."""
    out: list[tuple[Step, str]] = []
    for step in steps:
        if query_tool(step.name) or plugin_tool(step.name) in PLUGIN_TOOLS:
            continue
        known = {" ".join(t.split()) for t in judged(step)}
        held: object = step.arguments if step.arguments is not None else step.arguments_text
        texts = all_texts(held, 0) + (all_texts(step.executed, 0) if step.executed else [])
        for text in dict.fromkeys(texts):
            if _HEAD.match(text) and " ".join(text.split()) not in known and \
                    _form(text) in _REQUESTS:
                out.append((step, text))
    return out


def _form(text: str) -> str:
    """The guard's form of ``text`` (``UPDATE``, ``SELECT``...); ``UPDATE`` for a text too long
    or too costly for the guard to parse (the cautious side: it starts like a request)."""
    from ..errors import QueryRefused
    from ..sources.sparqlguard import classify

    try:
        return classify(text).form
    except QueryRefused:
        return "UPDATE"


def judge_for(spec: Mapping[str, object]) -> Callable[[str], str | None]:
    """The judge of an unrun text on the SPARQL datasource ``spec`` (the ledger's
    ``not_a_read``): why the datasource would refuse it (a SPARQL update; on a local graph
    without ``allow_service``, a ``SERVICE`` or a ``FROM`` graph), else None; a text the guard
    cannot parse is judged on its words, as the ledger judges any unrun text of a language
    that is not SQL."""
    local = spec.get("type") == "rdf" and spec.get("allow_service") is not True

    def judge(text: str) -> str | None:
        from ..errors import QueryRefused
        from ..sources.sparqlguard import classify

        try:
            c = classify(text)
        except QueryRefused as exc:
            return f"not parsed by the SPARQL guard: {exc.reason()}"
        if c.form == "UPDATE":
            return f"SPARQL Update: {c.problem}"
        if c.form not in _REQUESTS:
            return "judged on its words" if _WRITE_WORD.search(text) else None
        if local and c.services:
            return f"SERVICE {c.services[0]} reaches outside the local graph"
        if local and (c.from_graphs or c.from_named):
            return f"FROM {(c.from_graphs + c.from_named)[0]} names a graph outside the file"
        return None

    return judge
