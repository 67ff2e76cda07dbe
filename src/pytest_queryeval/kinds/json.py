"""``kind: json``: JSON query objects scored with StrSS, SemSS and OJSS (arXiv 2409.16220).

Importing this module is cheap: the embedding model (torch, sentence-transformers) is loaded only
when a case has a shared key whose value embedding is in no cache. On the first such case, the
texts of every JSON case of the session are encoded together in batches (``ctx.all_cases``).
See docs/metrics-json.md for the semantics and the options.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import GoldError
from ..metrics.embeddings import DEFAULT_BATCH_SIZE, Embedder, ModelRef, load_model, resolve_model
from ..metrics.json_similarity import (
    DEFAULT_ALPHA,
    DEFAULT_BETA,
    KEY_LEVELS,
    JsonScore,
    key_items,
    path_label,
    score,
    shared_texts,
    value_text,
)
from ..model import MISSING, Case, Context, Scored
from ._fences import note as note_fence
from ._fences import strip_fence

if TYPE_CHECKING:
    from .goldchecks.findings import AuditResult

METRICS = ("structural_similarity", "semantic_similarity", "json_similarity")
#: Shared keys shown in a failure diff, lowest cosine first.
DIFF_LOWEST = 3
#: Keys listed per line / values shown per side in a diff, so that reports stay readable.
DIFF_MAX_KEYS = 20
DIFF_MAX_CHARS = 160
#: Entries kept per list in ``Scored.details``.
DETAILS_MAX = 50
CACHE_ENV = "QUERYEVAL_EMBEDDINGS_CACHE"


class InvalidJson(ValueError):
    """A text that should hold JSON does not."""


@dataclass(frozen=True)
class JsonOptions:
    alpha: float = DEFAULT_ALPHA
    beta: float = DEFAULT_BETA
    keys: str = "top"
    model: str | None = None  # None: the packaged all-MiniLM-L6-v2
    batch_size: int = DEFAULT_BATCH_SIZE
    device: str | None = None  # None: sentence-transformers' choice (CUDA when available)
    #: ``root``: the key path scored below (``()``: the whole value).
    root: tuple[str, ...] = ()

    @classmethod
    def from_case(cls, case: Case) -> JsonOptions:
        o = case.options
        return cls(
            alpha=float(o.get("alpha", DEFAULT_ALPHA)),
            beta=float(o.get("beta", DEFAULT_BETA)),
            keys=str(o.get("keys", "top")),
            model=o.get("model"),
            batch_size=int(o.get("batch_size", DEFAULT_BATCH_SIZE)),
            device=o.get("device"),
            root=root_path(o.get("root")),
        )


def root_path(value: str | Sequence[object] | None) -> tuple[str, ...]:
    """``root: query`` or ``root: [query, filters]`` (validated before) as a key path."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value)


def below_root(value: object, root: tuple[str, ...]) -> Any:
    """The part of a JSON value that is scored. The JSON paper's real outputs wrap every
    object in one key (``{"query": {...}}``); with ``keys: top`` the whole object would then be
    one shared key compared as a single embedded text. Raises KeyError naming the first
    missing step."""
    for depth, key in enumerate(root):
        if not isinstance(value, dict) or key not in value:
            raise KeyError(".".join(root[: depth + 1]))
        value = value[key]
    return value


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def normalize(value: object) -> Any:
    """Plain JSON data as ``json.load`` would give it (YAML int keys become strings, dates
    strings), so that ``str(value)`` is what the reference embeds for the same document."""
    return json.loads(json.dumps(value, default=str))


def parse_json(value: object) -> Any:
    """A gold or predicted value: a string is JSON text, anything else is already JSON data."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise InvalidJson(f"{exc.msg} at line {exc.lineno} column {exc.colno}") from exc
    return normalize(value)


def _type_name(value: object) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"


def _short(text: str, limit: int = DIFF_MAX_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _labels(paths: Iterable[tuple[Any, ...]], limit: int) -> list[str]:
    return [path_label(p) for p in list(paths)[:limit]]


class JsonKind:
    """Scores a predicted JSON value against the gold with StrSS, SemSS and OJSS."""

    name: ClassVar[str] = "json"
    #: What it declares to the modules outside kinds/ (:mod:`..kindregistry`).
    json_answers: ClassVar[bool] = True
    json_gold: ClassVar[bool] = True
    conversation_turns: ClassVar[bool] = True  # issue 42: suite/conversation.py
    fence_language: ClassVar[str] = "json"
    language_name: ClassVar[str] = "JSON"
    headline_metrics: ClassVar[tuple[str, ...]] = (
        "json_similarity", "structural_similarity", "semantic_similarity")
    #: What gates a case no threshold judges (docs/reference.md, "Thresholds"): the gold's
    #: value, 1 up to the rounding of the embeddings' cosine (an identical value can score
    #: 0.9999999999999999; a wrong value of docs/metrics-json.md scores 0.992 at most).
    default_thresholds: ClassVar[Mapping[str, float]] = {"json_similarity": 0.999999}
    option_keys: ClassVar[frozenset[str]] = frozenset(
        {"alpha", "beta", "keys", "model", "batch_size", "device", "root"}
    )

    def is_metric(self, name: str) -> bool:
        return name in METRICS

    def metric_names(self) -> list[str]:
        """Names for "did you mean" hints."""
        return list(METRICS)

    def difficulty(self, case: Case) -> str | None:
        return None

    def validate(self, case: Case) -> Iterable[tuple[str, str]]:
        problems: list[tuple[str, str]] = []
        o = case.options
        if "alpha" in o and not (_is_number(o["alpha"]) and 0 <= o["alpha"] <= 1):
            problems.append(("alpha", f"must be a number in [0, 1], not {o['alpha']!r}"))
        if "beta" in o and not (_is_number(o["beta"]) and 0 < o["beta"] <= 1):
            problems.append(("beta", f"must be a number in (0, 1], not {o['beta']!r}"))
        if "keys" in o and o["keys"] not in KEY_LEVELS:
            problems.append(("keys", f"must be one of {', '.join(KEY_LEVELS)}, not {o['keys']!r}"))
        for key in ("model", "device"):
            if key in o and not (isinstance(o[key], str) and o[key].strip()):
                problems.append((key, f"must be a non-empty string, not {o[key]!r}"))
        bs = o.get("batch_size", 1)
        if not (isinstance(bs, int) and not isinstance(bs, bool) and bs >= 1):
            problems.append(("batch_size", f"must be a positive integer, not {bs!r}"))
        root = o.get("root")
        if root is not None and not (
            (isinstance(root, str) and root)
            or (isinstance(root, list) and root
                and all(isinstance(k, str) and k for k in root))):
            problems.append(("root", "must be a key or a non-empty list of keys (a path), "
                             f"not {root!r}"))
            root = None
        if case.gold is None:
            problems.append(("gold", "required: the expected JSON object"))
        else:
            try:
                gold = parse_json(case.gold)
                below_root(gold, root_path(root))
            except KeyError as exc:
                problems.append(("gold", f"has no key {exc.args[0]!r} to score below "
                                 f"(root: {root!r})"))
            except InvalidJson as exc:
                problems.append(("gold", f"not valid JSON: {exc}"))
            except (TypeError, ValueError) as exc:
                problems.append(("gold", f"not JSON data: {exc}"))
        return problems

    def audit(self, case: Case, ctx: Context, result: AuditResult) -> None:
        """``--queryeval-audit-golds``: the gold must be strict JSON (:mod:`.goldchecks.jsonlint`)
        and score 1 as its own prediction."""
        from .goldchecks import self_check
        from .goldchecks.jsonlint import lint_json

        lint_json(case.gold, result)
        self_check(case, self, ctx, result, case.gold, None)

    def evaluate(self, case: Case, prediction: object, ctx: Context) -> Scored:
        opts = JsonOptions.from_case(case)
        try:
            gold = below_root(parse_json(case.gold), opts.root)
        except KeyError as exc:
            raise GoldError(f"gold has no key {exc.args[0]!r} (root)") from exc
        except (TypeError, ValueError) as exc:
            raise GoldError(f"gold is not valid JSON: {exc}") from exc
        fence = None
        if isinstance(prediction, str):
            prediction, fence = strip_fence(prediction)
        scored = self._evaluate(case, opts, gold, prediction, ctx)
        note_fence(scored.details, fence)
        return scored

    def _evaluate(self, case: Case, opts: JsonOptions, gold: object, prediction: object,
                  ctx: Context) -> Scored:
        try:
            pred = parse_json(prediction)
        except InvalidJson as exc:
            return _invalid(prediction, f"invalid JSON: {exc}")
        except (TypeError, ValueError) as exc:
            return _invalid(prediction, f"invalid JSON: not JSON data: {exc}")
        try:
            pred = below_root(pred, opts.root)
        except KeyError as exc:
            return _no_root(pred, opts.root, exc.args[0])

        embedder: Embedder | None = None
        texts = shared_texts(gold, pred, opts.keys)
        if texts:  # no shared key: SemSS is 0 without any model
            embedder, key = self._embedder(case, opts, ctx)
            if not embedder.prefetched:
                try:
                    embedder.ensure(self._session_texts(ctx, key, texts))
                finally:
                    embedder.prefetched = True
            embedder.ensure(texts)
        result = score(
            gold,
            pred,
            embedder.vector if embedder is not None else _no_embedding,
            alpha=opts.alpha,
            beta=opts.beta,
            keys=opts.keys,
        )
        details = _details(result, opts, embedder.ref if embedder is not None else None)
        if opts.root:
            details["root"] = list(opts.root)
        return Scored(
            metrics={m: float(getattr(result, m)) for m in METRICS},
            diff=_diff(gold, pred, result, opts),
            details=details,
        )

    # -- embedding model and batching -------------------------------------------------------

    def _model_ref(self, case: Case, opts: JsonOptions, ctx: Context) -> ModelRef:
        base = case.file.parent if opts.model is not None else None
        key = f"pytest_queryeval.json.model-ref:{opts.model}:{base}"
        ref: ModelRef = ctx.shared(key, lambda: resolve_model(opts.model, base))
        return ref

    def _embedder_key(self, ref: ModelRef, opts: JsonOptions) -> str:
        where = ref.path or ref.spec
        return f"pytest_queryeval.json.embedder:{where}:{opts.device}:{opts.batch_size}"

    def _embedder(self, case: Case, opts: JsonOptions, ctx: Context) -> tuple[Embedder, str]:
        ref = self._model_ref(case, opts, ctx)
        model_key = f"pytest_queryeval.json.model:{ref.path or ref.spec}:{opts.device}"

        def loader() -> Any:
            return ctx.shared(model_key, lambda: load_model(ref, opts.device))

        def build() -> Embedder:
            return Embedder(
                ref,
                device=opts.device,
                batch_size=opts.batch_size,
                cache_root=self._cache_root(ctx),
                loader=loader,
            )

        key = self._embedder_key(ref, opts)
        embedder: Embedder = ctx.shared(key, build)
        return embedder, key

    def _session_texts(self, ctx: Context, embedder_key: str, first: set[str]) -> list[str]:
        """Every text the session's JSON cases using this embedder will (probably) embed: all
        gold values, and the shared-key values of inline predictions."""
        texts: dict[str, None] = dict.fromkeys(sorted(first))
        for case in ctx.all_cases:
            if case.kind != self.name or case.errors or case.skip:
                continue
            try:
                opts = JsonOptions.from_case(case)
                if self._embedder_key(self._model_ref(case, opts, ctx), opts) != embedder_key:
                    continue
                gold = below_root(parse_json(case.gold), opts.root)
                gold_values = key_items(gold, opts.keys).values()
                texts.update(dict.fromkeys(value_text(v) for v in gold_values))
                if case.predicted is not MISSING:
                    pred = below_root(parse_json(case.predicted), opts.root)
                    texts.update(dict.fromkeys(shared_texts(gold, pred, opts.keys)))
            except Exception:  # an invalid case is reported by its own item, not here
                continue
        return list(texts)

    def _cache_root(self, ctx: Context) -> Path | None:
        """Where the embeddings cache lives; None disables it (``--queryeval-no-cache``)."""
        env = os.environ.get(CACHE_ENV)
        if env is not None:
            if env.strip().lower() in ("", "0", "off", "no", "false", "none"):
                return None
            return Path(env).expanduser()
        if hasattr(ctx, "cache_dir"):  # contexts of other hosts may lack it
            found = ctx.cache_dir
            return None if found is None else Path(found) / "embeddings"
        # The core gives no directory: ask its JSON cache whether caching is on at all, and use
        # the user cache directory (vectors are keyed by model identity, so sharing is safe).
        ctx.cache_set("queryeval", "json-embeddings-enabled", True)
        if ctx.cache_get("queryeval", "json-embeddings-enabled") is None:
            return None
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return Path(base) / "pytest-queryeval" / "embeddings"


def _no_embedding(text: str) -> list[float]:
    raise AssertionError("an embedding was requested for a case without shared keys")


def _invalid(prediction: object, reason: str) -> Scored:
    shown = prediction if isinstance(prediction, str) else repr(prediction)
    return Scored(
        metrics=dict.fromkeys(METRICS, 0.0),
        diff=[
            f"predicted is not valid JSON ({reason.removeprefix('invalid JSON: ')}):",
            f"  {_short(shown)}",
        ],
        reason=reason,
    )


def _no_root(pred: object, root: tuple[str, ...], missing: str) -> Scored:
    """A prediction without the wrapper the case scores below: 0, with the reason (scoring
    the unwrapped object instead would hide a model that dropped the wrapper)."""
    reason = f"predicted has no key {missing!r} to score below (root: {list(root)})"
    shown = json.dumps(pred, ensure_ascii=False, default=str)
    return Scored(metrics=dict.fromkeys(METRICS, 0.0), diff=[reason, f"  {_short(shown)}"],
                  reason=reason, details={"root": list(root)})


def _diff(gold: object, pred: object, result: JsonScore, opts: JsonOptions) -> list[str]:
    lines: list[str] = []
    if isinstance(gold, dict) != isinstance(pred, dict):
        lines.append(
            f"gold is {_type_name(gold)}, predicted is {_type_name(pred)}: a non-object value is "
            "compared as a whole, as the value of the root key '.'"
        )
    for title, paths in (
        ("missing keys (in gold, not predicted)", result.missing),
        ("extra keys (predicted, not in gold)", result.extra),
    ):
        if paths:
            more = len(paths) - DIFF_MAX_KEYS
            text = ", ".join(_labels(paths, DIFF_MAX_KEYS))
            text += f", ... {more} more" if more > 0 else ""
            lines.append(f"{title}: {text}")
    low = sorted(result.similarities.items(), key=lambda kv: kv[1])
    low = [(p, s) for p, s in low if s < 1 - 1e-6][:DIFF_LOWEST]
    if low:
        lines.append("lowest-similarity shared keys (cosine of the embedded str(value)):")
        g_items = key_items(gold, opts.keys)
        p_items = key_items(pred, opts.keys)
        for path, sim in low:
            lines.append(f"  {path_label(path)}: {sim:.4f}")
            lines.append(f"    gold:      {_short(value_text(g_items[path]))}")
            lines.append(f"    predicted: {_short(value_text(p_items[path]))}")
    if (
        opts.keys == "top"
        and isinstance(gold, dict)
        and len(gold) == 1
        and isinstance(next(iter(gold.values())), dict)
    ):
        lines.append(
            "note: the gold has a single top-level key holding an object; with keys: top the "
            "structure inside it is not compared (keys: paths compares nested keys; "
            "root: <key> scores below the key)"
        )
    return lines


def _details(result: JsonScore, opts: JsonOptions, ref: ModelRef | None) -> dict[str, Any]:
    return {
        "keys": opts.keys,
        "alpha": opts.alpha,
        "beta": opts.beta,
        "model": ref.label if ref is not None else None,
        "missing": _labels(result.missing, DETAILS_MAX),
        "extra": _labels(result.extra, DETAILS_MAX),
        "similarities": {
            path_label(p): round(s, 6) for p, s in list(result.similarities.items())[:DETAILS_MAX]
        },
    }
