"""The pure formulas, without the model: against the seed's own code with a fake embedding."""

from __future__ import annotations

import hashlib
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_queryeval.metrics.json_similarity import (
    ROOT,
    cosine,
    json_similarity,
    key_items,
    path_label,
    score,
    semantic_similarity,
    structural_similarity,
)

from . import seed_reference


def fake_embed(text: str) -> list[float]:
    """A deterministic 8-d vector per text (components may be negative, so cosines are too)."""
    digest = hashlib.sha256(text.encode()).digest()
    return [(b - 128) / 128 for b in digest[:8]]


class _Sim:
    def __init__(self, value: float) -> None:
        self.value = value

    def item(self) -> float:
        return self.value


class FakeModel:
    def encode(self, text: str, convert_to_tensor: bool = False) -> list[float]:
        return fake_embed(text)


class FakeUtil:
    @staticmethod
    def pytorch_cos_sim(a: list[float], b: list[float]) -> _Sim:
        dot = sum(x * y for x, y in zip(a, b, strict=True))
        return _Sim(dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))))


@pytest.fixture
def fake_seed(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(seed_reference, "model", FakeModel())
    monkeypatch.setattr(seed_reference, "util", FakeUtil())
    return seed_reference


# -- StrSS: the figures of the research notes ------------------------------------------------


def test_strss_research_example() -> None:
    ref = dict.fromkeys("abc", 1)
    gen = dict.fromkeys("abde", 1)
    assert structural_similarity(ref, gen) == pytest.approx(2 / 3.2)  # 0.625
    assert structural_similarity(ref, gen) == pytest.approx(0.625)


def test_strss_empty_objects() -> None:
    assert structural_similarity({}, {}) == 1.0
    assert structural_similarity({}, {"x": 1}) == 0.0
    assert structural_similarity({"x": 1}, {}) == 0.0


def test_strss_extra_keys_cost_beta() -> None:
    ref = {"a": 1}
    gen = {"a": 1, "b": 2, "c": 3}
    assert structural_similarity(ref, gen) == pytest.approx(1 / 1.2)
    assert structural_similarity(ref, gen, beta=1.0) == pytest.approx(1 / 3)


# -- SemSS and OJSS against the seed's code --------------------------------------------------


def test_semss_no_shared_key_is_zero() -> None:
    def never(text: str) -> list[float]:
        raise AssertionError("no embedding needed")

    assert semantic_similarity({"a": 1}, {"b": 1}, never) == 0.0
    assert json_similarity({"a": 1}, {"b": 1}, never) == 0.0


def test_semss_clamps_the_mean_once() -> None:
    vectors = {"p": [1.0, 0.0], "n": [-1.0, 0.0], "q": [1.0, 0.0], "z": [0.0, 1.0]}
    # Per-key cosines -1 and 1: the mean 0 is kept (a per-key clamp would give 0.5).
    assert semantic_similarity({"a": "p", "b": "q"}, {"a": "n", "b": "q"}, vectors.__getitem__) == 0
    # A negative mean is clamped to 0.
    assert semantic_similarity({"a": "p"}, {"a": "n"}, vectors.__getitem__) == 0.0
    # Orthogonal: 0; identical: 1.
    assert semantic_similarity({"a": "p"}, {"a": "z"}, vectors.__getitem__) == pytest.approx(0.0)
    assert semantic_similarity({"a": "p"}, {"a": "q"}, vectors.__getitem__) == pytest.approx(1.0)


def test_dict_values_are_embedded_as_python_repr() -> None:
    seen: list[str] = []

    def embed(text: str) -> list[float]:
        seen.append(text)
        return [1.0, 0.0]

    semantic_similarity({"q": {"e": ["Bound"]}}, {"q": {"e": ["Not Bound"]}}, embed)
    assert seen == ["{'e': ['Bound']}", "{'e': ['Not Bound']}"]


def test_seed_example_structure(fake_seed: Any) -> None:
    ref = {"query": {"<python/Juling>": {"<property/HDOP>": {"value": ["Bound"]}}}}
    gen = {"query": {"<python/Juling>": {"<property/PDOP>": {"value": ["Not Bound"]}}}}
    assert structural_similarity(ref, gen) == fake_seed.structural_similarity_score(ref, gen) == 1
    assert semantic_similarity(ref, gen, fake_embed) == pytest.approx(
        fake_seed.semantic_similarity_score(ref, gen), abs=1e-12
    )


json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(["x", "y", "Bound", "a b"])
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.sampled_from("abc"), children, max_size=3)
    ),
    max_leaves=6,
)
json_objects = st.dictionaries(st.sampled_from("abcdefg"), json_values, max_size=6)


@settings(max_examples=200, deadline=None)
@given(
    ref=json_objects,
    gen=json_objects,
    alpha=st.floats(0, 1),
    beta=st.floats(0.01, 1),
)
def test_top_level_equals_seed(ref: Any, gen: Any, alpha: float, beta: float) -> None:
    # hypothesis and function-scoped fixtures do not mix: patch the seed's globals by hand.
    saved = seed_reference.model, seed_reference.util
    seed_reference.model, seed_reference.util = FakeModel(), FakeUtil()
    try:
        strss = seed_reference.structural_similarity_score(ref, gen, beta=beta)
        semss = seed_reference.semantic_similarity_score(ref, gen)
    finally:
        seed_reference.model, seed_reference.util = saved
    result = score(ref, gen, fake_embed, alpha=alpha, beta=beta)
    assert result.structural_similarity == pytest.approx(strss, abs=1e-12)
    assert result.semantic_similarity == pytest.approx(semss, abs=1e-12)
    assert result.json_similarity == pytest.approx(alpha * strss + (1 - alpha) * semss, abs=1e-12)
    assert 0 <= result.json_similarity <= 1 + 1e-12
    assert {p[0] for p in result.missing} == set(ref) - set(gen)
    assert {p[0] for p in result.extra} == set(gen) - set(ref)


# -- key levels and non-object values --------------------------------------------------------


SEED_REF = {"query": {"<python/Juling>": {"<property/HDOP>": {"value": ["Bound"]}}}}
SEED_GEN = {"query": {"<python/Juling>": {"<property/PDOP>": {"value": ["Not Bound"]}}}}


def test_paths_flatten_nested_objects() -> None:
    items = key_items({"a": {"b": 1, "c": {"d": [1, 2]}, "e": {}}, "f": "x"}, "paths")
    assert items == {("a", "b"): 1, ("a", "c", "d"): [1, 2], ("a", "e"): {}, ("f",): "x"}
    assert key_items({}, "paths") == {}
    assert key_items({"a": {"b": 1}}, "top") == {("a",): {"b": 1}}


def test_paths_on_the_seed_example() -> None:
    # Top level: one shared key "query", StrSS is trivially 1.
    assert structural_similarity(SEED_REF, SEED_GEN) == 1.0
    # Paths: the property differs, so no path is shared: StrSS = 0 / (1 + 0.1 * 1).
    assert structural_similarity(SEED_REF, SEED_GEN, keys="paths") == 0.0
    assert semantic_similarity(SEED_REF, SEED_GEN, fake_embed, keys="paths") == 0.0
    # Right property, wrong value: the structure is right and only the value is embedded.
    gen = {"query": {"<python/Juling>": {"<property/HDOP>": {"value": ["Not Bound"]}}}}
    assert structural_similarity(SEED_REF, gen, keys="paths") == 1.0
    seen: list[str] = []

    def embed(text: str) -> list[float]:
        seen.append(text)
        return fake_embed(text)

    semantic_similarity(SEED_REF, gen, embed, keys="paths")
    assert seen == ["['Bound']", "['Not Bound']"]


def test_paths_partial_overlap() -> None:
    ref = {"q": {"e": {"p1": "a", "p2": "b"}}}
    gen = {"q": {"e": {"p1": "a", "p3": "c"}}}
    # shared p1; missing p2; extra p3 -> 1 / (2 + 0.1)
    assert structural_similarity(ref, gen, keys="paths") == pytest.approx(1 / 2.1)
    assert semantic_similarity(ref, gen, fake_embed, keys="paths") == pytest.approx(1.0)


def test_non_object_values_are_compared_whole() -> None:
    assert key_items([1, 2]) == {ROOT: [1, 2]}
    assert key_items(3, "paths") == {ROOT: 3}
    assert structural_similarity([1, 2], [3]) == 1.0
    assert semantic_similarity(["a"], ["a"], fake_embed) == pytest.approx(1.0)
    # An object against a non-object shares no key.
    assert structural_similarity({"a": 1}, [1]) == 0.0
    assert json_similarity({"a": 1}, [1], fake_embed) == 0.0


def test_path_labels() -> None:
    assert path_label(ROOT) == "."
    assert path_label(("query",)) == ".query"
    assert path_label(("query", "<python/Juling>", "value")) == '.query."<python/Juling>".value'


def test_cosine_pure_python_and_zero_vector() -> None:
    assert cosine([1.0, 0.0], [0.0, 1.0]) == 0.0
    assert cosine([1.0, 1.0], [2.0, 2.0]) == pytest.approx(1.0)
    assert cosine([0.0, 0.0], [1.0, 0.0]) == 0.0
