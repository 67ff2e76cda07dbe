from __future__ import annotations

from pytest_queryeval.importers.cli import main


def test_dispatches_to_the_spider_importer(tmp_path, shared_data, capsys):
    gold = tmp_path / "gold.txt"
    gold.write_text("SELECT count(*) FROM singer\tconcert_singer\n")
    pred = tmp_path / "pred.txt"
    pred.write_text("SELECT count(*) FROM singer\n")
    rc = main(["spider", "--gold", str(gold), "--pred", str(pred),
               "--tables", str(shared_data / "spider" / "tables.json"), "--out", str(tmp_path / "suite")])
    assert rc == 0
    written = sorted(p.name for p in (tmp_path / "suite").iterdir())
    assert "queryeval.yaml" in written and any(n.startswith("test_") for n in written)


def test_unknown_importer_is_a_usage_error(capsys):
    assert main(["nope"]) == 2
    assert "usage: queryeval-import" in capsys.readouterr().err
    assert main(["--help"]) == 0


def test_queryeval_import_is_a_subcommand_with_the_same_arguments(tmp_path, shared_data, capsys):
    """``queryeval import ...`` printed the merge usage with no hint that importers exist
    (issue 43): it runs the importers, named as typed; ``queryeval --help`` lists both
    subcommands; ``queryeval-import`` keeps working (the test above)."""
    from pytest_queryeval.conclude.cli import main as queryeval

    gold = tmp_path / "gold.txt"
    gold.write_text("SELECT count(*) FROM singer\tconcert_singer\n")
    pred = tmp_path / "pred.txt"
    pred.write_text("SELECT count(*) FROM singer\n")
    args = ["spider", "--gold", str(gold), "--pred", str(pred),
            "--tables", str(shared_data / "spider" / "tables.json")]
    assert queryeval(["import", *args, "--out", str(tmp_path / "a")]) == 0
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    for name in ("test_spider.yaml", "queryeval.yaml"):  # the same suite either way
        assert (tmp_path / "a" / name).read_text() == (tmp_path / "b" / name).read_text()
    capsys.readouterr()
    assert queryeval(["import", "--help"]) == 0
    listing = capsys.readouterr().out
    assert listing.startswith("usage: queryeval import {spider,buildingqa,bird,")
    assert "  bird              BIRD dev.json" in listing
    assert queryeval(["import", "spider", "--gold", str(tmp_path / "missing.txt"),
                      "--out", str(tmp_path / "c")]) == 2
    assert capsys.readouterr().err.startswith("queryeval import spider: ")
    assert queryeval(["--help"]) == 0
    top = capsys.readouterr().out.splitlines()
    assert top[0] == "usage: queryeval {merge,import,init,view,redteam,mine} [options]"
    assert [line.split()[0] for line in top[2:]] == ["merge", "import", "init", "view", "redteam", "mine"]
    assert queryeval(["imprt"]) == 4  # a usage error, as queryeval merge's
    err = capsys.readouterr().err
    assert err.startswith("queryeval: unknown command 'imprt'\nusage: queryeval {merge,import,init,view,redteam,mine}")
