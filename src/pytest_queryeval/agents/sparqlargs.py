"""SPARQL in an agent's calls on a SPARQL datasource (``type: rdf`` or ``sparql``): the texts of
another tool's argument that are SPARQL requests.

Why a module of its own: the statement rules (:mod:`.statements`) read SQL and graph shapes,
and ``fuseki {"input": "DELETE WHERE { ?s ?p ?o }"}``, ``INSERT DATA {...}``, ``CLEAR ALL``,
``LOAD <file:///etc/passwd>`` match none of them, so on a SPARQL datasource such a call passed
``write_attempts: {max: 0}`` with 0 while the same text through ``run_query`` is refused and
counted (issue 58, the twelfth re-probe's H9). A text is a SPARQL request only when the
datasource's own guard parses it (:func:`~..sources.sparqlguard.classify`: rdflib's query and
update grammars, in its sandbox worker), so prose (``delete the temp file``, ``select the
best plot``) stays prose. Each is judged as an unrun text is, by the guard's verdict
(:func:`~..sources.sparqlguard.unrun_judge`): an update is a write attempt, a query a read
unless the datasource would refuse it for reaching outside its graph.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

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
