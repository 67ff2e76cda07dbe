"""Issue 58, the fifty-ninth re-probe of the agents' walls on PostgreSQL (main dfe840b2).

The names the server keeps were read after Python's lower case, which changes the length of
some letters (the Kelvin sign 3 bytes to 1, ``İ`` 2 to 3, a final ``Σ``): U1, a routine
called by a spelling two bytes too long was cut where the server does not cut it, and never
reached, and U2 the same of a forbidden table and the routines that turned parallel query on
and off around its read. U3: a name with ``·``, which PostgreSQL takes in an unquoted name and
Python's ``\\w`` does not; U4: ``sales.éorders`` was read as ``orders`` (a name began with an
ASCII letter); U5: one overload's ``SET search_path`` clause took the inherited path from the
other, clause-less one. Each case passed with ``forbidden_tables`` 0, the secret returned.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.agents.test_pg_walls_fiftieth import _NO_SIGNALS
from tests.agents.test_pg_walls_fiftyeighth import (
    _OFF,
    _ON,
    _QUERY,
    _routine,
    _setup,
    assert_read_is_counted,
)
from tests.agents.test_pg_walls_fortysixth import _source
from tests.agents.test_pg_walls_fortythird import _database

pytestmark = pytest.mark.postgres

_KELVIN = "\u212a" + "x" * 60  # 63 bytes; lower-cased by Python, 61
_IDOT = "\u0130" + "x" * 61  # 63 bytes; lower-cased by Python, 64
_SIGMA = "x" * 61 + "\u03a3"  # 63 bytes; a final sigma lower-cases apart
_DOT = "hid\u00b7" + "x" * 58  # 63 bytes, a middle dot
_READ = "RETURN QUERY EXECUTE 'SELECT secret FROM sa' || 'les.orders'; "


def _forms(role: str) -> dict[str, tuple[str, list[str]]]:
    """(the forbidden table, the setup) of U1 to U3."""
    hidden = {name: f'"{name}"' for name in (_KELVIN, _IDOT, _SIGMA)} | {_DOT: _DOT}
    forms = {f"u1-{label}": (name, called) for label, name, called in (
        ("kelvin", _KELVIN, f'"{_KELVIN}yy"'), ("dotted-i", _IDOT, f'"{_IDOT}yy"'),
        ("sigma", _SIGMA, f'"{_SIGMA}yy"'), ("middle-dot", _DOT, f"{_DOT}yyyyyyy"))}
    out = {form: ("sales.orders", _setup(role, "orders", [
        f"CREATE FUNCTION public.{hidden[name]}() RETURNS SETOF text LANGUAGE plpgsql "
        f"VOLATILE AS $f$BEGIN {_ON}{_READ}{_OFF} END$f$"], f"public.{called}()"))
        for form, (name, called) in forms.items()}
    table, on, off = f"{_KELVIN[:-7]}orders_", "\u212a" + "b_" + "x" * 58, \
        "\u212a" + "c_" + "x" * 58
    switches = [f'CREATE FUNCTION public."{name}"() RETURNS void LANGUAGE plpgsql VOLATILE AS '
                f"$f$BEGIN {body} END$f$" for name, body in ((on, _ON), (off, _OFF))]
    out["u2-kelvin-table"] = (f"sales.{table}", [s for s in _setup(
        role, f'"{table}"', [*switches, _routine(
            "rd", f'PERFORM public."{on}yy"(); RETURN QUERY SELECT o.secret FROM '
                  f'sales."{table}yy" o; PERFORM public."{off}yy"();')], "public.rd()")
        if s not in _NO_SIGNALS])
    return out


@pytest.mark.parametrize("form", ["u1-kelvin", "u1-dotted-i", "u1-sigma", "u1-middle-dot",
                                  "u2-kelvin-table"])
def test_a_name_the_server_cuts_before_lower_case_is_read(
        pytester: pytest.Pytester, postgres_server: Any, form: str) -> None:
    """U1 to U3 end to end. Before: the replayed call and the final query passed with
    forbidden_tables 0.0 while the secret reached the agent."""
    assert_read_is_counted(pytester, postgres_server,
                           *_forms(postgres_server.readonly_user)[form])


def test_a_non_ascii_name_and_an_overloads_clause_are_read(postgres_server: Any) -> None:
    """U4: ``FROM sales.éorders`` in a body; U5: ``f(text)``, with no clause, under its
    caller's path while its overload ``f(int)`` has one. Before: neither table was read."""
    from pytest_queryeval.agents.views import with_views

    role = postgres_server.readonly_user
    setup = [*_setup(role, "orders", [
        "CREATE TABLE public.orders (id int, secret text)",
        "CREATE TABLE sales.éorders (id int, secret text)",
        "CREATE FUNCTION public.f(int) RETURNS SETOF text LANGUAGE sql STABLE "
        "SET search_path = public AS $f$SELECT NULL::text$f$",
        _routine("f", "RETURN QUERY SELECT o.secret FROM orders o;").replace(
            "f()", "f(a text)"),
        _routine("rl", "RETURN QUERY SELECT o.secret FROM sales.éorders o;")],
        "public.f('x'::text)", "SET search_path = sales, public")]
    with _database(postgres_server, "q59_s_" + uuid.uuid4().hex[:6], *setup) as name:
        source = _source(postgres_server, name)
        try:
            assert "sales.orders" in with_views(source, {"t58"}, _QUERY)
            assert "sales.éorders" in with_views(source, set(), "SELECT * FROM rl()")
        finally:
            source.close()
