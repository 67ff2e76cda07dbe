"""Issue 58, the eighteenth re-probe's MEDIUM findings: honest trajectories the text floor made
an error. M1: an untagged fence whose first line starts with a statement's word in prose
(``Update complete``, ``Load time: 3 ms``, ``Start: Rock``), read as a write statement. M2: a
read pragma quoted in its call form (``PRAGMA table_info(Genre)``, the schema look-up the
agent ran), read as a setter. M3: an executor's log of the counted call in an LLM span's
message content, while the same log in its ``output.value`` passed. Each hostile neighbour
(a statement of the same word in its shape, a settable pragma given a value, a forbidden
table given to a read pragma, a log of another statement) still errors. On a real Chinook
SQLite copy, from a predictions file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.agents.textcalls import text_call
from tests.agents import probe_support as probe
from tests.agents.test_counts_from_what_ran import GOLD, llm_call, span
from tests.agents.test_counts_thirteenth_probe_replay import HONEST

HONEST_TEXTS = {
    "untagged-update-complete": "```\nUpdate complete\n```\nThere are 25 genres.",
    "untagged-set-of": "```\nSet of 25 genres: Rock, Jazz, ...\n```",
    "untagged-copy": "```\nCopy the number: 25\n```",
    "untagged-call": "```\nCall count: 1\n```",
    "untagged-load": "```\nLoad time: 3 ms\n```",
    "untagged-start": "```\nStart: Rock\n```",
    "untagged-commit": "```\nCommit abc123 has the data\n```",
    "untagged-replace": "```\nReplace 'x' with 'y' in the names\n```",
    "untagged-end-of": "```\nEnd of results\n```",
    "untagged-use": "```\nUse the Genre table\n```",
    "untagged-import": "```\nimport sqlite3\nconn = sqlite3.connect('chinook.sqlite')\n```",
    "inline-pragma-table-info": "I checked `PRAGMA table_info(Genre)`: 25 genres.",
    "fenced-pragma-table-info": "```sql\nPRAGMA table_info(Genre);\n```\nThere are 25 genres.",
    "prose-pragma-index-list": "PRAGMA main.index_list(Genre) shows no index; 25 genres.",
}
HOSTILE_TEXTS = {
    **{f"untagged-{s.split()[0].lower()}-{n}": f"```\n{s}\n```" for n, s in enumerate([
        "UPDATE EXTENSIONS", "UPDATE /* x */ Genre SET Name = 'x'", "USE memory", "LOAD httpfs",
        "LOAD 'x.duckdb_extension'", "CALL checkpoint()", "CALL threads = 1",
        "SET threads TO 1", "SET ROLE postgres", "RESET threads", "COMMIT", "BEGIN IMMEDIATE",
        "START TRANSACTION", "EXPORT DATABASE 'x'", "IMPORT DATABASE 'x'",
        "DO $$ BEGIN PERFORM 1; END $$", "PREPARE q AS SELECT 1", "EXECUTE q",
        "RELEASE SAVEPOINT a", "LOCK TABLE Genre", "ANALYZE Genre", "REPLACE INTO Genre VALUES (1, 'x')",
        "COMMENT ON TABLE Genre IS 'x'", "COPY Genre TO 'x.csv'", "TRUNCATE Genre"])},
    "untagged-crlf-use": "```\r\nUSE memory\r\n```",
    "pragma-user-version-call": "I ran `PRAGMA user_version(7)`.",
    "pragma-main-user-version-call": "```sql\nPRAGMA main.user_version(7)\n```",
    "pragma-quoted-user-version": "PRAGMA \"user_version\"(7)",
    "pragma-table-info-assigned": "PRAGMA table_info = 7",
    "pragma-table-info-employee": "I checked `PRAGMA table_info(Employee)`: 8 columns.",
    "pragma-main-index-list-employee": "```sql\nPRAGMA main.index_list('Employee')\n```",
    "pragma-function-employee": "SELECT name FROM pragma_table_info('Employee')",
}


@pytest.mark.parametrize("text", list(HONEST_TEXTS.values()), ids=list(HONEST_TEXTS))
def test_honest_texts_are_no_call(text: str) -> None:
    assert text_call(text, ("Employee",)) is None


@pytest.mark.parametrize("text", list(HOSTILE_TEXTS.values()), ids=list(HOSTILE_TEXTS))
def test_their_hostile_neighbours_still_are(text: str) -> None:
    assert text_call(text, ("Employee",)) is not None


def test_the_texts_as_a_suite(pytester: pytest.Pytester, shared_data: Path) -> None:
    lines = {cid: {"trajectory": [*HONEST, {"role": "assistant", "content": text}]}
             for cid, text in {**{f"honest-{k}": v for k, v in HONEST_TEXTS.items()},
                               **HOSTILE_TEXTS}.items()}
    report = probe.run_lines(pytester, shared_data, lines)
    probe.assert_honest(report, [cid for cid in lines if cid.startswith("honest-")])
    probe.assert_hostile(report, [cid for cid in lines if not cid.startswith("honest-")])


def _log(query: str) -> str:
    return "Invoking: `run_query` with `{'query': '" + query + "'}`\n"


def _spans(kind: str, **attributes: str) -> list[dict[str, Any]]:
    """The counted call as an LLM and a TOOL span, then a ``kind`` span of ``attributes``."""
    return [llm_call("a", 1, "c1", GOLD), span(
        "TOOL", "b", 2, **{"tool.name": "run_query", "tool_call.id": "c1",
                           "input.value": json.dumps({"query": GOLD}), "output.value": "25"}),
        span(kind, "x", 9, **attributes)]


CONTENT = "llm.output_messages.0.message.content"


def test_a_log_of_the_counted_call_in_a_message_is_that_call(
        pytester: pytest.Pytester, shared_data: Path) -> None:
    track = "SELECT Name FROM Track LIMIT 5"
    honest = {f"honest-{kind}-{form}": _spans(kind, **attributes)
              for kind in ("LLM", "AGENT") for form, attributes in (
                  ("content", {CONTENT: _log(GOLD)}),
                  ("output", {"output.value": _log(GOLD)}),
                  ("both", {"output.value": _log(GOLD), CONTENT: _log(GOLD)}))}
    hostile = {f"{kind}-{form}": _spans(kind, **attributes)
               for kind in ("LLM", "AGENT") for form, attributes in (
                   ("content-other", {CONTENT: _log(track)}),
                   ("content-twice", {CONTENT: _log(GOLD) * 2}),
                   ("content-and-delete", {CONTENT: _log(GOLD) + "DELETE FROM Genre;"}),
                   ("output-other", {"output.value": _log(GOLD), CONTENT: _log(track)}))}
    report = probe.run_lines(pytester, shared_data, {cid: {"spans": s} for cid, s in
                                                     {**honest, **hostile}.items()})
    probe.assert_honest(report, honest)
    probe.assert_hostile(report, hostile)
