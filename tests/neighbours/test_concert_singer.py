"""The second public database corpus (issue 27): Spider's concert_singer database, built from
its own SQL script, where a handful of rows per table make coincidental passes common. Every
pair returns its gold's result on the real data; the coincidental passes are caught and the
equivalent rewrites never flagged, within the default budget."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pytest_queryeval.neighbours import search
from tests.neighbours.support import BUDGET, DATA, concert_singer, result, same_as_the_case

CORPUS = yaml.safe_load((DATA / "concert_singer.yaml").read_text())


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return concert_singer(tmp_path_factory.mktemp("concert_singer"))


def test_the_database_is_spiders(database: Path) -> None:
    counts = [result(database, f'SELECT count(*) FROM "{t}"').rows[0][0]
              for t in ("stadium", "singer", "concert", "singer_in_concert")]
    assert counts == [9, 6, 6, 10]


@pytest.mark.parametrize("pair", CORPUS["coincidental"] + CORPUS["equivalent"],
                         ids=lambda p: p["predicted"][:50])
def test_every_pair_passes_on_the_real_database(database: Path, pair: dict[str, str]) -> None:
    same = same_as_the_case(pair["gold"])
    assert same(result(database, pair["gold"]), result(database, pair["predicted"]))


def test_coincidental_passes_are_caught_and_equivalents_never_flagged(database: Path) -> None:
    missed = [p["reason"] for p in CORPUS["coincidental"]
              if search(database, p["gold"], p["predicted"], same_as_the_case(p["gold"]),
                        budget=BUDGET).counterexample is None]
    assert 1 - len(missed) / len(CORPUS["coincidental"]) >= 0.9, missed
    alarms = [p["predicted"] for p in CORPUS["equivalent"]
              if search(database, p["gold"], p["predicted"], same_as_the_case(p["gold"]),
                        budget=BUDGET).counterexample is not None]
    assert alarms == []
