"""The package has no import cycles and keeps its layers, counting lazy (function-level) imports.

A cycle hidden behind a local import still couples two modules both ways (metrics/table.py and
its numpy fast path, the Spider hardness and match modules did): neither can be read, tested or
moved without the other. Layers (:data:`LAYERS`, :data:`MAY_IMPORT_ONLY`, :data:`NEVER_IMPORTS`):
a no-cycle check cannot see a utility importing the report package or a source reading the
suite config, each of which drags a whole room into a module that should stand alone. The graph
is read from the source with ``ast``, so nothing is imported.
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


# ---- layers ---------------------------------------------------------------------------------
# ONE place maps module names (relative to the package) to layers. A key covers the module of
# that name and every module below it, and the longest key wins: ``"metrics"`` is the metrics
# package, ``"metrics._deadline"`` the isolation module inside it. A folder move that renames
# modules rewrites these keys (old name -> new name) and nothing else; package prefixes work as
# well as flat names (``"_util": "utilities"``, ``"_isolation.sandbox": "isolation"``). Modules
# named by no key (neighbour_check, judge, predict, tasks, ties, ...) have no layer rule.
UTILITIES, ISOLATION, CONTRACTS = "utilities", "isolation", "contracts"
SOURCES, KINDS, METRICS, REPORT = "sources", "kinds", "metrics", "report"
SUITE, ENGINE, SURFACE, END = "suite reading", "engine", "pytest surface", "end of the run"
LAYERS: dict[str, str] = {
    **dict.fromkeys(("_util.safefile", "_util.safetext", "_util.boundedio", "_util.numeric", "_util.paths", "_util.wording",
                     "_util.gcpolicy", "_util.secrets", "_util.ownedfiles"), UTILITIES),
    **dict.fromkeys(("_isolation.sandbox", "_isolation.socketdeadline", "_isolation.httpx_deadline",
                     "_isolation.comparison_deadline"), ISOLATION),
    **dict.fromkeys(("hookspecs", "model", "errors", "results", "metricnames"), CONTRACTS),
    "sources": SOURCES, "kinds": KINDS, "metrics": METRICS, "report": REPORT,
    **dict.fromkeys(("suite.config", "suite.cases", "suite.yamlload", "suite.checks", "suite.pricing"), SUITE),
    **dict.fromkeys(("engine", "engine.steps", "engine.repeats", "engine.nearmiss", "engine.thresholds", "engine.goldcache"),
                    ENGINE),
    **dict.fromkeys(("plugin", "plugin.declare", "plugin.options", "plugin.runner", "plugin.controller", "plugin.xdist",
                     "plugin.nodes", "plugin.runahead", "plugin.unmatched", "plugin.finish", "plugin.shard", "plugin.resume"), SURFACE),
    **dict.fromkeys(("conclude", "conclude.aggregate", "conclude.merge", "baseline.verdicts", "baseline.significance", "conclude.outcome",
                     "baseline"), END),
}
#: A layer here imports nothing of the package outside the layers listed: utilities only each
#: other; process isolation the utilities, each other and errors.py's exceptions (a contract).
MAY_IMPORT_ONLY: dict[str, frozenset[str]] = {
    UTILITIES: frozenset({UTILITIES}),
    ISOLATION: frozenset({UTILITIES, ISOLATION, CONTRACTS}),
}
#: The capability rooms never import suite reading, the engine, the pytest surface or the end of
#: the run: a source, a kind, a metric or a report writer is usable (and testable) without them.
NEVER_IMPORTS: dict[str, frozenset[str]] = dict.fromkeys(
    (SOURCES, KINDS, METRICS, REPORT), frozenset({SUITE, ENGINE, SURFACE, END}))
#: Edges that break a rule today, each with why it stays (importer, imported: reason). Keys are
#: module names as in LAYERS (a key covers the modules below it). A new edge fails the test; an
#: edge listed here that is gone fails it too, so the list only shrinks.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("kinds", "engine.nearmiss"): "near-miss attribution (relaxed metrics, RELAXATIONS) is scoring the "
        "kinds compute and the reports list; it is a metric helper filed under the engine, and "
        "the folder move (issue 40 item 3) decides its room",
    ("report", "engine.nearmiss"): "the reports list the near-miss relaxations (see kinds -> nearmiss)",
    ("report.records", "engine.steps"): "a case record is built from the engine's CaseOutcome: the "
        "record's shape is the engine's result (typed by issue 40 item 4)",
    ("report", "engine.repeats"): "the flaky-case line of the terminal and Markdown summaries is the "
        "repeat rules' own wording",
    ("report.terminal", "engine.thresholds"): "a failed gate is described by the threshold parser's "
        "describe_bound, the one spelling of a bound",
    ("report", "conclude.outcome"): "the run's outcome and pass-rate wording (pass_rate_text, stated) is "
        "the end of the run's verdict that every report prints",
    ("report", "baseline.verdicts"): "the baseline verdict of a case (judged_outcome, REGRESSION, ...) is "
        "what the comparison sections print",
    ("report.baseline", "baseline.significance"): "the documented report.baseline facade re-exports the "
        "significance option parser",
    ("report", "baseline.compare"): "the reports print the baseline comparison (Comparison, "
        "MetricDelta, EPSILON) that the end of the run computes",
    ("report.baseline", "baseline"): "report.baseline is the documented facade over baseline/ "
        "(docs/reports.md, API summary)",
    ("report.view_models", "conclude.models"): "queryeval view compares the models of its columns with "
        "compare_models (model_of, the McNemar pairs, the disagreements), so the page says what a "
        "multi-model run's own report says",
    ("report.view_models", "conclude.aggregate"): "queryeval view counts each model's pass rate per kind "
        "and difficulty with group_stats, the rule of every report's pass rate",
}
#: Edges that other work in progress removes; not checked for being gone.
EXPECTED_TO_GO: dict[tuple[str, str], str] = {}


def layer_of(module: str, package: str = "pytest_queryeval",
             layers: dict[str, str] | None = None) -> str | None:
    """The layer of ``module`` (a full dotted name): its longest key in ``layers``."""
    layers = LAYERS if layers is None else layers
    name = module.removeprefix(package + ".")
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        key = ".".join(parts[:end])
        if key in layers:
            return layers[key]
    return None


def _covers(key: str, module: str) -> bool:
    return module == key or module.startswith(key + ".")


def layer_violations(graph: dict[str, set[str]], package: str = "pytest_queryeval",
                     layers: dict[str, str] | None = None) -> list[tuple[str, str, str]]:
    """Each import that breaks a layer rule: (importer, imported, rule), names relative to
    ``package``. A module's own layer is always allowed (a room imports itself)."""
    found: list[tuple[str, str, str]] = []
    for module, deps in sorted(graph.items()):
        own = layer_of(module, package, layers)
        if own is None:
            continue
        for dep in sorted(deps):
            other = layer_of(dep, package, layers)
            if other is None or other == own:
                if own in MAY_IMPORT_ONLY and other is None:
                    found.append((module.removeprefix(package + "."),
                                  dep.removeprefix(package + "."),
                                  f"{own} import only {sorted(MAY_IMPORT_ONLY[own])}"))
                continue
            if own in MAY_IMPORT_ONLY and other not in MAY_IMPORT_ONLY[own]:
                rule = f"{own} import only {sorted(MAY_IMPORT_ONLY[own])}"
            elif other in NEVER_IMPORTS.get(own, ()):
                rule = f"{own} never imports {other}"
            else:
                continue
            found.append((module.removeprefix(package + "."), dep.removeprefix(package + "."),
                          rule))
    return found


def _excused(edge: tuple[str, str, str], exceptions: dict[tuple[str, str], str]) -> bool:
    return any(_covers(a, edge[0]) and _covers(b, edge[1]) for a, b in exceptions)


def test_every_layer_key_names_a_module() -> None:
    """A key that names no module (renamed, moved) would silently drop its rule."""
    names = {m.removeprefix("pytest_queryeval.") for m in import_graph()}
    stale = [k for k in [*LAYERS, *(x for edge in EXCEPTIONS for x in edge)]
             if not any(_covers(k, n) for n in names)]
    assert stale == []


def test_layers_hold() -> None:
    """Utilities and isolation import nothing above them; sources, kinds, metrics and report
    never import suite reading, the engine, the pytest surface or the end of the run, except
    the documented :data:`EXCEPTIONS`."""
    found = layer_violations(import_graph(annotations=True))
    assert [e for e in found if not _excused(e, {**EXCEPTIONS, **EXPECTED_TO_GO})] == []


def test_layer_exceptions_are_still_needed() -> None:
    """An exception whose edge is gone is removed from the list, so the list only shrinks."""
    found = layer_violations(import_graph(annotations=True))
    unused = [pair for pair in EXCEPTIONS if not _excused_by_one(pair, found)]
    assert unused == []


def _excused_by_one(pair: tuple[str, str], found: list[tuple[str, str, str]]) -> bool:
    return any(_covers(pair[0], a) and _covers(pair[1], b) for a, b, _ in found)


def test_the_layer_check_fails_on_a_new_upward_import(tmp_path: Path) -> None:
    """On real files, in the flat layout and with package prefixes: a utility importing the
    report package, an isolation module importing the engine and a kind reading the suite
    config are each found; a utility importing a utility and a kind importing a metric are
    not."""
    for util in ("safefile", "_util.safefile"):
        root = tmp_path / util.replace(".", "_")
        (root / "report").mkdir(parents=True)
        (root / "kinds").mkdir()
        for pkg in ("", "report", "kinds"):
            (root / pkg / "__init__.py").write_text("")
        if "." in util:
            (root / "_util").mkdir()
            (root / "_util" / "__init__.py").write_text("")
        util_file = root / (util.replace(".", "/") + ".py")
        util_file.write_text("def f():\n    from pkg.report.json_report import dumps\n"
                             "    from pkg import wording\n")
        (root / "wording.py").write_text("")
        (root / "report" / "json_report.py").write_text("dumps = str\n")
        (root / "sandbox.py").write_text("from . import engine\n")
        (root / "engine.py").write_text("")
        (root / "config.py").write_text("")
        (root / "kinds" / "sql.py").write_text("from .. import config\nfrom ..metrics import x\n")
        (root / "metrics.py").write_text("x = 1\n")
        layers = {util: UTILITIES, "wording": UTILITIES, "sandbox": ISOLATION, "engine": ENGINE,
                  "config": SUITE, "kinds": KINDS, "metrics": METRICS, "report": REPORT}
        found = layer_violations(import_graph(root, "pkg"), "pkg", layers)
        assert sorted(found) == sorted([
            (util, "report.json_report", "utilities import only ['utilities']"),
            ("kinds.sql", "config", "kinds never imports suite reading"),
            ("sandbox", "engine",
             "isolation import only ['contracts', 'isolation', 'utilities']"),
        ])
