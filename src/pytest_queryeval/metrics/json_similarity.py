"""JSON similarity of Mussa et al. (arXiv 2409.16220): StrSS, SemSS and their weighted mean.

Reference implementation: ``i3omar/LLM-Integration-Data``,
``Main_Experiment_Evaluation_Data/eval_metrics.py`` (MIT). With ``keys="top"`` (the default) the
functions here compute exactly the reference formulas; ``keys="paths"`` applies the same formulas to
flattened key paths, for nested query objects whose top level is a single constant key.

Everything here is pure: the embedding model is passed in as ``embed`` (text -> vector), so the
formulas are testable without torch, and the kind can feed vectors it encoded in batches.

Keys are handled as *paths* (tuples of object keys) in both modes: ``top`` gives paths of length
one, so set operations are the reference's. A JSON value that is not an object (a list, a number, a
string) has no keys; it is compared as a whole, as the value of the root path ``()`` (shown ``.``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

#: A key path: the object keys from the root to a value; ``()`` is the root itself.
Path = tuple[object, ...]
#: Maps a text to its embedding (any sequence of floats; numpy arrays are fastest).
Embed = Callable[[str], Sequence[float]]

KEY_LEVELS: tuple[str, ...] = ("top", "paths")
DEFAULT_ALPHA = 0.5
DEFAULT_BETA = 0.1
ROOT: Path = ()

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def key_items(value: object, keys: str = "top") -> dict[Path, object]:
    """The compared (path -> value) items of one JSON value at the given key level.

    ``top``: the object's own keys (the reference). ``paths``: every leaf under the root object,
    where a leaf is any non-object value or an empty nested object (lists are leaves: in query
    objects they are value sets, compared as a whole). A non-object root is ``{(): value}``.
    """
    if keys not in KEY_LEVELS:
        raise ValueError(f"keys must be one of {', '.join(KEY_LEVELS)}, not {keys!r}")
    if not isinstance(value, Mapping):
        return {ROOT: value}
    if keys == "top":
        return {(k,): v for k, v in value.items()}
    out: dict[Path, object] = {}
    _flatten(value, ROOT, out)
    return out


def _flatten(value: object, prefix: Path, out: dict[Path, object]) -> None:
    # The root object is always expanded (so {} has no keys, as in "top"); a nested empty object
    # is a leaf, so that a key holding {} still counts as present.
    if isinstance(value, Mapping) and (value or not prefix):
        for k, v in value.items():
            _flatten(v, (*prefix, k), out)
    else:
        out[prefix] = value


def value_text(value: object) -> str:
    """The text embedded for a value: ``str(value)`` as in the reference (a dict's Python repr)."""
    return str(value)


def path_label(path: Path) -> str:
    """A jq-style label for a key path: ``.query."<python/Juling>".value``; the root is ``.``."""
    if not path:
        return "."
    parts = []
    for k in path:
        text = str(k)
        quoted = text if _IDENT.match(text) else json.dumps(text, ensure_ascii=False)
        parts.append("." + quoted)
    return "".join(parts)


def cosine(u: Sequence[float], v: Sequence[float]) -> float:
    """Cosine similarity as ``sentence_transformers.util.cos_sim`` (0 for a zero vector)."""
    if hasattr(u, "dtype") and hasattr(v, "dtype"):
        import numpy as np  # only reached with numpy vectors

        a = np.asarray(u, dtype=np.float64)
        b = np.asarray(v, dtype=np.float64)
        na2, nb2, dot = float(a @ a), float(b @ b), float(a @ b)
    else:
        na2 = math.fsum(x * x for x in u)
        nb2 = math.fsum(y * y for y in v)
        dot = math.fsum(x * y for x, y in zip(u, v, strict=True))
    if na2 == 0.0 or nb2 == 0.0:
        return 0.0
    # one square root of the product: a vector's cosine with itself is then exactly 1 (the
    # square root of a rounded square is the number), where sqrt(a.a) * sqrt(b.b) came out
    # 0.9999999999999999 for some embeddings (a new build of the model's stack)
    return dot / math.sqrt(na2 * nb2)


def clamp(score: float) -> float:
    return max(0.0, min(score, 1.0))


def _sort_key(path: Path) -> str:
    return path_label(path)


def structural_from_items(ref: Mapping[Path, object], gen: Mapping[Path, object], beta: float) -> float:
    keys_ref = set(ref)
    keys_gen = set(gen)
    adjusted_union = len(keys_ref) + beta * len(keys_gen - keys_ref)
    return len(keys_ref & keys_gen) / adjusted_union if adjusted_union > 0 else 1.0


def key_similarities(ref: Mapping[Path, object], gen: Mapping[Path, object],
                     embed: Embed) -> dict[Path, float]:
    """Cosine of the embedded ``str(value)`` of each shared key, in a stable (label) order."""
    shared = sorted(set(ref) & set(gen), key=_sort_key)
    return {k: cosine(embed(value_text(ref[k])), embed(value_text(gen[k]))) for k in shared}


def semantic_from_similarities(similarities: Mapping[Path, float]) -> float:
    """Mean of the per-key cosines, clamped once to [0, 1]; 0 when no key is shared."""
    sims = list(similarities.values())
    return clamp(sum(sims) / len(sims) if sims else 0.0)


def structural_similarity(ref: object, gen: object, beta: float = DEFAULT_BETA, keys: str = "top") -> float:
    """StrSS = |K_r ∩ K_g| / (|K_r| + beta·|K_g \\ K_r|), 1 when that denominator is 0.

    Missing keys cost a full key, extra keys only ``beta`` of one (the reference's asymmetry).
    """
    return structural_from_items(key_items(ref, keys), key_items(gen, keys), beta)


def semantic_similarity(ref: object, gen: object, embed: Embed, keys: str = "top") -> float:
    """SemSS: mean cosine of the embeddings of ``str(value)`` of the shared keys, clamped."""
    return semantic_from_similarities(key_similarities(key_items(ref, keys), key_items(gen, keys), embed))


def json_similarity(
    ref: object,
    gen: object,
    embed: Embed,
    alpha: float = DEFAULT_ALPHA,
    beta: float = DEFAULT_BETA,
    keys: str = "top",
) -> float:
    """OJSS = alpha·StrSS + (1 − alpha)·SemSS."""
    return score(ref, gen, embed, alpha=alpha, beta=beta, keys=keys).json_similarity


@dataclass(frozen=True)
class JsonScore:
    """All three metrics of one comparison plus what a failure report needs."""

    structural_similarity: float
    semantic_similarity: float
    json_similarity: float
    missing: list[Path] = field(default_factory=list)  # in the gold only
    extra: list[Path] = field(default_factory=list)  # in the prediction only
    similarities: dict[Path, float] = field(default_factory=dict)  # per shared key


def score(
    ref: object,
    gen: object,
    embed: Embed,
    alpha: float = DEFAULT_ALPHA,
    beta: float = DEFAULT_BETA,
    keys: str = "top",
) -> JsonScore:
    """Compute StrSS, SemSS and OJSS in one pass (``embed`` is called only for shared keys)."""
    ref_items = key_items(ref, keys)
    gen_items = key_items(gen, keys)
    strss = structural_from_items(ref_items, gen_items, beta)
    sims = key_similarities(ref_items, gen_items, embed)
    semss = semantic_from_similarities(sims)
    return JsonScore(
        structural_similarity=strss,
        semantic_similarity=semss,
        json_similarity=alpha * strss + (1 - alpha) * semss,
        missing=sorted(set(ref_items) - set(gen_items), key=_sort_key),
        extra=sorted(set(gen_items) - set(ref_items), key=_sort_key),
        similarities=sims,
    )


def shared_texts(ref: object, gen: object, keys: str = "top") -> set[str]:
    """The texts :func:`score` will embed: both sides' values of the shared keys."""
    ref_items = key_items(ref, keys)
    gen_items = key_items(gen, keys)
    out: set[str] = set()
    for k in set(ref_items) & set(gen_items):
        out.add(value_text(ref_items[k]))
        out.add(value_text(gen_items[k]))
    return out
