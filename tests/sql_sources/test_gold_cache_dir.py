"""``--queryeval-gold-cache DIR`` (issue 30 item 6): gold results computed once for every shard,
through a directory the runners share, content-addressed, written atomically."""

from __future__ import annotations

import hashlib
import json
import os
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


# -- trust (issue 39 item 7): an entry someone else could write never decides a verdict --------

#: Wrong: four genres where the gold has 25.
WRONG = "SELECT name FROM genre WHERE genreid < 5 ORDER BY genreid"


def _forge(chinook_sqlite: Path, shared: Path) -> tuple[Any, Path, dict[str, Any]]:
    """The gold's entry, written by a real run, with the wrong prediction's result planted as
    its value (taken from a real entry for that text): (the case, the entry, the forged
    entry's JSON)."""
    case = make_case(GOLD, spec=_spec(chinook_sqlite))
    ctx = Evaluator(gold_cache=shared)
    try:
        KIND.evaluate(case, GOLD, ctx)
        KIND.evaluate(make_case(WRONG, spec=_spec(chinook_sqlite)), WRONG, ctx)
        key = json.dumps(["sqlite", ctx.source(case).fingerprint(), GOLD])
    finally:
        ctx.close()
    entries = {json.loads(p.read_text())["key"]: p for p in shared.rglob("*.json")}
    wrong = next(json.loads(p.read_text()) for k, p in entries.items() if k != key)
    entry = entries[key]
    forged = {**json.loads(entry.read_text()), "value": wrong["value"]}
    return case, entry, forged


def _score_wrong(case: Any, shared: Path) -> tuple[Any, list[str]]:
    import warnings

    from pytest_queryeval.errors import QueryEvalWarning

    ctx = Evaluator(gold_cache=shared)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            scored = KIND.evaluate(case, WRONG, ctx)
    finally:
        ctx.close()
    return scored, [str(w.message) for w in caught if issubclass(w.category, QueryEvalWarning)]


def test_an_edited_entry_is_ignored_with_a_warning_that_names_it(chinook_sqlite, tmp_path):
    shared = tmp_path / "gold-cache"
    case, entry, forged = _forge(chinook_sqlite, shared)
    entry.write_text(json.dumps(forged))  # the value changed, its digest not
    scored, warned = _score_wrong(case, shared)
    assert scored.metrics["execution_accuracy"] == 0.0  # before: 1.0, the forged gold
    assert scored.details["gold_cached"] is False
    name = entry.relative_to(shared).as_posix()
    assert warned == [f"the gold cache entry {name!r} is ignored: its content does not match "
                      "its digest (edited or damaged); the gold is executed again and the "
                      "entry rewritten"]
    assert json.loads(entry.read_text())["value"] != forged["value"]  # written again


def test_an_entry_others_may_write_is_not_trusted_even_with_its_digest(chinook_sqlite, tmp_path):
    from pytest_queryeval.engine.goldcache import content_digest

    shared = tmp_path / "gold-cache"
    case, entry, forged = _forge(chinook_sqlite, shared)
    forged["digest"] = content_digest(forged["namespace"], forged["key"], forged["value"])
    entry.write_text(json.dumps(forged))
    entry.chmod(0o666)  # as a shared directory with a loose umask leaves it
    scored, warned = _score_wrong(case, shared)
    assert scored.metrics["execution_accuracy"] == 0.0
    name = entry.relative_to(shared).as_posix()
    assert warned == [f"the gold cache entry {name!r} is ignored: it is writable by group and "
                      "others (mode 666); the gold is executed again and the entry rewritten"]
    assert entry.stat().st_mode & 0o022 == 0  # rewritten by this user, not writable by others
    if os.geteuid() == 0:  # another user's entry, however well formed
        entry.write_text(json.dumps(forged))
        os.chown(entry, 65534, 65534)
        scored, warned = _score_wrong(case, shared)
        assert scored.metrics["execution_accuracy"] == 0.0
        assert warned == [f"the gold cache entry {name!r} is ignored: it is owned by another "
                          "user (uid 65534); the gold is executed again and the entry rewritten"]


def test_a_directory_others_may_write_is_named_and_own_entries_stay_private(chinook_sqlite,
                                                                          tmp_path):
    shared = tmp_path / "gold-cache"
    case = make_case(GOLD, spec=_spec(chinook_sqlite))
    old = os.umask(0)  # a umask that would leave every entry writable by everyone
    try:
        ctx = Evaluator(gold_cache=shared)
        try:
            KIND.evaluate(case, GOLD, ctx)
        finally:
            ctx.close()
    finally:
        os.umask(old)
    entry = next(shared.rglob("*.json"))
    for path in (shared, entry.parent, entry):
        assert path.stat().st_mode & 0o022 == 0, path
    shared.chmod(0o777)
    import warnings

    from pytest_queryeval.errors import QueryEvalWarning

    ctx = Evaluator(gold_cache=shared)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert KIND.evaluate(case, GOLD, ctx).details["gold_cached"] is True  # own entry
            KIND.evaluate(case, GOLD, ctx)
    finally:
        ctx.close()
    warned = [str(w.message) for w in caught if issubclass(w.category, QueryEvalWarning)]
    assert warned == [
        "the gold cache directory 'gold-cache' is writable by group and others (mode 777): "
        "whoever can write there can plant a gold result that makes a wrong prediction pass; "
        "only entries written by this user, not writable by others, with a matching digest "
        "are used (chmod go-w, or a directory of your own)"]
