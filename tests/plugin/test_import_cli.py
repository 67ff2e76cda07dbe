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
