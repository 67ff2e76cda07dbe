"""The eighteenth Cypher re-probe's S3 (HIGH): the reference's ordered quick rejection sorts
each row's cells by their text, and a list of ``R`` relationships prints both ends ``R``
times: an 89-byte prediction repeating one relationship to a node of 100,000 values took 8 GB
in the pytest process. The characters the texts will take are counted before any is made;
past :data:`~pytest_queryeval.cypher.cypherbench.MAX_ROW_TEXT` the score is not decided, with
its reason. On a real ladybug graph; work is counted, never timed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_queryeval._isolation.comparison_deadline import comparison_deadline
from pytest_queryeval.cypher import cypherbench
from pytest_queryeval.cypher.source import LadybugSource

P, R = 20_000, 2_000
GOLD = "MATCH (a:A)-[r:T]->(b:A) RETURN r, a.k AS k ORDER BY k"
PRED = (f"MATCH (a:A)-[r:T]->(b:A) UNWIND range(1, {R}) AS i WITH a, collect(r) AS rs "
        "RETURN rs, a")


@pytest.fixture
def graph(tmp_path: Path) -> Iterator[LadybugSource]:
    pytest.importorskip("ladybug")
    path = tmp_path / "g.cypher"
    path.write_text("CREATE NODE TABLE A(k STRING, v INT64[], PRIMARY KEY(k));\n"
                    "CREATE REL TABLE T(FROM A TO A);\n"
                    f"CREATE (:A {{k: 'a', v: range(1000000, 1000000 + {P})}});\n"
                    "MATCH (a:A) CREATE (a)-[:T]->(a);\n")
    src = LadybugSource.from_spec("g", {"type": "ladybug", "path": str(path)})
    yield src
    src.close()


def test_repeated_relationships_printed_past_the_bound_leave_the_score_undecided(
        graph: LadybugSource, monkeypatch: pytest.MonkeyPatch) -> None:
    gold, pred = graph.execute(GOLD), graph.execute(PRED)
    contents: dict[object, object] = {}
    g_view = cypherbench.neo4j_view(gold.columns, gold.rows, contents)
    p_view = cypherbench.neo4j_view(pred.columns, pred.rows, contents)
    made: list[int] = []
    real = cypherbench._row_key

    def counting(x: object) -> str:
        text = real(x)
        made.append(len(text))
        return text

    monkeypatch.setattr(cypherbench, "_row_key", counting)
    with comparison_deadline(600):
        ex, why = cypherbench.score(PRED, GOLD, g_view, p_view)
    assert ex is None and why is not None and "characters" in why, (ex, why)
    assert sum(made) == 0, "no cell's text is made past the bound"


def test_a_small_ordered_comparison_is_the_references(graph: LadybugSource,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Under the bound, the score is what it was without one (the reference's own outcome,
    its TypeError for a relationship in a set included)."""
    small = PRED.replace(f"range(1, {R})", "range(1, 3)")
    gold, pred = graph.execute(GOLD), graph.execute(small)
    g_view = cypherbench.neo4j_view(gold.columns, gold.rows)
    p_view = cypherbench.neo4j_view(pred.columns, pred.rows)
    with comparison_deadline(600):
        bounded = cypherbench.score(small, GOLD, g_view, p_view)
        monkeypatch.setattr(cypherbench, "MAX_ROW_TEXT", 10**15)
        unbounded = cypherbench.score(small, GOLD, g_view, p_view)
    assert bounded == unbounded
    assert "characters" not in str(bounded[1])
