"""The README's "Your first suite" runs as written: its files are copied into an empty folder,
its set-up command makes the database, and ``pytest`` there gives the output the README
describes. A change of the output or of the files that the README does not follow fails here."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: What the README's explanation quotes from the run's output: each must be in both.
QUOTED = (
    "missing rows (1 in gold, not in predicted",
    "(2,)",
    "gold orders.total >= value | pred orders.total > value",
    "50.0%",
    "thresholds: execution_accuracy >= 1 gated 2 cases",
    "gate FAIL: pass rate = 0.5000 (required >= 0.9, 2 cases)",
    "queryeval: FAILED: 1 failed case (big-orders); gate pass_rate 0.5 < 0.9",
)


def first_suite_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## Your first suite")
    return text[start:text.index("\n## ", start + 1)]


def blocks(section: str) -> list[tuple[str, str]]:
    return re.findall(r"```(\w+)\n(.*?)```", section, flags=re.S)


def materialise(section: str, where: Path) -> None:
    """Write each file block (first line ``# NAME: ...``) and run the bash block."""
    for lang, body in blocks(section):
        first, _, rest = body.partition("\n")
        if lang == "bash":
            if body.startswith(("pip install", "queryeval init")):
                continue  # installing, and `queryeval init` (tests/init/ follows those words)
            script = body.replace("python -", f"{sys.executable} -", 1)
            subprocess.run(["bash", "-euc", script], cwd=where, check=True, timeout=60)
            continue
        match = re.fullmatch(r"# ([\w.]+): .*", first)
        assert match, f"a {lang} block of the first suite must start with '# NAME: ...': {first!r}"
        keep = body if lang == "yaml" else rest  # YAML keeps its comment; JSONL cannot
        (where / match.group(1)).write_text(keep, encoding="utf-8")


def test_the_first_suite_is_about_fifteen_lines() -> None:
    files = [body for lang, body in blocks(first_suite_section()) if lang != "bash"]
    lines = sum(len([ln for ln in b.splitlines() if ln.strip()]) for b in files)
    assert lines <= 15, lines


def test_the_first_suite_runs_as_the_readme_says(tmp_path: Path) -> None:
    section = first_suite_section()
    materialise(section, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "predictions.jsonl", "queryeval.yaml", "shop.db", "test_orders.yaml"]
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, check=False)
    out = proc.stdout
    assert proc.returncode == 1, out[-3000:]
    assert "1 failed, 1 passed" in out, out[-3000:]
    assert "FAILED test_orders.yaml::big-orders" in out, out[-3000:]
    for quoted in QUOTED:
        assert quoted in section, quoted
        assert quoted in out, (quoted, out[-3000:])
