"""SqlKind end to end on a real SQLite Chinook copy, through the core's real Context."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.engine import Evaluator
from pytest_queryeval.errors import GoldError, PredictionError, SourceUnavailable
from pytest_queryeval.kinds import get_kind
from pytest_queryeval.kinds.sql import SqlKind
from pytest_queryeval.metrics.alignment import ALIGNMENT_METRIC_NAMES
from pytest_queryeval.metrics.spider import METRICS as STRUCTURE_METRICS
from pytest_queryeval.metrics.table import TABLE_METRIC_NAMES
from pytest_queryeval.results import ResultTable

from .attacks import SQLITE
from .conftest import make_case, sha256

KIND = SqlKind()
EXEC_METRICS = {*TABLE_METRIC_NAMES, *ALIGNMENT_METRIC_NAMES}


@pytest.fixture
def spec(chinook_sqlite: Path) -> dict[str, Any]:
    return {"type": "sqlite", "path": str(chinook_sqlite)}


def test_registered() -> None:
    assert isinstance(get_kind("sql"), SqlKind)


def test_correct_prediction(spec: dict[str, Any], session: Evaluator) -> None:
    case = make_case("SELECT count(*) FROM artist", spec=spec)
    s = KIND.evaluate(case, "SELECT COUNT(*) FROM Artist", session)
    assert s.reason is None
    assert s.metrics["execution_accuracy"] == 1.0
    assert s.metrics["bird_ex"] == 1.0
    assert s.metrics["exact_set_match"] == 1.0
    assert set(s.metrics) >= EXEC_METRICS | set(STRUCTURE_METRICS)
    assert {"gold_seconds", "predicted_seconds"} <= set(s.metrics)
    assert "ves" not in s.metrics  # efficiency is opt-in: absent, not zero
    assert s.labels["hardness"] == "easy"
    assert s.diff == []
    assert all(KIND.is_metric(m) for m in s.metrics)


def test_wrong_prediction_has_a_diff(spec: dict[str, Any], session: Evaluator) -> None:
    case = make_case("SELECT name FROM genre WHERE genreid <= 3", spec=spec)
    s = KIND.evaluate(case, "SELECT name FROM genre WHERE genreid <= 2", session)
    assert s.reason is None
    assert s.metrics["execution_accuracy"] == 0.0
    assert 0 < s.metrics["soft_f1"] < 1
    assert any("missing rows" in line for line in s.diff)
    assert s.metrics["exact_set_match"] == 1.0  # values are dropped by the Spider evaluator


def test_distinct_like_test_suite_only_on_request(spec: dict[str, Any], session: Evaluator) -> None:
    pred = "SELECT billingcountry FROM invoice GROUP BY billingcountry"
    # By default the queries run as written: 24 countries on both sides.
    s = KIND.evaluate(make_case("SELECT DISTINCT billingcountry FROM invoice", spec=spec), pred,
                      session)
    assert s.metrics["execution_accuracy"] == 1.0
    assert "execution_accuracy_on" not in s.details
    # test_suite_rewrite: TSSE removes DISTINCT from both texts before executing.
    case = make_case("SELECT DISTINCT billingcountry FROM invoice", spec=spec,
                     options={"test_suite_rewrite": True})
    s = KIND.evaluate(case, pred, session)
    assert s.metrics["bird_ex"] == 1.0
    assert s.metrics["execution_accuracy"] == 0.0  # 412 rows vs 24 once DISTINCT is gone
    assert s.details["execution_accuracy_on"] == "test-suite texts (DISTINCT removed)"
    keep = make_case("SELECT DISTINCT billingcountry FROM invoice", spec=spec,
                     options={"test_suite_rewrite": True, "keep_distinct": True})
    s = KIND.evaluate(keep, pred, session)
    assert s.metrics["execution_accuracy"] == 1.0


@pytest.fixture
def stores(tmp_path: Path) -> dict[str, Any]:
    """An ordinary schema: 10 sales in 3 stores."""
    path = tmp_path / "shop.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE sales (id INTEGER PRIMARY KEY, store_id INTEGER, amount REAL)")
    conn.executemany("INSERT INTO sales (store_id, amount) VALUES (?, ?)",
                     [(1 + i % 3, 10.0 * i) for i in range(10)])
    conn.commit()
    conn.close()
    return {"type": "sqlite", "path": str(path)}


def test_count_distinct_gold_is_compared_as_written(stores: dict[str, Any],
                                                    session: Evaluator) -> None:
    """Issue 19 item 6: the default EX must not rewrite the gold's count(DISTINCT ...)."""
    gold = "SELECT count(DISTINCT store_id) FROM sales"
    wrong = "SELECT count(store_id) FROM sales"  # 10, the gold answers 3
    right = "SELECT count(*) FROM (SELECT store_id FROM sales GROUP BY store_id)"
    s = KIND.evaluate(make_case(gold, spec=stores), wrong, session)
    assert s.metrics["execution_accuracy"] == 0.0
    assert any("missing rows" in line for line in s.diff)
    s = KIND.evaluate(make_case(gold, spec=stores), right, session)
    assert s.metrics["execution_accuracy"] == 1.0
    assert s.reason is None
    # The faithful test-suite EX keeps its published behaviour, under its own option.
    tsse = make_case(gold, spec=stores, options={"test_suite_rewrite": True})
    assert KIND.evaluate(tsse, wrong, session).metrics["execution_accuracy"] == 1.0
    assert KIND.evaluate(tsse, right, session).metrics["execution_accuracy"] == 0.0


@pytest.mark.parametrize("fenced", [
    "```sql\nSELECT COUNT(*) FROM Artist\n```",
    "```SQL\nSELECT COUNT(*)\nFROM Artist;\n```\n",
    "\n~~~\nSELECT COUNT(*) FROM Artist\n~~~",
])
def test_a_fenced_prediction_is_executed_and_the_fence_recorded(
    spec: dict[str, Any], session: Evaluator, fenced: str
) -> None:
    """LLM output in a Markdown code fence: one fence is stripped (issue 19), not refused."""
    s = KIND.evaluate(make_case("SELECT count(*) FROM artist", spec=spec), fenced, session)
    assert s.reason is None
    assert s.metrics["execution_accuracy"] == 1.0
    assert s.metrics["exact_set_match"] == 1.0
    assert s.details["fence_stripped"] == fenced.strip().split("\n")[0]


def test_a_fenced_refusal_keeps_its_fence_note(spec: dict[str, Any], session: Evaluator) -> None:
    s = KIND.evaluate(make_case("SELECT 1", spec=spec), "```sql\nDELETE FROM artist\n```", session)
    assert s.reason is not None
    assert s.reason.startswith("refused: ")
    assert s.details["fence_stripped"] == "```sql"
    plain = KIND.evaluate(make_case("SELECT 1", spec=spec), "SELECT 1", session)
    assert "fence_stripped" not in plain.details


def test_a_syntax_error_is_named_so(spec: dict[str, Any], session: Evaluator) -> None:
    s = KIND.evaluate(make_case("SELECT count(*) FROM artist", spec=spec),
                      "SELEC count(*) FROM artist", session)
    assert s.reason == ("cannot parse: syntax error at line 1, column 1: 'SELEC' does not start "
                        "an SQL statement")
    assert s.metrics["execution_accuracy"] == 0.0
    assert "predicted_seconds" not in s.metrics  # never executed


@pytest.mark.parametrize("sql", SQLITE)
def test_refused_predictions(
    spec: dict[str, Any], chinook_sqlite: Path, session: Evaluator, sql: str
) -> None:
    before = sha256(chinook_sqlite)
    case = make_case("SELECT count(*) FROM genre", spec=spec)
    s = KIND.evaluate(case, sql, session)
    assert s.reason is not None
    assert s.reason.startswith("refused: ")
    assert s.metrics
    assert all(v == 0.0 for k, v in s.metrics.items() if k not in ("gold_seconds",))
    assert set(s.metrics) >= EXEC_METRICS
    assert "predicted_seconds" not in s.metrics
    assert sha256(chinook_sqlite) == before


def test_failed_query(spec: dict[str, Any], session: Evaluator) -> None:
    s = KIND.evaluate(make_case("SELECT 1", spec=spec), "SELECT * FROM nowhere", session)
    assert s.reason == "query failed: no such table: nowhere"
    assert s.metrics["execution_accuracy"] == 0.0
    assert s.metrics["soft_f1"] == 0.0


def test_timeout_is_a_failure(spec: dict[str, Any], session: Evaluator) -> None:
    case = make_case("SELECT count(*) FROM track", spec=spec, options={"timeout": 0.5})
    s = KIND.evaluate(case, "SELECT count(*) FROM track a, track b, track c", session)
    assert s.reason == "timeout: query exceeded 0.5 s"
    assert s.metrics["execution_accuracy"] == 0.0
    assert "predicted_seconds" in s.metrics


def test_truncated_is_a_failure(spec: dict[str, Any], session: Evaluator) -> None:
    case = make_case("SELECT trackid FROM track WHERE trackid <= 10", spec=spec,
                     options={"max_rows": 100})
    s = KIND.evaluate(case, "SELECT trackid FROM track", session)
    assert s.reason is not None
    assert s.reason.startswith("truncated: the predicted result has more than 100 rows")
    assert s.metrics["execution_accuracy"] == 0.0
    assert s.metrics["same_row_count"] == 0.0


def test_over_max_bytes_is_a_failure_and_a_gold_error(chinook_sqlite: Path,
                                                      session: Evaluator) -> None:
    small = {"type": "sqlite", "path": str(chinook_sqlite), "max_bytes": 100_000}
    case = make_case("SELECT name FROM track WHERE trackid <= 10", spec=small)
    s = KIND.evaluate(case, "SELECT name, composer FROM track", session)
    assert s.reason is not None
    assert s.reason.startswith(
        "truncated: the predicted result holds more than 100,000 bytes (max_bytes); a partial "
        "result is never scored")
    assert s.metrics["execution_accuracy"] == 0.0
    with pytest.raises(GoldError, match=r"holds more than 100,000 bytes \(raise max_bytes\)"):
        KIND.evaluate(make_case("SELECT * FROM track", spec=small), "SELECT 1", session)


def test_a_case_is_one_round_trip_to_the_worker(spec: dict[str, Any],
                                                 session: Evaluator) -> None:
    """The gold and the prediction go to the sandbox worker together (a round trip per query
    was most of what a small case cost beyond its queries); a cached gold leaves the
    prediction alone, and the scores are what two trips gave."""
    gold = "SELECT name FROM genre WHERE genreid < 5 /* one round trip */"
    case = make_case(gold, spec=spec)
    src = session.source(case)
    assert src.execute("SELECT 1", trusted=True).rows == [(1,)]  # the worker runs
    box = src._box  # type: ignore[attr-defined]
    before = box.round_trips
    right = KIND.evaluate(case, "SELECT Name FROM Genre WHERE GenreId <= 4", session)
    assert right.metrics["execution_accuracy"] == 1.0 and not right.details["gold_cached"]
    assert box.round_trips == before + 1
    wrong = KIND.evaluate(case, "SELECT Name FROM Genre WHERE GenreId < 4", session)
    assert wrong.metrics["execution_accuracy"] == 0.0 and wrong.details["gold_cached"]
    assert box.round_trips == before + 2
    refused = KIND.evaluate(make_case(gold + " ", spec=spec), "SELECT 1; DROP TABLE genre",
                            session)
    assert refused.reason is not None and refused.reason.startswith("refused: ")


def test_broken_gold_is_an_error_of_the_suite(spec: dict[str, Any], session: Evaluator) -> None:
    with pytest.raises(GoldError, match="no such table"):
        KIND.evaluate(make_case("SELECT * FROM nowhere", spec=spec), "SELECT 1", session)
    big = make_case("SELECT * FROM track", spec=spec, options={"max_rows": 10})
    with pytest.raises(GoldError, match="raise max_rows"):
        KIND.evaluate(big, "SELECT 1", session)
    slow = make_case("SELECT count(*) FROM track a, track b, track c", spec=spec,
                     options={"timeout": 0.3})
    with pytest.raises(GoldError, match="timeout"):
        KIND.evaluate(slow, "SELECT 1", session)


def test_gold_alternatives_best_wins(spec: dict[str, Any], session: Evaluator) -> None:
    case = make_case(["SELECT name FROM artist WHERE artistid = 1",
                      "SELECT name FROM artist WHERE artistid = 2"], spec=spec)
    s = KIND.evaluate(case, "SELECT name FROM artist WHERE artistid = 2", session)
    assert s.metrics["execution_accuracy"] == 1.0
    assert s.details["gold_index"] == 1
    assert s.details["gold_alternatives"] == 2


def test_gold_cache_and_invalidation(
    spec: dict[str, Any], chinook_sqlite: Path, session: Evaluator
) -> None:
    case = make_case("SELECT name FROM genre ORDER BY genreid", spec=spec)
    pred = "SELECT name FROM genre ORDER BY genreid"
    first = KIND.evaluate(case, pred, session)
    assert first.details["gold_cached"] is False
    second = KIND.evaluate(case, pred, session)
    assert second.details["gold_cached"] is True
    assert second.metrics["gold_seconds"] == first.metrics["gold_seconds"]
    # A changed database changes the fingerprint: the cached gold is not used.
    session.close()
    with sqlite3.connect(chinook_sqlite) as conn:
        conn.execute("INSERT INTO Genre (GenreId, Name) VALUES (26, 'Polka')")
    conn.close()
    third = KIND.evaluate(case, pred, session)
    assert third.details["gold_cached"] is False
    assert third.details["gold_rows"] == 26


def test_no_cache_session_executes_again(spec: dict[str, Any]) -> None:
    from .conftest import JsonCache

    s = Evaluator(cache=JsonCache(), no_cache=True)
    try:
        case = make_case("SELECT 1", spec=spec)
        KIND.evaluate(case, "SELECT 1", s)
        assert KIND.evaluate(case, "SELECT 1", s).details["gold_cached"] is False
    finally:
        s.close()


def test_recorded_results_without_datasource(session: Evaluator) -> None:
    case = make_case(
        "SELECT a, b FROM t",
        gold_result=ResultTable(["a", "b"], [(1, "x"), (2, "y")]),
        predicted_result=ResultTable(["b", "a"], [("y", 2), ("x", 1)]),
    )
    assert list(KIND.validate(case)) == []
    s = KIND.evaluate(case, "SELECT b, a FROM t", session)
    assert s.reason is None
    assert s.metrics["execution_accuracy"] == 1.0  # any column permutation
    assert s.metrics["bird_ex"] == 0.0  # BIRD compares rows as written
    assert "exact_set_match" not in s.metrics  # no schema: no structure metrics


def test_spider_schema_source_scores_structure_only(shared_data: Path, session: Evaluator) -> None:
    spec = {"type": "spider-schema", "tables": str(shared_data / "spider" / "tables.json")}
    gold = "SELECT name, country, age FROM singer ORDER BY age DESC"
    case = make_case(gold, spec=spec, options={"db_id": "concert_singer"})
    assert list(KIND.validate(case)) == []
    s = KIND.evaluate(case, "SELECT name, country, age FROM singer ORDER BY age", session)
    assert "execution_accuracy" not in s.metrics
    assert s.metrics["exact_set_match"] == 0.0
    assert s.metrics["order_f1"] == 0.0
    assert s.metrics["select_f1"] == 1.0
    assert s.labels["hardness"] == "medium"
    assert any(line.startswith("structure:") for line in s.diff)
    refused = KIND.evaluate(case, "DROP TABLE singer", session)
    assert refused.reason is not None
    assert refused.reason.startswith("refused:")
    assert refused.metrics["exact_set_match"] == 0.0


def test_spider_schema_fingerprint_hashes_each_file_version_once(
        tmp_path: Path, shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_queryeval._util import safefile
    from pytest_queryeval.sources.spider_schema import SpiderSchemaSource

    tables = tmp_path / "tables.json"
    tables.write_bytes((shared_data / "spider" / "tables.json").read_bytes())
    reads: list[str] = []
    real = safefile.read_bytes

    def counting(path: Any, purpose: str) -> bytes:
        reads.append(purpose)
        return real(path, purpose)

    monkeypatch.setattr(safefile, "read_bytes", counting)
    src = SpiderSchemaSource("spider", tables)
    first = src.fingerprint()
    assert first == "spider-schema:" + sha256(tables)
    assert {SpiderSchemaSource("again", tables).fingerprint() for _ in range(50)} == {first}
    assert reads == ["structure"]  # hashed once, not once per case
    tables.write_bytes(tables.read_bytes() + b"\n")  # a new version: hashed again
    assert src.fingerprint() == "spider-schema:" + sha256(tables) != first
    assert reads == ["structure", "structure"]


def test_spider_schema_guard_parses_only_what_spider_rejects(
        shared_data: Path, session: Evaluator, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_queryeval.sources import sqlguard

    spec = {"type": "spider-schema", "tables": str(shared_data / "spider" / "tables.json")}
    case = make_case("SELECT name FROM singer", spec=spec, options={"db_id": "concert_singer"})
    parsed: list[str] = []
    real = sqlguard._check_sqlglot

    def counting(sql: str, dialect: str | None) -> None:
        parsed.append(sql)
        real(sql, dialect)

    monkeypatch.setattr(sqlguard, "_check_sqlglot", counting)
    ok = KIND.evaluate(case, "SELECT name FROM singer", session)
    assert ok.reason is None and ok.metrics["exact_set_match"] == 1.0
    assert parsed == []  # nothing executes and Spider's parser took it: no guard parse
    # Spider's parser reads what comes before the first ';', and nothing is executed: scored
    # as the reference scores it (issue 48), the guard not asked
    two = KIND.evaluate(case, "SELECT name FROM singer; DROP TABLE singer", session)
    assert two.reason is None and two.metrics["exact_set_match"] == 1.0
    assert parsed == []
    bad = KIND.evaluate(case, "SELECT load_extension('x') FROM singer", session)
    assert bad.reason is not None and "load_extension() has side effects" in bad.reason
    assert bad.metrics["exact_set_match"] == 0.0


def test_structure_auto_skips_non_spider_gold(spec: dict[str, Any], session: Evaluator) -> None:
    gold = ("WITH t AS (SELECT genreid, count(*) AS n FROM track GROUP BY genreid) "
            "SELECT max(n) FROM t")
    s = KIND.evaluate(make_case(gold, spec=spec), gold, session)
    assert s.metrics["execution_accuracy"] == 1.0
    assert "exact_set_match" not in s.metrics
    required = make_case(gold, spec=spec, options={"structure": True})
    with pytest.raises(GoldError, match="Spider grammar"):
        KIND.evaluate(required, gold, session)
    off = make_case("SELECT 1", spec=spec, options={"structure": False})
    assert "exact_set_match" not in KIND.evaluate(off, "SELECT 1", session).metrics


def test_compare_options_apply(spec: dict[str, Any], session: Evaluator) -> None:
    case = make_case("SELECT total FROM invoice WHERE invoiceid = 1", spec=spec)
    assert KIND.evaluate(case, "SELECT 1.98", session).metrics["execution_accuracy"] == 1.0
    loose = make_case("SELECT total FROM invoice WHERE invoiceid = 1", spec=spec,
                      options={"compare": {"float_digits": 1}})
    assert KIND.evaluate(loose, "SELECT 2.0", session).metrics["execution_accuracy"] == 1.0


def test_missing_database_is_source_unavailable(tmp_path: Path, session: Evaluator) -> None:
    case = make_case("SELECT 1", spec={"type": "sqlite", "path": str(tmp_path / "gone.db")})
    with pytest.raises(SourceUnavailable):
        KIND.evaluate(case, "SELECT 1", session)


def test_prediction_shapes(spec: dict[str, Any], session: Evaluator) -> None:
    case = make_case("SELECT 1", spec=spec)
    assert KIND.evaluate(case, {"sql": "SELECT 1"}, session).metrics["execution_accuracy"] == 1
    with pytest.raises(PredictionError):
        KIND.evaluate(case, 42, session)


def test_validate(spec: dict[str, Any]) -> None:
    def problems(**kw: Any) -> dict[str, str]:
        gold = kw.pop("gold", "SELECT 1")
        return dict(KIND.validate(make_case(gold, spec=kw.pop("spec", spec), **kw)))

    assert problems() == {}
    assert "compare" in problems(options={"compare": {"nope": 1}})
    assert "efficiency.iterations" in problems(options={"efficiency": {"iterations": 0}})
    assert "efficiency" in problems(options={"efficiency": 3})
    assert "structure" in problems(options={"structure": "maybe"})
    assert "arity_from" in problems(options={"arity_from": "vibes"})
    assert "keep_distinct" in problems(options={"keep_distinct": "yes"})
    assert "test_suite_rewrite" in problems(options={"test_suite_rewrite": 1})
    assert "gold[1]" in problems(gold=["SELECT 1", 3])
    assert "datasource" in problems(spec=None)
    assert "db_id" in problems(spec={"type": "spider-schema", "tables": "/x/tables.json"})


def test_difficulty() -> None:
    assert KIND.difficulty(make_case("SELECT count(*) FROM singer")) == "easy"
    assert KIND.difficulty(make_case(["SELECT max(a), min(a) FROM t", "SELECT 1"])) == "medium"
    # outside Spider's grammar: sql_hardness (issue 24 item 13; was None), a CTE is NESTED
    assert KIND.difficulty(make_case("WITH t AS (SELECT 1) SELECT * FROM t")) == "hard"
    assert KIND.difficulty(make_case("SELECT FROM WHERE (")) is None  # no parse at all


def test_efficiency_opt_in(spec: dict[str, Any], session: Evaluator) -> None:
    case = make_case("SELECT count(*) FROM track", spec=spec,
                     options={"efficiency": {"iterations": 3}})
    s = KIND.evaluate(case, "SELECT count(trackid) FROM track", session)
    assert 0.0 <= s.metrics["ves"] <= 1.0
    assert 0.0 <= s.metrics["r_ves"] <= 1.0
    assert set(s.details["efficiency"]) >= {"ves_time_ratio", "r_ves_reward"}
    wrong = KIND.evaluate(case, "SELECT count(*) FROM album", session)
    assert wrong.metrics["ves"] == 0.0
    assert wrong.metrics["r_ves"] == 0.0
    refused = KIND.evaluate(case, "DELETE FROM track", session)
    assert refused.metrics["ves"] == 0.0


def test_recorded_gold_with_executed_prediction(spec: dict[str, Any], session: Evaluator) -> None:
    """A recorded gold is final: the TSSE texts are not re-executed for it."""
    case = make_case("SELECT DISTINCT name FROM genre WHERE genreid < 3", spec=spec,
                     gold_result=ResultTable(["name"], [("Rock",), ("Jazz",)]))
    s = KIND.evaluate(case, "SELECT DISTINCT name FROM genre WHERE genreid < 3", session)
    assert s.reason is None
    assert s.metrics["execution_accuracy"] == 1.0
    assert "execution_accuracy_on" not in s.details
    assert s.metrics["exact_set_match"] == 1.0


def test_diff_explains_a_test_suite_only_mismatch(spec: dict[str, Any], session: Evaluator) -> None:
    tsse = {"test_suite_rewrite": True}
    case = make_case("SELECT DISTINCT billingcountry FROM invoice", spec=spec, options=tsse)
    s = KIND.evaluate(case, "SELECT billingcountry FROM invoice GROUP BY billingcountry", session)
    assert s.metrics["execution_accuracy"] == 0.0
    assert s.diff[0].startswith("execution_accuracy: 0 on the test-suite texts")
    ok = KIND.evaluate(make_case("SELECT count(DISTINCT composer) FROM track", spec=spec,
                                 options=tsse),
                       "SELECT count(composer) FROM track", session)
    assert ok.metrics["execution_accuracy"] == 1.0  # TSSE strips DISTINCT from both texts
    assert ok.metrics["bird_ex"] == 0.0
    assert not [line for line in ok.diff if not line.startswith("structure:")]
