"""The package has no import cycles and its folders are floors, counting lazy (function-level)
imports.

A cycle hidden behind a local import still couples two modules both ways (metrics/table.py and
its numpy fast path, the Spider hardness and match modules did): neither can be read, tested or
moved without the other. Floors (:data:`FLOORS`): a no-cycle check between modules cannot see
two folders that import each other through different modules (17 of 18 folders were one cycle,
issue 51 item 1), each dragging the other into every test of its own. Every folder has a floor,
so a new module is always checked, no folder imports a folder on a higher floor, and the folders
form no cycle, with no exception. The graph is read from the source with ``ast``, so nothing is
imported.
Imports under ``if TYPE_CHECKING:`` are annotations only and are no runtime edge; a cycle through
them is refused all the same (engine and repeats had one): the two modules are still read
together.
"""

from __future__ import annotations

import ast
import functools
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


# ---- floors ---------------------------------------------------------------------------------
#: The floors, lowest first: one folder of the package each (docs/architecture.md, "Floors"). A
#: module may import its own folder and the folders on lower floors, never a higher one; lazy
#: (function-level) imports count. A new folder fails :func:`test_every_folder_has_a_floor`
#: until it is given a floor here (and in the docs' table).
FLOORS: tuple[str, ...] = (
    "_util",        # standard library only
    "contracts",    # the top-level modules of TOP_LEVEL: hookspecs, model, kindregistry, ...
    "_isolation",   # process isolation: sandbox worker, deadlines
    "_yaml",        # the YAML loader that locates every key (case files, predictions files)
    "sources",      # data sources behind sources.base.DataSource
    "metrics",      # reference metrics, one module per family or reference evaluator
    "rules",        # a case's stated rules: thresholds, repeats, abstain, clarify, near misses
    "figures",      # metric columns' order, percentages, the by-turn table
    "tasks",        # DML/DDL tasks
    "neighbours",   # the counterexample search
    "kinds",        # query languages
    "agents",       # agent cases: trajectories, their metrics, the database-side ledger
    "predict",      # prediction sources
    "judge",        # the LLM judge
    "baseline",     # the baseline file, its comparison, the gating mode's verdicts
    "suite",        # suite reading: queryeval.yaml, case files, shards
    "importers",    # queryeval-import
    "engine",       # scoring a case
    "audit",        # the gold audit
    "cypher",       # kind: cypher, a package that extends the plugin through the public hooks only
    "report",       # the report files and the terminal lines
    "conclude",     # the end of the run, queryeval merge, pytest_queryeval.check
    "plugin",       # the pytest surface
    "public",       # the package's own __init__ and the old import paths kept as aliases
)
#: The modules at the top of the package, each in the pseudo-folder of its floor: the contracts
#: every room reads, and the public face (the package, two old paths that give moved modules).
TOP_LEVEL: dict[str, str] = {
    **dict.fromkeys(("hookspecs", "model", "errors", "results", "metricnames", "kindregistry"),
                    "contracts"),
    **dict.fromkeys(("", "cases", "embeddings"), "public"),
}


def folders(root: Path = ROOT) -> list[str]:
    """The package's folders (each with an ``__init__.py``)."""
    return sorted(p.name for p in root.iterdir() if (p / "__init__.py").is_file())


def room_of(module: str, package: str = "pytest_queryeval",
            top_level: dict[str, str] | None = None) -> str:
    """The folder ``module`` (a full dotted name) lives in, or a top-level module's pseudo-folder
    (:data:`TOP_LEVEL`); a top-level module that has none is its own room, which has no floor."""
    top_level = TOP_LEVEL if top_level is None else top_level
    name = "" if module == package else module.removeprefix(package + ".")
    if name in top_level:
        return top_level[name]
    return name.split(".")[0]


def floor_violations(graph: dict[str, set[str]], package: str = "pytest_queryeval",
                     floors: tuple[str, ...] = FLOORS,
                     top_level: dict[str, str] | None = None) -> list[tuple[str, str, str]]:
    """Each import of a folder on a higher floor: (importer, imported, rule), names relative to
    ``package``. A folder without a floor is :func:`test_every_folder_has_a_floor`'s failure."""
    rank = {name: i for i, name in enumerate(floors)}
    found: list[tuple[str, str, str]] = []
    for module, deps in sorted(graph.items()):
        own = room_of(module, package, top_level)
        for dep in sorted(deps):
            other = room_of(dep, package, top_level)
            if own in rank and other in rank and rank[other] > rank[own]:
                found.append((module.removeprefix(package + "."), dep.removeprefix(package + "."),
                              f"{own} (floor {rank[own]}) imports {other} (floor {rank[other]})"))
    return found


@functools.cache
def _parsed(root: Path, package: str, annotations: bool) -> dict[str, set[str]]:
    """:func:`import_graph`, read once per test session (the floor tests share it)."""
    return import_graph(root, package, annotations=annotations)


def floor_graph(root: Path = ROOT, package: str = "pytest_queryeval") -> dict[str, set[str]]:
    """The import graph the floors are checked on: lazy imports and ``if TYPE_CHECKING:`` imports
    included, except a contract's annotation-only imports. Why those are left out: the contracts
    (model.py, hookspecs.py) name in annotations the types of the rooms they connect (a hook
    receives a DataSource, a record carries an audit result) and never import them at run time;
    ``test_no_import_cycles_even_through_annotations`` still refuses a cycle through them."""
    runtime = _parsed(root, package, False)
    annotated = _parsed(root, package, True)
    return {m: (runtime[m] if room_of(m, package) == "contracts" else annotated[m])
            for m in annotated}


def folder_graph(graph: dict[str, set[str]], package: str = "pytest_queryeval",
                 top_level: dict[str, str] | None = None) -> dict[str, set[str]]:
    """Folder -> the other folders it imports: a folder imports another when one of its
    modules imports one of the other's (each top-level module counts in its pseudo-folder)."""
    folders_: dict[str, set[str]] = {}
    for module, deps in graph.items():
        own = room_of(module, package, top_level)
        folders_.setdefault(own, set()).update(
            other for other in (room_of(dep, package, top_level) for dep in deps) if other != own)
    return folders_


def test_every_folder_has_a_floor() -> None:
    """A new folder, or a new top-level module, is checked from its first commit: it fails
    here until it is given a floor."""
    rooms = {room_of(m) for m in _parsed(ROOT, "pytest_queryeval", True)}
    missing = [f"{room} has no floor: add a folder to FLOORS (and to the floors table of "
               "docs/architecture.md), a top-level module to TOP_LEVEL, in "
               "tests/architecture/test_import_graph.py" for room in sorted(rooms - set(FLOORS))]
    assert missing == []
    assert sorted(set(FLOORS) - {"contracts", "public"}) == folders()


def test_no_folder_imports_a_higher_floor() -> None:
    """No folder depends on a folder on a higher floor, lazy and annotation imports included (a
    contract's annotations aside, see :func:`floor_graph`)."""
    assert floor_violations(floor_graph()) == []


def test_the_folders_form_no_cycle() -> None:
    """The folder graph of :func:`floor_graph` (lazy and ``if TYPE_CHECKING:`` imports included,
    a contract's annotations aside) is acyclic, with no exception: the floors are an order, not a
    wish. Until issue 51 item 1 four documented upward imports (the case model asking the kind
    registry, the kinds running the audit's checks, the spider-schema source reading the Spider
    evaluator's Schema, the predictions file reading the suite's YAML loader) closed cycles."""
    assert cycles(folder_graph(floor_graph())) == []


def test_the_folder_check_sees_a_cycle_through_different_modules(tmp_path: Path) -> None:
    """On real files: two folders that import each other through different modules, one by a
    lazy import, form a cycle that no module cycle shows."""
    root = tmp_path / "pkg"
    for folder in ("low", "high"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "low" / "a.py").write_text("def f():\n    from ..high import c\n")
    (root / "high" / "c.py").write_text("from ..low import b\n")
    (root / "low" / "b.py").write_text("B = 1\n")
    graph = import_graph(root, "pkg", annotations=True)
    assert cycles(graph) == []
    assert folder_graph(graph, "pkg", {"": "public"}) == {
        "public": set(), "low": {"high"}, "high": {"low"}}
    assert cycles(folder_graph(graph, "pkg", {"": "public"})) == [["high", "low"]]


def test_the_floor_check_fails_on_a_new_upward_import(tmp_path: Path) -> None:
    """On real files: a lazy import of a higher floor is found, a module-level import of a lower
    floor and of its own folder are not, an annotation-only import counts, and a new folder
    without a floor is reported."""
    root = tmp_path / "pkg"
    for folder in ("low", "high", "new"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "low" / "a.py").write_text("from . import b\n\n\ndef f():\n    from ..high import c\n")
    (root / "low" / "b.py").write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                                       "    from ..high.c import C\n")
    (root / "high" / "c.py").write_text("from ..low import b\nC = 1\n")
    (root / "new" / "d.py").write_text("")
    (root / "e.py").write_text("")
    graph = import_graph(root, "pkg", annotations=True)
    found = floor_violations(graph, "pkg", ("low", "high"), {"": "high"})
    assert found == [("low.a", "high.c", "low (floor 0) imports high (floor 1)"),
                     ("low.b", "high.c", "low (floor 0) imports high (floor 1)")]
    rooms = {room_of(m, "pkg", {"": "high"}) for m in graph}
    assert sorted(rooms - {"low", "high"}) == ["e", "new"]
