"""The package has no import cycles, counting lazy (function-level) imports too.

A cycle hidden behind a local import still couples two modules both ways (metrics/table.py and
its numpy fast path, the Spider hardness and match modules did): neither can be read, tested or
moved without the other. The graph is read from the source with ``ast``, so nothing is imported.
Imports under ``if TYPE_CHECKING:`` are annotations only and are no runtime edge; a cycle through
them is refused all the same (engine and repeats had one): the two modules are still read
together.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest_queryeval

ROOT = Path(pytest_queryeval.__file__).parent


def _modules(root: Path, package: str) -> dict[str, tuple[Path, bool]]:
    out: dict[str, tuple[Path, bool]] = {}
    for path in root.rglob("*.py"):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


def _is_type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _runtime_nodes(tree: ast.AST, annotations: bool = False) -> list[ast.AST]:
    """Every node except the bodies of ``if TYPE_CHECKING:`` blocks (with them if
    ``annotations``)."""
    out: list[ast.AST] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        out.append(node)
        if _is_type_checking(node) and not annotations:
            stack.extend(getattr(node, "orelse", []))
            continue
        stack.extend(ast.iter_child_nodes(node))
    return out


def import_graph(root: Path = ROOT, package: str = "pytest_queryeval", *,
                 annotations: bool = False) -> dict[str, set[str]]:
    """Module -> the package modules it imports anywhere in its source (``from . import x``
    counts as importing ``x``); ``annotations``: the ``if TYPE_CHECKING:`` imports too."""
    mods = _modules(root, package)
    graph: dict[str, set[str]] = {}
    for name, (path, is_pkg) in mods.items():
        package = name if is_pkg else name.rsplit(".", 1)[0]
        deps: set[str] = set()
        for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8")), annotations):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                # ``from pkg import sub`` imports the submodule; ``from pkg import name``, pkg
                candidates = [f"{target}.{a.name}" if f"{target}.{a.name}" in mods else target
                              for a in node.names]
            elif isinstance(node, ast.Import):
                candidates = [a.name for a in node.names]
            else:
                continue
            # a module's own packages are initialised before it: never an edge of a cycle
            deps.update(c for c in candidates if c in mods and c != name
                        and not name.startswith(c + "."))
        graph[name] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp: list[str] = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_checker_sees_a_lazy_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


def test_graph_reads_relative_and_lazy_imports() -> None:
    graph = import_graph()
    assert "pytest_queryeval.metrics._table_fast" in graph["pytest_queryeval.metrics.table"]
    assert "pytest_queryeval.metrics.table" in graph["pytest_queryeval.kinds.sql"]
    assert "pytest_queryeval.metrics" not in graph["pytest_queryeval.metrics.table"]
    # model.py imports sources.base for annotations only
    assert "pytest_queryeval.sources.base" not in graph["pytest_queryeval.model"]


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_no_import_cycles_even_through_annotations() -> None:
    assert cycles(import_graph(annotations=True)) == []


def test_the_checker_finds_lazy_and_annotation_cycles_in_source(tmp_path: Path) -> None:
    """On real files: a cycle closed by an import inside a function fails the check, and one
    closed by an ``if TYPE_CHECKING:`` import fails the annotations check."""
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "a.py").write_text("from .b import B\n\n\ndef f():\n    from . import c\n")
    (tmp_path / "b.py").write_text("B = 1\n\n\ndef g():\n    from .a import f\n")
    (tmp_path / "c.py").write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                                   "    from .a import f\n")
    assert cycles(import_graph(tmp_path, "pkg")) == [["pkg.a", "pkg.b"]]
    assert cycles(import_graph(tmp_path, "pkg", annotations=True)) == [["pkg.a", "pkg.b",
                                                                         "pkg.c"]]
