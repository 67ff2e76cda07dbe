"""A case sends the next SQL case's gold and prediction to the sandbox worker ahead (issue 30):
the records are those of a run that does not (``--queryeval-no-prefetch``), whatever the
prediction does (right, wrong, refused, failing, past its timeout, killing the worker) and
whatever becomes of the next case (skipped, deselected, the run stopped). A real Chinook copy,
the real worker, pytest itself (pytester)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval._isolation import sandbox
from tests.support import read_report, run_report

from .conftest import write_file_and_inline_suite

INSTR_16MB = "SELECT instr(hex(zeroblob(8000000)), hex(zeroblob(4000000)) || '1')"
CASES: dict[str, Any] = {
    "kind": "sql",
    "datasource": "chinook",
    "cases": [
        {"id": "right", "gold": "SELECT count(*) FROM artist",
         "predicted": "SELECT COUNT(*) FROM Artist"},
        {"id": "wrong", "gold": "SELECT name FROM genre WHERE genreid < 4",
         "predicted": "SELECT name FROM genre WHERE genreid < 3"},
        {"id": "slow", "gold": "SELECT 1", "timeout": 0.5,
         "predicted": "SELECT count(*) FROM track a, track b, track c"},
        {"id": "killed", "gold": "SELECT 2", "timeout": 0.5, "predicted": INSTR_16MB},
        {"id": "after-kill", "gold": "SELECT count(*) FROM album",
         "predicted": "SELECT count(*) FROM album WHERE albumid > 1"},
        {"id": "sneaky", "gold": "SELECT count(*) FROM genre",
         "predicted": "SELECT 1; DELETE FROM genre"},
        {"id": "pragma", "gold": "SELECT count(*) FROM genre",
         "predicted": "SELECT name FROM pragma_table_info('genre') ORDER BY cid"},
        {"id": "extension", "gold": "SELECT 3", "predicted": "SELECT load_extension('/x')"},
        {"id": "failing", "gold": "SELECT 4", "predicted": "SELECT nope FROM genre"},
        {"id": "skipped", "gold": "SELECT 5", "predicted": "SELECT 5", "skip": "not today"},
        {"id": "same-gold", "gold": "SELECT count(*) FROM artist",
         "predicted": "SELECT count(*) + 0 FROM artist"},
        {"id": "alternatives", "gold": ["SELECT 6", "SELECT 7"], "predicted": "SELECT 7"},
        {"id": "broken-gold", "gold": "SELECT * FROM no_such_table", "predicted": "SELECT 1"},
        {"id": "fenced", "gold": "SELECT 8", "predicted": "```sql\nSELECT 8\n```"},
        {"id": "from-file", "gold": "SELECT count(*) FROM track WHERE genreid = 1"},
        {"id": "last", "gold": "SELECT 9", "predicted": "SELECT 9"},
        *({"id": f"plain-{i}", "gold": f"SELECT count(*) FROM track WHERE genreid = {i}",
           "predicted": f"SELECT count(*) FROM track WHERE genreid = {i + i % 2}"}
          for i in range(1, 7)),
    ],
}
#: Record fields that are measured, not computed: they differ between any two runs.
TIMING = ("seconds", "duration", "started", "finished", "time")


@pytest.fixture
def prefetch_suite(pytester: pytest.Pytester, shared_data: Path) -> pytest.Pytester:
    write_file_and_inline_suite(pytester.path, shared_data, CASES)
    return pytester


def _scrubbed(value: Any) -> Any:
    """``value`` without what is measured (times) or says where the run wrote, nor the
    record's digest of its own text (which holds the times)."""
    if isinstance(value, dict):
        return {k: _scrubbed(v) for k, v in value.items()
                if not any(t in k for t in TIMING) and k != "digest"}
    if isinstance(value, list):
        return [_scrubbed(v) for v in value]
    return value


def _records(pytester: pytest.Pytester, *args: str, name: str) -> dict[str, Any]:
    _, report = run_report(pytester, "-p", "no:cacheprovider", *args, name=name, fresh=True)
    return {cid: _scrubbed(record) for cid, record in report.by_id.items()}


def _sqlite_boxes() -> list[sandbox.Sandbox]:
    return [box for key, box in sandbox._SHARED.items() if key[0] == "sqlite"]


def test_records_are_those_of_a_run_without_prefetch(prefetch_suite: pytest.Pytester) -> None:
    ahead = sum(box.sent_ahead for box in _sqlite_boxes())
    with_prefetch = _records(prefetch_suite, name="on.json")
    # the next case's pair was written while this case's replies were unread (in a run of
    # cases whose predictions run once, in their pair: no other query reads the replies first)
    assert sum(box.sent_ahead for box in _sqlite_boxes()) >= ahead + 4
    ahead = sum(box.sent_ahead for box in _sqlite_boxes())
    without = _records(prefetch_suite, "--queryeval-no-prefetch", name="off.json")
    assert sum(box.sent_ahead for box in _sqlite_boxes()) == ahead
    assert with_prefetch == without
    outcomes = {cid: r["outcome"] for cid, r in with_prefetch.items()}
    assert outcomes == {
        "right": "passed", "wrong": "failed", "slow": "failed", "killed": "failed",
        "after-kill": "failed", "sneaky": "failed", "pragma": "failed", "extension": "failed",
        "failing": "failed", "skipped": "skipped", "same-gold": "passed",
        "alternatives": "passed", "broken-gold": "error", "fenced": "passed",
        "from-file": "passed", "last": "passed",
        **{f"plain-{i}": "failed" if i % 2 else "passed" for i in range(1, 7)}}
    assert with_prefetch["slow"]["reason"].startswith("timeout: query exceeded 0.5 s")
    assert with_prefetch["sneaky"]["reason"].startswith("refused: ")
    assert with_prefetch["from-file"]["predicted"].endswith("genreid <= 1")


def test_a_pair_sent_for_a_case_that_never_runs_leaves_nothing_wrong(
        prefetch_suite: pytest.Pytester) -> None:
    """-x stops after the first failure: the next case's pair, sent ahead, is never asked for;
    the session ends, and the next run in the same process (the same worker) reads right
    results. A deselected case is never the next item, so nothing is sent for it."""
    expected = _records(prefetch_suite, "--queryeval-no-prefetch", name="off.json")
    result, report = run_report(prefetch_suite, "-p", "no:cacheprovider", "-x", name="x.json",
                                fresh=True)
    assert list(report.by_id) == ["right", "wrong"]  # "slow", sent ahead, never ran
    result.assert_outcomes(passed=1, failed=1)
    again = _records(prefetch_suite, name="again.json")
    assert again == expected
    picked = _records(prefetch_suite, "-k", "not after and not same", name="k.json")
    assert picked == {cid: r for cid, r in expected.items()
                      if cid not in ("after-kill", "same-gold")}
    assert read_report(prefetch_suite.path / "k.json")["cases"]


#: A conftest that writes what the session's SQLite worker was doing at two moments: when
#: collection ended (started or not) and, after each case's call, how many pairs it had queued.
WATCH = '''
import json
from pytest_queryeval._isolation import sandbox

SEEN = {"in_flight": {}}

def _boxes():
    return [box for key, box in sandbox._SHARED.items() if key[0] == "sqlite"]

def pytest_collection_finish(session):
    SEEN["started_while_collecting"] = any(box.pid is not None for box in _boxes())

def pytest_runtest_logreport(report):
    if report.when == "call":
        SEEN["in_flight"][report.nodeid.split("::")[-1]] = sum(b.in_flight for b in _boxes())

def pytest_unconfigure(config):
    with open("seen.json", "w") as f:
        json.dump(SEEN, f)
'''


def _watched(pytester: pytest.Pytester, *args: str) -> dict[str, Any]:
    """What :data:`WATCH` saw in a run of its own process (a fresh worker registry)."""
    (pytester.path / "seen.json").unlink(missing_ok=True)
    pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    return json.loads((pytester.path / "seen.json").read_text())  # type: ignore[no-any-return]


def test_the_worker_starts_while_the_session_collects(prefetch_suite: pytest.Pytester) -> None:
    """Its start (an interpreter, the engine's imports) overlaps the rest of the collection
    instead of being the first case's wait; not with prefetch off, not when collecting only,
    and not when a ``pytest_queryeval_datasource`` hook may answer (it is asked when a case
    first needs the source, as documented)."""
    prefetch_suite.makeconftest(WATCH)
    assert _watched(prefetch_suite)["started_while_collecting"] is True
    assert _watched(prefetch_suite, "--queryeval-no-prefetch")["started_while_collecting"] is False
    assert _watched(prefetch_suite, "--collect-only")["started_while_collecting"] is False
    prefetch_suite.makeconftest(WATCH + "\ndef pytest_queryeval_datasource(name, spec, config):\n"
                       "    return None\n")
    assert _watched(prefetch_suite)["started_while_collecting"] is False


def test_the_two_next_cases_are_queued_after_a_case(prefetch_suite: pytest.Pytester) -> None:
    """After a case (its own queries done: a tie analysis never waits behind the next case's
    pair), the next two cases' pairs are in the worker, so one slow pair does not make the
    parent wait; the last case has nothing after it, and prefetch off queues nothing."""
    prefetch_suite.makeconftest(WATCH)
    seen = _watched(prefetch_suite, "-k", "plain")["in_flight"]
    assert seen == {"plain-1": 2, "plain-2": 2, "plain-3": 2, "plain-4": 2, "plain-5": 1,
                    "plain-6": 0}
    off = _watched(prefetch_suite, "-k", "plain", "--queryeval-no-prefetch")["in_flight"]
    assert set(off.values()) == {0}


def test_only_a_file_engine_is_opened_at_collection(tmp_path: Path) -> None:
    """Warming opens a SQLite or DuckDB source (its worker starts); a server, a graph or a
    schema file is opened when a case first needs it, as before."""
    from pytest_queryeval.engine import Evaluator
    from tests.support import make_case

    ev = Evaluator()
    try:
        for spec in ({"type": "sqlalchemy", "url": "postgresql://127.0.0.1:1/none"},
                     {"type": "rdf", "paths": [str(tmp_path / "missing.ttl")]},
                     {"type": "spider-schema", "tables": str(tmp_path / "tables.json")}):
            ev.warm(make_case(source_spec=spec, datasource="x"), hook_active=False)
        assert ev._sources == {}
        ev.warm(make_case(source_spec={"type": "sqlite", "path": str(tmp_path / "none.db")},
                          datasource="x"), hook_active=False)
        assert len(ev._sources) == 1  # opened (its missing file is the case's to report)
    finally:
        ev.close()


def test_a_schema_only_source_is_known_to_send_nothing_before_the_prediction_is_read(
        tmp_path: Path, shared_data: Path) -> None:
    """``SqlKind.sends_ahead`` answers from the case's source alone, so the prefetch of a
    spider-schema case stops before it looks up the prediction (about 20 ms of a 1,034-case
    Spider run); a SQLite case goes on to send its pair."""
    from pytest_queryeval.engine import Evaluator
    from pytest_queryeval.kinds.sql import SqlKind
    from tests.support import make_case

    tables = tmp_path / "tables.json"
    tables.write_text("[]")
    ev = Evaluator()
    try:
        spider = make_case(source_spec={"type": "spider-schema", "tables": str(tables)},
                           datasource="spider")
        assert SqlKind.sends_ahead(spider, ev) is False
        db = shared_data / "chinook" / "Chinook_Sqlite.sqlite"
        chinook = make_case(source_spec={"type": "sqlite", "path": str(db)},
                            datasource="chinook")
        assert SqlKind.sends_ahead(chinook, ev) is True
    finally:
        ev.close()
