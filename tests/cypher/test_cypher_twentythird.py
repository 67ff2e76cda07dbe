"""Issue 58, the twenty-third hostile re-probe of the Cypher kind, on a real FalkorDB server.

The guard's tokenizer ended a ``//`` comment at every line end ``str.splitlines`` reads
(``\\r``, ``\\v``, ``\\f``, U+0085, U+2028, U+2029); FalkorDB 4.16 ends it at ``\\n`` only. So
what followed such a character up to the next line feed was code to the guard and a comment to
the server, with ``rehearse: false`` (golds too): H1, a ``WHERE`` only the guard saw sent a
returned ``date()`` and the server stopped; H2, a returned ``point()`` sent the same way let a
wrong prediction score 1.0; H3, a quote opened there hid the next line's ``CREATE`` or ``SET``
from the guard, and the server ran it. Now such a comment is refused unsent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_queryeval.cypher import guard, unwritable
from pytest_queryeval.cypher.bolt import BoltSource
from pytest_queryeval.errors import QueryRefused
from tests.fixtures.bolt_server import BoltServer, require, running_server

#: What the guard ended a ``//`` comment at and FalkorDB does not.
ENDS = {"cr": "\r", "vt": "\x0b", "ff": "\x0c", "nel": "\x85", "ls": "\u2028", "ps": "\u2029"}
P = "point({latitude: 1.5, longitude: 2.5})"
#: The re-probe's forms (c23/le*.cypher, p23_suite.py, w23_suite.py), ``{e}`` the character.
SHAPES = {
    "where-date": "MATCH (n:Movie) RETURN // c{e} 1 WHERE n.released > 0\n date() AS d LIMIT 1",
    "where-localtime": "MATCH (n:Movie) RETURN // c{e} 1 WHERE n.released > 0\n localtime() AS d",
    "where-point": "MATCH (n:Movie) RETURN // c{e} 1 WHERE n.released > 0\n " + P + " AS p, "
                   "'wrong' AS t",
    "quote-create": "MATCH (n:Movie) // c{e} '\n CREATE (m:Hacked {at: 1}) //'\n "
                    "RETURN count(n) AS c",
    "backquote-set": "MATCH (n:Movie) // c{e} `\n SET n.hacked = 3 //`\n RETURN count(n) AS c",
    "block-create": "MATCH (n:Movie) // c{e} /*\n CREATE (m:Hacked) //*/\n RETURN count(n) AS c",
}
HOSTILE = {f"{shape}-{name}": text.replace("{e}", e)
           for shape, text in SHAPES.items() for name, e in ENDS.items()}
#: Comments every engine ends alike: at a line feed, ``\r\n``, or the text's end.
HONEST = {
    "lf": "MATCH (n:Movie) // the films\nRETURN n.title AS t ORDER BY t",
    "crlf": "MATCH (n:Movie) // the films\r\nRETURN n.title AS t ORDER BY t",
    "end": "MATCH (n:Movie) RETURN n.title AS t ORDER BY t // by title",
    "in-string": "MATCH (n:Movie) WHERE n.title <> '// x\u2028y' RETURN n.title AS t ORDER BY t",
    "block": "MATCH (n:Movie) /* the\u2028films */ RETURN n.title AS t ORDER BY t",
}


def _checked(query: str) -> None:
    """What a FalkorDB server is sent with ``rehearse: false``, a gold too."""
    guard.check_server(query)
    unwritable.check_falkordb(query)


@pytest.mark.parametrize("query", list(HOSTILE.values()), ids=list(HOSTILE))
def test_a_line_comment_ended_by_another_line_end_is_refused(query: str) -> None:
    with pytest.raises(QueryRefused, match="not at a line feed"):
        _checked(query)


@pytest.mark.parametrize("query", list(HONEST.values()), ids=list(HONEST))
def test_a_comment_every_engine_ends_alike_is_sent(server: BoltServer, query: str) -> None:
    _checked(query)
    src = BoltSource.from_spec("g", {"type": "bolt", "url": server.url, "timeout": 20,
                                     "rehearse": False})
    try:
        assert len(src.execute(query).rows) == 5
    finally:
        src.close()
        server.unstick()


def test_the_hidden_write_is_not_sent_and_the_graph_is_unchanged(tmp_path: Path) -> None:
    """H3 end to end on a server of its own: before, the CREATE ran (10 :Hacked nodes)."""
    require()
    with running_server(tmp_path) as own:
        src = BoltSource.from_spec("g", {"type": "bolt", "url": own.url, "timeout": 20,
                                         "rehearse": False})
        try:
            for cid in ("quote-create-ls", "backquote-set-vt", "where-date-ls"):
                for trusted in (False, True):
                    with pytest.raises(QueryRefused, match="not at a line feed"):
                        src.execute(HOSTILE[cid], trusted=trusted)
            assert src.execute("MATCH (m:Hacked) RETURN count(m) AS c").rows == [(0,)]
            assert src.execute("MATCH (n:Movie) WHERE n.hacked IS NOT NULL "
                               "RETURN count(n) AS c").rows == [(0,)]
        finally:
            src.close()
        assert own.handshake(1.0)
