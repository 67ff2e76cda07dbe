"""The atomic write (a temporary file, ``fsync``, a rename over the target) exists once, in
``_util/safefile.py`` (``atomic_output``, ``write_atomic``), issue 51 item 6.

Each copy had its own idea of where the temporary goes, whether it is synced, what happens to a
special file at the path and who cleans up after a crash (the report writers, the shared gold
cache, the embedding cache, the answers xdist workers exchange); a fix to one never reached the
others. Read from the source with ``ast``: a rename over a path (``os.replace``, ``os.rename``,
``Path.replace(target)``, ``Path.rename(target)``), an ``fsync`` or a ``mkstemp`` anywhere else
fails, except :data:`ALLOWED`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest_queryeval

ROOT = Path(pytest_queryeval.__file__).parent
HOME = "_util/safefile.py"
#: Other modules that may call one of these, each with why (module, call: reason).
ALLOWED: dict[tuple[str, str], str] = {
    ("plugin/journal.py", "fsync"): "the journal is appended to, never renamed: it is synced at "
        "most once a second and when closed, so a crash loses at most a second of records",
}


def _on_module(owner: ast.expr) -> bool:
    return isinstance(owner, ast.Name) and owner.id in ("os", "tempfile")


def _a_temporary(owner: ast.expr) -> bool:
    """A receiver that names a temporary file (``tmp.replace(target)``,
    ``Path(tmp).rename(target)``, ``target.with_name(...).replace(target)``); another object's
    ``replace`` (a string's, a datetime's, a syntax tree node's) is not one."""
    if isinstance(owner, ast.Call):
        func = owner.func
        return (isinstance(func, ast.Name) and func.id == "Path") or (
            isinstance(func, ast.Attribute) and func.attr in ("with_name", "with_suffix"))
    return isinstance(owner, ast.Name) and any(w in owner.id.lower() for w in ("tmp", "temp"))


def atomic_calls(root: Path = ROOT) -> list[tuple[str, str, int]]:
    """(module path, call, line) of each rename over a path, fsync and mkstemp in ``root``."""
    found: list[tuple[str, str, int]] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            name, owner = node.func.attr, node.func.value
            if name in ("fsync", "mkstemp", "replace", "rename") and (
                    _on_module(owner) or (name in ("replace", "rename") and _a_temporary(owner))):
                found.append((rel, name, node.lineno))
    return found


def test_the_atomic_write_exists_once() -> None:
    elsewhere = [(rel, call, line) for rel, call, line in atomic_calls()
                 if rel != HOME and (rel, call) not in ALLOWED]
    assert elsewhere == []
    assert {call for rel, call, _ in atomic_calls() if rel == HOME} == {"replace", "fsync"}


def test_the_checker_finds_a_copy(tmp_path: Path) -> None:
    """On real source: a hand-made temporary file renamed into place is found, in each
    spelling; a string's replace is not."""
    (tmp_path / "copy.py").write_text(
        "import os, tempfile\nfrom pathlib import Path\n\n\ndef w(p: Path) -> None:\n"
        "    fd, tmp = tempfile.mkstemp()\n    os.fsync(fd)\n    os.replace(tmp, p)\n"
        "    Path(tmp).replace(p)\n    p.name.replace('a', 'b')\n    node.replace(p)\n")
    assert atomic_calls(tmp_path) == [("copy.py", "mkstemp", 6), ("copy.py", "fsync", 7),
                                      ("copy.py", "replace", 8), ("copy.py", "replace", 9)]


def test_every_allowed_call_is_still_made() -> None:
    made = {(rel, call) for rel, call, _ in atomic_calls()}
    assert [key for key in ALLOWED if key not in made] == []
