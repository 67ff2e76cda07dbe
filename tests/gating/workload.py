"""The sampled-model workload of issue 59 item 3, as a suite on a real SQLite file.

60 cases: 36 always right, 12 right 85 % of the time, 12 right half the time; the regressed
model is the same with 8 of the always-right cases right only 30 % of the time. The model is a
``source: python`` predictor (:func:`predict`, written beside the suite as ``sampled_model.py``)
that answers each case right with its probability, drawn from ``random.Random`` seeded by the
run's seed (``QE_SAMPLED_SEED``), the case id and the attempt (how many times this process has
asked for the case), so a run is reproducible and every call an independent draw. Used by
``tests/gating`` and ``bench/bench_sampled_gate.py``.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

#: Each case's probability of a right answer, unchanged and regressed.
UNCHANGED = [1.0] * 36 + [0.85] * 12 + [0.5] * 12
REGRESSED = [0.3] * 8 + [1.0] * 28 + [0.85] * 12 + [0.5] * 12

MODEL = '''"""A sampled model: case i is answered right with probability P[i] (probabilities.json),
each call an independent draw seeded by QE_SAMPLED_SEED, the case id and the attempt."""
import json
import os
import random
from pathlib import Path

_P = json.loads((Path(__file__).with_name("probabilities.json")).read_text())
_ATTEMPTS = {}
CALLS = []


def predict(case):
    cid = case["id"]
    attempt = _ATTEMPTS.get(cid, 0)
    _ATTEMPTS[cid] = attempt + 1
    CALLS.append(cid)
    seed = os.environ.get("QE_SAMPLED_SEED", "0")
    right = random.Random(f"{seed}:{cid}:{attempt}").random() < _P[cid]
    return f"SELECT {int(cid[1:])}" if right else "SELECT -1"
'''


def write_workload(root: Path, probabilities: list[float] = UNCHANGED) -> Path:
    """The suite under ``root`` (a ``queryeval.yaml``, ``test_cases.yaml``, the model and its
    probabilities); ``probabilities`` may be rewritten later with :func:`set_model`."""
    root.mkdir(parents=True, exist_ok=True)
    db = root / "data.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS t (x INTEGER)")
    conn.close()
    (root / "queryeval.yaml").write_text(json.dumps({
        "datasources": {"db": {"type": "sqlite", "path": "data.sqlite"}},
        "predictions": {"source": "python", "function": "sampled_model:predict"},
    }, indent=2))
    cases = [{"id": f"c{i}", "question": f"the number {i}", "gold": f"SELECT {i}"}
             for i in range(len(probabilities))]
    (root / "test_cases.yaml").write_text(json.dumps(
        {"kind": "sql", "datasource": "db", "cases": cases}, indent=2))
    (root / "sampled_model.py").write_text(MODEL)
    (root / "tox.ini").write_text("[pytest]\nqueryeval_files = test_*.yaml\n")
    set_model(root, probabilities)
    return root


def set_model(root: Path, probabilities: list[float]) -> None:
    (root / "probabilities.json").write_text(json.dumps(
        {f"c{i}": p for i, p in enumerate(probabilities)}))
