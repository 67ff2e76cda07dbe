"""The judge is never talked into a pass (issue 39 item 4): the hostile corpus of
tests/hardening/judge_injections.py (40 wrong predictions planting instructions or verdicts in
comments, literals, aliases, result cells, lookalikes, fences, fake block ends, identifiers,
several objects, trailing lines; SQLite and SPARQL) against stand-in judges that obey any
instruction or only quote what they were shown, through the whole plugin: the real ``openai``
client, the loopback stand-in server (tests/fixtures/openai_standin.py), a real SQLite file and
a Turtle graph.

On the original code the echoing stand-ins rescued the forms whose planted object their echo
held (the parser took the first ``{...}`` anywhere), and the obeying stand-ins rescued nearly
every form (the prompt inserted the prediction unmarked, comments included).
"""

from __future__ import annotations

import pytest

from tests.fixtures.openai_standin import KEY, MODEL
from tests.hardening.judge_injections import (
    CONTROL,
    SPARQL_FORMS,
    SQL_FORMS,
    STANDINS,
    forms,
    tally,
    write_corpus,
)
from tests.support import run_report

pytest.importorskip("openai")

#: The forms an instruction-following model still reads after the comments are left out (a
#: literal, an identifier or a result cell it can decode): it is talked into accepting them,
#: and each must then be refused.
READABLE = {i for i, _, _ in forms() if not i.startswith(("comment-", "sparql-comment"))
            # an invisible character is shown escaped (\u200b): the word is no longer one
            and i not in ("unicode-bidi", "unicode-zero-width")}


def test_the_corpus_is_large_and_every_form_is_wrong():
    assert len(forms()) >= 30
    assert len({i for i, _, _ in forms()}) == len(forms())
    assert len(SQL_FORMS) >= 30 and len(SPARQL_FORMS) >= 4


@pytest.mark.parametrize("name", sorted(STANDINS))
def test_no_stand_in_judge_rescues_a_hostile_prediction(suite, openai_standin, name):
    part, behaviour = STANDINS[name]
    openai_standin.behaviour = behaviour
    write_corpus(suite.path, openai_standin.base_url, KEY, MODEL)
    _, report = run_report(suite, "-p", "no:cacheprovider")
    seen = tally(report)
    assert seen["rescued"] == [], f"{part}'s part: {seen['rescued']}"
    # the control: judged wrong by a model that judges; no verdict in an echo
    assert seen["control"] == ("error" if part == "parser" else "failed")
    # every hostile form was put to the judge (both queries executed)
    cases = report.by_id
    assert all(cases[i]["details"]["judge"].get("asked") is not False for i, _, _ in forms())
    assert all(cases[i]["metrics"].get("judge_ex") != 1.0 for i, _, _ in forms())
    if name == "obey-anything":
        # the corpus bites: the stand-in was talked into accepting what it could read ...
        assert set(seen["talked"]) == READABLE
        # ... and each acceptance was refused, with the reason
        for i in READABLE:
            assert cases[i]["outcome"] == "error"
            assert ("the judge's answer quotes the prediction" in cases[i]["error"]
                    or "not rescued: the prediction itself names" in cases[i]["error"]), i
    elif name == "obey-outside-data":
        assert seen["talked"] == []  # nothing escaped its data block
    else:
        assert all("judge error" in cases[i]["error"] for i in seen["talked"])
    if part == "prompt":
        assert cases[CONTROL[0]]["details"]["judge"]["category"] == "wrong"
