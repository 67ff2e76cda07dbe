"""Which kinds exist and what each declares: a leaf (it imports nothing of the package), so
that the case model and the modules above it ask a kind what it can do without a kind name
of their own and without an import cycle. A contract, on the floor of :mod:`.model` (whose
``Case.golds`` and ``Case.json_input`` ask it), below kinds/, whose modules it imports only by
name when a kind is first asked for (:data:`KIND_CLASSES`).

A kind's capabilities are class attributes of its object, all optional (False when a kind,
such as a ``pytest_queryeval_kinds`` one, does not declare them):

``gold_alternatives``
    a list ``gold:`` is several acceptable golds, the best scoring one wins (SQL, SPARQL);
    elsewhere a list is one gold value (a JSON array).
``gold_by_dialect``
    a mapping ``gold:`` is one gold per SQL dialect, the datasource's chosen (SQL).
``conversation``
    a case is a ``conversation:`` whose turns carry the targets and may carry inline
    predictions (SDMX): predictors receive its turns, reports show the turns' targets.
``conversation_turns``
    a case may be a ``conversation:`` of user turns, each turn with a gold scored as one case
    of this kind (SQL, SPARQL, JSON; :mod:`.suite.conversation`, docs/conversations.md).
``json_answers``
    a prediction is a JSON value: a text the model returns is parsed when it is JSON (JSON,
    SDMX).
``json_gold``
    ``gold:`` is JSON text: its "gold: not JSON" error is an audit's ``invalid-json``
    finding (JSON).
``inferred_from_conversation``
    a case file with a ``conversation:`` and no ``kind:`` is of this kind (SDMX).
``judged``
    the LLM judge may compare its query results (SQL, SPARQL).
``result_files``
    ``gold_result:``/``predicted_result:`` may name CSV files (SQL, Spider 2.0's).
``spider_details``
    its records carry Spider's per-case details, aggregated by Spider's own per-hardness
    table (SQL).
``code_selection``
    it scores a selection of codes by macro precision, recall and F1: the Excel report
    lists its cases on the "SDMX overview" sheet (SDMX).
``pinned_before_kinds``
    a judge pin written before pins recorded their kind is of this kind (SQL, the only one
    judged then).

and values, read with :func:`declared_text` and :func:`declared_names`:

``fence_language``
    the language of the code fence of its default system prompt and few-shot answers.
``language_name``
    what its default system prompt and the judge's prompt call the language the model
    answers in (a kind that declares none: its name in capitals).
``query_syntax``
    the syntax whose comments the judge leaves out of a prediction (``sql``, ``sparql``); a
    kind that declares none or another has its prediction shown as written, never read as
    SQL. (The gold audit asks the kind's method ``query_rules()`` for its text rules:
    ``audit.query.SQL_RULES``, ``SPARQL_RULES``; a kind without it gets none.)
``headline_metrics``
    the metrics the terminal summary shows for it (others are in JSON, Excel, HTML).
``query_keywords``
    the words (upper case) a query of its language starts with: a text that starts with one
    is a query, never matched by ``abstain_patterns`` (:func:`.engine.abstain.pattern_abstention`).

Records a report reads carry the kind as a string: asking imports the kind's module, which
imports no heavy library at module level (``python -X importtime``: tens of milliseconds).
"""

from __future__ import annotations

import importlib
import sys
from typing import Literal

#: The capabilities a kind may declare (see the module docstring).
Capability = Literal["gold_alternatives", "gold_by_dialect", "conversation",
                     "conversation_turns", "json_answers",
                     "json_gold", "inferred_from_conversation", "judged", "result_files",
                     "spider_details", "code_selection", "pinned_before_kinds"]
#: The text values a kind may declare.
TextDeclaration = Literal["fence_language", "language_name", "query_syntax"]
#: The name lists a kind may declare.
NamesDeclaration = Literal["headline_metrics", "query_keywords"]

#: Built-in kinds as ``module:Class`` so that heavy imports stay lazy.
KIND_CLASSES: dict[str, str] = {
    "sql": "pytest_queryeval.kinds.sql:SqlKind",
    "sparql": "pytest_queryeval.kinds.sparql:SparqlKind",
    "json": "pytest_queryeval.kinds.json:JsonKind",
    "sdmx": "pytest_queryeval.kinds.sdmx:SdmxKind",
}

_instances: dict[str, object] = {}
#: Kinds registered by plugins or conftests (``pytest_queryeval_kinds``).
_extra: dict[str, object] = {}


def register(name: str, kind: object) -> None:
    """Add a kind (an instance, a class or a ``module:Class`` string) under ``name``; later
    registrations win. The built-in entry registered again (the ``pytest_queryeval_kinds``
    hook's default implementation returns :data:`KIND_CLASSES`) changes nothing."""
    if KIND_CLASSES.get(name) == kind:
        return
    _extra[name] = kind
    _instances.pop(name, None)


def unregister(name: str) -> None:
    """Forget a registered kind (a session's conftest kinds must not leak into the next)."""
    _extra.pop(name, None)
    _instances.pop(name, None)


def known_kinds() -> list[str]:
    return sorted(set(KIND_CLASSES) | set(_extra))


def loaded_kinds() -> frozenset[str]:
    """The kinds whose object exists already (asking them imports nothing)."""
    return frozenset(name for name, inst in _instances.items() if _current(name, inst))


def _current(name: str, inst: object) -> bool:
    """Whether a cached instance of a kind named by ``module:Class`` is still of the class
    that module holds now. pytester's in-process runs remove from ``sys.modules`` what a run
    imported: an instance kept from an earlier run ran its own module's code beside the
    modules the next run imported anew, two copies of one module's state. The comparison
    deadline (a ContextVar) was set in one copy and read in the other: a ``timeout: 0.001``
    comparison ran to its work budget instead (order-dependent, under ``-n 2``)."""
    spec = _extra[name] if name in _extra else KIND_CLASSES.get(name)
    if not isinstance(spec, str):
        return True
    module, _, cls = spec.partition(":")
    return type(inst) is getattr(sys.modules.get(module), cls, None)


def kind_object(name: str) -> object:
    """The (cached) kind instance; raises KeyError for an unknown kind name."""
    inst = _instances.get(name)
    if inst is not None and _current(name, inst):
        return inst
    obj = _extra[name] if name in _extra else KIND_CLASSES.get(name)
    if obj is None:
        raise KeyError(name)
    if isinstance(obj, str):
        module, _, cls = obj.partition(":")
        obj = getattr(importlib.import_module(module), cls)
    inst = obj() if isinstance(obj, type) else obj
    _instances[name] = inst
    return inst


def declares(kind: str, capability: Capability) -> bool:
    """Whether the kind named ``kind`` declares ``capability``; False for an unknown or
    unimportable kind (its cases report what is wrong with it)."""
    try:
        return getattr(kind_object(kind), capability, False) is True
    except (KeyError, ImportError):
        return False


def declared_text(kind: str, name: TextDeclaration) -> str | None:
    """The text the kind named ``kind`` declares as ``name``; None when it declares none or
    is unknown."""
    try:
        value = getattr(kind_object(kind), name, None)
    except (KeyError, ImportError):
        return None
    return value if isinstance(value, str) else None


def declared_names(kind: str, name: NamesDeclaration) -> tuple[str, ...]:
    """The names the kind named ``kind`` declares as ``name``; none when it declares none or
    is unknown."""
    try:
        value = getattr(kind_object(kind), name, None)
    except (KeyError, ImportError):
        return ()
    return tuple(value) if isinstance(value, tuple) else ()


#: Where :func:`declaring` looks first: the built-in kind known to declare the capability, so
#: that a suite of that kind alone imports no other kind to find it (an SDMX suite imported the
#: SQL, SPARQL and JSON kinds). Only a hint: the kind's class is asked, and the hinted kind
#: must come first of those that declare it (tests/kinds/test_kind_registry.py checks both).
_FIRST_DECLARING: dict[str, str] = {"inferred_from_conversation": "sdmx",
                                    "pinned_before_kinds": "sql"}


def declaring(capability: Capability) -> str | None:
    """The first built-in kind (in :data:`KIND_CLASSES`' order) that declares
    ``capability``, for a record or a file that names no kind; None when none does."""
    hinted = _FIRST_DECLARING.get(capability)
    if hinted is not None and declares(hinted, capability):
        return hinted
    return next((name for name in KIND_CLASSES if declares(name, capability)), None)
