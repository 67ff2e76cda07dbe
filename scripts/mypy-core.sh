#!/usr/bin/env bash
# mypy --strict against a core install: only the package's own dependencies, none of the extras
# (semantic, excel, sqlalchemy, sdmx, duckdb, llm, fast). The lint target checks the dev
# install, where every optional back-end is present; this catches code that type-checks only
# because an extra happens to be installed (an unguarded import, an ignore comment needed in
# one install and unused in the other).
#
# Usage: scripts/mypy-core.sh [python]   (default: .venv/bin/python, which also runs mypy)
# The throwaway venv gets the core dependencies at the dev venv's versions (pip's cache serves
# them) plus the PyYAML stubs; mypy itself runs from the dev venv with --python-executable, so
# the core venv needs no mypy. CORE_VENV=dir keeps the venv (and skips the install when it
# exists).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${1:-.venv/bin/python}
BIN=$(dirname "$PYTHON")
if [ -n "${CORE_VENV:-}" ]; then
    VENV_DIR=$CORE_VENV
else
    VENV_DIR=$(mktemp -d)/core
    trap 'rm -rf "$(dirname "$VENV_DIR")"' EXIT
fi
if [ ! -x "$VENV_DIR/bin/python" ]; then
    "$PYTHON" -m venv "$VENV_DIR"
    constraints=$(mktemp)
    # name==version lines only: a direct reference (name @ url) is no constraint pip takes
    "$PYTHON" -m pip freeze --exclude-editable | grep -E '^[A-Za-z0-9_.-]+==' >"$constraints" || true
    stubs=$(grep -i '^types-pyyaml==' "$constraints" || echo types-PyYAML)
    "$VENV_DIR/bin/pip" install -q -c "$constraints" -e . "$stubs"
    rm -f "$constraints"
fi
# the core venv must really hold no extra: a stray one would hide what this check is for
for extra in duckdb sqlalchemy numpy openai sentence_transformers xlsxwriter sdmx; do
    if "$VENV_DIR/bin/python" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$extra') is None)"; then
        echo "mypy-core: $extra is installed in $VENV_DIR, not a core install" >&2
        exit 1
    fi
done
# no cache read or written: .ci/run runs this beside make lint, whose mypy writes .mypy_cache
"$BIN/mypy" --python-executable "$VENV_DIR/bin/python" --no-incremental --cache-dir=/dev/null
