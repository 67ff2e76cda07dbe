"""Against the reference generator (issue 27): the test-suite evaluator's own fuzzer
(TestSuiteEval, run by bench/crosscheck_testsuiteeval.py) left its per-pair verdicts on the
concert_singer corpus in concert_singer.testsuiteeval.yaml. Our search must catch every pair the
reference catches, never fewer, within the default budget (the reference's run used as many
databases per gold), and the reference, like ours, must flag no equivalent rewrite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_queryeval.neighbours import search
from tests.neighbours.support import BUDGET, DATA, concert_singer, same_as_the_case

CORPUS = yaml.safe_load((DATA / "concert_singer.yaml").read_text())
ORACLE = yaml.safe_load((DATA / "concert_singer.testsuiteeval.yaml").read_text())


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return concert_singer(tmp_path_factory.mktemp("concert_singer"))


def test_the_oracle_covers_the_corpus_pair_by_pair() -> None:
    pairs = [(k, i, p["gold"], p["predicted"])
             for k in ("coincidental", "equivalent") for i, p in enumerate(CORPUS[k])]
    assert [(r["kind"], r["index"], r["gold"], r["predicted"]) for r in ORACLE] == pairs


def test_the_reference_flags_no_equivalent_rewrite() -> None:
    assert [r["predicted"] for r in ORACLE
            if r["kind"] == "equivalent" and r["distinguished"]] == []


CAUGHT = [r for r in ORACLE if r["distinguished"]]


def test_the_reference_catches_most_but_not_all_coincidental_passes() -> None:
    assert (len(CAUGHT), sum(r["kind"] == "coincidental" for r in ORACLE)) == (13, 18)


@pytest.mark.parametrize("pair", CAUGHT, ids=lambda r: f"{r['kind']}-{r['index']}")
def test_our_search_catches_every_pair_the_reference_catches(
        database: Path, pair: dict[str, Any]) -> None:
    found = search(database, pair["gold"], pair["predicted"], same_as_the_case(pair["gold"]),
                   budget=BUDGET)
    assert found.counterexample is not None, pair["predicted"]
