"""Produce pairs1000/: 1,000 (answer, prediction) pairs and the reference's scores of them.

Usage: python make_pairs1000.py CHECKOUT OUTDIR, where CHECKOUT is a checkout of
glee4810/ehrsql-2024 at 46597893d9ffc6b9e67785b9c6dcbb06f1b62568 (numpy and pandas installed).
The golds are the first 1,000 entries of the reference's own data/mimic_iv/valid/answer.json
(CC BY 4.0, 'null' for unanswerable questions); the predictions are synthetic, drawn with a fixed
seed: the gold itself, the gold reordered or written with other digits that round alike,
another question's answer, 'null' (abstain), and the forms the issue names: 3 empty texts and
4 flat lists of strings, plus failed executions ('error_pred') and quoted 'null'.
scoring_v2.py then runs unmodified as its own process on ref/answer.json and res/prediction.json;
its scores.json and the per-question scores of the reference's reliability_score are kept.
"""

from __future__ import annotations

import ast
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

CHECKOUT, OUT = Path(sys.argv[1]), Path(sys.argv[2])
sys.path.insert(0, str(CHECKOUT / "scoring_program"))
import scoring_utils  # noqa: E402  (the reference, unmodified)

gold_all = json.loads((CHECKOUT / "data/mimic_iv/valid/answer.json").read_text())
keys = list(gold_all)[:1000]
golds = {k: gold_all[k] for k in keys}
answered = [v for v in golds.values() if v != "null"]
rng = random.Random(48)


def variant(gold: str) -> str:
    """The gold answer, rows reversed and each number written with an extra digit that rounds
    away (3 decimals): equal for the reference."""
    rows = ast.literal_eval(gold)
    out = []
    for row in reversed(rows):
        cells = []
        for cell in row:
            try:
                cells.append(float(cell) + 0.0001)
            except (TypeError, ValueError):
                cells.append(cell)
        out.append(tuple(cells))
    return str(out)


preds: dict[str, object] = {}
specials = {keys[i]: "" for i in (3, 250, 777)}  # 3 empty texts
flat = [str(["ab", "c"]), str(["po", "iv"]), str(["m"]), str(["7.42", "x"])]
for i, text in zip((10, 400, 600, 999), flat, strict=True):  # 4 flat string lists
    specials[keys[i]] = text
specials[keys[20]] = "'null'"  # the string literal of 'null': the reference abstains
specials[keys[21]] = "error_pred"
specials[keys[22]] = " null"  # not 'null' for the reference (an answer)
for k in keys:
    if k in specials:
        preds[k] = specials[k]
        continue
    gold = golds[k]
    roll = rng.random()
    if gold == "null":
        preds[k] = "null" if roll < 0.6 else rng.choice(answered)
    elif roll < 0.45:
        preds[k] = gold
    elif roll < 0.6:
        preds[k] = variant(gold)
    elif roll < 0.75:
        preds[k] = "null"
    else:
        preds[k] = rng.choice(answered)

with tempfile.TemporaryDirectory() as tmp:
    root = Path(tmp)
    (root / "in" / "ref").mkdir(parents=True)
    (root / "in" / "res").mkdir()
    (root / "out").mkdir()
    (root / "in" / "ref" / "answer.json").write_text(json.dumps(golds))
    (root / "in" / "res" / "prediction.json").write_text(json.dumps(preds))
    run = subprocess.run([sys.executable, str(CHECKOUT / "scoring_program" / "scoring_v2.py"),
                          str(root / "in"), str(root / "out")],
                         capture_output=True, text=True, check=True)
    scores_json = json.loads((root / "out" / "scores.json").read_text())
real = {k: scoring_utils.process_answer(v) for k, v in golds.items()}
pred = {k: scoring_utils.process_answer(v) for k, v in preds.items()}
scores, per_key = scoring_utils.reliability_score(real, pred, return_dict=True)
OUT.mkdir(parents=True, exist_ok=True)
for name, data in (("answer.json", golds), ("prediction.json", preds)):
    (OUT / name).write_text(json.dumps(data), encoding="utf-8")  # then gzip -9n (PROVENANCE.md)
oracle = {
    "reference": "glee4810/ehrsql-2024@46597893d9ffc6b9e67785b9c6dcbb06f1b62568",
    "scores_json": scores_json,
    "penalize": {str(c): float(scoring_utils.penalize(scores, penalty=c))
                 for c in (0, 5, 10, len(scores))},
    "scores": per_key,
}
(OUT / "oracle.json").write_text(json.dumps(oracle, indent=0) + "\n")
print(scores_json)
