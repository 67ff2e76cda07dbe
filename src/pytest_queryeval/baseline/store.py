"""Baseline files: the committed JSON report, written atomically and read with precise errors."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..report.json_report import write_atomic


def write_baseline(report: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write the report as the new baseline, atomically: readers never see a partial file."""
    target = Path(path)
    full = getattr(report.get("cases"), "iter_full", None)
    if full is not None:  # a merge's slim records (report.stream): the baseline keeps them whole
        report = {**report, "cases": list(full())}
    write_atomic(target, json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    return target


def load_baseline(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a baseline report; a missing or malformed file is a ConfigError naming it."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError("baseline file not found (create it with "
                          "--queryeval-update-baseline)", file=str(p)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read baseline: {exc}", file=str(p)) from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"baseline is not valid JSON: {exc.msg}", file=str(p),
                          line=exc.lineno) from None
    if not isinstance(data, dict) or "cases" not in data:
        raise ConfigError("baseline is not a queryeval JSON report (no 'cases')", file=str(p))
    return data
