"""Kind names stay inside kinds/ (issue 40): a module outside asks the kind what it declares
(``kinds.declares``, :mod:`pytest_queryeval.kinds._registry`), never ``case.kind == "sql"``,
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
    # Reports of a finished run read records, where ``kind`` is a field of the data (also in
    # ``queryeval merge``, which scores nothing): Spider's per-hardness table for SQL records,
    # the SDMX sheet, the summary's columns per kind. Left to the report writers' table.
    "conclude.py": "records: Spider's per-hardness table",
    "report/excel.py": "records: the SDMX sheet",
    "report/terminal.py": "records: the summary's columns per kind",
    # Reading a file: a case with a ``conversation`` and no ``kind`` is an SDMX case (the
    # kind inferred from the file's shape), judge and CSV result keys only where they mean
    # something. Left to the suite reader's owner.
    "cases.py": "the kind inferred from a file, keys per kind",
    # A gold audit finding on a JSON gold's error text; the judge's default kind of a pinned
    # verdict written before kinds were recorded. Left to their owners.
    "audit/__init__.py": "a JSON gold's error text",
    "judge/run.py": "an old pin's default kind",
    # The fence language and name of each kind's default system prompt.
    "predict/prompt.py": "the prompt's language per kind",
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
