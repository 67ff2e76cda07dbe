"""What the SQL kind and the gold audit read of their context is declared on the Context
protocol (model.Context) and provided by both contexts, instead of being probed with getattr
(a renamed attribute then silently read as its default)."""

from __future__ import annotations

import ast
import typing
from importlib.util import find_spec
from pathlib import Path

from pytest_queryeval.audit import _AuditContext
from pytest_queryeval.engine import Evaluator
from pytest_queryeval.model import Context

DECLARED = ("neighbours", "neighbour_base", "auditing")


def test_the_protocol_declares_what_the_kinds_read() -> None:
    hints = typing.get_type_hints(Context)
    assert {name: hints.get(name) for name in DECLARED} == {
        "neighbours": typing.Any, "neighbour_base": typing.Any, "auditing": bool}
    run = Evaluator(neighbours="n", neighbour_base="b")
    audit = _AuditContext(run)
    assert [(c.auditing, c.neighbours, c.neighbour_base) for c in (run, audit)] == [
        (False, "n", "b"), (True, "n", "b")]


def test_no_context_attribute_is_probed_with_getattr() -> None:
    probed = []
    for module in ("pytest_queryeval.kinds.sql", "pytest_queryeval.kinds.goldchecks.query", "pytest_queryeval.audit"):
        spec = find_spec(module)
        assert spec is not None and spec.origin is not None
        path = Path(spec.origin)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr" \
                    and isinstance(node.args[0], ast.Name) and node.args[0].id == "ctx" \
                    and isinstance(node.args[1], ast.Constant) and node.args[1].value in DECLARED:
                probed.append(f"{path.name}:{node.lineno}")
    assert probed == []
