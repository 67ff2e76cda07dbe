"""``abstention: ehrsql`` (issue 48 item 2): a suite imported from EHRSQL 2024 answer files by
``queryeval-import ehrsql`` scores all 1,000 pairs of tests/data/ehrsql/pairs1000 as the
reference's ``scoring_v2.py`` does (its outputs in ``oracle.json``), question by question and in
RS(0/5/10/N), including the 3 empty texts (answers, -1) and the 4 flat lists of strings."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.engine.abstain import abstention
from pytest_queryeval.importers import cli
from pytest_queryeval.importers.ehrsql import build
from tests.support import run_report

#: One xdist worker runs the whole module: its module-scoped runs are made once, not
#: once per worker (``tests/together.py``).
pytestmark = pytest.mark.xdist_group("tests.abstention.test_ehrsql_preset")

DATA = Path(__file__).resolve().parents[1] / "data" / "ehrsql" / "pairs1000"


def _load(name: str) -> Any:
    with gzip.open(DATA / name, "rt", encoding="utf-8") as f:
        return json.load(f)


def _score(record: dict[str, Any]) -> int:
    """The reference's per-question score, read from a record as the aggregate reads it."""
    info = record["details"].get("abstention") or {}
    if info.get("expected"):
        return 1 if info.get("abstained") else -1
    if info.get("abstained"):
        return 0
    return 1 if record["status"] == "passed" else -1


@pytest.fixture(scope="module")
def ehrsql_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """The 1,000 pairs imported and run once (a pytester run per module is too slow here)."""
    import subprocess
    import sys

    root = tmp_path_factory.mktemp("ehrsql")
    inputs = root / "in"
    inputs.mkdir()
    for name in ("answer.json", "prediction.json"):
        (inputs / name).write_text(json.dumps(_load(name + ".gz")), encoding="utf-8")
    suite = root / "suite"
    assert cli.main(["ehrsql", str(inputs / "answer.json"), "--predictions",
                     str(inputs / "prediction.json"), "--out", str(suite)]) == 0
    (suite / "tox.ini").write_text("[pytest]\nqueryeval_files = test_*.yaml\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "--queryeval-json=r.json"], cwd=suite, capture_output=True,
                         text=True, check=False)
    assert (suite / "r.json").is_file(), run.stdout[-3000:] + run.stderr[-3000:]
    from tests.support import read_report

    return suite, read_report(suite / "r.json")


def test_every_pair_scores_as_scoring_v2(ehrsql_run: tuple[Path, Any]) -> None:
    _, report = ehrsql_run
    oracle = json.loads((DATA / "oracle.json").read_text(encoding="utf-8"))
    assert not [c["id"] for c in report["cases"] if c["status"] == "error"]
    mine = {c["id"]: _score(c) for c in report["cases"]}
    assert len(mine) == 1000
    assert mine == oracle["scores"]
    agg = report["aggregates"]["abstention"]
    assert agg["questions"] == 1000
    n = str(len(oracle["scores"]))
    assert (agg["reliability_score_0"], agg["reliability_score_5"], agg["reliability_score_10"],
            agg["reliability_score_n"]) == (oracle["penalize"]["0"], oracle["penalize"]["5"],
                                           oracle["penalize"]["10"], oracle["penalize"][n])
    # scores.json is the same figures ×100, digit for digit
    assert {k: v * 100 for k, v in zip(
        ("accuracy0", "accuracy5", "accuracy10", "accuracyN"),
        (agg["reliability_score_0"], agg["reliability_score_5"], agg["reliability_score_10"],
         agg["reliability_score_n"]), strict=True)} == oracle["scores_json"]


def test_empty_texts_and_flat_string_lists(ehrsql_run: tuple[Path, Any]) -> None:
    """The pairs the default rule scored otherwise: an empty text is an answer (-1 on an
    answerable question, never an abstention); a flat list of strings is rows of characters."""
    _, report = ehrsql_run
    preds = _load("prediction.json.gz")
    oracle = json.loads((DATA / "oracle.json").read_text(encoding="utf-8"))["scores"]
    empty = [k for k, v in preds.items() if v == ""]
    flat = [k for k, v in preds.items() if v.startswith("['")]
    assert (len(empty), len(flat)) == (3, 4)
    for key in empty:
        assert "abstained" not in report.by_id[key]["metrics"]
        assert report.by_id[key]["metrics"]["ehrsql_ex"] == 0.0  # in every mean, at 0
        assert _score(report.by_id[key]) == oracle[key] == -1
    assert [oracle[k] for k in flat] == [_score(report.by_id[k]) for k in flat]
    quoted = next(k for k, v in preds.items() if v == "'null'")
    assert report.by_id[quoted]["details"]["abstention"]["abstained"] is True


def test_a_flat_string_list_is_rows_of_characters() -> None:
    suite = build({"q": "[['a', 'b']]"}, {"q": "['ab']"}, {}, "answer.json")
    assert suite["cases"][0]["predicted_result"] == {"rows": [["a", "b"]]}


@pytest.mark.parametrize(("answers", "predictions", "message"), [
    ({"q": "[1, 2]"}, None, "answer.json: q: the EHRSQL reference's process_answer raises TypeError"),
    ({"q": "'x'"}, None, "answer.json: q: the gold answer \"'x'\" is neither rows nor 'null'"),
    ({"q": "null"}, {"r": "null"}, "the ids of answer.json and prediction.json differ"),
    ({"q": "null"}, {"q": None}, "prediction.json: q: null (the reference raises TypeError)"),
])
def test_what_the_reference_crashes_on_is_refused(answers, predictions, message) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build(answers, predictions, {}, "answer.json")


@pytest.mark.parametrize(("value", "rule", "how"), [
    ("null", "ehrsql", "the EHRSQL skip text 'null'"), ("'null'", "ehrsql",
                                                          "the EHRSQL skip text 'null'"),
    (" null", "ehrsql", None), ("", "ehrsql", None), ("null", "default", None),
    (None, "ehrsql", "null"), ("", "default", None),
])
def test_the_ehrsql_rule(value, rule, how) -> None:
    assert abstention(value, (), rule) == how


def test_an_unknown_rule_is_a_located_error(pytester: pytest.Pytester) -> None:
    from tests.support import write_suite

    write_suite(pytester.path, {"abstention": "trustsql"}, {"test_q.yaml": {
        "kind": "json", "cases": [{"id": "a", "question": "q", "gold": 1, "predicted": 1}]}})
    result, _ = run_report(pytester)
    result.stdout.fnmatch_lines(["*queryeval.yaml:*: abstention: must be one of default, "
                                 "ehrsql, not 'trustsql'*"])
