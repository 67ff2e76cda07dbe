"""``plugin/options.py`` on its own: the report options read once from parsed arguments, as
``queryeval merge`` reads them (the plugin reads pytest's ``config.option`` the same way)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pytest_queryeval.plugin.declare import WORST
from pytest_queryeval.plugin.options import ReportOptions, add_report_options


def _merge_args(*args: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_report_options(parser.add_argument, merge=True)
    return parser.parse_args(list(args))


def test_report_files_resolve_from_the_invocation_dir(tmp_path: Path) -> None:
    options = ReportOptions.from_namespace(
        _merge_args("-o", "out/m.json", "--queryeval-html", "m.html"), tmp_path)
    assert options.path("json") == (tmp_path / "out" / "m.json").resolve()
    assert options.path("html") == (tmp_path / "m.html").resolve()
    assert options.path("xlsx") is None
    assert options.path("markdown") is None


def test_defaults_of_the_report_options(tmp_path: Path) -> None:
    options = ReportOptions.from_namespace(_merge_args(), tmp_path)
    assert (options.step_summary, options.baseline, options.update_baseline,
            options.force_baseline, options.max_drop, options.significance, options.gating,
            options.tags, options.worst, options.spider_table) == (
        True, None, False, False, [], None, None, False, WORST, False)


def test_baseline_and_gating_options_are_read_as_given(tmp_path: Path) -> None:
    options = ReportOptions.from_namespace(_merge_args(
        "--queryeval-baseline", "b.json", "--queryeval-update-baseline",
        "--queryeval-max-drop", "execution_accuracy=0.05", "--queryeval-no-step-summary"),
        tmp_path)
    assert options.baseline == "b.json"
    assert options.update_baseline is True
    assert options.max_drop == ["execution_accuracy=0.05"]
    assert options.step_summary is False
