"""LiveSQLBench Management tasks (issue 28 item 3): ``queryeval-import livesqlbench`` brings in
the published Management instances with their test cases, and the plugin's verdict on each
(instance, prediction) equals the unmodified reference evaluator's (tests/data/livesqlbench/
management: oracle.json, produced by make_oracle.py on the same constructed databases)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_queryeval.importers import livesqlbench
from pytest_queryeval.importers.cli import main as cli
from pytest_queryeval.tasks import pgcopies
from tests.support import read_report

DATABASES = ("alien", "archeology")


@pytest.fixture(scope="module")
def lsb_databases(postgres_server: Any, shared_data: Path) -> Iterator[str]:
    """``lsb_alien`` and ``lsb_archeology`` (constructed rows) on the loopback server; the
    ``--db`` pattern of the tasks role (LOGIN CREATEDB, owning them: it makes the copies). The pools of copies
    the in-process pytester runs made are closed after (other tests count this process's
    copies)."""
    folder = shared_data / "livesqlbench" / "management"
    for db in DATABASES:
        postgres_server.superuser_execute(f"DROP DATABASE IF EXISTS lsb_{db}",
                                          f"CREATE DATABASE lsb_{db}", database="postgres")
        postgres_server.superuser_execute((folder / f"{db}.sql").read_text(encoding="utf-8"),
                                          database=f"lsb_{db}")
        postgres_server.hand_to_tasks_role(f"lsb_{db}")
    yield str(postgres_server.tasks_url("lsb_{db}"))
    for pool in [p for url, p in pgcopies._POOLS.items() if "/lsb_" in url]:
        pool.close()


def test_management_scores_agree_with_the_reference_per_item(
        pytester: pytest.Pytester, shared_data: Path, lsb_databases: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    folder = shared_data / "livesqlbench" / "management"
    data = folder / "eval_input.jsonl"
    out = pytester.path
    assert cli(["livesqlbench", str(data), "--pred", str(data), "--out", str(out),
                "--db", lsb_databases]) == 0
    printed = capsys.readouterr().out
    assert "(24 cases, 0 skipped)" in printed
    assert "M_1__gold: follow_up not imported" in printed
    assert not (out / "test_livesqlbench.yaml").exists()  # no Query task
    suite = yaml.safe_load((out / livesqlbench.TASKS_FILE).read_text(encoding="utf-8"))
    assert suite["thresholds"] == {"execution_accuracy": 1.0}
    by_id = {c["id"]: c for c in suite["cases"]}
    m1 = by_id["M_1__gold"]
    assert (m1["task"], m1["datasource"]) == ("ddl", "alien_sandbox")
    assert m1["checks"][0]["livesqlbench_test"].lstrip().startswith(
        "def test_case(pred_sqls, sol_sqls, db_name, conn):")
    config = yaml.safe_load((out / "queryeval.yaml").read_text(encoding="utf-8"))
    assert config["datasources"]["archeology_sandbox"]["writable"] == "sandbox"

    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    pytester.runpytest("-p", "no:cacheprovider", "--queryeval-json=r.json")
    report = {c["id"]: c for c in read_report(out / "r.json")["cases"]}
    oracle = json.loads((folder / "oracle.json").read_text(encoding="utf-8"))
    assert len(oracle) == 24
    verdicts = {}
    for item in oracle:
        cid = f"{item['instance']}__{item['prediction']}"
        verdicts[cid] = (report[cid]["outcome"], item["reference_status"])
    disagree = {cid: v for cid, v in verdicts.items()
                if (v[0] == "passed") != (v[1] == "success")}
    assert disagree == {}
    assert sum(v[1] == "success" for v in verdicts.values()) == 7
    # The follow-up's test case does not compile: the reference fails every prediction, its
    # gold included; the plugin calls the check broken (an error, the suite's fault).
    assert verdicts["M_1.follow_up__gold"] == ("error", "failed")
    assert "does not compile: IndentationError: unexpected indent" in \
        report["M_1.follow_up__gold"]["error"]
    assert {v[0] for cid, v in verdicts.items() if not cid.startswith("M_1.follow_up")
            and v[1] == "failed"} == {"failed"}
    reason = report["M_1__wrong_humidity"]["reason"]
    assert "Predicted DISF value 1.9855 differs from expected 2.79775" in reason
    assert report["M_1__syntax_error"]["reason"].startswith(
        "the prediction failed on its copy: SyntaxError")


def test_management_task_without_test_cases_is_an_error(
        tmp_path: Path, pytester: pytest.Pytester, shared_data: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The reference passes such a task whenever the prediction executes; here it is an error."""
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({
        "instance_id": "M_9", "selected_database": "chinook", "category": "Management",
        "query": "Add a genre.", "sol_sql": ["INSERT INTO Genre VALUES (99, 'Polka')"],
        "preprocess_sql": [], "clean_up_sql": [], "test_cases": [],
        "pred_sqls": ["INSERT INTO Genre VALUES (99, 'Polka')"]}) + "\n", encoding="utf-8")
    chinook = shared_data / "chinook" / "Chinook_Sqlite.sqlite"
    assert cli(["livesqlbench", str(data), "--pred", str(data), "--out", str(pytester.path),
                "--db", str(chinook)]) == 0
    assert "M_9: Management task without test_cases: imported without checks, so the plugin " \
           "reports it as an error" in capsys.readouterr().out
    suite = yaml.safe_load((pytester.path / livesqlbench.TASKS_FILE).read_text())
    assert suite["cases"][0]["task"] == "dml" and "checks" not in suite["cases"][0]
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--queryeval-json=r.json")
    assert result.ret != 0
    case = read_report(pytester.path / "r.json")["cases"][0]
    assert case["outcome"] == "error"
    assert "needs at least one check" in json.dumps(case)


@pytest.mark.parametrize(("sql", "kind"), [
    (["-- make it\nCREATE OR REPLACE VIEW v AS SELECT 1"], "ddl"),
    (["/* x */ ALTER TABLE t ADD c int"], "ddl"),
    (["UPDATE t SET a = 1; DROP TABLE u"], "ddl"),
    (["INSERT INTO t VALUES (1)", "UPDATE t SET a = 2 -- CREATE nothing"], "dml"),
    (["DELETE FROM t WHERE note = 'CREATE'"], "dml"),
])
def test_task_kind_from_the_solution(sql: list[str], kind: str) -> None:
    assert livesqlbench.task_kind(sql) == kind


def test_pred_query_result_is_the_last_statements_rows_on_postgres(
        pytester: pytest.Pytester, lsb_databases: str) -> None:
    url = lsb_databases.replace("{db}", "alien")
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    pytester.makefile(".yaml", queryeval=json.dumps({"datasources": {
        "pg": {"type": "sqlalchemy", "url": url, "writable": "sandbox", "timeout": 60}}}))
    pytester.makefile(".yaml", test_pg=json.dumps({"kind": "sql", "datasource": "pg", "cases": [
        {"id": "last", "task": "ddl", "gold": "CREATE TABLE x (a int)",
         "predicted": "CREATE TABLE x (a int);\nINSERT INTO x VALUES (7);\nSELECT a FROM x",
         "checks": [{"livesqlbench_test": "def test_case(pred_sqls, sol_sqls, db_name, conn):\n"
                                          "    assert pred_query_result == [(7,)], "
                                          "pred_query_result\n"}]}]}))
    pytester.runpytest("-p", "no:cacheprovider", "--queryeval-json=r.json")
    case = read_report(pytester.path / "r.json")["cases"][0]
    assert case["outcome"] == "passed", case
