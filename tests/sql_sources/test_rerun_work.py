"""Issue 53: a rerun with the gold cache warm does no more than a cold run, and a case's
work is done once. Counted, never timed: pytest's cache reads of gold results, the queries
sent ahead to the sandbox worker, the readings of a case's options, the prediction look-ups,
the junit properties built. A real Chinook copy, the real worker, pytest itself (pytester,
in process, so the counters below see the session's calls)."""

from __future__ import annotations

import importlib
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _pytest.cacheprovider import Cache

from pytest_queryeval._isolation.sandbox import Sandbox
from pytest_queryeval.engine import Evaluator
from pytest_queryeval.kinds import sql as sql_kind
from pytest_queryeval.metrics import sql_hardness
from tests.support import run_report

from .conftest import write_chinook_suite, write_file_and_inline_suite

#: Cases whose golds are executed (and cached), predictions from a file and inline: right,
#: wrong, failing, refused by the guard, two golds shared between cases.
CASES: dict[str, Any] = {
    "kind": "sql",
    "datasource": "chinook",
    "cases": [
        *({"id": f"plain-{i}", "gold": f"SELECT count(*) FROM track WHERE genreid = {i}",
           "predicted": f"SELECT count(*) FROM track WHERE genreid = {i + i % 2}"}
          for i in range(1, 7)),
        {"id": "ordered", "gold": "SELECT name FROM genre ORDER BY genreid LIMIT 3",
         "predicted": "SELECT Name FROM Genre ORDER BY GenreId LIMIT 3"},
        {"id": "failing", "gold": "SELECT 4", "predicted": "SELECT nope FROM genre"},
        {"id": "sneaky", "gold": "SELECT count(*) FROM genre",
         "predicted": "SELECT 1; DELETE FROM genre"},
        {"id": "same-gold", "gold": "SELECT count(*) FROM genre",
         "predicted": "SELECT count(*) + 0 FROM genre"},
        {"id": "from-file", "gold": "SELECT count(*) FROM track WHERE genreid = 1"},
        {"id": "windowed", "gold": "SELECT name, rank() OVER (ORDER BY genreid) FROM genre "
                                   "WHERE genreid < 4",
         "predicted": "SELECT Name, rank() OVER (ORDER BY GenreId) FROM Genre WHERE GenreId < 4"},
        {"id": "last", "gold": "SELECT 9", "predicted": "SELECT 9"},
    ],
}
for _case in CASES["cases"]:  # as an imported BIRD suite gives it: no level computed at collection
    _case["difficulty"] = "simple"
N = len(CASES["cases"])
#: Record fields that are measured (they differ between any two runs) or say where the gold
#: came from (the cache, on a rerun).
MEASURED = ("seconds", "duration", "started", "finished", "time", "digest", "gold_cached")


@pytest.fixture
def suite(pytester: pytest.Pytester, shared_data: Path) -> pytest.Pytester:
    write_file_and_inline_suite(pytester.path, shared_data, CASES)
    return pytester


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Calls of the steps issue 53 names, counted while the in-process runs go."""
    seen: Counter[str] = Counter()

    def counting(name: str, fn: Callable[..., Any],
                 when: Callable[[tuple[Any, ...], Any], bool] = lambda a, r: True,
                 ) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = fn(*args, **kwargs)
            if when(args, result):
                seen[name] += 1
            return result
        return wrapper

    monkeypatch.setattr(Cache, "get", counting(
        "gold reads", Cache.get, lambda a, r: str(a[1]).startswith("queryeval/sql-gold/")))
    monkeypatch.setattr(Sandbox, "submit", counting(
        "sent ahead", Sandbox.submit, lambda a, ticket: bool(ticket.sent)))
    # the look-up and the reading themselves (before issue 53 they were these functions)
    look_up = "_predict" if hasattr(Evaluator, "_predict") else "predict"
    monkeypatch.setattr(Evaluator, look_up, counting("predict", getattr(Evaluator, look_up)))
    monkeypatch.setattr(sql_hardness, "counts", counting("sqlglot counts", sql_hardness.counts))
    read = "_read_options" if hasattr(sql_kind, "_read_options") else "_parse_options"
    monkeypatch.setattr(sql_kind, read, counting("options read", getattr(sql_kind, read)))
    # the one reading the cases without options share: an earlier test of this process may
    # have made it, and this test counts the readings its runs make
    monkeypatch.setattr(sql_kind, "_PLAIN", None, raising=False)
    return seen


def _records(suite: pytest.Pytester, *args: str, name: str) -> dict[str, Any]:
    _, report = run_report(suite, *args, name=name, fresh=True)

    def scrubbed(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: scrubbed(v) for k, v in value.items()
                    if not any(t in k for t in MEASURED)}
        if isinstance(value, list):
            return [scrubbed(v) for v in value]
        return value

    return {cid: scrubbed(record) for cid, record in report.by_id.items()}


def test_a_warm_gold_cache_reads_each_gold_once_and_still_sends_predictions_ahead(
        suite: pytest.Pytester, counts: Counter[str]) -> None:
    """The cold run executes and caches every gold (and the labels sqlglot counted); the
    rerun imports no sqlglot and reads each case's gold once
    from pytest's cache (it was read when the case's queries were sent ahead and again when
    it ran: 2 per case) and sends every prediction but the first case's ahead to the worker,
    as the cold run sends its pairs (it sent nothing when the gold was cached, and each
    prediction was then waited for). The records are the cold run's."""
    sql_hardness.cached_sql_hardness.cache_clear()  # what an earlier session here counted
    cold = _records(suite, "--cache-clear", name="cold.json")
    cold_ahead = counts["sent ahead"]
    assert cold_ahead >= N - 2  # every case after the first has its pair sent
    # the window and the two golds without FROM: Spider's grammar does not parse them
    assert counts["sqlglot counts"] == 3
    counts.clear()
    sql_hardness.cached_sql_hardness.cache_clear()
    warm = _records(suite, name="warm.json")
    assert counts["sqlglot counts"] == 0  # its level was kept with the golds'
    assert warm["windowed"]["labels"]["sql_hardness"] == "medium"
    # one read per case, none for "same-gold", whose gold the case before it read
    assert counts["gold reads"] == N - 1
    assert counts["sent ahead"] == cold_ahead
    assert warm == cold
    assert warm["plain-1"]["outcome"] == "failed" and warm["plain-2"]["outcome"] == "passed"
    assert warm["sneaky"]["reason"].startswith("refused: ")


def test_a_case_reads_its_options_and_looks_up_its_prediction_once(
        suite: pytest.Pytester, counts: Counter[str]) -> None:
    """Collection checks a case's options, the look-ahead sends its queries, the case runs:
    at most one reading of the options (three before; the cases that set no option share
    one) and one look-up of its prediction (two: the look-ahead's and the run's), with the
    look-ahead on and off."""
    for args in ((), ("--queryeval-no-prefetch",)):
        counts.clear()
        sql_kind._PLAIN = None  # the shared reading is made anew (the fixture restores it)
        _records(suite, "-p", "no:cacheprovider", *args, name="r.json")
        assert 1 <= counts["options read"] < N, args
        assert counts["predict"] == N, args


#: Writes the properties each item reported, to compare a run with and without --junitxml.
PROPERTIES = '''
import json
SEEN = {}

def pytest_runtest_logreport(report):
    if report.when == "call":
        SEEN[report.nodeid.split("::")[-1]] = len(report.user_properties)

def pytest_unconfigure(config):
    with open("properties.json", "w") as f:
        json.dump(SEEN, f)
'''


def test_junit_properties_are_built_only_for_a_junit_file(suite: pytest.Pytester) -> None:
    """A property per metric per case (20,750 for 1,000 BIRD cases) was built with no junit
    file to write it to; with ``--junitxml`` each case still carries them in the file."""
    suite.makeconftest(PROPERTIES)
    suite.runpytest("-p", "no:cacheprovider", "-k", "plain")
    without = json.loads((suite.path / "properties.json").read_text())
    assert without == {f"plain-{i}": 0 for i in range(1, 7)}
    suite.runpytest("-p", "no:cacheprovider", "-k", "plain", "--junitxml=j.xml")
    with_file = json.loads((suite.path / "properties.json").read_text())
    assert set(with_file) == set(without) and min(with_file.values()) > 5
    text = (suite.path / "j.xml").read_text()
    assert text.count('name="queryeval.execution_accuracy"') == 6


def test_a_shared_gold_entry_is_hashed_value_by_value_once_a_session(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--queryeval-gold-cache``: a runner checks an entry's digest (its value serialised and
    hashed) the first time it reads it; reading the same text again (the next case with the
    same gold) only hashes the text. An entry changed since is checked again, and refused."""
    from pytest_queryeval.engine import goldcache

    shared = tmp_path / "gold"
    goldcache.GoldCache(shared).set("sql-gold", "k", {"rows": [[1, "a"]]})
    seen: Counter[str] = Counter()
    digest = goldcache.content_digest

    def counted(*args: Any) -> str:
        seen["digests"] += 1
        return digest(*args)

    monkeypatch.setattr(goldcache, "content_digest", counted)
    runner = goldcache.GoldCache(shared)  # another runner's session
    for _ in range(5):
        assert runner.get("sql-gold", "k") == {"rows": [[1, "a"]]}
    assert seen["digests"] == 1
    entry = runner.path("sql-gold", "k")
    edited = json.loads(entry.read_text())
    edited["value"] = {"rows": [[2, "a"]]}  # the digest left as it was
    entry.write_text(json.dumps(edited))
    with pytest.warns(UserWarning, match="does not match its digest"):
        assert runner.get("sql-gold", "k") is None
    assert seen["digests"] == 2


def test_the_database_is_fingerprinted_once_a_session_and_a_changed_file_is_seen_by_the_next(
        suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each case's schema and gold-cache key asked for the database's fingerprint, a stat of
    the file and of its WAL each time (35 for these 13 cases on a warm rerun); it is taken
    once per datasource per session. The next session takes it anew: a database changed
    between runs (same size, same mtime, other content) is executed again, never served the
    golds cached for its former content."""
    import os

    from pytest_queryeval._util import safefile

    sandboxed = importlib.import_module("pytest_queryeval.sources.sandboxed")  # as below
    stats: Counter[str] = Counter()
    check = safefile.check

    def counted(path: Path, what: str) -> Any:
        if what == "database":
            stats[Path(path).name] += 1
        return check(path, what)

    monkeypatch.setattr(sandboxed.safefile, "check", counted)
    cold = _records(suite, "--cache-clear", name="cold.json")
    assert stats == {"chinook.sqlite": 1}
    stats.clear()
    warm = _records(suite, name="warm.json")
    assert stats == {"chinook.sqlite": 1}
    assert warm == cold
    db = suite.path / "data" / "chinook.sqlite"
    st = db.stat()
    with __import__("sqlite3").connect(db) as conn:  # 25 genres, one renamed
        conn.execute("UPDATE genre SET name = 'Polka' WHERE genreid = 1")
    conn.close()
    assert db.stat().st_size == st.st_size
    os.utime(db, ns=(st.st_atime_ns, st.st_mtime_ns))
    _, report = run_report(suite, name="changed.json", fresh=True)
    # executed again (from-file and same-gold share a gold run earlier in this session)
    assert {cid for cid, r in report.by_id.items() if r["details"].get("gold_cached")} \
        == {"from-file", "same-gold"}


#: Says, when the session ends, whether sqlglot was imported (the conftest of a subprocess run).
SQLGLOT_SEEN = '''
import json, sys

def pytest_unconfigure(config):
    with open("sqlglot.json", "w") as f:
        json.dump("sqlglot" in sys.modules, f)
'''


def test_without_a_reader_of_records_sqlglot_is_not_imported_for_labels(
        pytester: pytest.Pytester, shared_data: Path) -> None:
    """The golds Spider's grammar does not parse (a window, no FROM) were labelled
    ``sql_hardness`` by sqlglot, its import (some 0.2 s) included, when no report, hook or
    xdist controller reads the records the label lives in. With ``--queryeval-json`` the
    records carry the labels as before. Whole processes, as a user runs them: the import is
    the process's."""
    passing = [c for c in CASES["cases"]
               if c["id"] in ("windowed", "last", "ordered", "plain-2", "plain-4")]
    write_chinook_suite(pytester.path, shared_data, {},
                        {"test_chinook.yaml": json.dumps({**CASES, "cases": passing})})
    pytester.makeconftest(SQLGLOT_SEEN)
    seen = pytester.path / "sqlglot.json"
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    run.assert_outcomes(passed=len(passing))
    assert json.loads(seen.read_text()) is False
    _, report = run_report(pytester, "-p", "no:cacheprovider", subprocess=True)
    assert json.loads(seen.read_text()) is True
    assert report.by_id["windowed"]["labels"]["sql_hardness"] == "medium"
    assert report.by_id["last"]["labels"]["sql_hardness"] == "easy"


def test_without_a_reader_of_records_no_resume_identity_is_computed(
        suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """A case's resume identity (a ``json.dumps`` of the case as written, hashed) is part of
    its record for a later ``--queryeval-resume``; with no report it was computed for nobody
    (1,000 for 1,000 cases). With a report every record still carries it."""
    # the module the session imports (pytester drops what an earlier in-process run imported
    # from sys.modules; the package's attribute may still name that former module)
    resume = importlib.import_module("pytest_queryeval.plugin.resume")
    calls: Counter[str] = Counter()
    identity = resume.identity

    def counted(*args: Any) -> str:
        calls["identity"] += 1
        return identity(*args)

    monkeypatch.setattr(resume, "identity", counted)
    suite.runpytest("-p", "no:cacheprovider")
    assert calls["identity"] == 0
    _, report = run_report(suite, "-p", "no:cacheprovider")
    assert calls["identity"] >= N
    assert all(len(r["identity"]) == 32 for r in report.by_id.values())


def test_a_datasource_and_a_predictions_source_are_keyed_once(
        suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The evaluator finds a case's datasource and predictions source by a JSON text of their
    mapping: every case holds its own copy of its datasource's spec, so that was a dump per
    case, and the predictions key a dump per case twice (the run, the unmatched-ids check).
    An equal spec is the same source; ``1`` and ``true`` are not equal specs."""
    import types

    engine = importlib.import_module("pytest_queryeval.engine")  # the session's (as above)
    dumped: Counter[str] = Counter()

    def dumps(value: Any, **kwargs: Any) -> str:
        dumped["source" if "type" in value else "predictions"] += 1
        return json.dumps(value, **kwargs)

    monkeypatch.setattr(engine, "json", types.SimpleNamespace(dumps=dumps, loads=json.loads))
    suite.runpytest("-p", "no:cacheprovider")
    assert dumped == {"source": 1, "predictions": 1}
    assert not engine._same_spec({"timeout": 1}, {"timeout": True})
    assert not engine._same_spec({"a": [1, 2]}, {"a": (1, 2)})
    assert engine._same_spec({"type": "sqlite", "a": [{"b": 1.5}]},
                             {"type": "sqlite", "a": [{"b": 1.5}]})
