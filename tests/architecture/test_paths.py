"""paths.display: how every message and report names a file of the project."""

from __future__ import annotations

from pathlib import Path

from pytest_queryeval._util.paths import display


def test_relative_to_the_root_and_dot_for_the_root(tmp_path: Path) -> None:
    (tmp_path / "suite").mkdir()
    assert display(tmp_path / "suite" / "cases.yaml", tmp_path) == "suite/cases.yaml"
    assert display(tmp_path, tmp_path) == "."


def test_outside_the_root_as_given(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    assert display(tmp_path / "other.yaml", tmp_path / "root") == str(tmp_path / "other.yaml")


def test_a_root_reached_through_a_symlink(tmp_path: Path) -> None:
    """pytest's rootpath is absolute, not resolved: the case files under it (resolved) stay
    relative, never this machine's absolute path in a committed report."""
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert display(tmp_path / "real" / "cases.yaml", tmp_path / "link") == "cases.yaml"


def test_unresolved_keeps_a_symlinked_file_s_own_name(tmp_path: Path) -> None:
    (tmp_path / "shared.yaml").write_text("{}\n")
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "queryeval.yaml").symlink_to(tmp_path / "shared.yaml")
    link = tmp_path / "suite" / "queryeval.yaml"
    assert display(link, tmp_path / "suite", resolve=False) == "queryeval.yaml"
    assert display(link, tmp_path / "suite") == str(link)
