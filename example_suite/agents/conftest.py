"""Starts the scripted stand-in model for the agent cases of this folder, so that
``pytest example_suite`` runs them offline: a loopback OpenAI-compatible server replaying
``agent_script.yaml`` (scripted_model.py). It is not a model; with ``QUERYEVAL_AGENT_BASE_URL``
set, nothing is started and the cases ask that server (docs/agents.md).

Its port is derived from this folder and the script, so every process of one run (xdist
workers, shards, a resumed shard) asks the same URL: the URL is part of each case's identity,
which ``--queryeval-resume`` compares."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
_VAR = "QUERYEVAL_AGENT_BASE_URL"


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get(_VAR):
        return
    spec = importlib.util.spec_from_file_location("example_scripted_model",
                                                  HERE / "scripted_model.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    script = HERE / "agent_script.yaml"
    port = module.stable_port(str(HERE), script.read_text(encoding="utf-8"))
    server = module.ScriptedModel.from_file(script, port)
    os.environ[_VAR] = server.base_url
    config.add_cleanup(server.close)
    config.add_cleanup(lambda: os.environ.pop(_VAR, None))
