"""``judge:`` end to end through the plugin: the real ``openai`` client against the loopback
stand-in for the judge model (tests/fixtures/openai_standin.py: deterministic verdicts), on a
real SQLite file; the configuration's errors located before any case runs."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.fixtures.openai_standin import KEY, MODEL
from tests.support import read_report, write_suite

pytest.importorskip("openai")

GOLD_COUNT = "SELECT count(*) FROM artists"
#: Correct, but its column differs in type: execution match fails it (1 vs 1.0 compare equal
#: under the default options, so the difference is a real one: an extra column)
PRED_EXTRA = "SELECT count(*), 'artists' FROM artists"
PRED_WRONG = "SELECT count(*) FROM albums WHERE id > 1"
ACCEPT = json.dumps({"category": "equivalent", "reason": "the extra column is a label"})
REJECT = json.dumps({"category": "wrong", "reason": "counts albums, not artists"})


@pytest.fixture
def music(pytester):
    write_suite(pytester.path)
    conn = sqlite3.connect(pytester.path / "music.sqlite")
    conn.execute("CREATE TABLE artists (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
    conn.execute("CREATE TABLE albums (id INTEGER PRIMARY KEY, title TEXT)")
    conn.executemany("INSERT INTO artists VALUES (?, ?)", [(1, "AC/DC"), (2, "Accept")])
    conn.executemany("INSERT INTO albums VALUES (?, ?)", [(1, "Back in Black"), (2, "Balls")])
    conn.commit()
    conn.close()
    return pytester


def write_music_suite(pytester, standin, cases, **judge):
    spec = {"model": MODEL, "base_url": standin.base_url, "api_key": "${QE_JUDGE_KEY}",
            "temperature": 0, "seed": 1, "retries": 0, "timeout": 30,
            "pricing": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}, **judge}
    # the cases on one line: errors are located at test_music.yaml:1
    write_suite(pytester.path, {
        "datasources": {"music": {"type": "sqlite", "path": "music.sqlite"}},
        "judge": spec}, {"test_music.yaml": json.dumps({
            "kind": "sql", "datasource": "music",
            "thresholds": {"execution_accuracy": 0, "judge_ex": 1}, "cases": cases})})


def run(pytester, monkeypatch, *args):
    monkeypatch.setenv("QE_JUDGE_KEY", KEY)
    result = pytester.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider", *args)
    report = read_report(pytester.path / "r.json")
    return result, {c["id"]: c for c in report["cases"]}


CASES = [
    {"id": "same", "question": "How many artists?", "gold": GOLD_COUNT,
     "predicted": "SELECT count(id) FROM artists"},
    {"id": "label", "question": "How many artists are there?", "gold": GOLD_COUNT,
     "predicted": PRED_EXTRA},
    {"id": "albums", "question": "Count the artists.", "gold": GOLD_COUNT,
     "predicted": PRED_WRONG},
]


def test_judge_rescues_and_rejects_only_where_execution_failed_and_pins(music, openai_standin,
                                                                        monkeypatch):
    openai_standin.containing = {PRED_EXTRA: ACCEPT, PRED_WRONG: REJECT}
    write_music_suite(music, openai_standin, CASES)
    result, cases = run(music, monkeypatch)
    result.assert_outcomes(passed=2, failed=1)
    # execution_accuracy unchanged; judge_ex decides
    assert [cases[i]["metrics"]["execution_accuracy"] for i in ("same", "label", "albums")] \
        == [1.0, 0.0, 0.0]
    assert [cases[i]["metrics"]["judge_ex"] for i in ("same", "label", "albums")] \
        == [1.0, 1.0, 0.0]
    # asked only where execution failed: two calls
    assert len(openai_standin.requests) == 2
    label = cases["label"]["details"]["judge"]
    assert (label["category"], label["reason"], label["outcome"], label["pinned"]) == (
        "equivalent", "the extra column is a label", "rescued", False)
    assert cases["albums"]["details"]["judge"]["category"] == "wrong"
    assert "outcome" not in cases["albums"]["details"]["judge"]
    assert cases["same"]["details"]["judge"]["asked"] is False
    # the prompt showed both queries and both results
    prompt = next(r["messages"][0]["content"] for r in openai_standin.requests
                  if PRED_EXTRA in r["messages"][0]["content"])
    assert GOLD_COUNT in prompt and "count(*) | 'artists'" in prompt and "2 | artists" in prompt
    assert "CREATE TABLE artists" in prompt
    assert openai_standin.requests[0]["response_format"]["type"] == "json_object"
    # the judge's usage, priced
    m = cases["label"]["metrics"]
    assert m["judge_tokens"] > 0 and m["judge_latency_s"] > 0
    assert m["judge_cost_usd"] == pytest.approx(
        (len(prompt) // 4 * 1.0 + len(ACCEPT) // 4 * 2.0) / 1e6)
    # pinned: a committable file beside queryeval.yaml, sorted by key
    pins = (music.path / "queryeval-judge-pins.jsonl").read_text().splitlines()
    assert len(pins) == 2
    keys = [json.loads(line)["key"] for line in pins]
    assert keys == sorted(keys)
    # the rerun reuses the pins: no call, the same verdicts
    openai_standin.containing = {PRED_EXTRA: REJECT, PRED_WRONG: ACCEPT}
    result, again = run(music, monkeypatch)
    result.assert_outcomes(passed=2, failed=1)
    assert len(openai_standin.requests) == 2
    for i in ("same", "label", "albums"):
        assert again[i]["metrics"]["judge_ex"] == cases[i]["metrics"]["judge_ex"]
    assert again["label"]["details"]["judge"]["pinned"] is True
    assert "judge_tokens" not in again["label"]["metrics"]
    # --queryeval-judge-refresh asks again, and records the flips
    result, fresh = run(music, monkeypatch, "--queryeval-judge-refresh")
    assert len(openai_standin.requests) == 4
    assert fresh["label"]["metrics"]["judge_ex"] == 0.0
    assert fresh["albums"]["metrics"]["judge_ex"] == 1.0
    assert fresh["label"]["details"]["judge"]["flipped_from"]["category"] == "equivalent"


def test_always_challenges_passes_and_records_an_overturn(music, openai_standin, monkeypatch):
    openai_standin.containing = {"SELECT count(id) FROM artists": REJECT}
    write_music_suite(music, openai_standin, CASES[:1], when="always")
    result, cases = run(music, monkeypatch)
    result.assert_outcomes(failed=1)
    case = cases["same"]
    assert case["metrics"]["execution_accuracy"] == 1.0
    assert case["metrics"]["judge_ex"] == 0.0
    assert case["details"]["judge"]["outcome"] == "overturned"


def test_an_unparsable_answer_is_a_judge_error_not_a_zero(music, openai_standin, monkeypatch):
    openai_standin.containing = {PRED_EXTRA: "I think it is fine."}
    write_music_suite(music, openai_standin, CASES[1:2])
    result, cases = run(music, monkeypatch)
    result.assert_outcomes(failed=1)  # pytest's outcome; the report's is "error"
    case = cases["label"]
    assert case["outcome"] == "error"
    assert "judge error" in case["error"] and "no JSON object" in case["error"]
    assert "judge_ex" not in case["metrics"]
    assert case["metrics"]["execution_accuracy"] == 0.0
    # nothing pinned for an answer that was not a verdict
    assert not (music.path / "queryeval-judge-pins.jsonl").exists()


def test_votes_take_the_majority_and_max_calls_caps_the_run(music, openai_standin,
                                                            monkeypatch):
    openai_standin.containing = {PRED_EXTRA: ACCEPT, PRED_WRONG: REJECT}
    write_music_suite(music, openai_standin, CASES, votes=3, max_calls=3, pins="pins/judge.jsonl")
    _, cases = run(music, monkeypatch)
    # three calls for the first failing case; none left for the second: a judge error
    assert len(openai_standin.requests) == 3
    judged = [cases[i] for i in ("label", "albums")]
    assert judged[0]["metrics"]["judge_ex"] == 1.0
    assert judged[0]["details"]["judge"]["reason"].startswith("3 of 3 votes: ")
    assert judged[1]["outcome"] == "error" and "max_calls (3) reached" in judged[1]["error"]
    assert (music.path / "pins" / "judge.jsonl").exists()


@pytest.mark.parametrize(("judge", "expected"), [
    ({"when": "sometimes"}, "queryeval.yaml:{line}: judge.when: must be one of failures, always"),
    ({"votes": 0}, "queryeval.yaml:{line}: judge.votes: must be a whole number >= 1"),
    ({"modle": "x"}, "queryeval.yaml:{line}: judge.modle: unknown key (did you mean 'model'?)"),
    ({"min_kappa": 2}, "queryeval.yaml:{line}: judge.min_kappa: must be a Cohen's kappa"),
    ({"blind_check": "yes"},
     "queryeval.yaml:{line}: judge.blind_check: must be true or false, not 'yes'"),
])
def test_a_wrong_judge_key_is_a_located_usage_error_before_any_case(music, judge, expected):
    music.path.joinpath("queryeval.yaml").write_text(
        "datasources:\n  music: {type: sqlite, path: music.sqlite}\njudge:\n"
        "  model: m\n" + "".join(f"  {k}: {json.dumps(v)}\n" for k, v in judge.items()))
    music.makefile(".yaml", test_music=json.dumps({
        "kind": "sql", "datasource": "music", "cases": CASES[:1]}))
    result = music.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert expected.format(line=5) in result.stderr.str()


def test_a_case_overrides_the_judge_and_a_wrong_case_key_is_its_own_error(music, openai_standin,
                                                                         monkeypatch):
    openai_standin.containing = {PRED_EXTRA: ACCEPT}
    cases = [{**CASES[1], "judge": False}, {**CASES[1], "id": "bad", "judge": {"votes": "x"}},
             {**CASES[1], "id": "other"}]
    write_music_suite(music, openai_standin, cases)
    _, out = run(music, monkeypatch)
    assert "judge_ex" not in out["label"]["metrics"]
    assert out["label"]["outcome"] == "failed"  # judge_ex threshold, no judge: missing
    assert out["bad"]["outcome"] == "error"
    assert "test_music.yaml:1: cases[1].judge.votes: must be a whole number >= 1" \
        in out["bad"]["error"]
    assert out["other"]["metrics"]["judge_ex"] == 1.0


TTL = """@prefix ex: <http://example.org/> .
ex:a ex:name "Ada" . ex:b ex:name "Bob" .
"""
SPARQL_GOLD = "SELECT ?n WHERE { ?s <http://example.org/name> ?n }"
SPARQL_PRED = "SELECT ?s ?n WHERE { ?s <http://example.org/name> ?n }"


def test_sparql_cases_are_judged_too(pytester, openai_standin, monkeypatch):
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    (pytester.path / "people.ttl").write_text(TTL)
    openai_standin.containing = {SPARQL_PRED: ACCEPT}
    pytester.makefile(".yaml", queryeval=json.dumps({
        "datasources": {"people": {"type": "rdf", "path": "people.ttl"}},
        "judge": {"model": MODEL, "base_url": openai_standin.base_url,
                  "api_key": "${QE_JUDGE_KEY}", "retries": 0}}))
    pytester.makefile(".yaml", test_people=json.dumps({
        "kind": "sparql", "datasource": "people",
        "thresholds": {"execution_accuracy": 0, "judge_ex": 1},
        "cases": [{"id": "names", "question": "Who has a name?", "gold": SPARQL_GOLD,
                   "predicted": SPARQL_PRED}]}))
    result, cases = run(pytester, monkeypatch)
    result.assert_outcomes(passed=1)
    case = cases["names"]
    assert case["metrics"]["execution_accuracy"] == 0.0
    assert case["metrics"]["judge_ex"] == 1.0
    assert case["details"]["judge"]["outcome"] == "rescued"
    prompt = openai_standin.requests[0]["messages"][0]["content"]
    assert "expert SPARQL reviewer" in prompt and SPARQL_GOLD in prompt


def test_a_judge_cost_gate_bounds_the_total(music, openai_standin, monkeypatch):
    openai_standin.containing = {PRED_EXTRA: ACCEPT, PRED_WRONG: REJECT}
    write_music_suite(music, openai_standin, CASES)
    config = json.loads((music.path / "queryeval.yaml").read_text())
    config["gates"] = {"judge_cost_usd": {"total_max": 0.0}}
    (music.path / "queryeval.yaml").write_text(json.dumps(config))
    result, cases = run(music, monkeypatch)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    report = read_report(music.path / "r.json")
    gate = next(g for g in report["gates"] if g["metric"] == "judge_cost_usd")
    total = sum(c["metrics"].get("judge_cost_usd", 0) for c in cases.values())
    assert total > 0
    assert gate["passed"] is False and gate["value"] == pytest.approx(total)


def test_a_judge_declared_in_a_case_file_pins_beside_the_nearest_queryeval_yaml(
        music, openai_standin, monkeypatch):
    openai_standin.containing = {PRED_EXTRA: ACCEPT}
    music.makefile(".yaml", queryeval=json.dumps({
        "datasources": {"music": {"type": "sqlite", "path": "music.sqlite"}}}))
    sub = music.path / "judged"
    sub.mkdir()
    (sub / "test_judged.yaml").write_text(json.dumps({
        "kind": "sql", "datasource": "music",
        "judge": {"model": MODEL, "base_url": openai_standin.base_url, "api_key": KEY,
                  "retries": 0},
        "thresholds": {"execution_accuracy": 0, "judge_ex": 1}, "cases": [CASES[1]]}))
    result, cases = run(music, monkeypatch)
    result.assert_outcomes(passed=1)
    assert cases["label"]["metrics"]["judge_ex"] == 1.0
    pins = (music.path / "queryeval-judge-pins.jsonl").read_text().splitlines()
    assert [json.loads(line)["key"] for line in pins] == [
        cases["label"]["details"]["judge"]["key"]]


def test_xdist_workers_merge_their_pins_into_one_file(music, openai_standin, monkeypatch):
    pytest.importorskip("xdist")
    preds = [f"SELECT count(*), 'x{i}' FROM artists" for i in range(4)]
    openai_standin.containing = dict.fromkeys(preds, ACCEPT)
    write_music_suite(music, openai_standin, [])
    for i, pred in enumerate(preds):  # one file each: the workers split them
        music.makefile(".yaml", **{f"test_w{i}": json.dumps({
            "kind": "sql", "datasource": "music",
            "thresholds": {"execution_accuracy": 0, "judge_ex": 1},
            "cases": [{"id": f"w{i}", "question": "How many artists?", "gold": GOLD_COUNT,
                       "predicted": pred}]})})
    result, cases = run(music, monkeypatch, "-n", "2")
    result.assert_outcomes(passed=4)
    pins = (music.path / "queryeval-judge-pins.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["key"] for line in pins) == sorted(
        cases[f"w{i}"]["details"]["judge"]["key"] for i in range(4))


def test_relaxed_metrics_are_computed_once_per_case(music, openai_standin, monkeypatch):
    """relaxed_ex, the judge's near-miss facts and the near-miss list of a failing case read
    the one cached computation of the relaxed metrics (each is a full table comparison per
    relaxation). The real function is wrapped to count its calls, nothing else changes."""
    from pytest_queryeval.engine import nearmiss

    calls = []
    real = nearmiss.relaxed_metrics

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(nearmiss, "relaxed_metrics", counted)
    openai_standin.containing = {PRED_WRONG: REJECT}
    write_music_suite(music, openai_standin, [{**CASES[2], "relaxed_ex": ["row_order"]}])
    result, cases = run(music, monkeypatch)
    result.assert_outcomes(failed=1)
    case = cases["albums"]
    assert case["metrics"]["relaxed_ex"] == 0.0 and case["metrics"]["judge_ex"] == 0.0
    assert case["details"]["judge"]["category"] == "wrong"  # asked, with the near-miss facts
    assert len(calls) == 1


def test_each_pin_names_its_case_and_question(music, openai_standin, monkeypatch):
    """A reviewer reading the pin file's diff in a pull request sees which case a verdict
    belongs to (issue 43): each line carries the case's id and question beside its key."""
    openai_standin.containing = {PRED_EXTRA: ACCEPT, PRED_WRONG: REJECT}
    write_music_suite(music, openai_standin, CASES)
    run(music, monkeypatch)
    lines = (music.path / "queryeval-judge-pins.jsonl").read_text().splitlines()
    pins = {json.loads(line)["case"]: json.loads(line) for line in lines}
    assert sorted(pins) == ["albums", "label"]
    assert pins["label"]["question"] == "How many artists are there?"
    assert (pins["label"]["category"], pins["label"]["reason"]) == (
        "equivalent", "the extra column is a label")
    assert pins["albums"]["question"] == "Count the artists."
    # the case comes first on its line, the key stays the sort order of the file
    assert all(line.startswith('{"case": ') for line in lines)
    assert [json.loads(line)["key"] for line in lines] == sorted(
        json.loads(line)["key"] for line in lines)
