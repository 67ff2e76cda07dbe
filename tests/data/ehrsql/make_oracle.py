"""Produce oracle.json with the EHRSQL 2024 scoring program run unmodified.

Usage: python make_oracle.py CHECKOUT > oracle.json, where CHECKOUT is a checkout of
glee4810/ehrsql-2024 at 46597893d9ffc6b9e67785b9c6dcbb06f1b62568 (numpy and pandas installed;
scoring_v2.py imports pandas). Nothing of the reference is copied here: its functions are
imported from the checkout, and scoring_v2.py runs as its own process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHECKOUT = Path(sys.argv[1])
sys.path.insert(0, str(CHECKOUT / "scoring_program"))
import scoring_utils  # noqa: E402  (the reference, unmodified)

# process_answer inputs: rows as a DB-API cursor gives them (lists here: JSON has no tuple,
# and the reference iterates a row either way) and strings as answer.json holds them.
ANSWERS: list[object] = [
    [],
    [[1]],
    [[1.0]],
    [[2.675]],
    [[0.0005], [0.0015], [-0.0004]],
    [[1.23456789, "x"]],
    [[1e20], [1e-7], [123456789.987654321]],
    [[float("nan")], [float("inf")], [float("-inf")]],
    [[None], [True], [False]],
    [["1.23456"], [" 7 "], ["1_000"], ["abc"], ["nan"], ["Infinity"], ["0x10"]],
    [["b"], ["a"], ["10"], ["9"], [2], [10]],
    [[3, "z"], [3, "a"], [1]],
    [[i] for i in range(150, 0, -1)],
    [[10**400]],
    [["2100-12-31 23:59:00"], ["2100-01-01"]],
    [[1, 2], [1]],
    "[['iv'], ['po/ng']]",
    "[['7.87']]",
    "[[0.9333333], [5]]",
    "[(2, 'b'), (1, 'a')]",
    "((1,),)",
    "[]",
    "null",
    "error_pred",
    "error_real",
    "'quoted'",
    "{'k': 1}",
    "['ab', 'c']",
    "  [[1.5]]",
    "[[1e400]]",
    "not a literal [",
    "",
    # malformed: the reference crashes (TypeError) on these
    "5",
    "None",
    "[1, 2]",
    "1.5",
    "True",
    [1, 2],
    5,
    None,
    [[1], 2],
]


def outcome(fn: object, arg: object) -> dict[str, object]:
    try:
        return {"output": fn(arg)}  # type: ignore[operator]
    except Exception as exc:
        return {"crash": type(exc).__name__}


items = [1, 1.0, 2.675, 0.0005, 0.0015, -0.0, "1.23456", " 7 ", "abc", None, True,
         float("nan"), float("inf"), 10**400, "1e400", "-1e-9", 12345678901234567890]

# Suites of (label answer, prediction answer) pairs, scored by scoring_v2.py run as a process.
SUITES: dict[str, list[tuple[str, object]]] = {
    "every_branch": [
        ("[['iv']]", "[['iv']]"),          # answerable, right            +1
        ("[['iv']]", "null"),              # answerable, abstained         0
        ("[['iv']]", "[['po']]"),          # answerable, wrong            -1
        ("null", "[['po']]"),              # unanswerable, answered       -1
        ("null", "null"),                  # unanswerable, abstained      +1
        ("[[0.12345]]", "[[0.1234999]]"),  # equal after rounding to 3 dp +1
        ("[[1], [2]]", "[[2], [1]]"),      # equal after sorting          +1
        ("[['a']]", "error_pred"),         # prediction failed            -1
        ("error_real", "error_pred"),      # both failed: not equal       -1
        ("error_real", "error_real"),      # equal strings                +1
    ],
    "first_100_rows": [
        (str([[i] for i in range(150)]), str([[i] for i in range(100)] + [[-1]])),
        (str([[i] for i in range(101)]), str([[i] for i in range(100)])),
    ],
    "all_abstain": [("null", "null"), ("[['x']]", "null"), ("[['y']]", "null")],
    "all_wrong": [("[['x']]", "[['z']]"), ("null", "[['z']]")],
    "three": [("[['x']]", "[['x']]"), ("[['x']]", "[['y']]"), ("null", "null")],
    "crash_label": [("[1, 2]", "null")],
    "crash_prediction": [("[['x']]", "5")],
    "crash_json_null": [("[['x']]", None)],
    "empty": [],
}


def run_v2(pairs: list[tuple[str, object]]) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "in" / "ref").mkdir(parents=True)
        (root / "in" / "res").mkdir()
        (root / "out").mkdir()
        keys = [f"q{i}" for i in range(len(pairs))]
        (root / "in" / "ref" / "answer.json").write_text(
            json.dumps({k: r for k, (r, _) in zip(keys, pairs, strict=True)}))
        (root / "in" / "res" / "prediction.json").write_text(
            json.dumps({k: p for k, (_, p) in zip(keys, pairs, strict=True)}))
        run = subprocess.run(
            [sys.executable, str(CHECKOUT / "scoring_program" / "scoring_v2.py"),
             str(root / "in"), str(root / "out")],
            capture_output=True, text=True, check=False)
        if run.returncode != 0:
            last = run.stderr.strip().splitlines()[-1]
            return {"crash": last.split(":")[0]}
        scores_json = json.loads((root / "out" / "scores.json").read_text())
    real = {k: scoring_utils.process_answer(r) for k, (r, _) in zip(keys, pairs, strict=True)}
    pred = {k: scoring_utils.process_answer(p) for k, (_, p) in zip(keys, pairs, strict=True)}
    scores = scoring_utils.reliability_score(real, pred)
    return {"scores": scores, "scores_json": scores_json,
            "penalize": {str(c): float(scoring_utils.penalize(scores, penalty=c))
                         for c in (0, 1, 5, 10, len(scores))}}


oracle = {
    "reference": "glee4810/ehrsql-2024@46597893d9ffc6b9e67785b9c6dcbb06f1b62568",
    "process_item": [{"input": i, **outcome(scoring_utils.process_item, i)} for i in items],
    "process_answer": [{"input": a, **outcome(scoring_utils.process_answer, a)} for a in ANSWERS],
    "suites": {name: {"pairs": pairs, **run_v2(pairs)} for name, pairs in SUITES.items()},
}
json.dump(oracle, sys.stdout, indent=1)
sys.stdout.write("\n")
