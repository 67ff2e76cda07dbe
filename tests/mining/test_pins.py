"""Pinned data (issue 63 item 2): each mined case records a checksum of the tables its gold
reads; a replay on changed data reports the case ``drifted`` with the tables that changed
(skipped, never a silent pass or fail) in the terminal summary, the JSON, junit and Markdown
reports; ``queryeval mine --refresh`` re-pins after a reviewed change and rewrites nothing
but the pin; a hostile pin is a located error. On real SQLite, DuckDB and PostgreSQL files and
servers, and an RDF file."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest
import yaml

from pytest_queryeval.conclude.cli import main as queryeval
from tests.mining.spans import otlp, trace_spans
from tests.support import dump, run_report

ROOT = Path(__file__).resolve().parents[2]
CHINOOK = ROOT / "example_suite" / "data" / "chinook.sqlite"
TOP_GENRE = ("SELECT g.Name FROM Track t JOIN Genre g ON g.GenreId = t.GenreId "
             "GROUP BY g.GenreId ORDER BY count(*) DESC LIMIT 1")
ARTISTS = "SELECT count(*) FROM Artist"
SUM = re.compile(r"rows:\d+:[0-9a-f]{32}")


def _mine(tmp: Path, db: Path, config: dict, *extra: str, artists: str = ARTISTS) -> Path:
    spans = trace_spans("a000000000000000", "Which genre has the most tracks?",
                        [("run_query", {"query": TOP_GENRE})], "Rock.", db)
    spans += trace_spans("b000000000000000", "How many artists are there?",
                         [("run_query", {"query": artists})], "275.", db)
    spans += trace_spans("c000000000000000", "What is the average salary?",
                         [("run_query", {"query": "SELECT avg(Salary) FROM Employee"})],
                         "I cannot say.", db)
    (tmp / "spans.json").write_text(json.dumps(otlp(spans)), encoding="utf-8")
    suite = tmp / "suite"
    suite.mkdir()
    (suite / "queryeval.yaml").write_text(dump(config), encoding="utf-8")
    (suite / "tox.ini").write_text("[pytest]\nqueryeval_files = test_*.yaml\n")
    assert queryeval(["mine", str(tmp / "spans.json"), "--datasource", "music",
                      "--out", str(suite), *extra]) == 0
    return suite


def _answers(suite: Path) -> None:
    """The model answers as production did: each mined gold again."""
    cases = yaml.safe_load((suite / "test_mined.yaml").read_text())["cases"]
    lines = [{"id": c["id"], "predicted": c.get("gold", {"abstain": True})}
             for c in cases]
    (suite / "p.jsonl").write_text("".join(json.dumps(a) + "\n" for a in lines))


@pytest.fixture
def sqlite_suite(tmp_path: Path, capsys) -> tuple[Path, Path, str]:
    db = tmp_path / "suite-data.sqlite"
    shutil.copy(CHINOOK, db)
    suite = _mine(tmp_path, db, {
        "datasources": {"music": {"type": "sqlite", "path": str(db)}},
        "predictions": {"source": "file", "path": "p.jsonl"}})
    _answers(suite)
    return suite, db, capsys.readouterr().out


def test_each_mined_case_is_pinned_to_the_tables_its_gold_reads(sqlite_suite) -> None:
    suite, _db, printed = sqlite_suite
    cases = {c["id"]: c for c in yaml.safe_load((suite / "test_mined.yaml").read_text())[
        "cases"]}
    top, artists = cases["mined-a000000000000000"], cases["mined-b000000000000000"]
    assert sorted(top["pin"]["tables"]) == ["Genre", "Track"]
    assert list(artists["pin"]["tables"]) == ["Artist"]
    assert all(SUM.fullmatch(v) for v in top["pin"]["tables"].values())
    assert artists["pin"]["tables"]["Artist"].startswith("rows:275:")
    # an abstention candidate reads nothing: no pin
    assert "pin" not in cases["mined-c000000000000000"]
    # the pin is one line, which --refresh rewrites in place
    text = (suite / "test_mined.yaml").read_text()
    assert re.search(r"^  pin: \{tables: \{Genre: 'rows:25:[0-9a-f]{32}', Track: ", text, re.M)
    assert "pins: 2 cases pinned to datasource 'music'" in printed
    assert "3 tables: Artist, Genre, Track" in printed


def _run(pytester: pytest.Pytester, suite: Path, *args: str):
    for path in suite.iterdir():
        if path.is_file():
            shutil.copy(path, pytester.path / path.name)
    return run_report(pytester, "-p", "no:cacheprovider", "--junitxml=j.xml",
                      "--queryeval-markdown=r.md", *args)


def test_a_replay_on_changed_data_is_drifted_and_refresh_repins_only_the_pin(
        sqlite_suite, pytester: pytest.Pytester, capsys) -> None:
    suite, db, _ = sqlite_suite
    result, report = _run(pytester, suite)
    assert {c["id"]: c["outcome"] for c in report["cases"]} == {
        "mined-a000000000000000": "passed", "mined-b000000000000000": "passed",
        "mined-c000000000000000": "passed"}
    assert not any(c.get("drifted") for c in report["cases"])
    # the data moves: a genre renamed
    con = sqlite3.connect(db)
    con.execute("UPDATE Genre SET Name = 'Rock & Roll' WHERE Name = 'Rock'")
    con.commit()
    con.close()
    result, report = _run(pytester, suite)
    by_id = report.by_id
    drifted = by_id["mined-a000000000000000"]
    assert drifted["outcome"] == "skipped" and drifted["drifted"] == ["Genre"]
    assert drifted["reason"].startswith("drifted: the pinned data changed: Genre")
    assert by_id["mined-b000000000000000"]["outcome"] == "passed"  # Artist did not move
    result.stdout.fnmatch_lines(["drifted: 1 case skipped, the data pinned for them changed*"
                                 "mined-a000000000000000 (Genre)"])
    junit = (pytester.path / "j.xml").read_text()
    assert 'message="drifted: the pinned data changed: Genre' in junit \
        or "drifted: the pinned data changed: Genre" in junit
    assert "drifted: 1 case skipped" in (pytester.path / "r.md").read_text()
    # a person reviews the change and re-pins: only the pin line changes
    before = (suite / "test_mined.yaml").read_text().splitlines()
    capsys.readouterr()
    assert queryeval(["mine", "--refresh", str(suite)]) == 0
    said = capsys.readouterr().out
    assert "1 re-pinned, 1 unchanged" in said and "mined-a000000000000000: Genre" in said
    after = (suite / "test_mined.yaml").read_text().splitlines()
    differing = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert len(differing) == 1 and differing[0][0].lstrip().startswith("pin: {tables: {Genre")
    result, report = _run(pytester, suite)
    assert report.by_id["mined-a000000000000000"]["outcome"] == "passed"
    assert not any(c.get("drifted") for c in report["cases"])


def test_a_deleted_table_is_drifted_with_why(sqlite_suite, pytester: pytest.Pytester) -> None:
    suite, db, _ = sqlite_suite
    con = sqlite3.connect(db)
    con.execute("DELETE FROM Artist WHERE ArtistId > 270")
    con.commit()
    con.close()
    _, report = _run(pytester, suite)
    assert report.by_id["mined-b000000000000000"]["drifted"] == ["Artist"]
    assert report.by_id["mined-a000000000000000"]["outcome"] == "passed"


def test_unpinned_runs_are_unchanged(sqlite_suite, pytester: pytest.Pytester) -> None:
    """A case file without pin: runs as before: nothing is checksummed, nothing drifts."""
    suite, db, _ = sqlite_suite
    text = (suite / "test_mined.yaml").read_text()
    (suite / "test_mined.yaml").write_text(re.sub(r"^  pin: .*\n", "", text, flags=re.M))
    con = sqlite3.connect(db)
    con.execute("UPDATE Genre SET Name = 'Rock & Roll' WHERE Name = 'Rock'")
    con.commit()
    con.close()
    result, report = _run(pytester, suite)
    # the gold replays on the moved data: a pass that says nothing of the model
    assert report.by_id["mined-a000000000000000"]["outcome"] == "passed"
    assert "drifted" not in result.stdout.str()


@pytest.mark.parametrize(("pin", "said"), [
    ("[1, 2]", "pin: must be a mapping"),
    ("{tables: {Genre: 12}}", "pin.tables.Genre: must be rows:<count>:<32 hex digits>, not 12"),
    ("{tables: {'Genre; DROP TABLE x': 'rows:1:" + "0" * 32 + "'}}",
     "pin.tables.'Genre; DROP TABLE x': not a table name"),
    ("{tables: {Genre: 'rows:1:" + "a" * 5000 + "'}}", "pin.tables.Genre: must be rows:"),
    ("{tables: []}", "pin.tables: must be a mapping of table names"),
    ("{file: sha1:abc}", "pin.file: must be sha256:<64 hex digits>, not 'sha1:abc'"),
    ("{tabels: {}}", "unknown key (pin takes tables: or file:)"),
    ("{}", "pin: is empty"),
])
def test_a_hostile_pin_is_a_located_error(sqlite_suite, pytester: pytest.Pytester, capsys,
                                          pin: str, said: str) -> None:
    suite, _, _ = sqlite_suite
    path = suite / "test_mined.yaml"
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    at = next(n for n, line in enumerate(lines, 1) if line.startswith("  pin: "))
    lines[at - 1] = f"  pin: {pin}\n"
    path.write_text("".join(lines))
    result, report = _run(pytester, suite)
    first = report.by_id["mined-a000000000000000"]
    assert first["outcome"] == "error" and said in first["error"]
    assert f"test_mined.yaml:{at}: cases[0].pin" in first["error"]
    assert report.by_id["mined-b000000000000000"]["outcome"] == "passed"  # the rest runs
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    # --refresh refuses it too, located, and writes nothing
    capsys.readouterr()
    before = path.read_text()
    assert queryeval(["mine", "--refresh", str(suite)]) == 2
    err = capsys.readouterr().err
    assert said in err and f"test_mined.yaml:{at}: cases[0].pin" in err
    assert path.read_text() == before


def test_duckdb_tables_are_pinned_and_drift(tmp_path: Path, pytester: pytest.Pytester,
                                            capsys) -> None:
    import duckdb

    from pytest_queryeval._isolation.sandbox import close_all

    db = tmp_path / "music.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE Artist (ArtistId INTEGER, Name VARCHAR)")
    con.execute("INSERT INTO Artist SELECT i, 'artist ' || i FROM range(275) t(i)")
    con.close()
    chinook = tmp_path / "spans-data.sqlite"
    shutil.copy(CHINOOK, chinook)  # the spans' results: production's engine
    suite = _mine(tmp_path, chinook, {
        "datasources": {"music": {"type": "duckdb", "path": str(db)}},
        "predictions": {"source": "file", "path": "p.jsonl"}})
    cases = {c["id"]: c for c in yaml.safe_load((suite / "test_mined.yaml").read_text())[
        "cases"]}
    assert list(cases["mined-b000000000000000"]["pin"]["tables"]) == ["Artist"]
    # Genre and Track are not in this database: the case is not pinned to them
    assert "pin" not in cases["mined-a000000000000000"]
    _answers(suite)
    _, report = _run(pytester, suite)
    assert report.by_id["mined-b000000000000000"]["outcome"] == "passed"
    close_all()  # the shared worker's read-only connection holds DuckDB's file lock
    con = duckdb.connect(str(db))
    con.execute("INSERT INTO Artist VALUES (999, 'new')")
    con.close()
    _, report = _run(pytester, suite)
    assert report.by_id["mined-b000000000000000"]["drifted"] == ["Artist"]


def test_the_order_rows_come_in_does_not_move_a_pin(tmp_path: Path) -> None:
    from pytest_queryeval.sources import open_source
    from pytest_queryeval.sources.pins import table_sum

    sums = []
    for n, order in enumerate(("ASC", "DESC")):
        db = tmp_path / f"{n}.sqlite"
        con = sqlite3.connect(db)
        con.execute("CREATE TABLE t (a INTEGER, b TEXT)")
        con.executemany("INSERT INTO t VALUES (?, ?)",
                        sorted([(i, str(i)) for i in range(50)], reverse=order == "DESC"))
        con.commit()
        con.close()
        source = open_source("s", {"type": "sqlite", "path": str(db)})
        try:
            sums.append(table_sum(source, "t"))
        finally:
            source.close()
    assert sums[0] == sums[1] and sums[0].startswith("rows:50:")


def test_postgres_tables_are_pinned_as_the_server_spells_them(
        postgres_server, tmp_path: Path, pytester: pytest.Pytester) -> None:
    import secrets

    import psycopg

    name = f"pins_{secrets.token_hex(4)}"
    admin = postgres_server.url().replace("postgresql+psycopg", "postgresql")
    with psycopg.connect(admin, autocommit=True) as con:
        con.execute(f"CREATE DATABASE {name}")
    url = postgres_server.url(name)
    plain = url.replace("postgresql+psycopg", "postgresql")
    try:
        with psycopg.connect(plain, autocommit=True) as con:
            con.execute('CREATE TABLE "Artist" ("ArtistId" int, "Name" text)')
            con.execute("INSERT INTO \"Artist\" SELECT i, 'artist ' || i "
                        "FROM generate_series(1, 275) i")
            con.execute('GRANT SELECT ON "Artist" TO queryeval_ro')
        chinook = tmp_path / "spans-data.sqlite"
        shutil.copy(CHINOOK, chinook)
        suite = _mine(tmp_path, chinook, {
            "datasources": {"music": {"type": "sqlalchemy",
                                      "url": postgres_server.readonly_url(name)}},
            "predictions": {"source": "file", "path": "p.jsonl"}},
            artists='SELECT count(*) FROM "Artist"')  # PostgreSQL tells Artist from artist
        cases = {c["id"]: c for c in yaml.safe_load(
            (suite / "test_mined.yaml").read_text())["cases"]}
        pin = cases["mined-b000000000000000"]["pin"]["tables"]
        assert list(pin) == ["Artist"] and pin["Artist"].startswith("rows:275:")
        _answers(suite)
        _, report = _run(pytester, suite)
        assert report.by_id["mined-b000000000000000"]["outcome"] == "passed"
        with psycopg.connect(plain, autocommit=True) as con:
            con.execute("UPDATE \"Artist\" SET \"Name\" = 'renamed' WHERE \"ArtistId\" = 7")
        _, report = _run(pytester, suite)
        assert report.by_id["mined-b000000000000000"]["drifted"] == ["Artist"]
    finally:
        with psycopg.connect(admin, autocommit=True) as con:
            con.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_an_rdf_source_is_pinned_by_its_file_digest(tmp_path: Path, pytester: pytest.Pytester,
                                                    capsys) -> None:
    ttl = tmp_path / "kg.ttl"
    ttl.write_text('<http://ex.org/a> <http://ex.org/name> "A" .\n', encoding="utf-8")
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "queryeval.yaml").write_text(dump({
        "datasources": {"kg": {"type": "rdf", "path": str(ttl)}}}))
    from pytest_queryeval.importers.pinning import Pinner, find_datasource

    spec, _ = find_datasource("kg", suite, None)
    assert spec is not None
    pinner = Pinner("kg", spec)
    pin = pinner.pin("SELECT ?n WHERE { ?s <http://ex.org/name> ?n }")
    assert pin is not None and re.fullmatch(r"sha256:[0-9a-f]{64}", pin["file"])
    (suite / "tox.ini").write_text("[pytest]\nqueryeval_files = test_*.yaml\n")
    (suite / "test_kg.yaml").write_text(dump({
        "kind": "sparql", "datasource": "kg", "cases": [{
            "id": "name", "question": "What is a called?",
            "gold": "SELECT ?n WHERE { ?s <http://ex.org/name> ?n }",
            "predicted": "SELECT ?n WHERE { ?s <http://ex.org/name> ?n }", "pin": pin}]}))
    _, report = _run(pytester, suite)
    assert report.by_id["name"]["outcome"] == "passed"
    ttl.write_text('<http://ex.org/a> <http://ex.org/name> "B" .\n', encoding="utf-8")
    _, report = _run(pytester, suite)
    assert report.by_id["name"]["drifted"] == ["kg.ttl"]


def test_refresh_pins_a_corrected_gold_to_what_it_reads_now(sqlite_suite, capsys) -> None:
    """A reviewer corrected a gold to read another table: --refresh pins that table (the old
    one is no longer read), and the file differs in the gold the reviewer wrote and the pin."""
    suite, _, _ = sqlite_suite
    path = suite / "test_mined.yaml"
    text = path.read_text().replace("gold: SELECT count(*) FROM Artist",
                                    "gold: SELECT count(*) FROM Album")
    path.write_text(text)
    capsys.readouterr()
    assert queryeval(["mine", "--refresh", str(suite)]) == 0
    said = capsys.readouterr().out
    assert "mined-b000000000000000: Album, Artist (no longer read)" in said
    case = yaml.safe_load(path.read_text())["cases"][1]
    assert list(case["pin"]["tables"]) == ["Album"]
    changed = [(a, b) for a, b in zip(text.splitlines(), path.read_text().splitlines(),
                                      strict=True) if a != b]
    assert [a.strip().split(":")[0] for a, _ in changed] == ["pin"]


def test_refresh_refuses_a_pin_written_over_several_lines(sqlite_suite, capsys) -> None:
    suite, _, _ = sqlite_suite
    path = suite / "test_mined.yaml"
    text = re.sub(r"^  pin: \{tables: \{Artist: ('rows:275:[0-9a-f]+')\}\}$",
                  r"  pin:\n    tables: {Artist: \1}", path.read_text(), flags=re.M)
    path.write_text(text)
    capsys.readouterr()
    assert queryeval(["mine", "--refresh", str(suite)]) == 2
    assert "cases[1].pin: not the one line 'pin: {...}'" in capsys.readouterr().err
    assert path.read_text() == text


def test_the_gold_audit_runs_on_mined_golds_and_skips_drifted_ones(
        tmp_path: Path, pytester: pytest.Pytester, capsys) -> None:
    """Item 3: ``--queryeval-audit-golds`` reads the mined golds as any others (a gold whose
    result is empty is found); a case whose pinned data moved is ``drifted`` in the audit as
    in a run, not judged on data the trace never saw. Fails before the fix: the drifted
    case was audited (passed) on the changed data."""
    db = tmp_path / "suite-data.sqlite"
    shutil.copy(CHINOOK, db)
    suite = _mine(tmp_path, db, {"datasources": {"music": {"type": "sqlite", "path": str(db)}},
                                 "predictions": {"source": "file", "path": "p.jsonl"}},
                  artists="SELECT Name FROM Artist WHERE Name = 'Nobody'")
    _answers(suite)
    _, report = _run(pytester, suite, "--queryeval-audit-golds")
    empty = report.by_id["mined-b000000000000000"]
    assert "empty-result" in json.dumps(empty["details"]["audit"]), empty
    assert report.by_id["mined-a000000000000000"]["outcome"] == "passed"
    con = sqlite3.connect(db)
    con.execute("UPDATE Genre SET Name = 'Rock & Roll' WHERE Name = 'Rock'")
    con.commit()
    con.close()
    _, report = _run(pytester, suite, "--queryeval-audit-golds")
    moved = report.by_id["mined-a000000000000000"]
    assert moved["outcome"] == "skipped" and moved["drifted"] == ["Genre"]


def test_drift_is_found_by_each_xdist_worker(sqlite_suite, pytester: pytest.Pytester) -> None:
    """Under ``-n 2`` each worker checks the pins of the cases it runs; the controller's
    summary and reports list the drifted case as a serial run does."""
    suite, db, _ = sqlite_suite
    con = sqlite3.connect(db)
    con.execute("UPDATE Artist SET Name = 'AC-DC' WHERE ArtistId = 1")
    con.commit()
    con.close()
    result, report = _run(pytester, suite, "-n", "2")
    assert {c["id"]: (c["outcome"], c.get("drifted")) for c in report["cases"]} == {
        "mined-a000000000000000": ("passed", None),
        "mined-b000000000000000": ("skipped", ["Artist"]),
        "mined-c000000000000000": ("passed", None)}
    result.stdout.fnmatch_lines(["drifted: 1 case skipped*mined-b000000000000000 (Artist)"])
    assert "drifted: 1 case skipped" in (pytester.path / "r.md").read_text()
