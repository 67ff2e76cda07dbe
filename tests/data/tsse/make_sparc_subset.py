"""Build the second interaction set of the turn-table oracle from SParC dev.

Input: ryanzhumich/editsql ``data/sparc/dev.json`` (commit in PROVENANCE.md). Output, beside
this script: ``sparc_dev_subset.json`` (the chosen interactions, only the keys the importer
reads), ``sparc_gold.txt`` (``SQL<TAB>db_id``, one blank line between interactions) and
``sparc_predict.txt``: the gold queries, with the edits below, so that the table exercises
every branch of the reference's counting (wrong turns, a turn beyond 4, an interaction whose
prediction has fewer turns, one with no predicted turn at all, a ``value`` placeholder, an
unparsable prediction).

    python make_sparc_subset.py dev.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

#: dev.json indices: flight_2's first six interactions and dog_kennels' 396..421 (399 has 5 turns)
CHOSEN = [*range(6), *range(396, 422)]

#: (position in CHOSEN, 0-based turn) -> predicted text; None drops the turn
EDITS: dict[tuple[int, int], str | None] = {
    (0, 1): "SELECT * FROM AIRLINES",                      # WHERE dropped: wrong
    (2, 1): None,                                          # the last turn missing: zip drops it
    (4, 0): "SELECT count(*) FROM AIRPORTS",               # wrong table
    (9, 4): "SELECT T1.first_name FROM Owners AS T1",      # turn 5 (> 4) wrong
    (14, 3): None,                                         # a 4-turn interaction's turn 4 missing
    (12, 0): "SELECT FROM WHERE",                          # does not parse: the empty SQL
    (20, 2): "SELECT breed_code , count(*) FROM Dogs GROUP BY breed_code ORDER BY count(*) DESC",
}
#: interactions whose predicted session is empty (two blank lines in a row)
EMPTY = {15}


def main(src: str) -> None:
    data = json.loads(Path(src).read_text(encoding="utf-8"))
    here = Path(__file__).parent
    subset, gold, pred = [], [], []
    for pos, index in enumerate(CHOSEN):
        item = data[index]
        turns = [{"utterance": t["utterance"], "query": t["query"]} for t in item["interaction"]]
        subset.append({"database_id": item["database_id"], "interaction": turns})
        gold.append([f"{t['query']}\t{item['database_id']}" for t in turns])
        session = []
        if pos not in EMPTY:
            for n, t in enumerate(turns):
                text = EDITS.get((pos, n), t["query"])
                if text is not None:
                    session.append(text)
        pred.append(session)
    # one placeholder prediction: the reference turns ` value ` into ` 1 ` before parsing
    first = pred[1][1]
    assert '"JetBlue Airways"' in first, first
    pred[1][1] = first.replace('"JetBlue Airways"', "value")
    (here / "sparc_dev_subset.json").write_text(json.dumps(subset, indent=1) + "\n",
                                                encoding="utf-8")
    (here / "sparc_gold.txt").write_text("\n\n".join("\n".join(s) for s in gold) + "\n",
                                         encoding="utf-8")
    # one blank line ends a session, so an empty session is one more blank line
    lines = [line for s in pred for line in [*s, ""]][:-1]
    (here / "sparc_predict.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1])
