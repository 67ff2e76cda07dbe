"""PostgreSQL's names cut to the 63 bytes the server keeps (issue 58, the fifty-eighth
re-probe's T1, T2)."""

from __future__ import annotations

from pytest_queryeval.sources.pgnames import clipped, clipped_parts, keys_of


def test_a_name_past_63_bytes_is_cut_at_a_characters_boundary() -> None:
    assert clipped("x" * 70) == "x" * 63
    assert clipped("x" * 63) == "x" * 63
    # 62 ASCII bytes and a 2-byte letter: the letter does not fit whole, and is left out
    assert clipped("x" * 62 + "é" + "y") == "x" * 62
    assert clipped_parts("sales." + "o" * 70) == "sales." + "o" * 63


def test_a_name_is_cut_on_its_bytes_as_written_before_lower_case() -> None:
    """Python's lower case makes the Kelvin sign one byte (59a U1): cut first, the 63 bytes
    the server keeps of a 65-byte spelling are the catalog's name, lower-cased."""
    name = "\u212a" + "x" * 60
    assert len(name.encode()) == 63
    assert name.lower() in keys_of(name + "yy")
    assert ("\u0130" + "x" * 61).lower() in keys_of("\u0130" + "x" * 63)
