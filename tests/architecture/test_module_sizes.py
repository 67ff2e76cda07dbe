"""A newcomer's house (issue 29): the hook module stays small, and a source module over 500
lines says in its docstring why it is one module."""

from __future__ import annotations

import ast
from importlib.util import find_spec
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "pytest_queryeval"


def _source(module: str) -> Path:
    """A module's file, found by its dotted name (which a folder move rewrites)."""
    spec = find_spec(module)
    assert spec is not None and spec.origin is not None
    return Path(spec.origin)


def test_the_hook_module_is_under_200_lines() -> None:
    assert len(_source("pytest_queryeval.plugin").read_text(encoding="utf-8").splitlines()) < 200


def test_a_long_module_says_why_it_is_one() -> None:
    unexplained = []
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) <= 500:
            continue
        doc = ast.get_docstring(ast.parse(text)) or ""
        if "Why one module of this size" not in doc:
            unexplained.append(str(path.relative_to(SRC)))
    assert unexplained == []


def test_no_function_is_over_60_lines() -> None:
    """A function over 60 lines does several things that its name does not say (issue 51
    item 6: 39 functions were over 60 lines, ``merge_layer`` and ``RunOptions.from_config``
    over 120): split it into the steps it takes, each named."""
    long = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > 60:
                    long.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name}: {lines}")
    assert long == []
