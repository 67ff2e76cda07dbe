# Set-up and checks. Everything a fresh machine needs is installed from here.
VENV ?= .venv
PY := $(VENV)/bin/python
# CPU build of torch first: an unpinned torch pulls a multi-GB CUDA build.
# Users with a GPU: make setup TORCH_SPEC="torch==2.14.1"
TORCH_SPEC ?= torch==2.13.0
PYTEST_ARGS ?=

.PHONY: setup example test lint lint-core services bench clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e ".[dev]"
	touch $@

setup: $(VENV)/.installed

## Quickstart 1: run the example suite (offline, real data, all four kinds)
example: setup
	@$(VENV)/bin/pytest example_suite $(PYTEST_ARGS); status=$$?; \
	if [ $$status -eq 5 ]; then echo "FAILED: pytest collected no tests (exit code 5)" >&2; exit 1; fi; \
	exit $$status

## System services the tests start on loopback (PostgreSQL server, headless Chromium, and a
## real OpenAI-compatible server with a small model: llama-cpp-python, compiled once, and SmolLM2)
services: setup
	bash scripts/install-postgres.sh
	bash scripts/install-chromium.sh
	PYTHON=$(PY) bash scripts/install-llm-server.sh
	bash scripts/install-slurm.sh

## Quickstart 2: run the project's tests. Bytecode is written whatever the caller's
## PYTHONDONTWRITEBYTECODE says: the tests start some thousands of pytest runs, and with it set
## each one compiled (and assertion-rewrote) the plugin's modules from source again, about 2 s
## of CPU per run of a small suite (__pycache__ is ignored by git)
test: setup services
	@env -u PYTHONDONTWRITEBYTECODE QUERYEVAL_REQUIRE_CHROMIUM=1 QUERYEVAL_REQUIRE_LLM_SERVER=1 QUERYEVAL_REQUIRE_BOLT=1 QUERYEVAL_REQUIRE_SLURM=1 $(VENV)/bin/pytest -n 2 $(PYTEST_ARGS); status=$$?; \
	if [ $$status -eq 5 ]; then echo "FAILED: pytest collected no tests (exit code 5)" >&2; exit 1; fi; \
	exit $$status

lint: setup
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/mypy

## mypy --strict on a core install (no extras), in a throwaway venv: scripts/mypy-core.sh
lint-core: setup
	bash scripts/mypy-core.sh $(PY)

bench: setup
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
