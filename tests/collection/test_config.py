"""``suite/config.py`` on its own: ``${VAR}`` expansion and the ``queryeval.yaml`` layers a folder
inherits, child over parent."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_queryeval.suite.config import ConfigFinder, SuiteConfig, expand_env


def test_expand_env_fills_variables_defaults_and_records_secrets(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QE_TEST_TOKEN", "s3cret")
    monkeypatch.delenv("QE_TEST_MISSING", raising=False)
    errors: list[str] = []
    secrets: set[str] = set()
    value = expand_env({"key": "Bearer ${QE_TEST_TOKEN}",
                        "list": ["${QE_TEST_MISSING:-fallback}", "${QE_TEST_MISSING}"], "n": 3},
                       "predictions", errors, secrets)
    assert value == {"key": "Bearer s3cret", "list": ["fallback", ""], "n": 3}
    assert errors == ["predictions.list[1]: environment variable QE_TEST_MISSING is not set"]
    assert secrets == {"s3cret"}


def test_a_child_layer_overrides_its_parent_key_by_key(tmp_path: Path) -> None:
    (tmp_path / "queryeval.yaml").write_text("model: parent-model\nrecord_only: true\n")
    child = tmp_path / "sub"
    child.mkdir()
    (child / "queryeval.yaml").write_text("model: child-model\n")
    finder = ConfigFinder(tmp_path)
    top, below = finder.for_directory(tmp_path), finder.for_directory(child)
    assert (top.model, top.record_only) == ("parent-model", True)
    assert (below.model, below.record_only) == ("child-model", True)
    assert top.errors == below.errors == []
    assert finder.for_directory(child) is below  # merged once per folder


def test_a_folder_without_config_gets_the_defaults(tmp_path: Path) -> None:
    cfg = ConfigFinder(tmp_path).for_directory(tmp_path)
    assert (cfg.model, cfg.record_only, cfg.datasources, cfg.errors) == (
        SuiteConfig().model, False, {}, [])
