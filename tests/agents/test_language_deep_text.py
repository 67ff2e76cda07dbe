"""Issue 58, the forty-seventh re-probe's Q8: a 64 KB agent query judged on its text,
``SELECT 1+1+...+1 !! 1;``, crashed the pytest process (a segmentation fault, no report):
sqlglot cannot read it, DuckDB's parser refuses its depth, and ``pglast.parse_sql`` built
Python objects as deep as the tree. The statement types are read from the parser's JSON now,
without recursion. Run in a child process, whose crash is this test's failure (it failed
with -11 before)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

_SRC = str(Path(__file__).resolve().parents[2] / "src")
_SCRIPT = """
import sys
sys.path.insert(0, {src!r})
from pytest_queryeval.agents.language import sql_verdict
print(sql_verdict("SELECT 1" + "+1" * 32000 + " !! 1;", {dialect!r}).kind)
"""


@pytest.mark.parametrize("dialect", ["sqlite", "duckdb", "postgres"])
def test_a_deep_text_is_judged_without_crashing(dialect: str) -> None:
    pytest.importorskip("pglast")
    done = subprocess.run([sys.executable, "-c", _SCRIPT.format(src=_SRC, dialect=dialect)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, (done.returncode, done.stderr[-500:])
    assert done.stdout.strip() == "unknown"
