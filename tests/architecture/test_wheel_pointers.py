"""What a user of the wheel sees points at nothing the wheel lacks (issue 24 item 10): no
message, help text or error names a file of the repository (docs/, scripts/, tests/, bench/,
the README), and the built wheel carries the licence the package declares."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "pytest_queryeval"
POINTER = re.compile(r"(?<![\w./-])(docs|scripts|tests|bench)/|README")


def _strings(tree: ast.AST) -> list[ast.Constant]:
    """String constants that are not docstrings (docstrings are for developers)."""
    docs: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) \
                and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant):
            docs.add(id(body[0].value))
    return [n for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and id(n) not in docs]


def test_no_user_visible_text_points_into_the_repository() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in _strings(ast.parse(path.read_text(encoding="utf-8"))):
            if POINTER.search(node.value):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value[:80]!r}")
    assert found == []


@pytest.mark.slow
def test_the_wheel_carries_the_licence(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(tmp_path), str(ROOT)], check=True, timeout=600,
                   capture_output=True)
    wheel = next(tmp_path.glob("pytest_queryeval-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    licence = [n for n in names if n.endswith("LICENSE")]
    assert licence, names[-10:]
    text = zipfile.ZipFile(wheel).read(licence[0]).decode()
    assert text.startswith("MIT License")
