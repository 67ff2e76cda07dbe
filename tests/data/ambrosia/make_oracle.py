"""Produce oracle.json with Ambrosia's evaluate_predicted_statements run unmodified.

Usage: python make_oracle.py CHECKOUT > oracle.json, where CHECKOUT is a checkout (or
``git archive``) of saparina/ambrosia at 7de80a41f1ad4f01aed9bb55e734654688b572a8. Nothing of
the reference is copied here: ``src/evaluation/metrics.py`` is imported from the checkout
(standard library only) in child processes, one per hash seed, because the reference
de-duplicates predictions with ``list(set(...))``, whose order follows ``PYTHONHASHSEED``.

Each fixture is a SQLite database (a script), the gold queries, the predicted queries and the
reference's ``remove_duplicates_predictions`` flag. Each is run with the hash seeds of SEEDS
(recording the order ``list(set(preds))`` gave in that process, then the reference's dictionary
or the name and text of what it raised) and once with predictions in first-occurrence order:
the texts are passed as a ``str`` subclass whose hash is the position of a text's first
occurrence, so the unmodified ``set`` iterates them in that order (run "first").
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

SEEDS = (0, 1, 2, 3, 4, 5, 6, 7)

DB = """
CREATE TABLE t (id INTEGER, name TEXT, score REAL, grp TEXT);
INSERT INTO t VALUES (1, 'a', 1.0, 'x'), (2, 'b', 2.5, 'x'), (3, 'c', NULL, 'y'),
                     (4, 'a', 1, 'y'), (5, NULL, 7.25, 'z');
CREATE TABLE u (k INTEGER, v TEXT);
INSERT INTO u VALUES (1, 'one'), (2, 'two'), (10, '10'), (11, 'one');
CREATE TABLE e (k INTEGER);
"""

# (name, golds, predictions, remove_duplicates_predictions): one per branch of the reference.
HAND: list[tuple[str, list[str], list[str], bool]] = [
    ("all found, unordered", ["SELECT name FROM t WHERE grp = 'x'", "SELECT name FROM t WHERE grp = 'y'"],
     ["SELECT name FROM t WHERE grp = 'y'", "SELECT name FROM t WHERE grp = 'x'"], False),
    ("one of two readings", ["SELECT id FROM t WHERE grp = 'x'", "SELECT id FROM t WHERE grp = 'y'"],
     ["SELECT id FROM t WHERE grp = 'x'"], False),
    ("none found", ["SELECT id FROM t WHERE grp = 'x'", "SELECT id FROM t WHERE grp = 'y'"],
     ["SELECT id FROM t WHERE grp = 'z'"], False),
    ("no predictions", ["SELECT id FROM t WHERE grp = 'x'", "SELECT id FROM t WHERE grp = 'y'"],
     [], False),
    ("extra predictions", ["SELECT id FROM t WHERE grp = 'x'", "SELECT id FROM t WHERE grp = 'y'"],
     ["SELECT id FROM t WHERE grp = 'x'", "SELECT id FROM t WHERE grp = 'y'",
      "SELECT id FROM t WHERE grp = 'z'", "SELECT k FROM u"], False),
    ("duplicate prediction texts", ["SELECT id FROM t WHERE grp = 'x'", "SELECT k FROM u"],
     ["SELECT id FROM t WHERE grp = 'x'", "SELECT id FROM t WHERE grp = 'x'",
      "SELECT id FROM t WHERE grp = 'x'"], False),
    ("different texts, same result", ["SELECT id FROM t WHERE grp = 'x'", "SELECT k FROM u"],
     ["SELECT id FROM t WHERE grp = 'x'", "SELECT id FROM t WHERE id < 3",
      "SELECT k FROM u"], False),
    ("gold orders, prediction out of order",
     ["SELECT id FROM t ORDER BY id", "SELECT name FROM t WHERE grp = 'x'"],
     ["SELECT id FROM t ORDER BY id DESC", "SELECT name FROM t WHERE grp = 'x'"], False),
    ("gold orders, prediction in order",
     ["SELECT id FROM t ORDER BY id", "SELECT name FROM t WHERE grp = 'x'"],
     ["SELECT id FROM t WHERE id > 0", "SELECT name FROM t WHERE grp = 'x'"], False),
    ("ordered: columns swapped count as equal",
     ["SELECT id, name FROM t ORDER BY id", "SELECT k FROM u"],
     ["SELECT name, id FROM t ORDER BY id"], False),
    ("unordered: rows flattened to cells", ["SELECT id, score FROM t WHERE id <= 2", "SELECT k FROM u"],
     ["SELECT id FROM t WHERE id <= 2 UNION ALL SELECT score FROM t WHERE id <= 2"], False),
    ("unordered: 1 equals 1.0", ["SELECT score FROM t WHERE id IN (1, 4)", "SELECT k FROM u"],
     ["SELECT 1 UNION ALL SELECT 1.0"], False),
    ("lowercase 'order by' only", ["SELECT id FROM t order by id desc", "SELECT k FROM u"],
     ["SELECT id FROM t ORDER BY id"], False),
    ("'ORDER  BY' with two spaces is unordered", ["SELECT id FROM t ORDER  BY id DESC", "SELECT k FROM u"],
     ["SELECT id FROM t ORDER BY id"], False),
    ("ordered: different row widths", ["SELECT id FROM t ORDER BY id", "SELECT k FROM u"],
     ["SELECT id, NULL FROM t ORDER BY id"], False),
    ("ordered: NULL sorts first", ["SELECT score, name FROM t ORDER BY id", "SELECT k FROM u"],
     ["SELECT name, score FROM t ORDER BY id"], False),
    ("empty gold is never found", ["SELECT k FROM e", "SELECT k FROM u"],
     ["SELECT k FROM e", "SELECT k FROM u"], False),
    ("failing prediction", ["SELECT id FROM t WHERE grp = 'x'", "SELECT k FROM u"],
     ["SELECT nope FROM t", "SELECT id FROM t WHERE grp = 'x'"], False),
    ("only failing predictions", ["SELECT id FROM t WHERE grp = 'x'", "SELECT k FROM u"],
     ["SELECT nope FROM t", "SELECT * FROM missing"], False),
    ("failing and empty predictions", ["SELECT id FROM t WHERE grp = 'x'", "SELECT k FROM u"],
     ["SELECT nope FROM t", "SELECT k FROM e"], False),
    ("two golds with identical results", ["SELECT id FROM t WHERE grp = 'x'", "SELECT id FROM t WHERE id < 3"],
     ["SELECT id FROM t WHERE grp = 'x'"], False),
    ("golds equal as multisets, not in order", ["SELECT id FROM t WHERE id < 3 ORDER BY id",
                                                "SELECT id FROM t WHERE id < 3 ORDER BY id DESC"],
     ["SELECT id FROM t WHERE id < 3 ORDER BY id"], False),
    ("golds 1 and 1.0 are duplicates", ["SELECT 1", "SELECT 1.0", "SELECT 2"], ["SELECT 1"], False),
    ("the same gold text twice", ["SELECT k FROM u", "SELECT k FROM u", "SELECT id FROM t"],
     ["SELECT k FROM u", "SELECT id FROM t"], False),
    ("a gold that fails", ["SELECT id FROM t", "SELECT nope FROM t"], ["SELECT id FROM t"], False),
    ("no golds", [], ["SELECT id FROM t"], False),
    ("three readings, two found", ["SELECT id FROM t WHERE grp = 'x'", "SELECT id FROM t WHERE grp = 'y'",
                                   "SELECT id FROM t WHERE grp = 'z'"],
     ["SELECT id FROM t WHERE grp = 'y'", "SELECT id FROM t WHERE grp = 'z'", "SELECT 42"], False),
    ("remove_duplicates_predictions: same results", ["SELECT id FROM t WHERE grp = 'x'", "SELECT k FROM u"],
     ["SELECT id FROM t WHERE grp = 'x'", "SELECT id FROM t WHERE id < 3", "SELECT 7"], True),
    ("remove_duplicates_predictions: order by in one text",
     ["SELECT id FROM t WHERE id < 3", "SELECT k FROM u"],
     ["SELECT id FROM t WHERE id < 3", "SELECT id FROM t WHERE id < 3 ORDER BY id DESC",
      "SELECT id FROM t WHERE id < 3 ORDER BY id"], True),
    ("remove_duplicates_predictions: failing prediction", ["SELECT id FROM t WHERE grp = 'x'", "SELECT k FROM u"],
     ["SELECT nope FROM t", "SELECT k FROM u"], True),
    ("non-transitive de-duplication", ["SELECT id FROM t WHERE id < 3", "SELECT k FROM u"],
     ["SELECT id FROM t WHERE id < 3", "SELECT id FROM t WHERE id < 3 ORDER BY id DESC",
      "SELECT 2 UNION ALL SELECT 1"], False),
    ("non-transitive de-duplication, removing first", ["SELECT id FROM t WHERE id < 3", "SELECT k FROM u"],
     ["SELECT id FROM t WHERE id < 3", "SELECT id FROM t WHERE id < 3 ORDER BY id DESC",
      "SELECT 2 UNION ALL SELECT 1"], True),
]

# Random fixtures: golds and predictions drawn from a pool that has every kind of query.
POOL = [
    "SELECT id FROM t WHERE grp = 'x'", "SELECT id FROM t WHERE grp = 'y'",
    "SELECT id FROM t WHERE id < 3", "SELECT id FROM t ORDER BY id",
    "SELECT id FROM t ORDER BY id DESC", "SELECT id FROM t", "SELECT name FROM t",
    "SELECT DISTINCT name FROM t", "SELECT name, id FROM t ORDER BY id", "SELECT id, name FROM t",
    "SELECT count(*) FROM t", "SELECT 5", "SELECT 5.0", "SELECT k FROM u", "SELECT v FROM u",
    "SELECT k FROM e", "SELECT score FROM t ORDER BY score", "SELECT nope FROM t",
    "SELECT * FROM missing", "SELECT k, v FROM u ORDER BY k", "SELECT v, k FROM u",
]

RUNS = [q for q in POOL if "nope" not in q and "missing" not in q]


def fixtures() -> list[dict[str, object]]:
    out: list[dict[str, object]] = [
        {"name": n, "golds": g, "preds": p, "remove_duplicates_predictions": r}
        for n, g, p, r in HAND]
    rng = random.Random(42)
    for i in range(40):
        golds = rng.sample(POOL if rng.random() < 0.1 else RUNS, rng.randint(1, 3))
        preds = [rng.choice(POOL) for _ in range(rng.randint(0, 5))]
        out.append({"name": f"random {i}", "golds": golds, "preds": preds,
                    "remove_duplicates_predictions": rng.random() < 0.25})
    return out


CHILD = r"""
import json, sys
checkout, db, seed_label = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, checkout + "/src/evaluation")
import metrics  # the reference, unmodified

class First(str):
    # A text whose hash is the position of its first occurrence: set() keeps that order.
    def __new__(cls, text, position):
        obj = str.__new__(cls, text)
        obj.position = position
        return obj
    def __hash__(self):
        return self.position
    def __eq__(self, other):
        return str.__eq__(self, other)

out = []
for fx in json.load(sys.stdin):
    preds = fx["preds"]
    if seed_label == "first":
        first = {}
        for p in preds:
            first.setdefault(p, len(first))
        preds = [First(p, first[p]) for p in preds]
    order = [str(p) for p in list(set(preds))]
    try:
        result = metrics.evaluate_predicted_statements(
            db, preds, fx["golds"], remove_duplicates_predictions=fx["remove_duplicates_predictions"])
        out.append({"order": order, "result": result})
    except Exception as exc:
        out.append({"order": order, "error": type(exc).__name__, "message": str(exc)})
print(json.dumps(out))
"""


def main() -> None:
    checkout = Path(sys.argv[1]).resolve()
    fxs = fixtures()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "fixture.sqlite"
        conn = sqlite3.connect(db)
        conn.executescript(DB)
        conn.commit()
        conn.close()
        runs: list[list[dict[str, object]]] = []
        for label in [*map(str, SEEDS), "first"]:
            env = {**os.environ, "PYTHONHASHSEED": "0" if label == "first" else label}
            proc = subprocess.run([sys.executable, "-c", CHILD, str(checkout), str(db), label],
                                  input=json.dumps(fxs), capture_output=True, text=True,
                                  check=True, env=env)
            runs.append(json.loads(proc.stdout))
    for i, fx in enumerate(fxs):
        labels = [*map(str, SEEDS), "first"]
        fx["runs"] = {label: run[i] for label, run in zip(labels, runs, strict=True)}
    json.dump({"reference": "saparina/ambrosia@7de80a41f1ad4f01aed9bb55e734654688b572a8 "
                            "src/evaluation/metrics.py evaluate_predicted_statements",
               "python": sys.version.split()[0], "db": DB, "fixtures": fxs},
              sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
