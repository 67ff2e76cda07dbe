"""Issue 58, the sixtieth re-probe of the agents' walls on PostgreSQL (main e6dc587b).

A quoted name was cut to 63 bytes only where it was one word: W1, ``"hid x...yyyyyyy"()``
(a blank in it) called from a SQL body, W2, ``"hid.x...yyyyyyy"()`` (a dot: cut apart at
it), and W3, such a call inside ``ARRAY[...]`` (read as a bracket-quoted name), each ran a
routine no reading reached, which turned parallel query on around its read; W4, ``FROM
sales.orders`` after a string ``'--'`` in a PL/pgSQL body (read as a comment). Each case
passed with ``forbidden_tables`` 0, the secret returned. A quoted name is now also read
whole, cut as the server cuts it, and a body's qualified names also as written.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.agents.test_pg_walls_fiftieth import _NO_SIGNALS
from tests.agents.test_pg_walls_fiftyeighth import (
    _OFF,
    _ON,
    _routine,
    _setup,
    assert_read_is_counted,
)

pytestmark = pytest.mark.postgres

_BLANK = "hid x" + "x" * 58  # 63 bytes
_DOT = "hid.x" + "x" * 58
_READ = "RETURN QUERY EXECUTE 'SELECT secret FROM sa' || 'les.orders'; "


def _hidden(name: str) -> str:
    return (f'CREATE FUNCTION public."{name}"() RETURNS SETOF text LANGUAGE plpgsql VOLATILE '
            f"AS $f$BEGIN {_ON}{_READ}{_OFF} END$f$")


def _forms(role: str) -> dict[str, list[str]]:
    sql_body = [s if not s.startswith("CREATE FUNCTION l_sf") else (
        "CREATE FUNCTION l_sf(text, text) RETURNS text LANGUAGE sql VOLATILE AS $f$SELECT "
        "coalesce($1, '') || $2 || coalesce(CASE WHEN session_user = '" + role + "' THEN "
        f"(SELECT string_agg(s, ',') FROM public.\"{_BLANK}yyyyyyy\"() s) END, '')$f$")
        for s in _setup(role, "orders", [_hidden(_BLANK)], "public.t58")]
    switches = [_routine(f'"hid.b{"x" * 58}"', _ON, "void"),
                _routine(f'"hid.c{"x" * 58}"', _OFF, "void")]
    return {
        "w1-blank-from-a-sql-body": sql_body,
        "w2-dot": _setup(role, "orders", [_hidden(_DOT)], f'public."{_DOT}yyyyyyy"()'),
        "w3-in-an-array": _setup(role, "orders", [_hidden(_BLANK)],
                                 f'(SELECT unnest(ARRAY[(SELECT string_agg(s, \',\') FROM '
                                 f'"{_BLANK}yyyyyyy"() s)]))'),
        "w4-after-a-dashes-string": [s for s in _setup(role, "orders", [*switches, _routine(
            "rd", f'PERFORM public."hid.b{"x" * 58}yyyyyyy"(); RETURN QUERY SELECT '
                  f"o.secret || '--' FROM sales.orders o; "
                  f'PERFORM public."hid.c{"x" * 58}yyyyyyy"();')], "public.rd()")
            if s not in _NO_SIGNALS],
    }


@pytest.mark.parametrize("form", ["w1-blank-from-a-sql-body", "w2-dot", "w3-in-an-array",
                                  "w4-after-a-dashes-string"])
def test_a_quoted_name_cut_whole_and_a_string_of_dashes_are_read(
        pytester: pytest.Pytester, postgres_server: Any, form: str) -> None:
    """W1 to W4 end to end. Before: both cases passed with forbidden_tables 0.0."""
    assert_read_is_counted(pytester, postgres_server, "sales.orders",
                           _forms(postgres_server.readonly_user)[form])
