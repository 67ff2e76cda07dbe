"""Move src/pytest_queryeval/ into folders by capability (issue 40 item 3), and every reference.

Run from a git checkout's root: ``python scripts/relayout.py``. It is one mechanical step
with no logic change, written as a script rather than a commit so that it can run after
other branches that change the code but not where modules live are merged: it knows the
moves (:data:`MOVES`), not the code. It

1. refuses a top-level module it does not know (a module added since the script was written
   must be given a home in :data:`MOVES` or :data:`STAY` first);
2. rewrites every reference to a moved module in the tracked text files (Python, Markdown,
   TOML, YAML, Makefile, shell): absolute dotted names anywhere (imports, strings given to
   ``importlib``, ``monkeypatch.setattr``, ``python -m``, docs), relative imports (resolved to
   the module they name, mapped, written back relative to the file's new place, the bound
   names kept: ``from . import xdist_hooks`` becomes ``from . import xdist as xdist_hooks``),
   package-relative docstring references (``:mod:`..socketdeadline```) the same way, and
   file paths (``src/pytest_queryeval/engine.py``, a backticked ``kinds/sql.py``);
   layer keys of ``tests/architecture/test_import_graph.py`` (module names relative to the
   package) through the same mapping; and what a branch merged after tests/plugin/ was split
   still says of it (:data:`TEST_MOVES`);
3. ``git mv``s the files, adds the new packages' empty ``__init__.py``, and leaves a shim at each
   old path that docs/ or the README named as an import path (:func:`documented`), so user code
   written against the docs keeps working;
4. makes ``neighbours/__init__.py`` lazy (its counterexample search is imported on first use,
   as pluggy's ``__init__`` does), so ``neighbours/check.py`` costs a run without the option
   nothing;
5. merges the new text of docs/architecture.md (``scripts/relayout_architecture.md``, whose
   rooms are the folders) with whatever was changed in that doc since it was written
   (``git merge-file`` against the doc it was written from);
6. sorts the imports (``ruff check --select I --fix``).

It prints what it did. A second run finds nothing to do and changes nothing.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

PKG = "pytest_queryeval"
SRC = Path("src") / PKG

#: Old file (relative to the package) -> new file. Modules not listed stay where they are.
MOVES: dict[str, str] = {
    # the pytest surface: one package, its __init__ the hook module (the pytest11 entry point
    # ``pytest_queryeval.plugin`` keeps its name)
    "plugin.py": "plugin/__init__.py",
    "declare.py": "plugin/declare.py",
    "options.py": "plugin/options.py",
    "runner.py": "plugin/runner.py",
    "controller.py": "plugin/controller.py",
    "xdist_hooks.py": "plugin/xdist.py",
    "collect.py": "plugin/nodes.py",
    "runahead.py": "plugin/runahead.py",
    "unmatched.py": "plugin/unmatched.py",
    "finish.py": "plugin/finish.py",
    "failure_section.py": "plugin/failure_section.py",  # pytest's FAILURES section
    "shard.py": "plugin/shard.py",
    "resume.py": "plugin/resume.py",
    # suite reading
    "config.py": "suite/config.py",
    "cases.py": "suite/cases.py",
    "yamlload.py": "suite/yamlload.py",
    "suitecheck.py": "suite/checks.py",
    "pricing.py": "suite/pricing.py",
    "deprecated.py": "suite/deprecated.py",  # old spellings of suite keys and options
    # the scoring engine
    "engine.py": "engine/__init__.py",
    "casesteps.py": "engine/steps.py",
    "repeats.py": "engine/repeats.py",
    "nearmiss.py": "engine/nearmiss.py",
    "thresholds.py": "engine/thresholds.py",
    "goldcache.py": "engine/goldcache.py",
    # the SQL kind and its helpers; a helper every kind uses; the SPARQL kind's tie rewrite
    "kinds/sql.py": "kinds/sql/__init__.py",
    "kinds/_sql_case.py": "kinds/sql/case.py",
    "ties.py": "kinds/sql/ties.py",
    "results_csv.py": "kinds/sql/results_csv.py",
    "fences.py": "kinds/_fences.py",
    "ties_sparql.py": "kinds/_ties_sparql.py",
    # data sources
    "dialects.py": "sources/dialects.py",
    "clock.py": "sources/clock.py",
    "datasource_keys.py": "sources/keys.py",
    # the counterexample check beside the search it runs
    "neighbour_check.py": "neighbours/check.py",
    # metrics
    "embeddings.py": "metrics/embeddings.py",
    # the baseline's verdicts and statistics
    "verdict.py": "baseline/verdicts.py",
    "significance.py": "baseline/significance.py",
    # the end of the run (and ``queryeval merge``, which ends a sharded run in it)
    "conclude.py": "conclude/__init__.py",
    "aggregate.py": "conclude/aggregate.py",
    "merge.py": "conclude/merge.py",
    "outcome.py": "conclude/outcome.py",
    # utilities: import nothing of the package above them
    "safefile.py": "_util/safefile.py",
    "safetext.py": "_util/safetext.py",
    "boundedio.py": "_util/boundedio.py",
    "numeric.py": "_util/numeric.py",
    "paths.py": "_util/paths.py",
    "wording.py": "_util/wording.py",
    "gcpolicy.py": "_util/gcpolicy.py",
    "secrets.py": "_util/secrets.py",
    # process isolation: the sandbox worker and every deadline
    "sandbox.py": "_isolation/sandbox.py",
    "socketdeadline.py": "_isolation/socketdeadline.py",
    "predict/_httpx_deadline.py": "_isolation/httpx_deadline.py",
    "metrics/_deadline.py": "_isolation/comparison_deadline.py",
}
#: tests/plugin/ as split by capability (issue 40 item 5, committed before this script): a
#: branch merged after that split may still name the old paths, or import the SDMX helpers
#: of tests/plugin/conftest.py (now tests/sdmx_cases.py) as ``.conftest``.
TEST_MOVES: dict[str, str] = {
    "test_case_memory.py": "collection",
    "test_collection.py": "collection",
    "test_collection_rule.py": "architecture",
    "test_concurrency.py": "predictions",
    "test_context_protocol.py": "architecture",
    "test_default_thresholds.py": "engine",
    "test_failure_cost.py": "conclude",
    "test_fences.py": "predictions",
    "test_gc_freeze.py": "collection",
    "test_import_bird_livesqlbench.py": "imports",
    "test_import_cli.py": "imports",
    "test_import_graph.py": "architecture",
    "test_import_hostile.py": "imports",
    "test_import_qald_text2sparql.py": "imports",
    "test_live_answers.py": "predictions",
    "test_markers.py": "collection",
    "test_mask_url.py": "architecture",
    "test_merge_attempts.py": "shards",
    "test_merge_details.py": "shards",
    "test_merge_output.py": "shards",
    "test_module_sizes.py": "architecture",
    "test_paths.py": "architecture",
    "test_prediction_exchange.py": "predictions",
    "test_prediction_pool.py": "predictions",
    "test_predictions.py": "predictions",
    "test_reference_aggregates.py": "conclude",
    "test_repeats.py": "engine",
    "test_reports.py": "conclude",
    "test_resume.py": "shards",
    "test_shard.py": "shards",
    "test_shard_durations.py": "shards",
    "test_shard_own_reports.py": "shards",
    "test_shard_schedulers.py": "shards",
    "test_spider_table.py": "conclude",
    "test_suite_checks.py": "options",
    "test_thresholds_and_hooks.py": "engine",
    "test_validation.py": "collection",
    "test_verdict.py": "conclude",
    "test_wheel_pointers.py": "architecture",
    "test_wording.py": "architecture",
    "test_yamlload.py": "collection",
}
#: Top-level modules that stay: the package itself and the contracts every room shares.
STAY = {"__init__.py", "hookspecs.py", "model.py", "errors.py", "results.py", "metricnames.py"}
#: Top-level modules written by another change that this script may meet (none moved).
OPTIONAL_STAY: set[str] = set()
#: New packages whose __init__.py is empty (the others' __init__ is a moved module).
NEW_PACKAGES = ["suite", "_util", "_isolation"]
SHIM_MARK = "issue 40 item 3: the old import path"
ARCH_DOC = Path("docs/architecture.md")
ARCH_NEW = Path("scripts/relayout_architecture.md")
#: docs/architecture.md as scripts/relayout_architecture.md was written from (a blob of this
#: repository's history; the script maps it like the current doc before the three-way merge).
ARCH_BASE_BLOB = "c83e24ed099901f439cc73ba7bffa28a7f21151f"
IMPORT_GRAPH_TEST = Path("tests/architecture/test_import_graph.py")
TEXT_SUFFIXES = {".py", ".md", ".toml", ".cfg", ".ini", ".yml", ".yaml", ".txt", ".sh", ".rst"}
TEXT_NAMES = {"Makefile"}
SKIP = {Path("scripts/relayout.py"), ARCH_NEW}


def module_of(rel: str) -> str:
    """``kinds/sql.py`` -> ``pytest_queryeval.kinds.sql``; ``engine/__init__.py`` -> ``...engine``."""
    parts = rel[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([PKG, *parts])


MODULE_MAP = {module_of(old): module_of(new) for old, new in MOVES.items()}


def map_module(name: str) -> str:
    """The new name of a dotted module path (or of an attribute below a module): the longest
    moved module it starts with is replaced."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        head = ".".join(parts[:end])
        if head in MODULE_MAP:
            return ".".join([MODULE_MAP[head], *parts[end:]])
    return name


# ---- what is where ---------------------------------------------------------------------------

def git(*args: str, check: bool = True) -> str:
    return subprocess.run(["git", *args], check=check, capture_output=True, text=True).stdout


def is_shim(path: Path) -> bool:
    return path.is_file() and SHIM_MARK in path.read_text(encoding="utf-8")


def pending_moves() -> dict[str, str]:
    """The moves not done yet; refuses a half-done or unknown state with every problem listed."""
    problems: list[str] = []
    pending: dict[str, str] = {}
    for old, new in MOVES.items():
        src, dst = SRC / old, SRC / new
        old_here = src.is_file() and not is_shim(src)
        if old_here and dst.exists():
            problems.append(f"{src} and {dst} both exist")
        elif old_here:
            pending[old] = new
        elif not dst.exists():
            problems.append(f"{src} is missing and {dst} too")
    known = set(STAY) | OPTIONAL_STAY | {old for old in MOVES if "/" not in old}
    for path in sorted(SRC.glob("*.py")):
        if path.name not in known and not is_shim(path):
            problems.append(f"{path}: a top-level module the script does not know: give it a "
                            "home in MOVES (or STAY) of scripts/relayout.py")
    if problems:
        sys.exit("relayout: refused:\n  " + "\n  ".join(problems))
    return pending


def modules_now() -> set[str]:
    """Every module of the package as the tree stands."""
    return {module_of(p.relative_to(SRC).as_posix()) for p in SRC.rglob("*.py")}


def text_files() -> list[Path]:
    out = []
    for line in git("ls-files", "-z").split("\0"):
        path = Path(line)
        if not line or path in SKIP or not path.is_file() or path.stat().st_size > 2_000_000:
            continue
        if path.suffix in TEXT_SUFFIXES or path.name in TEXT_NAMES:
            if path.parts[:2] == ("tests", "data"):
                continue
            out.append(path)
    return out


# ---- rewriting -------------------------------------------------------------------------------

DOTTED = re.compile(rf"\b{PKG}(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
OLD_FILES = {old: new for old, new in MOVES.items()}
PATHLIKE = re.compile(r"(?P<pre>(?:src/)?" + PKG + r"/|(?<=`))(?P<rel>(?:[A-Za-z_][A-Za-z0-9_]*/)*"
                      r"[A-Za-z_][A-Za-z0-9_]*\.py)\b")


def rewrite_dotted(text: str) -> str:
    return DOTTED.sub(lambda m: map_module(m.group(0)), text)


def rewrite_paths(text: str, bare: bool = True) -> str:
    """Paths of moved files: under ``src/pytest_queryeval/`` always; backticked alone
    (```kinds/sql.py```) only with ``bare``, before the move: after it, ```cases.py``` may
    name a new file (``suite/cases.py``) as written in the folder's own terms."""
    def one(m: re.Match[str]) -> str:
        new = OLD_FILES.get(m.group("rel"))
        if new is None or not (bare or m.group("pre")):
            return m.group(0)
        return m.group("pre") + new
    return PATHLIKE.sub(one, text)


def _package_of(module: str, is_init: bool) -> str:
    return module if is_init else module.rsplit(".", 1)[0]


def _relative(from_package: str, target: str) -> tuple[int, str]:
    """(level, module) of ``from <dots><module> import`` in ``from_package`` naming ``target``."""
    here, there = from_package.split("."), target.split(".")
    common = 0
    while common < min(len(here), len(there)) and here[common] == there[common]:
        common += 1
    return len(here) - common + 1, ".".join(there[common:])


def rewrite_imports(text: str, rel_file: str | None, modules: set[str]) -> str:
    """Relative imports of a package file (``rel_file`` its old path relative to the package),
    and ``from <package> import <module>`` anywhere: resolved, mapped, written back in the style
    the statement had, each name bound as before."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    if rel_file is not None:
        old_mod = module_of(rel_file)
        old_pkg = _package_of(old_mod, rel_file.endswith("__init__.py"))
        new_rel = MOVES.get(rel_file, rel_file)
        new_pkg = _package_of(module_of(new_rel), new_rel.endswith("__init__.py"))
    moved_file = rel_file is not None and rel_file in MOVES
    lines = text.splitlines(keepends=True)
    edits: list[tuple[int, int, int, int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            if rel_file is None:
                continue
            base = old_pkg.split(".")[: len(old_pkg.split(".")) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
            if not target.startswith(PKG):
                continue
        names_full = [target, *(f"{target}.{a.name}" for a in node.names)]
        if not (moved_file and node.level) and all(map_module(n) == n for n in names_full):
            continue  # neither the file nor what it imports moves: left as written
        groups: dict[str, list[str]] = {}  # new ``from`` module -> names (with ``as``)
        for alias in node.names:
            full = f"{target}.{alias.name}"
            if full in modules:  # a submodule: it may land in another package
                new_full = map_module(full)
                parent, leaf = new_full.rsplit(".", 1)
                bound = alias.asname or alias.name
                name = leaf if bound == leaf else f"{leaf} as {bound}"
            else:
                parent, name = map_module(target), (
                    alias.name if alias.asname is None else f"{alias.name} as {alias.asname}")
            groups.setdefault(parent, []).append(name)
        if node.level:
            spelled = {}
            for parent in groups:
                level, mod = _relative(new_pkg, parent)
                spelled[parent] = "." * level + mod
        else:
            spelled = {parent: parent for parent in groups}
        original = ("." * node.level) + (node.module or "")
        if len(groups) == 1:
            (parent, names), = groups.items()
            same_names = names == [a.name if a.asname is None else f"{a.name} as {a.asname}"
                                   for a in node.names]
            if same_names:
                if spelled[parent] != original:  # only the module part changes
                    edits.append((node.lineno, node.col_offset, node.lineno, -1,
                                  spelled[parent]))
                continue
        indent = " " * node.col_offset
        new_text = ("\n" + indent).join(f"from {spelled[p]} import {', '.join(n)}"
                                        for p, n in groups.items())
        assert node.end_lineno is not None
        assert node.end_col_offset is not None
        edits.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset,
                      new_text))
    if not edits:
        return text
    for line, col, end_line, end_col, new in sorted(edits, reverse=True):
        if end_col == -1:  # the module part of ``from X import`` on the statement's line
            src_line = lines[line - 1]
            head = re.compile(r"from\s+[.\w]+")
            m = head.match(src_line, col)
            assert m is not None, src_line
            lines[line - 1] = src_line[:col] + f"from {new}" + src_line[m.end():]
            continue
        first, last = lines[line - 1], lines[end_line - 1]
        lines[line - 1: end_line] = [first[:col] + new + last[end_col:]]
    return "".join(lines)


SPHINX_REF = re.compile(r"(?P<role>:[a-z]+:`~?)(?P<dots>\.+)(?P<name>[A-Za-z_][\w.]*)`")


def rewrite_doc_refs(text: str, rel_file: str, modules: set[str]) -> str:
    """Docstring cross-references written package-relative (``:mod:`..socketdeadline```,
    ``:class:`.neighbour_check.Settings```): resolved from the file's place, mapped, written
    back from its new place. A reference that names no module of the package is left alone."""
    old_pkg = _package_of(module_of(rel_file), rel_file.endswith("__init__.py"))
    new_rel = MOVES.get(rel_file, rel_file)
    new_pkg = _package_of(module_of(new_rel), new_rel.endswith("__init__.py"))

    def one(m: re.Match[str]) -> str:
        base = old_pkg.split(".")[: len(old_pkg.split(".")) - len(m.group("dots")) + 1]
        full = ".".join([*base, m.group("name")])
        parts = full.split(".")
        if not any(".".join(parts[:end]) in modules for end in range(len(parts), 1, -1)):
            return m.group(0)
        if new_rel == rel_file and map_module(full) == full:
            return m.group(0)  # neither the file nor what it names moves
        level, rest = _relative(new_pkg, map_module(full))
        if not rest:
            return m.group(0)
        return f"{m.group('role')}{'.' * level}{rest}`"
    return SPHINX_REF.sub(one, text)


TEST_PATH = re.compile(r"\btests/plugin/(test_[a-z0-9_]+\.py)\b")
SDMX_CASES = re.compile(r"^(?P<indent>[ \t]*)from \.conftest import", re.MULTILINE)
SIBLING_TEST = re.compile(r"^(?P<indent>[ \t]*)from \.(?P<name>test_[a-z0-9_]+) import", re.MULTILINE)


def rewrite_tests(text: str, path: Path) -> str:
    """References to tests/plugin/ as it was before its split."""
    text = TEST_PATH.sub(lambda m: (f"tests/{TEST_MOVES[m.group(1)]}/{m.group(1)}"
                                    if m.group(1) in TEST_MOVES else m.group(0)), text)
    text = text.replace("tests.plugin.conftest", "tests.sdmx_cases")
    text = re.sub(r"^(?P<indent>[ \t]*)from \.\.plugin\.conftest import",
                  lambda m: f"{m.group('indent')}from tests.sdmx_cases import", text,
                  flags=re.MULTILINE)
    text = re.sub(r"\btests\.plugin\.(test_[a-z0-9_]+)\b",
                  lambda m: (f"tests.{TEST_MOVES[m.group(1) + '.py']}.{m.group(1)}"
                             if m.group(1) + ".py" in TEST_MOVES else m.group(0)), text)
    text = text.replace("tests/plugin/conftest.py", "tests/sdmx_cases.py")
    if path.suffix != ".py" or path.parts[:1] != ("tests",) or len(path.parts) != 3:
        return text
    folder = path.parts[1]
    if folder in set(TEST_MOVES.values()) and not (path.parent / "conftest.py").exists():
        text = SDMX_CASES.sub(lambda m: f"{m.group('indent')}from tests.sdmx_cases import", text)

    def sibling(m: re.Match[str]) -> str:
        name = m.group("name") + ".py"
        home = TEST_MOVES.get(name)
        if home is None or home == folder or (path.parent / name).exists():
            return m.group(0)
        return f"{m.group('indent')}from tests.{home}.{m.group('name')} import"
    return SIBLING_TEST.sub(sibling, text)


LAYER_KEY = re.compile(r"""(?P<q>["'])(?P<name>[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*)(?P=q)""")


def rewrite_layer_keys(text: str, modules: set[str]) -> str:
    """Module names relative to the package, as the layering test's module-level tables write
    them (``"safefile"``, ``"metrics._deadline"``): each string that names a moved module, in
    the module-level assignments only (a test function's own synthetic package keeps its
    names)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    tables = {line for node in tree.body if isinstance(node, ast.Assign | ast.AnnAssign)
              for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)}

    def one(m: re.Match[str]) -> str:
        full = f"{PKG}.{m.group('name')}"
        if full not in modules or full not in MODULE_MAP:
            return m.group(0)
        new = MODULE_MAP[full][len(PKG) + 1:]
        return f"{m.group('q')}{new}{m.group('q')}"
    lines = text.splitlines(keepends=True)
    return "".join(LAYER_KEY.sub(one, line) if number in tables else line
                   for number, line in enumerate(lines, start=1))


# ---- the steps -------------------------------------------------------------------------------

def documented() -> dict[str, str]:
    """Old module -> new module, for each moved module docs/ or the README name by its dotted
    path (an import path a user may have written)."""
    out: dict[str, str] = {}
    for path in [Path("README.md"), *sorted(Path("docs").glob("*.md"))]:
        if not path.is_file():
            continue
        for m in DOTTED.finditer(path.read_text(encoding="utf-8")):
            parts = m.group(0).split(".")
            for end in range(len(parts), 0, -1):
                head = ".".join(parts[:end])
                if head in MODULE_MAP and MODULE_MAP[head] != head:
                    out[head] = MODULE_MAP[head]
                    break
    return out


def shim_text(old: str, new: str) -> str:
    parent, leaf = new.rsplit(".", 1)
    level, mod = _relative(PKG, parent)
    return (f'"""Moved to :mod:`{new}`; docs named this path.\n\n'
            f"Kept by the folder move ({SHIM_MARK} keeps working): importing it gives that\n"
            "module itself, so imports and patches written against the old path reach the\n"
            'module the package uses.\n"""\n\n'
            "from __future__ import annotations\n\n"
            "import sys\n\n"
            f"from {'.' * level}{mod} import {leaf} as _moved\n\n"
            "sys.modules[__name__] = _moved\n")


LAZY_INIT = '''
from typing import TYPE_CHECKING

if TYPE_CHECKING:
{imports}

__all__ = {all_}

#: Public name -> the submodule that defines it, imported on first use (as pluggy's
#: ``__init__`` does): ``neighbours/check.py`` reads the settings of every run, and a run
#: without the option must not import the search.
_LAZY = {lazy}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {{__name__!r}} has no attribute {{name!r}}")
    from importlib import import_module

    loaded = import_module(f".{{module}}", __name__)
    # importing the submodule bound its name here (``search`` the module): every public name
    # of it is bound now, so ``search`` is the function, as with the eager import
    for public, where in _LAZY.items():
        if where == module:
            globals()[public] = getattr(loaded, public)
    return globals()[name]
'''


def make_neighbours_lazy() -> bool:
    path = SRC / "neighbours" / "__init__.py"
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    if any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body):
        return False
    eager = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.level == 1]
    if not eager:
        return False
    lazy = {a.asname or a.name: n.module for n in eager for a in n.names}
    names = [n for n in tree.body if isinstance(n, ast.Assign)
             and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)]
    all_ = sorted(lazy) if not names else ast.literal_eval(names[0].value)
    lines = text.splitlines(keepends=True)
    drop = set()
    for n in [*eager, *names]:
        assert n.end_lineno is not None
        drop.update(range(n.lineno - 1, n.end_lineno))
    first = min(drop)
    imports = "\n".join(textwrap.indent(ast.get_source_segment(text, n) or "", "    ")
                        for n in eager)
    body = LAZY_INIT.format(imports=imports, all_=repr(all_).replace("'", '"'),
                            lazy=repr(lazy).replace("'", '"'))
    kept = [line for i, line in enumerate(lines) if i not in drop]
    insert_at = first
    new = "".join(kept[:insert_at]).rstrip("\n") + "\n" + body + "".join(kept[insert_at:])
    path.write_text(new.rstrip("\n") + "\n", encoding="utf-8")
    return True


def merge_architecture_doc() -> str:
    if not ARCH_NEW.is_file() or not ARCH_DOC.is_file():
        return "docs/architecture.md: nothing to merge"
    mine = ARCH_NEW.read_text(encoding="utf-8")
    current = ARCH_DOC.read_text(encoding="utf-8")
    if current == mine:
        return "docs/architecture.md: already the moved layout's"
    base = git("cat-file", "blob", ARCH_BASE_BLOB, check=False)
    if not base:
        sys.exit(f"relayout: the blob {ARCH_BASE_BLOB} (docs/architecture.md as "
                 f"{ARCH_NEW} was written from) is not in this repository")
    base = rewrite_paths(rewrite_dotted(base))
    tmp = Path(".git") / "relayout"
    tmp.mkdir(exist_ok=True)
    (tmp / "base.md").write_text(base, encoding="utf-8")
    (tmp / "mine.md").write_text(mine, encoding="utf-8")
    done = subprocess.run(["git", "merge-file", "-L", "docs/architecture.md", "-L", "base",
                           "-L", str(ARCH_NEW), str(ARCH_DOC), str(tmp / "base.md"),
                           str(tmp / "mine.md")], capture_output=True, text=True)
    shutil.rmtree(tmp)
    if done.returncode:
        return (f"docs/architecture.md: CONFLICTS ({done.returncode}) merging {ARCH_NEW} with "
                "the doc's changes since: resolve the markers by hand")
    return "docs/architecture.md: the moved layout's rooms merged in"


def main() -> None:
    if not (SRC / "__init__.py").is_file():
        sys.exit("relayout: run from the repository's root (src/pytest_queryeval/ not found)")
    pending = pending_moves()
    modules = modules_now()
    shims = {old: new for old, new in documented().items()
             if old[len(PKG) + 1:].replace(".", "/") + ".py" in pending}
    changed: list[Path] = []
    # 1. references, with the tree as it stands (relative imports resolve where the file is)
    for path in text_files():
        text = path.read_text(encoding="utf-8")
        new = text
        if path.suffix == ".py":
            rel_file = None
            if path.parts[:2] == ("src", PKG):
                rel_file = Path(*path.parts[2:]).as_posix()
                if is_shim(path):
                    continue
            new = rewrite_imports(new, rel_file, modules)
            if rel_file is not None:
                new = rewrite_doc_refs(new, rel_file, modules)
        if path == IMPORT_GRAPH_TEST:
            new = rewrite_layer_keys(new, modules)
        new = rewrite_tests(new, path)
        new = rewrite_paths(rewrite_dotted(new), bare=bool(pending))
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(path)
            print(f"rewrote {path}")
    # 2. the moves
    for old, new in pending.items():
        (SRC / new).parent.mkdir(parents=True, exist_ok=True)
        git("mv", str(SRC / old), str(SRC / new))
        print(f"moved {SRC / old} -> {SRC / new}")
    for pkg in NEW_PACKAGES:
        init = SRC / pkg / "__init__.py"
        if not init.exists():
            init.write_text("", encoding="utf-8")
            git("add", str(init))
            print(f"created {init}")
    # 3. shims where docs named the old path
    for old, new in sorted(shims.items()):
        path = SRC / (old[len(PKG) + 1:].replace(".", "/") + ".py")
        path.write_text(shim_text(old, new), encoding="utf-8")
        git("add", str(path))
        print(f"shim {path} -> {new} (docs named {old})")
    # 4. the lazy neighbours package
    if make_neighbours_lazy():
        print(f"made {SRC / 'neighbours' / '__init__.py'} lazy")
        changed.append(SRC / "neighbours" / "__init__.py")
    # 5. the architecture doc
    if pending:
        print(merge_architecture_doc())
    # 6. imports in order, everywhere (a merge may have left a block unsorted too)
    if pending or changed or shims:
        ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
        dirs = [d for d in ("src", "tests", "bench", "scripts") if Path(d).is_dir()]
        if Path(ruff).exists():
            subprocess.run([ruff, "check", "--quiet", "--select", "I", "--fix", *dirs],
                           check=False)
            print(f"sorted imports in {' '.join(dirs)} (ruff check --select I --fix)")
        else:
            print("ruff not found: run `ruff check --select I --fix src tests bench` yourself")
    stray = sorted(Path("tests/plugin").glob("*.py")) if Path("tests/plugin").is_dir() else []
    if stray:
        print("relayout: tests/plugin/ was split by capability; give these a folder by hand "
              "(and a line in TEST_MOVES): " + ", ".join(map(str, stray)))
    if not (pending or changed or shims):
        print("relayout: nothing to do (already laid out)")
    else:
        print(f"relayout: {len(pending)} module(s) moved, {len(changed)} file(s) rewritten, "
              f"{len(shims)} shim(s)")


if __name__ == "__main__":
    main()
