"""PostgreSQL's names cut to the 63 bytes the server keeps (issue 58, the fifty-eighth
re-probe's T1, T2)."""

from __future__ import annotations

from pytest_queryeval.sources.pgnames import clipped, clipped_parts


def test_a_name_past_63_bytes_is_cut_at_a_characters_boundary() -> None:
    assert clipped("x" * 70) == "x" * 63
    assert clipped("x" * 63) == "x" * 63
    # 62 ASCII bytes and a 2-byte letter: the letter does not fit whole, and is left out
    assert clipped("x" * 62 + "é" + "y") == "x" * 62
    assert clipped_parts("sales." + "o" * 70) == "sales." + "o" * 63
