"""The text edit of ``--queryeval-write-transpiled`` (audit.writeback) on layouts a person
writes: the one entry is added, every other byte stays, and what cannot be edited safely is
refused with its reason. The records are the audit's own shape (details.audit.transpiled)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_queryeval.audit.writeback import write_transpiled

SQL = "SELECT count(*) FROM Track WHERE GenreId = 1"
DUCK = "SELECT COUNT(*) FROM Track WHERE GenreId = 1"


def record(path: Path, line: int, case: str = "rock", checked: str = "matched",
           source: Any = SQL, gold: Any = DUCK) -> dict[str, Any]:
    return {"id": f"{case}[duck]", "file": path.name, "path": str(path), "line": line,
            "details": {"audit": {"findings": [], "transpiled": {
                "case": case, "dialect": "duckdb", "from": "sqlite", "source": source,
                "gold": gold, "checked": checked}}}}


def test_block_scalar_crlf_and_a_list_keep_every_other_byte(tmp_path: Path) -> None:
    path = tmp_path / "test_a.yaml"
    text = ("cases:\r\n"
            "  - id: rock\r\n"
            "    gold:\r\n"
            "      sqlite: |\r\n"
            f"        {SQL}\r\n"
            "\r\n"
            "    # the next case\r\n"
            "  - id: two\r\n"
            "    gold:\r\n"
            "      sqlite:\r\n"
            "        - SELECT 1\r\n"
            "        - SELECT 2  # either\r\n")
    path.write_bytes(text.encode())
    done = write_transpiled([record(path, 2, source=SQL + "\n"),
                             record(path, 8, "two", source=["SELECT 1", "SELECT 2"],
                                    gold=["SELECT 1", "SELECT 2"])])
    assert [i["id"] for i in done["written"]] == ["rock", "two"]
    assert path.read_bytes().decode() == text.replace(
        "\r\n    # the next", f"\r\n      duckdb: {DUCK}\r\n    # the next").replace(
        "# either\r\n", '# either\r\n      duckdb: ["SELECT 1", "SELECT 2"]\r\n')


def test_an_anchor_an_inherited_gold_and_a_mismatch_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "test_b.yaml"
    text = ("gold: {sqlite: SELECT 9}\n"
            "cases:\n"
            "  - id: rock\n"
            f"    gold: &g {{sqlite: '{SQL}'}}\n"
            "  - id: same\n"
            "    gold: *g\n"
            "  - id: inherited\n"
            "    question: q\n"
            "  - id: like\n"
            "    gold: {sqlite: SELECT 1}\n")
    path.write_text(text)
    done = write_transpiled([record(path, 3), record(path, 7, "inherited", source="SELECT 9"),
                             record(path, 9, "like", checked="mismatch", source="SELECT 1")])
    assert done["written"] == []
    assert {i["id"]: i["reason"] for i in done["not_written"]} == {
        "rock": "the edit would change more than this entry (an anchor or an unusual layout): "
                "write it by hand",
        "inherited": "its gold: mapping is not written in the case's own entry",
        "like": "its result differs from the sqlite gold's (transpile-mismatch)"}
    assert path.read_text() == text


def test_two_sources_of_a_dialect_must_both_match(tmp_path: Path) -> None:
    path = tmp_path / "test_c.yaml"
    text = f"cases:\n  - id: rock\n    gold:\n      sqlite: {SQL}\n"
    path.write_text(text)
    second = record(path, 2, checked="mismatch")
    second["id"] = "rock[duck2]"
    done = write_transpiled([record(path, 2), second])
    assert done["written"] == []
    assert done["not_written"][0]["items"] == ["rock[duck2]", "rock[duck]"]
    assert path.read_text() == text
