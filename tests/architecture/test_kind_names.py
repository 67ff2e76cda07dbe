"""Kind names stay inside kinds/ (issue 40): a module outside asks the kind what it declares
(``kinds.declares``, :mod:`pytest_queryeval.kindregistry`), never ``case.kind == "sql"``,
so that a new kind, or a plugin's, gets each behaviour by declaring it.

Read from the source with ``ast``: a comparison, a mapping or an ``or`` that mentions a kind
(``kind``, ``.kind``, ``kind_name``, ``.get("kind")``) beside a built-in kind's name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest_queryeval
from pytest_queryeval.kinds import KIND_CLASSES

SRC = Path(pytest_queryeval.__file__).parent
NAMES = frozenset(KIND_CLASSES)
#: Where a kind's own helpers live (tasks/: the SQL kind's ``task:`` cases).
INSIDE = ("kinds/", "tasks/")

#: The modules still allowed a kind name, each with why.
ALLOWED = {
    # Not a query kind: the flavour of a result table (how its cells are typed), which the
    # SQL and SPARQL kinds pass in (``alignment_metrics(..., kind="sql")``).
    "metrics/alignment.py": "a result table's flavour",
    # Not a query kind: a Spider table unit that is a subquery (``("sql", sub)``).
    "metrics/sql_hardness.py": "a Spider table unit",
    # `queryeval init --kind sql|sparql`: writes example queries in the language asked for.
    "suite/init.py": "the language of a first suite's example queries",
    # The registry itself: each built-in kind's name and module (KIND_CLASSES), a contract
    # below kinds/ because the case model asks it what a case's kind declares.
    "kindregistry.py": "the built-in kinds' table",
}


def _mentions_kind(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in ("kind", "kind_name"):
            return True
        if isinstance(sub, ast.Attribute) and sub.attr in ("kind", "kind_name"):
            return True
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) \
                and sub.func.attr == "get" and sub.args \
                and isinstance(sub.args[0], ast.Constant) and sub.args[0].value == "kind":
            return True
    return False


def _names_in(nodes: list[ast.expr]) -> bool:
    return any(isinstance(sub, ast.Constant) and sub.value in NAMES
               for node in nodes for sub in ast.walk(node))


def kind_name_lines(source: str) -> list[int]:
    """The lines of ``source`` that switch on a built-in kind's name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_mentions_kind(o) for o in operands) and _names_in(operands):
                found.append(node.lineno)
        elif isinstance(node, ast.BoolOp):
            if any(_mentions_kind(v) for v in node.values) \
                    and any(isinstance(v, ast.Constant) and v.value in NAMES
                            for v in node.values):
                found.append(node.lineno)
        elif isinstance(node, ast.Dict):
            keys = [k for k in node.keys if isinstance(k, ast.Constant) and k.value in NAMES]
            if len(keys) >= 2:
                found.append(node.lineno)
    return sorted(found)


def test_the_check_sees_a_kind_switch() -> None:
    assert kind_name_lines('if case.kind == "sql":\n    pass\n') == [1]
    assert kind_name_lines('x = kind in ("json", "sdmx")\n') == [1]
    assert kind_name_lines('k = str(data.get("kind") or "sql")\n') == [1]
    assert kind_name_lines('LANG = {"sql": "sql", "sparql": "sparql"}\n') == [1]
    assert kind_name_lines('if declares(case.kind, "conversation"):\n    pass\n') == []
    assert kind_name_lines('suite = {"kind": "sql", "cases": []}\n') == []  # an importer's output


def test_no_kind_name_outside_kinds() -> None:
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith(INSIDE) or rel in ALLOWED:
            continue
        lines = kind_name_lines(path.read_text(encoding="utf-8"))
        if lines:
            found[rel] = lines
    assert found == {}


def test_every_allowed_module_still_needs_it() -> None:
    """An exception no longer used is removed, so the list shrinks as owners move theirs."""
    stale = [rel for rel in ALLOWED
             if not kind_name_lines((SRC / rel).read_text(encoding="utf-8"))]
    assert stale == []


def test_the_declarations_are_what_their_users_relied_on() -> None:
    """The values the kinds declare are the tables the prompt and the summary held before
    (the answers' fence, the language's name, the headline columns), and each capability a
    module outside kinds/ asks is declared by the kinds it meant."""
    from pytest_queryeval.kinds import declared_names, declared_text, declares, declaring

    assert {k: declared_text(k, "fence_language") for k in sorted(NAMES)} == {
        "json": "json", "sdmx": "json", "sparql": "sparql", "sql": "sql"}
    assert {k: declared_text(k, "language_name") for k in sorted(NAMES)} == {
        "json": "JSON", "sdmx": "JSON", "sparql": "SPARQL", "sql": "SQL"}
    assert declared_names("sdmx", "headline_metrics") == (
        "macro_precision", "macro_recall", "macro_f1")
    assert declared_names("sql", "headline_metrics")[:3] == (
        "execution_accuracy", "judge_ex", "exact_set_match")
    assert declared_text("nosuch", "fence_language") is None
    assert declared_names("nosuch", "headline_metrics") == ()
    who = {cap: sorted(k for k in NAMES if declares(k, cap))
           for cap in ("judged", "result_files", "spider_details", "code_selection",
                       "json_gold", "inferred_from_conversation", "pinned_before_kinds")}
    assert who == {"judged": ["sparql", "sql"], "result_files": ["sql"],
                   "spider_details": ["sql"], "code_selection": ["sdmx"],
                   "json_gold": ["json"], "inferred_from_conversation": ["sdmx"],
                   "pinned_before_kinds": ["sql"]}
    assert declaring("inferred_from_conversation") == "sdmx"
    assert declaring("pinned_before_kinds") == "sql"


def test_the_first_declaring_hints_agree_with_the_kinds_themselves():
    """``declaring``'s hints only spare imports: each hinted kind declares the capability and
    is the first built-in kind in order that does (what asking every kind would give)."""
    from typing import get_args

    from pytest_queryeval import kindregistry

    for capability in get_args(kindregistry.Capability):
        first = next((name for name in KIND_CLASSES
                      if kindregistry.declares(name, capability)), None)
        assert kindregistry.declaring(capability) == first, capability
        hinted = kindregistry._FIRST_DECLARING.get(capability)
        assert hinted is None or hinted == first, (capability, hinted, first)
