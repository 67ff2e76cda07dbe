"""The forms each hostile re-probe round of the Cypher kind under ``rehearse: false`` found,
in one pair of tests: each round's module keeps its forms (``REFUSED``: name to the query and
a word of its refusal; ``SENT``: honest queries beside them) and its end-to-end test; the
next round adds its module here."""

from __future__ import annotations

import pytest

from pytest_queryeval.errors import QueryRefused
from tests.cypher import test_cypher_fiftieth as fiftieth
from tests.cypher import test_cypher_fiftyeighth as fiftyeighth
from tests.cypher import test_cypher_fiftyfourth as fiftyfourth
from tests.cypher import test_cypher_fiftyninth as fiftyninth
from tests.cypher import test_cypher_fiftyseventh as fiftyseventh
from tests.cypher import test_cypher_fiftysixth as fiftysixth
from tests.cypher import test_cypher_fiftythird as fiftythird
from tests.cypher import test_cypher_fortyeighth as fortyeighth
from tests.cypher import test_cypher_fortyfifth as fortyfifth
from tests.cypher import test_cypher_fortyfirst as fortyfirst
from tests.cypher import test_cypher_fortyfourth as fortyfourth
from tests.cypher import test_cypher_fortyninth as fortyninth
from tests.cypher import test_cypher_fortyseventh as fortyseventh
from tests.cypher import test_cypher_fortysixth as fortysixth
from tests.cypher import test_cypher_fortythird as fortythird
from tests.cypher import test_cypher_seventieth as seventieth
from tests.cypher import test_cypher_seventyfirst as seventyfirst
from tests.cypher import test_cypher_sixtieth as sixtieth
from tests.cypher import test_cypher_sixtyeighth as sixtyeighth
from tests.cypher import test_cypher_sixtyfifth as sixtyfifth
from tests.cypher import test_cypher_sixtyfirst as sixtyfirst
from tests.cypher import test_cypher_sixtyfourth as sixtyfourth
from tests.cypher import test_cypher_sixtyninth as sixtyninth
from tests.cypher import test_cypher_sixtysecond as sixtysecond
from tests.cypher import test_cypher_sixtyseventh as sixtyseventh
from tests.cypher import test_cypher_sixtysixth as sixtysixth
from tests.cypher import test_cypher_sixtythird as sixtythird
from tests.cypher import test_cypher_thirtyninth as thirtyninth
from tests.cypher.test_cypher_thirtyninth import _unrehearsed

ROUNDS = {"thirtyninth": thirtyninth, "fortyfirst": fortyfirst, "fortythird": fortythird,
          "fortyfourth": fortyfourth, "fortyfifth": fortyfifth,
          "fortysixth": fortysixth, "fortyseventh": fortyseventh, "fortyeighth": fortyeighth,
          "fortyninth": fortyninth, "fiftieth": fiftieth,
          "fiftythird": fiftythird, "fiftyfourth": fiftyfourth,
          "fiftysixth": fiftysixth, "fiftyseventh": fiftyseventh,
          "fiftyeighth": fiftyeighth, "fiftyninth": fiftyninth,
          "sixtieth": sixtieth, "sixtyfirst": sixtyfirst,
          "sixtysecond": sixtysecond,
          "sixtythird": sixtythird, "sixtyfourth": sixtyfourth,
          "sixtyfifth": sixtyfifth, "sixtysixth": sixtysixth,
          "sixtyseventh": sixtyseventh, "sixtyeighth": sixtyeighth,
          "sixtyninth": sixtyninth, "seventieth": seventieth,
          "seventyfirst": seventyfirst}
_REFUSED = [(round_, name) for round_, module in ROUNDS.items() for name in sorted(module.REFUSED)]
_SENT = [(round_, k) for round_, module in ROUNDS.items() for k in range(len(module.SENT))]


@pytest.mark.parametrize(("round_", "name"), _REFUSED, ids=[f"{r}-{n}" for r, n in _REFUSED])
def test_each_form_is_refused_before_it_is_sent(round_: str, name: str) -> None:
    query, why = ROUNDS[round_].REFUSED[name]
    with pytest.raises(QueryRefused, match=why):
        _unrehearsed(query)


@pytest.mark.parametrize(("round_", "k"), _SENT, ids=[f"{r}-{k}" for r, k in _SENT])
def test_the_honest_forms_are_sent(round_: str, k: int) -> None:
    _unrehearsed(ROUNDS[round_].SENT[k])
