"""Issue 58, the nineteenth hostile re-probe of the Cypher kind, on a real FalkorDB server with
``rehearse: false`` (each prediction sent to the server itself).

B5: FalkorDB's Bolt listener writes a message over 64 KiB as one chunk whose 16-bit size is
cut, and the driver reads the rest of the message as further chunks and messages. A 453-byte
prediction (a list of large integers: eight free bytes each) forged its own reply and left two
complete forged replies on the pooled connection: the next case's wrong prediction passed. Now
a prediction runs on a connection of its own, dropped after it, and a reply for which the
server sent more than 65,535 bytes is not read (:mod:`pytest_queryeval.cypher.boltalone`).
B3b: a driver error once the query was sent (``ValueError: Nothing to unpack``) was the
datasource's configuration error; it is the query's failure."""

from __future__ import annotations

import socket
import struct
import sys
import threading

import pytest

from pytest_queryeval.cypher import boltalone
from pytest_queryeval.cypher.bolt import BoltSource
from pytest_queryeval.errors import QueryFailed, ReadRefused
from tests.cypher.test_bolt import run_on_server
from tests.fixtures.bolt_server import BoltServer

_FILL = bytes([1] * 7 + [0xC8])  # seven tiny ints and an INT_8 that eats the next int's marker
_SUCCESS = bytes.fromhex("00000005b170a001")  # the end of a chunk; SUCCESS {}
_Item = tuple[str, bytes, str] | None


def _next_query(value: int) -> list[_Item]:
    """The forged replies of one query sent after the prediction: BEGIN, RUN, PULL, ROLLBACK."""
    h = bytes.fromhex
    return [("i", h("00000007b170a001"), ""), ("i", h("010100000010b170"), ""),
            ("v", h("a186") + b"fields" + h("918163"), "{fields: ['c']}"),
            ("i", h("010100000006b171"), ""),
            ("v", h("91c8") + struct.pack(">b", value), f"[{value}]"), ("i", _SUCCESS, "")]


def _failure(code: str) -> list[_Item]:
    """A FAILURE the server never sent, then SUCCESS for what the driver sends after it."""
    def text(t: str) -> bytes:
        b = t.encode()
        return (bytes([0x80 + len(b)]) if len(b) < 16 else b"\xd0" + bytes([len(b)])) + b

    body = b"\xa2" + text("neo4j_code") + text(code) + text("message") + text("forged")
    head = bytes.fromhex("01010000") + bytes([0, 2 + len(body) + 1]) + bytes.fromhex("b17f")
    literal = "{neo4j_code: '" + code + "', message: 'forged'}"
    return [("i", head, ""), ("v", body, literal),
            *[("i", _SUCCESS, "")] * 4]


def forge(design: list[_Item], junk: int = 6) -> str:
    """The re-probe's b5_desync/craft.py (and craft_fail.py): a prediction whose one-row
    reply is a Bolt message of 65,544 bytes, which FalkorDB frames with the size 8; read on
    from there by the driver, its bytes are a chunk of ``junk`` * 256 + 0xCB filler bytes, the
    prediction's own RECORD's end, then ``design``; the last SUCCESS's size swallows the rest."""
    items: list[_Item] = [("i", _FILL, "")] * 5804
    items[29] = ("i", bytes([junk]) + _FILL[1:], "")
    items += [*design, None]

    def size(it: _Item) -> int:
        return 9 if it is None or it[0] == "i" else len(it[1])

    used = 6 + sum(size(it) for it in items)
    tail, k = (65544 - used - 1) // 9, (65544 - used - 1) % 9
    items += [("i", _FILL, "")] * tail + [("v", bytes([0x80 + k]) + b"a" * k, f"'{'a' * k}'")]
    gap = items.index(None)
    end = 6 + sum(size(it) for it in items[:gap]) + 5
    items[gap] = ("i", bytes.fromhex("0000") + struct.pack(">H", 65544 - end)
                  + bytes.fromhex("b170a001"), "")
    fill = int.from_bytes(_FILL, "big", signed=True)
    parts: list[str] = []
    run = 0
    for it in [*items, ("v", b"", "")]:
        assert it is not None
        if it[0] == "i" and it[1] == _FILL:
            run += 1
            continue
        if run:
            parts.append(f"[i IN range(1, {run}) | {fill}]")
            run = 0
        if it[2] or it[0] == "i":
            value = it[2] if it[0] == "v" else str(int.from_bytes(it[1], "big", signed=True))
            parts.append(f"[{value}]")
    return "RETURN " + " + ".join(parts) + " AS x"


#: Forged replies for the next two queries (the re-probe's q42x2.cypher, 453 bytes).
FORGE_42 = forge([("i", _SUCCESS, ""), ("i", _SUCCESS, ""), *_next_query(42),
                  ("i", _SUCCESS, ""), *_next_query(42)])
#: The prediction's own reply a FAILURE the server never sent (the re-probe's qfail57).
FORGE_FAILURE = forge(_failure("Neo.ClientError.Security.Unauthorized"), junk=8)
COUNT = "MATCH (n) RETURN count(n) AS c"
#: The re-probe's h06: a relationship 6,000 times in one row (about 86 KB).
H06 = "MATCH (:Movie)<-[r]-() WITH r LIMIT 1 RETURN [i IN range(1, 6000) | r] AS rs"


def test_the_forgeries_are_the_reprobes() -> None:
    assert len(FORGE_42) == 453 and len(FORGE_FAILURE) < 400
    assert FORGE_42.startswith("RETURN [i IN range(1, 29) | 72340172838076872] + "
                               "[432628143027716552] + [i IN range(1, 5774) | ")


@pytest.mark.skipif(sys.platform != "linux", reason="TCP_INFO's layout is Linux's")
def test_the_kernels_count_of_received_bytes_is_read_where_it_is() -> None:
    """``tcpi_bytes_received`` at :data:`~.boltalone.BYTES_RECEIVED`: a known transfer on a
    loopback connection is counted exactly."""
    with socket.create_server(("127.0.0.1", 0)) as srv:
        client = socket.create_connection(srv.getsockname()[:2])
        peer, _ = srv.accept()
        with client, peer:
            before = boltalone.received(client)
            sender = threading.Thread(target=peer.sendall, args=(b"x" * 70_001,))
            sender.start()
            got = 0
            while got < 70_001:
                got += len(client.recv(1 << 20))
            sender.join()
            after = boltalone.received(client)
    assert before is not None and after is not None
    assert after - before == 70_001


def test_a_forged_reply_reaches_no_other_case(pytester: pytest.Pytester,
                                            server: BoltServer) -> None:
    """The re-probe's suite: the forging prediction, then a wrong one (7 for 13) that read the
    forged 42 as its gold's and its own answer and passed; and a forged FAILURE that made its
    case an ERROR (left out of every mean). Each forging case is refused, unread; the next
    cases are scored on the server's answers."""
    cases: list[dict[str, object]] = [
        {"id": "a-forge", "gold": COUNT, "predicted": FORGE_42},
        {"id": "b-next-wrong", "gold": COUNT, "predicted": "RETURN 7 AS c"},
        {"id": "c-next-wrong", "gold": "MATCH (n:Movie) RETURN count(n) AS c",
         "predicted": "RETURN 42 AS c"},
        {"id": "d-forged-failure", "gold": COUNT, "predicted": FORGE_FAILURE},
        {"id": "e-honest", "gold": "MATCH (m:Movie) RETURN m.title ORDER BY m.title",
         "predicted": "MATCH (x:Movie) RETURN x.title ORDER BY x.title"}]
    report = run_on_server(pytester, server, cases, rehearse=False)
    assert report.outcomes == {"a-forge": "failed", "b-next-wrong": "failed",
                               "c-next-wrong": "failed", "d-forged-failure": "failed",
                               "e-honest": "passed"}
    for case in ("a-forge", "d-forged-failure"):
        reason = report.by_id[case]["reason"]
        assert reason.startswith("refused: the reply was over 64 KiB"), reason
        assert "(rehearse: true)" in reason
    for case in ("b-next-wrong", "c-next-wrong"):
        assert report.by_id[case]["metrics"]["execution_accuracy"] == 0.0
    assert server.count() == (13, 15)


def _unscored(src: BoltSource, query: str) -> str:
    """Why a prediction whose reply held a message over 64 KiB is not scored: refused once the
    count passed it, or the driver's failure on the cut message (it shuts the connection down
    as it fails, before the rest arrives), each naming the rehearsal."""
    with pytest.raises((ReadRefused, QueryFailed)) as info:
        src.execute(query)
    text = str(info.value)
    assert text.startswith(("the reply was over 64 KiB", "the reply could not be read (")), text
    assert "(rehearse: true)" in text
    return text


def test_a_reply_over_64_kib_is_not_read_and_a_smaller_one_is(server: BoltServer) -> None:
    """An honest prediction too: 10,000 rows (140 KB) are refused, unread; under 64 KiB the
    reply is read as before; a gold (the author's, trusted) is read on the shared connection.
    A row over 64 KiB, which FalkorDB frames wrong, is not scored either."""
    src = BoltSource.from_spec("g", {"type": "bolt", "url": server.url, "timeout": 20,
                                     "rehearse": False})
    try:
        with pytest.raises(ReadRefused, match=r"^the reply was over 64 KiB .*rehearse: true"):
            src.execute("UNWIND range(1, 10000) AS i RETURN i * 10000000000 AS v")
        small = src.execute("UNWIND range(1, 3000) AS i RETURN i * 10000000000 AS v")
        assert len(small.rows) == 3000 and small.rows[-1] == (30_000_000_000_000,)
        row = src.execute("RETURN [i IN range(1, 5000) | 10000000000] AS s")
        assert row.rows == [([10_000_000_000] * 5000,)]
        _unscored(src, "RETURN [i IN range(1, 8000) | 10000000000] AS big")
        assert src.execute(COUNT).rows == [(13,)]
        assert src.execute(COUNT, trusted=True).rows == [(13,)]
        titles = "MATCH (m:Movie) RETURN m.title ORDER BY m.title"
        assert src.execute(titles).rows == src.execute(titles, trusted=True).rows
        assert ("The Matrix",) in src.execute(titles).rows
    finally:
        src.close()
        server.unstick()


def test_a_reply_the_driver_cannot_read_is_the_querys_failure(server: BoltServer) -> None:
    """The re-probe's h06 (B3b): a relationship 6,000 times in one 86 KB row. As a gold (read
    on the shared connection) the driver's ``ValueError: Nothing to unpack`` is the query's
    failure, no longer a configuration error naming the datasource's URL; as a prediction it
    is not scored either."""
    src = BoltSource.from_spec("g", {"type": "bolt", "url": server.url, "timeout": 20,
                                     "rehearse": False})
    try:
        with pytest.raises(QueryFailed, match=r"^the reply could not be read \(ValueError"):
            src.execute(H06, trusted=True)
        _unscored(src, H06)
        assert src.execute(COUNT, trusted=True).rows == [(13,)]
        assert src.execute(COUNT).rows == [(13,)]
    finally:
        src.close()
        server.unstick()
