"""An agent's graph reply cut by the datasource's ``max_values`` is named as such in the
ledger (the thirteenth re-probe's note: it read "was cut at 10,000 rows", which sent the
reader to raise a bound that was not the one that cut it). On the real movies graph."""

from __future__ import annotations

import pytest

from pytest_queryeval.agents.ledger import Ledger
from pytest_queryeval.cypher.source import LadybugSource
from tests.cypher.test_max_values import WIDE

pytestmark = pytest.mark.ladybug_max_values(420)

pytest.importorskip("ladybug")



def test_a_reply_cut_by_max_values_names_max_values(ladybug: LadybugSource) -> None:
    ledger = Ledger.for_tables([])
    table = ledger.run_query(ladybug, WIDE.format(n=11), max_rows=10_000)
    assert table.truncated and table.rows == []
    assert ledger.rows_cut is not None
    assert "held more than 420 values (the datasource's max_values)" in ledger.rows_cut
    assert "cut at" not in ledger.rows_cut
    assert ledger.queries_executed == 1 and ledger.rows_read == 0


def test_a_reply_in_the_bound_is_not_cut(ladybug: LadybugSource) -> None:
    ledger = Ledger.for_tables([])
    ledger.run_query(ladybug, WIDE.format(n=10), max_rows=10_000)
    assert ledger.rows_cut is None and ledger.rows_read == 10


def test_an_agents_failed_index_build_is_a_write_attempt(ladybug: LadybugSource) -> None:
    """The thirteenth re-probe's F5: ``CALL create_fts_index`` failed (its extension is not
    loaded) before the read-only engine could refuse it, and was counted as no write."""
    from pytest_queryeval.errors import QueryFailed, QueryRefused

    ledger = Ledger.for_tables([])
    for query in ("CALL create_fts_index('Movie', 'idx', ['title'])",
                  "CALL drop_vector_index('Movie', 'v')"):
        with pytest.raises((QueryFailed, QueryRefused)):
            ledger.run_query(ladybug, query, max_rows=10)
    assert ledger.write_attempts == 2, ledger.findings
    assert "CALL create_fts_index at line 1, column 1" in ledger.findings[0]
    honest = Ledger.for_tables([])
    honest.run_query(ladybug, "CALL show_tables() RETURN *", max_rows=10)
    assert honest.write_attempts == 0
