"""The names of the tools the plugin serves an agent, in a module of their own.

Why apart: the trajectory reader and the span reader (which the trajectory reader imports)
both need them, the span reader to take a span named after a tool for that tool's call."""

from __future__ import annotations

#: The tools the plugin serves an agent (the openai source's tool loop): schema lookup,
#: sample rows, a read-only query, a question back to the user, abstaining.
TOOL_SCHEMA = "get_schema"
TOOL_SAMPLE = "sample_rows"
TOOL_QUERY = "run_query"
TOOL_ASK = "ask_user"
TOOL_ABSTAIN = "abstain"
PLUGIN_TOOLS = (TOOL_SCHEMA, TOOL_SAMPLE, TOOL_QUERY, TOOL_ASK, TOOL_ABSTAIN)
#: The MCP server name the plugin's tools are canonical under (EvalBench's
#: ``<server>__<tool>`` form, which its native-tool filter keeps).
SERVER = "queryeval"


def plugin_tool(name: str) -> str:
    """The plugin tool a call names, under its bare or its canonical name
    (``queryeval__run_query`` is ``run_query``: an outside harness that served the plugin's
    tools over MCP names them so, and its queries are counted all the same)."""
    prefix = f"{SERVER}__"
    bare = name[len(prefix):] if name.startswith(prefix) else name
    return bare if bare in PLUGIN_TOOLS else name


def named_tool(name: object) -> str | None:
    """The plugin tool a span's or a call's name names in any spelling a tracer or a harness
    gives it: any case, ``-`` for ``_``, after a namespace (``tool.run_query``,
    ``mcp__db__run_query``, ``functions/RUN_QUERY``); None for any other name."""
    if not isinstance(name, str):
        return None
    import re

    last = re.split(r"\.|/|:|__", name.strip().lower().replace("-", "_"))[-1]
    return last if last in PLUGIN_TOOLS else None
