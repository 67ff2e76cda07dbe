"""Schema hallucination (issue 30 item 7): the tables, columns and IRIs a prediction invents,
resolved against the real source's own schema (Chinook on SQLite, Soda Hall's Brick graph)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_queryeval.metrics.hallucination import (
    schema_from_ddl,
    sql_hallucination,
)
from pytest_queryeval.sources import open_source
from pytest_queryeval.sources.describe import sql_ddl


@pytest.fixture
def chinook_schema(chinook_sqlite: Path) -> dict[str, set[str]]:
    src = open_source("chinook", {"type": "sqlite", "path": str(chinook_sqlite)})
    return schema_from_ddl(sql_ddl(src), "sqlite")


@pytest.mark.parametrize(("sql", "referenced", "unknown"), [
    ("SELECT count(*) FROM Artist", 1, ()),
    ("SELECT Name FROM artist WHERE ArtistId = 1", 3, ()),  # case-insensitive, like SQLite
    ("SELECT a.Name, al.Titel FROM Artist a JOIN Album al ON a.ArtistId = al.ArtistId",
     6, ("album.titel",)),
    ("SELECT Email FROM Customers", 2, ("customers", "customers.email")),
    # a CTE's and a derived table's own columns are no schema references; a missing one is
    ("WITH t AS (SELECT ArtistId AS a FROM Artist) SELECT t.a, t.b FROM t", 3, ("t.b",)),
    ("SELECT Name, n FROM (SELECT Name, count(*) AS n FROM Genre GROUP BY Name) ORDER BY n",
     2, ()),
    # a correlated sub-query's reference to the outer table
    ("SELECT Name FROM Artist ar WHERE EXISTS (SELECT 1 FROM Album WHERE "
     "Album.ArtistId = ar.ArtistId AND ar.Foo = 1)", 6, ("artist.foo",)),
    ("SELECT Name AS n FROM Artist ORDER BY n", 2, ()),  # an output alias
])
def test_sql_references_are_resolved_against_the_schema(chinook_schema: dict[str, set[str]],
                                                         sql: str, referenced: int,
                                                         unknown: tuple[str, ...]) -> None:
    h = sql_hallucination(sql, chinook_schema, "sqlite")
    assert h is not None
    assert (h.referenced, h.unknown) == (referenced, unknown)
    assert h.rate == (len(unknown) / referenced)


def test_sql_that_is_no_query_has_no_value(chinook_schema: dict[str, set[str]]) -> None:
    assert sql_hallucination("SELEC", chinook_schema, "sqlite") is None
    assert sql_hallucination("SELECT FROM WHERE", chinook_schema, "sqlite") is None


def test_the_schema_is_the_sources_own(chinook_schema: dict[str, set[str]]) -> None:
    assert chinook_schema["invoiceline"] == {"invoicelineid", "invoiceid", "trackid",
                                             "unitprice", "quantity"}
    assert len(chinook_schema) == 11
