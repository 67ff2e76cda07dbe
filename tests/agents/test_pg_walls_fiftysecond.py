"""Issue 58, the fifty-second re-probe (L1, U1), under the docs' full least privilege: a body
pglast's parser does not take was read on its words, and ``EXCEPTION /* c */ WHEN OTHERS``
(or a line comment between them) was no handler; ``u&`` anywhere in a body, a comment too,
stopped the reading before the parse, and its handler went unseen. A caught ``DELETE`` in an
aggregate's state function passed with write_attempts 0. Failed before (on ea2fe8b1).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.agents.test_pg_walls_fiftieth import _NO_SIGNALS, _state_function
from tests.agents.test_pg_walls_fortyeighth import assert_uncounted
from tests.agents.test_pg_walls_fortythird import _database

pytest.importorskip("pglast")

_ROW = "DECLARE r public.t52%ROWTYPE; BEGIN r.b := 'z'; "
_BODIES = {
    "block-comment": _ROW + "IF current_user = '{role}' THEN BEGIN DELETE FROM public.t52; "
                     "EXCEPTION /* c */ WHEN OTHERS THEN NULL; END; END IF; RETURN $2; END",
    "line-comment": _ROW + "IF current_user = '{role}' THEN BEGIN DELETE FROM public.t52; "
                    "EXCEPTION -- c\n WHEN OTHERS THEN NULL; END; END IF; RETURN $2; END",
    "u-and-comment": "BEGIN -- u&\n IF current_user = '{role}' THEN BEGIN DELETE FROM "
                     "public.t52; EXCEPTION WHEN OTHERS THEN NULL; END; END IF; RETURN $2; END",
}


@pytest.mark.parametrize("form", list(_BODIES))
def test_a_handler_behind_a_comment_is_read(form: str) -> None:
    from pytest_queryeval.sources.pgbodies import read_body

    read = read_body("plpgsql", _BODIES[form].format(role="ro"))
    assert read.catches and read.writes, read


@pytest.mark.postgres
def test_a_write_caught_behind_a_comment_is_no_count_of_0(
        pytester: pytest.Pytester, postgres_server: Any) -> None:
    role = postgres_server.readonly_user
    setup = [*_NO_SIGNALS, "CREATE TABLE public.t52 (b text)",
             "INSERT INTO public.t52 VALUES ('x'), ('y')", f"GRANT SELECT ON public.t52 TO {role}"]
    for form, body in _BODIES.items():
        setup += _state_function(form.replace("-", "_"), "plpgsql", body.format(role=role))
    with _database(postgres_server, "q52_l_" + uuid.uuid4().hex[:6], *setup) as name:
        assert_uncounted(pytester, postgres_server, name, {
            form: f"SELECT {form.replace('-', '_')}_agg(b) AS n FROM public.t52"
            for form in _BODIES})
