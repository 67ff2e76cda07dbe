"""Build the ``;`` interaction set of the turn-table oracle from SParC dev (issue 48, item 3).

Input: ryanzhumich/editsql ``data/sparc/dev.json`` (commit in PROVENANCE.md). Output, beside
this script: ``sparc_semicolon_gold.txt`` and ``sparc_semicolon_predict.txt``: three car_1
interactions, whose golds end in ``;``, and their gold queries as predictions with the edits
below: text after the first ``;`` (prose, a write, a second query, a set operation), in
predictions and in one gold. The reference's parser reads what comes before the first ``;``
and a set operation right after it, and ignores the rest.

    python make_sparc_semicolon.py dev.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

#: dev.json indices: three car_1 interactions
CHOSEN = [186, 191, 194]

#: (position in CHOSEN, 0-based turn) -> predicted text
EDITS: dict[tuple[int, int], str] = {
    # the right query, then a second one: matches
    (0, 0): "SELECT accelerate FROM CARS_DATA ORDER BY accelerate ASC LIMIT 1; "
            "SELECT accelerate FROM CARS_DATA ORDER BY accelerate DESC LIMIT 1",
    # a wrong query, then the right one: the first is scored, no match
    (0, 1): "SELECT accelerate FROM CARS_DATA ORDER BY accelerate ASC LIMIT 1; "
            "SELECT accelerate FROM CARS_DATA ORDER BY accelerate DESC LIMIT 1",
    # prose after the query
    (1, 0): "SELECT min(Horsepower) FROM CARS_DATA; this is the lowest horsepower",
    # a write after the query (nothing is executed in match mode)
    (1, 1): "SELECT T2.MakeId ,  T2.Make FROM CARS_DATA AS T1 JOIN CAR_NAMES AS T2 ON T1.Id  =  "
            "T2.MakeId WHERE T1.Horsepower  >  (SELECT min(Horsepower) FROM CARS_DATA); "
            "DROP TABLE CARS_DATA",
    # a set operation right after the ';' is read as part of the query
    (2, 2): "SELECT CountryName FROM countries; EXCEPT SELECT T1.CountryName FROM countries AS "
            "T1 JOIN CAR_MAKERS AS T2 ON T1.countryId  =  T2.Country",
}
#: (position in CHOSEN, 0-based turn) -> text appended to the gold (the prediction keeps the
#: gold as SParC has it)
GOLD_TAILS: dict[tuple[int, int], str] = {(2, 0): " the country names"}


def main(src: str) -> None:
    data = json.loads(Path(src).read_text(encoding="utf-8"))
    here = Path(__file__).parent
    gold, pred = [], []
    for pos, index in enumerate(CHOSEN):
        item = data[index]
        db = item["database_id"]
        turns = [t["query"] for t in item["interaction"]]
        gold.append([f"{q}{GOLD_TAILS.get((pos, n), '')}\t{db}" for n, q in enumerate(turns)])
        pred.append([EDITS.get((pos, n), q) for n, q in enumerate(turns)])
    (here / "sparc_semicolon_gold.txt").write_text(
        "\n\n".join("\n".join(s) for s in gold) + "\n", encoding="utf-8")
    (here / "sparc_semicolon_predict.txt").write_text(
        "\n\n".join("\n".join(s) for s in pred) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1])
