"""Embedder and VectorCache with a fake model: batching, disk cache, errors (no torch)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.kinds.json import JsonKind
from pytest_queryeval.metrics.embeddings import Embedder, ModelRef, VectorCache, text_key

from .conftest import FakeContext

np = pytest.importorskip("numpy")

REF = ModelRef(None, "fake", None, "fake-model-1")


class FakeModel:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def encode(self, texts: list[str], batch_size: int, **_: Any) -> Any:
        self.calls.append(list(texts))
        return np.array([[len(t), t.count("a"), 1.0] for t in texts], dtype=np.float32)


def test_unique_texts_are_encoded_once_in_batches(tmp_path: Path) -> None:
    model = FakeModel()
    emb = Embedder(REF, batch_size=2, cache_root=tmp_path, loader=lambda: model)
    emb.ensure(["a", "bb", "a", "ccc"])
    assert model.calls == [["a", "bb", "ccc"]]
    assert emb.stats == {"encoded": 3, "batches": 2, "disk_hits": 0}
    emb.ensure(["bb", "a"])
    assert len(model.calls) == 1
    assert list(emb.vector("ccc")) == [3.0, 0.0, 1.0]


def test_disk_cache_round_trip_without_a_model(tmp_path: Path) -> None:
    first = Embedder(REF, cache_root=tmp_path, loader=FakeModel)
    first.ensure(["alpha", "beta"])  # not yet prefetched: written at once

    def no_model() -> Any:
        raise AssertionError("the model must not be loaded")

    second = Embedder(REF, cache_root=tmp_path, loader=no_model)
    second.ensure(["alpha", "beta"])
    assert second.stats["disk_hits"] == 2
    assert not second.model_loaded
    assert list(second.vector("alpha")) == [5.0, 2.0, 1.0]
    # Another model identity never sees these vectors.
    other = Embedder(ModelRef(None, "other", None, "fake-model-2"), cache_root=tmp_path, loader=FakeModel)
    other.ensure(["alpha"])
    assert other.stats["disk_hits"] == 0


def test_cache_file_merges_and_survives_corruption(tmp_path: Path) -> None:
    cache = VectorCache(tmp_path, REF)
    cache.save({text_key("x"): np.ones(3, dtype=np.float32)})
    cache.save({text_key("y"): np.zeros(3, dtype=np.float32)})
    assert set(cache.load()) == {text_key("x"), text_key("y")}
    assert [p.suffix for p in sorted(tmp_path.iterdir())] == [".json", ".npy"]  # no temp files
    cache.file.write_bytes(b"garbage")
    assert cache.load() == {}


def test_load_failure_is_remembered(tmp_path: Path) -> None:
    calls = []

    def broken() -> Any:
        calls.append(1)
        raise RuntimeError("no such model")

    emb = Embedder(REF, cache_root=None, loader=broken)
    for _ in range(2):
        with pytest.raises(RuntimeError):
            emb.ensure(["t"])
    assert calls == [1]


def test_cache_location(tmp_path: Path, monkeypatch: Any) -> None:
    kind = JsonKind()
    monkeypatch.delenv("QUERYEVAL_EMBEDDINGS_CACHE", raising=False)
    assert kind._cache_root(FakeContext([], tmp_path)) == tmp_path / "embeddings"
    assert kind._cache_root(FakeContext([], None)) is None  # --queryeval-no-cache

    class NoDirContext(FakeContext):
        """A core without cache_dir: the JSON cache tells whether caching is on."""

        def __getattribute__(self, name: str) -> Any:
            if name == "cache_dir":
                raise AttributeError(name)
            return super().__getattribute__(name)

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert kind._cache_root(NoDirContext()) == tmp_path / "xdg" / "pytest-queryeval" / "embeddings"

    class NoCacheContext(NoDirContext):
        def cache_get(self, namespace: str, key: str) -> Any:
            return None

    assert kind._cache_root(NoCacheContext()) is None
    monkeypatch.setenv("QUERYEVAL_EMBEDDINGS_CACHE", "off")
    assert kind._cache_root(FakeContext([], tmp_path)) is None
    monkeypatch.setenv("QUERYEVAL_EMBEDDINGS_CACHE", str(tmp_path / "env"))
    assert kind._cache_root(FakeContext([], tmp_path)) == tmp_path / "env"
