"""The graph kind's registration costs a run without a graph nothing: its hooks run in every
pytest run where the plugin is installed, and once imported the sources, the guard, the cost
bounds and the Bolt client to read two names (about 0.3 s of every run, child runs of the
tests too)."""

from __future__ import annotations

import sqlite3

import pytest


def test_a_sql_suite_imports_no_graph_module_but_the_hooks(pytester: pytest.Pytester) -> None:
    con = sqlite3.connect(pytester.path / "db.sqlite")
    con.execute("CREATE TABLE t (a)")
    con.commit()
    con.close()
    pytester.makefile(".yaml", queryeval="datasources:\n  db: {type: sqlite, path: db.sqlite}\n")
    pytester.makefile(".yaml", test_sql="kind: sql\ndatasource: db\ncases:\n"
                      "- {id: one, gold: SELECT count(*) FROM t, predicted: SELECT 0}\n")
    pytester.makeconftest(
        "import sys\n"
        "def pytest_unconfigure(config):\n"
        "    names = sorted(n for n in sys.modules if n.startswith('pytest_queryeval.cypher'))\n"
        "    open('imported.txt', 'w').write(' '.join(names))\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert (pytester.path / "imported.txt").read_text().split() == [
        "pytest_queryeval.cypher", "pytest_queryeval.cypher.plugin",
        "pytest_queryeval.cypher.sourcekeys"]


def test_the_graph_types_are_registered_with_their_keys(pytester: pytest.Pytester) -> None:
    """What the hooks register is what the sources check: an unknown key of each is named."""
    pytester.makefile(".yaml", queryeval="datasources:\n"
                      "  g: {type: ladybug, path: g.cypher, colour: red}\n"
                      "  b: {type: bolt, url: 'bolt://127.0.0.1:1', shade: blue}\n")
    pytester.makefile(".yaml", test_g="kind: cypher\ndatasource: g\ncases:\n"
                      "- {id: one, gold: MATCH (n) RETURN n, predicted: MATCH (n) RETURN n}\n")
    pytester.makefile(".yaml", test_b="kind: cypher\ndatasource: b\ncases:\n"
                      "- {id: two, gold: MATCH (n) RETURN n, predicted: MATCH (n) RETURN n}\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    out = result.stdout.str() + result.stderr.str()
    assert "datasources.g.colour: unknown key(s) colour for type ladybug" in out, out
    assert "datasources.b.shade: unknown key(s) shade for type bolt" in out, out
