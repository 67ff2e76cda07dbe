"""Issue 58 items 1 and 2: the walls of ``type: ladybug``. The host's files stay out of every
report (the guard's ``WITH *`` blind spot, ``WITH DISTINCT *``, a glob, a changed
``file_search_path`` and a relative path, through an agent's ``run_query`` too), a setting a
query changes never reaches the next case, and what the engine cannot survive (a deep literal,
a huge value) is a located error of its case, in a worker, while the session goes on.

Each form is run on the real engine, on main it ran (the passwd file's lines in the result) or
took the pytest process down."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.conclude.cli import main as queryeval
from pytest_queryeval.cypher.source import LadybugSource
from pytest_queryeval.errors import QueryFailed, QueryRefused, QueryTimeout
from tests.support import run_report, write_suite

pytest.importorskip("ladybug")


def _walls() -> tuple[Any, Any]:
    """The worker's module and the Landlock layer (imported where a test reaches past the
    guard; the other tests run as they are on main, where they fail)."""
    from pytest_queryeval._isolation import landlock
    from pytest_queryeval.cypher import worker

    return worker, landlock

GRAPH = Path(__file__).resolve().parents[2] / "example_suite" / "data" / "movies.cypher"
PASSWD = "(file_format='csv', header=false, delim=':')"
#: Each way a text reached the host's files on main (ladybug read /etc/passwd for all).
HOSTILE = {
    "with-star": f"MATCH (n:Person) WITH * LOAD FROM '/etc/passwd' {PASSWD} RETURN *",
    "with-distinct-star": f"MATCH (n:Person) WITH DISTINCT * LOAD FROM '/etc/passwd' {PASSWD} "
                          "RETURN *",
    "glob": f"MATCH (n:Person) WITH * LOAD FROM '/etc/pass*d' {PASSWD} RETURN *",
    "search-path": "CALL `file_search_path`='/etc'",
    "relative": f"MATCH (n:Person) WITH * LOAD FROM 'passwd' {PASSWD} RETURN *",
}
#: What the passwd file holds and nothing of the plugin writes.
LEAKS = ("nologin", "/bin/bash", "root:x:0", "'daemon'")
#: A gold that reads a path 3 hops long: ``var_length_extend_max_depth=2`` broke it on main.
DEEP_PATH = ("MATCH (a:Person {name: 'Keanu Reeves'})-[*3..3]-(b:Person) "
             "RETURN count(DISTINCT b.name) AS n")


def _deep(depth: int) -> str:
    return "RETURN " + "[" * depth + "1" + "]" * depth


@pytest.fixture(scope="module")
def graph():
    src = LadybugSource.from_spec("movies", {"type": "ladybug", "path": str(GRAPH)})
    yield src
    src.close()


def _leaked(text: str) -> list[str]:
    return [leak for leak in LEAKS if leak in text]


@pytest.mark.parametrize("form", list(HOSTILE))
def test_no_form_reads_the_hosts_files(graph, form):
    """Refused or failed, never a row of /etc/passwd (on main the first three returned its
    lines; the last two set the search path, then read it by its bare name)."""
    for query in (HOSTILE["search-path"], HOSTILE[form]) if form == "relative" \
            else (HOSTILE[form],):
        with pytest.raises((QueryRefused, QueryFailed)) as caught:
            graph.execute(query)
        assert not _leaked(str(caught.value))
    assert graph.execute("MATCH (n) RETURN count(n)").rows == [(13,)]


@pytest.mark.parametrize("checked", [True, False], ids=["planned", "unplanned"])
def test_the_engine_layers_hold_without_the_guard(graph, checked):
    """The lexical guard passed over: the worker still reads no file (its plan check, then
    the kernel: Landlock), whatever the text."""
    worker, landlock = _walls()
    if not checked and not landlock.abi():
        pytest.skip("no Landlock on this kernel: the plan check is the engine's only layer")
    box = graph._worker()
    for query in (HOSTILE["with-star"], HOSTILE["glob"], HOSTILE["with-distinct-star"]):
        reply = box.call(worker.run, query, 5000, 100, checked, timeout=10)
        assert reply[0] in ("refused", "error") and not _leaked(repr(reply)), reply
    assert graph.confinement.startswith("landlock") or not landlock.abi()


def test_the_plan_refuses_settings_and_files_before_they_run(graph):
    """Backquoted names (the guard's blind spot on main) are settings by the engine's own
    plan; ``COPY ... TO``, which a read-only ladybug runs, too. ``EXPORT DATABASE`` creates
    its folder while it is planned: the kernel refuses that (Landlock)."""
    worker, landlock = _walls()
    box = graph._worker()
    for query, says in [("CALL `var_length_extend_max_depth`=2", "var_length_extend_max_depth"),
                        ("CALL `file_search_path`='/etc'", "file_search_path"),
                        ("COPY (MATCH (n) RETURN n.name) TO 'out.csv'", "COPY_TO")]:
        reply = box.call(worker.run, query, 5000, 100, True, timeout=10)
        assert reply[0] == "refused" and says in reply[1], reply
    if landlock.abi():
        with pytest.raises(QueryRefused, match="opens a file"):
            _unguarded(graph, "EXPORT DATABASE 'dump'")


def test_the_connections_settings_are_not_read(graph):
    """The seventh re-probe: ``current_setting('file_search_path')`` gave the host's
    temporary path of the built graph to the report."""
    with pytest.raises(QueryRefused, match=r"current_setting\(\) at line 1, column 6 reads "):
        graph.execute("CALL current_setting('file_search_path') RETURN *")
    assert graph.execute("MATCH (m:Movie) RETURN count(m)").rows == [(5,)]


def _unguarded(graph: LadybugSource, query: str) -> None:
    """``query`` through the worker as :meth:`LadybugSource.execute` words its reply, the
    lexical guard passed over."""
    worker, _ = _walls()
    from pytest_queryeval.cypher.source import _table

    _table(graph._worker().call(worker.run, query, 5000, 100, True, timeout=10), query, 5)


def test_a_setting_never_reaches_the_next_query(graph):
    """On main ``CALL `var_length_extend_max_depth`=2`` ran on the shared connection and a
    later gold reading 3 hops failed. Refused now; and were it run (plan check skipped), the
    next query has a fresh connection."""
    expected = graph.execute(DEEP_PATH, trusted=True).rows
    with pytest.raises(QueryRefused, match="var_length_extend_max_depth"):
        graph.execute("CALL `var_length_extend_max_depth`=2")
    worker, _ = _walls()
    box = graph._worker()
    assert box.call(worker.run, "CALL `var_length_extend_max_depth`=2", 5000, 10, False,
                    timeout=10)[0] == "ok"
    assert graph.execute(DEEP_PATH, trusted=True).rows == expected


def test_an_agents_run_query_goes_through_the_same_worker(graph):
    from pytest_queryeval.agents.ledger import Ledger

    ledger = Ledger()
    with pytest.raises((QueryRefused, QueryFailed)) as caught:
        ledger.run_query(graph, HOSTILE["with-star"], max_rows=50)
    assert not _leaked(str(caught.value)) and ledger.rows_read == 0
    assert ledger.run_query(graph, "MATCH (n) RETURN count(n)", max_rows=5).rows == [(13,)]


def test_parsing_is_inside_the_timeout(graph):
    """A 250-deep list took 10.5 s against a 5 s timeout on main (parsing came first)."""
    start = time.monotonic()
    with pytest.raises(QueryTimeout, match="ran over 1 s"):
        graph.execute(_deep(250), timeout=1)
    assert time.monotonic() - start < 6  # parsing alone took 10 s on main
    assert graph.execute("MATCH (n) RETURN count(n)").rows == [(13,)]


def test_a_crash_of_the_engine_is_the_querys_error(graph):
    """A 1,000-deep list crashed the session on main (exit 139, no report)."""
    with pytest.raises((QueryFailed, QueryTimeout)) as caught:
        graph.execute(_deep(1000), timeout=60)
    assert isinstance(caught.value, QueryTimeout) or "SIGSEGV" in str(caught.value)
    assert graph.execute("MATCH (n) RETURN count(n)").rows == [(13,)]


def test_a_huge_value_is_stopped_at_the_memory_bound(tmp_path):
    """``size(range(1, 2000000000))`` grew the process past 2.5 GB on main."""
    src = LadybugSource.from_spec("m", {"type": "ladybug", "path": str(GRAPH),
                                        "max_memory": 64 * 1024 * 1024, "timeout": 60})
    try:
        start = time.monotonic()
        with pytest.raises(QueryFailed, match="out of memory"):
            src.execute("RETURN size(range(1, 2000000000))")
        assert time.monotonic() - start < 30
        assert src.execute("MATCH (n) RETURN count(n)").rows == [(13,)]
    finally:
        src.close()


def _hostile_suite(root: Path) -> None:
    (root / "movies.cypher").write_text(GRAPH.read_text(encoding="utf-8"), encoding="utf-8")
    gold = "MATCH (n:Person) RETURN n.name"
    cases = [{"id": f"leak-{form}", "gold": gold, "predicted": text}
             for form, text in HOSTILE.items()]
    cases += [
        {"id": "deep-250", "gold": gold, "predicted": _deep(250), "timeout": 1},
        {"id": "deep-1000", "gold": gold, "predicted": _deep(1000), "timeout": 60},
        {"id": "huge-range", "gold": gold, "predicted": "RETURN size(range(1, 2000000000))"},
        {"id": "setting", "gold": gold, "predicted": "CALL `var_length_extend_max_depth`=2"},
        {"id": "after", "gold": DEEP_PATH, "predicted": DEEP_PATH},
    ]
    write_suite(root, {"datasources": {"movies": {
        "type": "ladybug", "path": "movies.cypher", "max_memory": 64 * 1024 * 1024,
        "timeout": 60}}},
        {"test_walls.yaml": {"kind": "cypher", "datasource": "movies", "cases": cases}})


def test_a_hostile_suite_runs_to_its_reports_with_nothing_of_the_host(pytester, tmp_path):
    """A real session (a subprocess: on main it died at the deep literal): every hostile case
    fails with its own reason, the last case passes, the session ends normally, and neither
    the terminal nor the JSON, JUnit, HTML reports or the ``queryeval view`` page hold a line
    of /etc/passwd."""
    _hostile_suite(pytester.path)
    result, report = run_report(pytester, "--junitxml=j.xml", "--queryeval-html=r.html",
                                subprocess=True)
    assert result.ret == 1  # cases failed; not 139, not an internal error
    outcomes = report.outcomes
    assert outcomes.pop("after") == "passed"
    assert set(outcomes.values()) == {"failed"}, outcomes
    by_id = report.by_id
    assert "ran over 1 s" in by_id["deep-250"]["reason"]
    assert "out of memory" in by_id["huge-range"]["reason"]
    assert by_id["setting"]["reason"].startswith("refused")
    deep = by_id["deep-1000"]["reason"]  # whichever bound the parser meets first
    assert any(bound in deep for bound in ("SIGSEGV", "ran over", "out of memory")), deep
    page = tmp_path / "view.html"
    assert queryeval(["view", str(pytester.path / "r.json"), "-o", str(page)]) == 0
    texts = {"terminal": result.stdout.str() + result.stderr.str(),
             "json": (pytester.path / "r.json").read_text(encoding="utf-8"),
             "junit": (pytester.path / "j.xml").read_text(encoding="utf-8"),
             "html": (pytester.path / "r.html").read_text(encoding="utf-8"),
             "view": page.read_text(encoding="utf-8")}
    assert {name: _leaked(text) for name, text in texts.items() if _leaked(text)} == {}
    assert "leak-with-star" in texts["junit"] and "leak-glob" in texts["html"]


def test_the_plan_alone_refuses_every_form(tmp_path):
    """Where the kernel has no Landlock, the engine's plan is the layer under the guard: each
    hostile form is refused from its plan, in a process that could read the file."""
    import ladybug

    from pytest_queryeval.cypher.source import script_statements

    worker, _ = _walls()
    path = str(tmp_path / "g.lbug")
    db = ladybug.Database(path)
    conn = ladybug.Connection(db)
    for statement in script_statements(GRAPH.read_text(encoding="utf-8")):
        conn.execute(statement)
    conn.close()
    db.close()
    db = ladybug.Database(path, read_only=True, max_num_threads=1)
    try:
        for form, query in HOSTILE.items():
            conn = ladybug.Connection(db)
            if form == "relative":  # the bare name is no file here: not even planned
                with pytest.raises(RuntimeError, match="No file found"):
                    worker.plan_refusal(conn, query)
                conn.close()
                continue
            refusal = worker.plan_refusal(conn, query)
            conn.close()
            assert refusal is not None and not _leaked(refusal), (form, refusal)
            assert ("setting" if form == "search-path" else "reads a file") in refusal
        conn = ladybug.Connection(db)
        assert worker.plan_refusal(conn, DEEP_PATH) is None
        assert worker.plan_refusal(conn, "CALL show_tables() RETURN name") is None
        conn.close()
    finally:
        db.close()


def test_an_agents_tool_loop_on_the_graph_reads_no_host_file(pytester, agent_standin):
    """The ``openai`` source's tool loop (scripted stand-in server, the real client): its
    ``run_query`` of the hostile forms reaches the same worker, and nothing of /etc/passwd
    reaches the trajectory, the report or the terminal."""
    pytest.importorskip("openai")
    question = "Who acted in The Matrix?"
    gold = "MATCH (p:Person)-[:ACTED_IN]->(:Movie {title: 'The Matrix'}) RETURN p.name"
    agent_standin.script = {question: [
        {"content": None, "tool_calls": [{"name": "run_query", "arguments": {"query": text}}]}
        for text in (HOSTILE["with-star"], HOSTILE["search-path"], HOSTILE["relative"])
    ] + [{"content": f"```cypher\n{gold}\n```"}]}
    (pytester.path / "movies.cypher").write_text(GRAPH.read_text(encoding="utf-8"),
                                                 encoding="utf-8")
    write_suite(pytester.path, {
        "datasources": {"movies": {"type": "ladybug", "path": "movies.cypher"}},
        "predictions": {"source": "openai", "model": "scripted-agent",
                        "base_url": agent_standin.base_url, "api_key": "none", "retries": 0,
                        "timeout": 30, "agent": {}}},
        {"test_q.yaml": {"kind": "cypher", "datasource": "movies",
                         "cases": [{"id": "matrix", "question": question, "gold": gold}]}})
    result, report = run_report(pytester, "-p", "no:cacheprovider")
    assert report.outcomes == {"matrix": "passed"}
    agent = report.by_id["matrix"]["details"]["prediction"]["agent"]
    tools = [m["content"] for m in agent["trajectory"] if m["role"] == "tool"]
    assert len(tools) == 3 and all(t.startswith("error:") for t in tools), tools
    text = (pytester.path / "r.json").read_text(encoding="utf-8") + result.stdout.str()
    assert not _leaked(text)
