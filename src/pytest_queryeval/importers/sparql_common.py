"""What the QALD and TEXT2SPARQL importers share: the datasource the predictions run on and the
suite config it goes into."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._common import ImportProblem, dump_yaml, provenance, suite_relative, tag
from ._inputs import load_yaml

CONFIG_FILE = "queryeval.yaml"


def datasource_spec(endpoint: str | None, graph: Path | None, out: Path,
                    timeout: float | None) -> dict[str, Any]:
    """``{type: sparql, endpoint}`` or ``{type: rdf, path}`` (relative to the suite when the
    graph lies below it); exactly one of the two must be given."""
    if (endpoint is None) == (graph is None):
        raise ImportProblem("give the knowledge graph the predictions run on: --endpoint URL "
                            "or --graph FILE (one of them)")
    spec: dict[str, Any]
    if endpoint is not None:
        spec = {"type": "sparql", "endpoint": endpoint}
    else:
        assert graph is not None
        if not graph.is_file():
            raise ImportProblem(f"graph file not found: {graph}")
        spec = {"type": "rdf", "path": suite_relative(graph, out)}
    if timeout is not None:
        spec["timeout"] = timeout
    return spec


def write_config(out: Path, name: str, spec: dict[str, Any]) -> Path:
    """Add (or replace) datasource ``name`` in ``<out>/queryeval.yaml``, keeping the rest."""
    config_file = out / CONFIG_FILE
    config: dict[str, Any] = {"datasources": {}}
    if config_file.is_file():
        loaded = load_yaml(config_file) or {}
        if isinstance(loaded, dict):
            config = loaded
            config.setdefault("datasources", {})
    config["datasources"][name] = spec
    config_file.write_text(dump_yaml(config), encoding="utf-8")
    return config_file


def write_suite(out: Path, tool: str, name: str, suite: dict[str, Any], source: Path,
                note: str, spec: dict[str, Any], skipped: str = "") -> None:
    """Write the cases file ``test_<tool>_<name>.yaml`` and the datasource ``<tool>`` of the
    suite config, then say so (``skipped``: what the line adds about questions left out)."""
    out.mkdir(parents=True, exist_ok=True)
    cases_file = out / f"test_{tool}_{tag(name)}.yaml"
    cases_file.write_text(dump_yaml(suite, provenance(tool, [source], note)), encoding="utf-8")
    config_file = write_config(out, tool, spec)
    print(f"wrote {cases_file} ({len(suite['cases'])} cases{skipped}), {config_file}")
