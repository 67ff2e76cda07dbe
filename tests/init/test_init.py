"""Issue 44 item 4: ``queryeval init`` writes a first suite that runs.

On real databases (the example suite's Chinook SQLite file and DuckDB file, its Brick graph in
Turtle, and a SQLAlchemy URL to the SQLite file): init introspects the source, writes three
files, and ``pytest`` in that folder passes with the three example cases. It never overwrites.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from pytest_queryeval.conclude.cli import main
from pytest_queryeval.suite.init import PASSWORD_VAR, _spec

DATA = Path(__file__).resolve().parents[2] / "example_suite" / "data"


@pytest.mark.parametrize(("name", "kind", "args"), [
    ("chinook.sqlite", "sql", []),
    ("tracks.duckdb", "sql", []),
    ("soda_brick.ttl", "sparql", []),
    ("chinook.sqlite", "sql", ["--url"]),
])
def test_init_then_pytest_passes(pytester, capsys, monkeypatch, name, kind, args):
    data = pytester.path / "data"
    data.mkdir()
    shutil.copyfile(DATA / name, data / name)
    if args == ["--url"]:
        pytest.importorskip("sqlalchemy")
        source = f"sqlite:///{data / name}"
    else:
        source = str(data / name)
    code = main(["init", "--datasource", source, "--dir", str(pytester.path / "suite")])
    assert code == 0
    suite = pytester.path / "suite"
    out = capsys.readouterr().out
    assert f"wrote {suite / 'queryeval.yaml'}" in out
    config = yaml.safe_load((suite / "queryeval.yaml").read_text())
    (ds_name, spec), = config["datasources"].items()
    if "://" not in source:
        assert spec["path"] == f"../data/{name}"  # relative: the folder moves with its data
    cases = yaml.safe_load((suite / "test_examples.yaml").read_text())
    assert cases["kind"] == kind and cases["datasource"] == ds_name
    assert len(cases["cases"]) == 3
    assert len({c["id"] for c in cases["cases"]}) == 3
    assert all(c["predicted"] == c["gold"] for c in cases["cases"])
    assert "delete their predicted: lines" in (suite / "test_examples.yaml").read_text()
    assert (suite / "predictions.jsonl").read_text() == ""
    monkeypatch.chdir(suite)  # pytest in that folder, with no argument
    result = pytester.runpytest()
    result.assert_outcomes(passed=3)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*queryeval: PASSED*"])


def test_chinook_examples_use_its_tables_and_values(tmp_path, capsys):
    db = tmp_path / "chinook.sqlite"
    shutil.copyfile(DATA / "chinook.sqlite", db)
    assert main(["init", "--datasource", str(db), "--dir", str(tmp_path / "s")]) == 0
    cases = yaml.safe_load((tmp_path / "s" / "test_examples.yaml").read_text())["cases"]
    golds = [c["gold"] for c in cases]
    assert golds[0] == 'SELECT count(*) FROM "Album"'
    assert golds[1] == "SELECT count(*) FROM \"Artist\" WHERE \"Name\" = 'AC/DC'"
    assert cases[1]["question"] == "How many Artist rows have Name 'AC/DC'?"


def test_init_refuses_to_overwrite_and_writes_nothing(tmp_path, capsys):
    db = tmp_path / "chinook.sqlite"
    shutil.copyfile(DATA / "chinook.sqlite", db)
    suite = tmp_path / "s"
    suite.mkdir()
    (suite / "test_examples.yaml").write_text("mine\n")
    assert main(["init", "--datasource", str(db), "--dir", str(suite)]) == 4
    err = capsys.readouterr().err
    assert f"queryeval init: {suite / 'test_examples.yaml'} already exist(s): not " \
           "overwritten" in err
    assert sorted(p.name for p in suite.iterdir()) == ["test_examples.yaml"]
    assert (suite / "test_examples.yaml").read_text() == "mine\n"


def test_init_names_what_it_cannot_read(tmp_path, capsys):
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    assert main(["init", "--datasource", str(text), "--dir", str(tmp_path / "s")]) == 4
    assert "neither a SQLite nor a DuckDB database file" in capsys.readouterr().err
    assert main(["init", "--datasource", str(tmp_path / "missing.db"),
                 "--dir", str(tmp_path / "s")]) == 4
    assert "missing.db: no such file" in capsys.readouterr().err
    assert not (tmp_path / "s" / "queryeval.yaml").exists()


def test_a_password_in_a_url_is_not_written(tmp_path):
    url = "postgresql://app:s3cret-pw@127.0.0.1:5432/shop"
    opened, written, note = _spec(url, "sql", tmp_path, True)
    assert opened["url"] == url
    assert written["url"] == f"postgresql://app:${{{PASSWORD_VAR}}}@127.0.0.1:5432/shop"
    assert note is not None and PASSWORD_VAR in note


def test_queryeval_usage_lists_init(capsys):
    assert main(["--help"]) == 0
    assert "init" in capsys.readouterr().out
