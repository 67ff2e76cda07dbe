"""``max_values``: what one result may carry to the pytest process, counted where the result
is made (the ladybug worker before it pickles, the copy's RESP reply and the Bolt records as
they are read), every list item and map entry counted.

The thirteenth re-probe's F1: 100,000 rows of 400 ``NULL`` (a 40 MB reply, inside every bound
the worker had) cost the pytest process 55 s and 2 GB to score. Each test here holds a source
to a small bound and checks the count at its edge, what the parent received (no row), and
where the reading stopped (the calls that read rows, counted)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Iterator
from types import CodeType
from typing import Any

import pytest

from pytest_queryeval.cypher.source import LadybugSource
from tests.fixtures.bolt_server import GRAPH
from tests.support import run_report, write_suite

pytestmark = pytest.mark.ladybug_max_values(420)

pytest.importorskip("ladybug")

#: ``n`` rows of 42 values each: the row's number, and a list (one) of 40 ``NULL``.
WIDE = ("UNWIND range(1, {n}) AS i RETURN i, "
        "list_transform(range(1, 40), x -> CAST(NULL AS INT64)) AS l")
MATRIX = "MATCH (p:Person)-[:ACTED_IN]->(:Movie {title: 'The Matrix'}) RETURN p.name"



def test_a_ladybug_result_is_counted_in_its_worker_and_none_of_it_sent_past_the_bound(ladybug):
    """420 values (10 rows of 42) is the bound: they come whole; 11 rows do not come at all
    (the worker sends no row), whatever ``max_rows`` allows."""
    whole = ladybug.execute(WIDE.format(n=10))
    assert not whole.truncated and len(whole.rows) == 10 and len(whole.rows[0][1]) == 40
    over = ladybug.execute(WIDE.format(n=11))
    assert over.truncated and over.rows == [] and over.meta == {"max_values": 420}
    assert over.cut_by() == ("holds more than 420 values (each list item and map entry "
                             "counted)", "max_values")
    # a node is one value and one per property (and its id's two parts)
    nodes = ladybug.execute("MATCH (m:Movie) RETURN m LIMIT 2")
    assert len(nodes.rows) == 2 and not nodes.truncated


def test_a_prediction_over_max_values_is_its_verdict_and_a_gold_over_it_the_suites_error(
        pytester):
    shutil.copyfile(GRAPH, pytester.path / "movies.cypher")
    cases = [{"id": "wide", "gold": MATRIX, "predicted": WIDE.format(n=100)},
             {"id": "right", "gold": MATRIX, "predicted": MATRIX},
             {"id": "wide-gold", "gold": WIDE.format(n=100), "predicted": MATRIX}]
    write_suite(pytester.path,
                {"datasources": {"movies": {"type": "ladybug", "path": "movies.cypher",
                                            "max_values": 1000}}},
                {"test_movies.yaml": {"kind": "cypher", "datasource": "movies",
                                      "cases": cases}})
    _, report = run_report(pytester, "--queryeval-no-cache")
    assert report.outcomes == {"wide": "failed", "right": "passed", "wide-gold": "error"}
    assert report.by_id["wide"]["reason"] == (
        "truncated: the predicted result holds more than 1,000 values (each list item and "
        "map entry counted) (the datasource's max_values); a partial result is never scored")
    assert "gold result holds more than 1,000 values (each list item and map entry counted) " \
           "(raise max_values)" in report.by_id["wide-gold"]["error"]


def test_max_values_is_a_positive_integer_of_the_datasource():
    from pytest_queryeval.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        LadybugSource.from_spec("movies", {"type": "ladybug", "path": "g.cypher",
                                           "max_values": 0})
    assert info.value.key == "datasources.movies.max_values"


def _calls(code: CodeType, run: Callable[[], Any]) -> tuple[Any, int]:
    """``run()``'s value and how many times the function of ``code`` was called in it (by its
    file and name: an in-process pytester run imports the plugin's modules again)."""
    seen = 0
    where = (code.co_filename, code.co_firstlineno, code.co_name)

    def profile(frame: Any, event: str, _arg: Any) -> None:
        nonlocal seen
        f = frame.f_code
        if event == "call" and (f.co_filename, f.co_firstlineno, f.co_name) == where:
            seen += 1

    sys.setprofile(profile)
    try:
        value = run()
    finally:
        sys.setprofile(None)
    return value, seen


#: On FalkorDB: 2,000 rows of 42 values.
FALKOR_WIDE = "UNWIND range(1, 2000) AS i RETURN i, [j IN range(1, 40) | null] AS l"


@pytest.fixture
def bolt_source(bolt_server: Any) -> Iterator[Callable[..., Any]]:
    pytest.importorskip("neo4j")
    from pytest_queryeval.cypher.bolt import BoltSource

    made: list[Any] = []

    def make(**spec: Any) -> Any:
        bolt_server.unstick()
        made.append(BoltSource.from_spec("graph", {"type": "bolt", "url": bolt_server.url,
                                                   "timeout": 20, "max_values": 1000, **spec}))
        return made[-1]

    yield make
    for src in made:
        src.close()
    bolt_server.unstick()


def test_the_copys_reply_is_read_no_further_than_max_values(bolt_source):
    """On the rehearsal's copy the RESP reply's rows are counted as they are parsed: the 24th
    row passes 1,000 values (24 x 42), and the 25th is never read; the copy answers the next
    query."""
    from pytest_queryeval.cypher.replies import Reading

    src = bolt_source()
    src.execute(MATRIX)  # the copy made first: its own reading is not counted
    table, rows_read = _calls(Reading.__call__.__code__, lambda: src.execute(FALKOR_WIDE))
    assert table.truncated and table.rows == [] and table.meta == {"max_values": 1000}
    assert rows_read == 24
    assert len(src.execute(MATRIX).rows) == 3


def test_bolt_records_are_read_no_further_than_max_values(bolt_source):
    """Sent to the server itself (``rehearse: false``), the records are counted as they are
    read: 24 of them, not 2,000."""
    from pytest_queryeval.cypher import values

    src = bolt_source(rehearse=False)
    table, counted = _calls(values.count.__code__, lambda: src.execute(FALKOR_WIDE))
    assert table.truncated and table.rows == [] and table.meta == {"max_values": 1000}
    assert counted == 24
    assert len(src.execute(MATRIX).rows) == 3
