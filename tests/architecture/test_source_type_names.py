"""Source type names stay inside sources/ (issue 40): a module outside asks the type's entry
of ``sources.SOURCE_TYPES`` what it declares (``source_type(name).schema_only``), never
``spec.get("type") == "spider-schema"``, so that a new type, or a hook's, gets each behaviour
by declaring it in one place.

Read from the source with ``ast``: a comparison or an ``or`` that mentions a type (``type``,
``.type``, ``type_name``, ``source_type``, ``.get("type")``) beside a type's name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest_queryeval
from pytest_queryeval.sources import SOURCE_TYPES

SRC = Path(pytest_queryeval.__file__).parent
#: The names switched on: the table's, and the one type the SDMX kind reads itself.
NAMES = frozenset(SOURCE_TYPES) | {"sdmx-structure"}
_TYPE_WORDS = ("type", "type_name", "source_type", "source_type_name")

#: The modules still allowed a type name, each with why (none: ``sdmx-structure``, which is
#: not an entry of SOURCE_TYPES, is asked with ``sources.sdmx_structure.is_structure``).
ALLOWED: dict[str, str] = {}


def _mentions_type(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in _TYPE_WORDS:
            return True
        if isinstance(sub, ast.Attribute) and sub.attr in _TYPE_WORDS:
            return True
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) \
                and sub.func.attr == "get" and sub.args \
                and isinstance(sub.args[0], ast.Constant) and sub.args[0].value == "type":
            return True
    return False


def _names_in(nodes: list[ast.expr]) -> bool:
    return any(isinstance(sub, ast.Constant) and sub.value in NAMES
               for node in nodes for sub in ast.walk(node))


def type_name_lines(source: str) -> list[int]:
    """The lines of ``source`` that switch on a datasource type's name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_mentions_type(o) for o in operands) and _names_in(operands):
                found.append(node.lineno)
        elif isinstance(node, ast.BoolOp) and any(_mentions_type(v) for v in node.values) \
                and any(isinstance(v, ast.Constant) and v.value in NAMES for v in node.values):
            found.append(node.lineno)
    return sorted(found)


def test_the_check_sees_a_type_switch() -> None:
    assert type_name_lines('if spec.get("type") == "spider-schema":\n    pass\n') == [1]
    assert type_name_lines('x = src.type != "sqlite"\n') == [1]
    assert type_name_lines('x = source_type in ("rdf", "sparql")\n') == [1]
    assert type_name_lines('t = spec.get("type") or "sqlite"\n') == [1]
    assert type_name_lines('if spec.get("type") == "sdmx-structure":\n    pass\n') == [1]
    assert type_name_lines('if source_type(spec.get("type")).schema_only:\n    pass\n') == []
    # a dialect is not a type: the name a gold: mapping uses
    assert type_name_lines('d = dialect if dialect in ("sqlite", "duckdb") else None\n') == []


def test_no_type_name_outside_sources() -> None:
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("sources/") or rel in ALLOWED:
            continue
        lines = type_name_lines(path.read_text(encoding="utf-8"))
        if lines:
            found[rel] = lines
    assert found == {}


def test_every_allowed_module_still_needs_it() -> None:
    stale = [rel for rel in ALLOWED
             if not type_name_lines((SRC / rel).read_text(encoding="utf-8"))]
    assert stale == []


def test_the_declarations_are_what_the_switches_said() -> None:
    """The fields that replaced a type name name the types the switches named."""
    def having(field: str) -> set[str]:
        return {name for name, entry in SOURCE_TYPES.items() if getattr(entry, field)}

    assert having("schema_only") == {"spider-schema"}
    assert having("sqlite_file") == {"sqlite"}
    assert set(SOURCE_TYPES) - having("empty_result_scores_zero") == {"sqlite"}
