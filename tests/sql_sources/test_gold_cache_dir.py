"""``--queryeval-gold-cache DIR`` (issue 30 item 6): gold results computed once for every shard,
through a directory the runners share, content-addressed, written atomically."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pytest_queryeval.engine import Evaluator
from pytest_queryeval.kinds import get_kind

from .conftest import make_case

KIND = get_kind("sql")
GOLD = "SELECT name FROM genre ORDER BY genreid"


def _spec(db: Path) -> dict[str, Any]:
    return {"type": "sqlite", "path": str(db)}


def test_a_gold_runs_once_for_every_runner_sharing_the_directory(chinook_sqlite, tmp_path):
    shared = tmp_path / "gold-cache"
    case = make_case(GOLD, spec=_spec(chinook_sqlite))
    runners = [Evaluator(gold_cache=shared) for _ in range(2)]  # two shards, no pytest cache
    try:
        first = KIND.evaluate(case, GOLD, runners[0])
        second = KIND.evaluate(case, GOLD, runners[1])
        assert first.details["gold_cached"] is False
        assert second.details["gold_cached"] is True  # computed by the other runner
        assert second.metrics["execution_accuracy"] == 1.0
        entries = sorted(shared.rglob("*.json"))
        assert len(entries) == 1 and not list(shared.rglob("*.tmp"))  # renamed into place
        # content-addressed: sha256 of [namespace, [engine, fingerprint, gold text]]
        fingerprint = runners[0].source(case).fingerprint()
        key = json.dumps(["sqlite", fingerprint, GOLD])
        digest = hashlib.sha256(json.dumps(["sql-gold", key], separators=(",", ":"))
                                .encode()).hexdigest()
        assert entries[0] == shared / digest[:2] / f"{digest}.json"
        # a damaged entry is a miss, executed and written again
        entries[0].write_text("{not json")
        third = Evaluator(gold_cache=shared)
        try:
            assert KIND.evaluate(case, GOLD, third).details["gold_cached"] is False
            assert json.loads(entries[0].read_text())["key"] == key
        finally:
            third.close()
    finally:
        for r in runners:
            r.close()


def test_another_database_or_gold_is_another_entry(chinook_sqlite, tmp_path):
    import shutil

    other = tmp_path / "other.sqlite"
    shutil.copy(chinook_sqlite, other)
    import sqlite3

    with sqlite3.connect(other) as conn:
        conn.execute("INSERT INTO Genre (GenreId, Name) VALUES (26, 'Polka')")
    conn.close()
    shared = tmp_path / "gold-cache"
    s = Evaluator(gold_cache=shared)
    try:
        KIND.evaluate(make_case(GOLD, spec=_spec(chinook_sqlite)), GOLD, s)
        polka = KIND.evaluate(make_case(GOLD, spec=_spec(other)), GOLD, s)
        assert polka.details["gold_cached"] is False and polka.details["gold_rows"] == 26
        KIND.evaluate(make_case("SELECT 1", spec=_spec(chinook_sqlite)), "SELECT 1", s)
        assert len(list(shared.rglob("*.json"))) == 3
    finally:
        s.close()


def test_without_a_cache_a_gold_is_neither_keyed_nor_encoded(chinook_sqlite, tmp_path):
    """``--queryeval-no-cache`` (or no pytest cache and no shared directory): run_gold asks
    no cache and encodes nothing for one (the codec's walk over every cell, the source's
    fingerprint for the key, per gold of every case)."""
    from pytest_queryeval.kinds._query import run_gold

    class Counting(Evaluator):
        asked = 0

        def cache_get(self, namespace: str, key: str) -> Any:
            self.asked += 1
            return super().cache_get(namespace, key)

        def cache_set(self, namespace: str, key: str, value: Any) -> None:
            self.asked += 1
            super().cache_set(namespace, key, value)

    case = make_case(GOLD, spec=_spec(chinook_sqlite))
    assert Evaluator().caching is False  # neither pytest's cache nor a shared directory
    assert Evaluator(gold_cache=tmp_path / "shared").caching is True
    assert Evaluator(gold_cache=tmp_path / "shared", no_cache=True).caching is False
    for ctx, asked in ((Counting(no_cache=True), 0), (Counting(), 0),
                       (Counting(gold_cache=tmp_path / "g"), 2)):
        try:
            table, cached = run_gold(ctx.source(case), GOLD, ctx, "sql-gold")
            assert (ctx.asked, cached, len(table.rows)) == (asked, False, 25)
        finally:
            ctx.close()
