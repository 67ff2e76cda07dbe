"""Make oracle.json: dbagenteval 0.1.0's ``ungrounded_numbers`` (``dbagenteval/answer.py``)
run unmodified on generated (answer, question, rows) triples (see PROVENANCE.md).

    python make_oracle.py <the wheel's unpacked directory> > oracle.json

Rows are lists of cells here; the reference takes each row as a dict, so each is passed as
``{"c0": cell0, "c1": cell1, ...}``. Decimal cells are written as ``{"decimal": "text"}``.
"""

from __future__ import annotations

import json
import random
import sys
from decimal import Decimal

sys.path.insert(0, sys.argv[1])

from dbagenteval.answer import ungrounded_numbers

FIXED = [
    ("There are 59 customers.", "How many customers?", [[59]]),
    ("There are 59 customers.", "How many customers?", [[58]]),
    ("Revenue was 1.2k dollars", "", [[1234.5]]),
    ("Revenue was 1.2k dollars", "", [[1300]]),
    ("About 12.5% churned", "", [[0.1249]]),
    ("About 12.5% churned", "", [[12.46]]),
    ("1. Rock 2. Jazz 3. Metal", "top 3 genres", [["Rock"], ["Jazz"], ["Metal"]]),
    ("17. That is the total", "", [[17]]),
    ("The top 5 artists", "Name the top 5 artists", [["a"], ["b"]]),
    ("Found 2 rows", "", [["x"], ["y"]]),
    ("It costs 1,234,567.89", "", [[1234567.891]]),
    ("It is 2 million", "", [[2000000]]),
    ("It is 2 million", "", [[2400000]]),
    ("Total: .75", "", [[0.749]]),
    ("No figures here", "", []),
    ("Q3 sales: 100", "", [["Q3 total"], [100]]),
    ("It is -5 degrees", "", [[-5]]),
    ("Invoice No.42", "", [["No.42"]]),
    ("values 1.0 and 2.50", "", [[1], [2.5]]),
    ("spent 3.99", "", [[{"decimal": "3.99"}]]),
    ("null 0 and true 1", "", [[None, True]]),
    ("1) a\n2) b\n", "", [["a"], ["b"]]),
    ("10 percent of 200", "", [[0.1, 200]]),
    ("1 lakh rupees", "", [[100000]]),
    ("big " + "9" * 70, "", [[1]]),
]


def cell(value: object) -> object:
    if isinstance(value, dict) and "decimal" in value:
        return Decimal(value["decimal"])
    return value


def generated(rng: random.Random) -> list[tuple[str, str, list[list[object]]]]:
    out = []
    units = ["", "", "", "k", " thousand", " million", "%", " percent", "M", "bn"]
    for _ in range(300):
        rows = [[rng.choice([rng.randint(0, 5000), round(rng.uniform(0, 1000), rng.randint(0, 4)),
                             f"item {rng.randint(0, 99)}", None])
                 for _ in range(rng.randint(1, 3))] for _ in range(rng.randint(0, 4))]
        figures = []
        for _ in range(rng.randint(0, 4)):
            nums = [c for r in rows for c in r if isinstance(c, int | float)]
            if nums and rng.random() < 0.6:
                base = rng.choice(nums)
                text = f"{base:.{rng.randint(0, 2)}f}" if rng.random() < 0.5 else f"{base:,}"
            else:
                text = str(rng.randint(0, 9999))
            figures.append(text + rng.choice(units))
        answer = " and ".join(f"value {f}" for f in figures) or "nothing"
        question = rng.choice(["", "top 5", "in 2009", "How many?"])
        out.append((answer, question, rows))
    return out


def main() -> None:
    rng = random.Random(52)
    items = []
    for answer, question, rows in [*FIXED, *generated(rng)]:
        dict_rows = [{f"c{i}": cell(v) for i, v in enumerate(r)} for r in rows]
        items.append({"answer": answer, "question": question, "rows": rows,
                      "ungrounded": ungrounded_numbers(answer, question, dict_rows)})
    json.dump({"items": items}, sys.stdout, separators=(",", ":"), sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
