"""Regenerate the LiveSQLBench Management oracle: the UNMODIFIED reference evaluator run on the
published Management instances, each with several predictions (README.md here says what and why).

    python tests/data/livesqlbench/management/make_oracle.py \\
        --reference-git <clone of bird-bench/livesqlbench> \\
        --site-git <clone of BlackSoi1/livesqlbench.github.io> \\
        --python <a python with psycopg2 and tqdm>

It starts a throwaway loopback PostgreSQL cluster with this project's test machinery
(tests/fixtures/postgres.py), makes the role the reference connects as by default (``root``,
password ``123123``, see its ``db_config.py``) and the ``<db>_template`` databases it copies
(``alien.sql``, ``archeology.sql``: constructed rows), then runs
``evaluation/src/evaluation.py --jsonl_file eval_input.jsonl --num_threads 1 --logging true
--db_host 127.0.0.1 --db_port <port>`` from the reference's commit, unmodified, and writes
``oracle.json`` from its ``report.txt``, ``output_with_status.jsonl`` and instance logs.
Written once by hand; the tests only read its outputs.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
REFERENCE_COMMIT = "59d7bd0cb3cc5f2d0f478b8dfb5e4d4876ea0dc8"
SITE_COMMIT = "1b6562e"
#: The published Management instances: (file in the site repository, instance_id).
PUBLISHED = (("data/alien/alien_data.jsonl", "M_1"),
             ("data/archeology/archeology_data.jsonl", "M_3"))
DATABASES = ("alien", "archeology")

M1_GOLD_BODY = """CREATE OR REPLACE FUNCTION calculate_disf(
    p_airtemp NUMERIC, p_trans NUMERIC, p_humidity NUMERIC, p_lunar_deg NUMERIC
) RETURNS NUMERIC AS $$
BEGIN
    RETURN {expr};
END;
$$ LANGUAGE plpgsql;"""
M1_EXPR = "(10 - ABS(p_airtemp - 15)/10) * p_trans * (1 - p_humidity/200) * ((100 - p_lunar_deg)/100)"
M3_COLUMNS = """s.QuestRegistry, s.ArcRef, s.ZoneRef, s.ChronoTag, spc.ScanResolMm, spc.PointDense,
    spc.CoverPct, spc.LapPct, spc.NoiseDb"""
M3_FROM = """FROM public.scans s
LEFT JOIN public.scanpointcloud spc ON s.ArcRef = spc.ArcRef AND s.CrewRef = spc.CrewRef"""
M3_WHERE = ("spc.ScanResolMm <= 1.0 AND spc.PointDense >= 1000 AND spc.CoverPct >= 95.0 "
            "AND spc.LapPct >= 30.0 AND spc.NoiseDb < 1.5")


def m3_view(where: str = M3_WHERE, columns: str = M3_COLUMNS, name: str = "view_premium_quality_scans",
            tail: str = "", create: str = "CREATE OR REPLACE VIEW") -> str:
    return f"{create} {name} AS\nSELECT {columns}\n{M3_FROM}\nWHERE {where}{tail};"


#: (instance, label, pred_sqls, what it is). ``None`` as pred_sqls: the instance's own sol_sql.
PREDICTIONS: list[tuple[str, str, list[str] | None, str]] = [
    ("M_1", "gold", None, "the gold itself"),
    ("M_1", "sql_function", [
        "CREATE FUNCTION calculate_disf(a float8, t float8, h float8, l float8) RETURNS float8\n"
        "LANGUAGE sql AS $$ SELECT (10 - abs(a - 15) / 10) * t * (1 - h / 200) * ((100 - l) / 100) $$;"],
     "right, different: LANGUAGE sql on double precision"),
    ("M_1", "drop_then_create", [
        "DROP FUNCTION IF EXISTS calculate_disf(numeric, numeric, numeric, numeric);",
        M1_GOLD_BODY.format(expr=M1_EXPR)], "right, different: two statements"),
    ("M_1", "wrong_humidity", [M1_GOLD_BODY.format(expr=M1_EXPR.replace("/200", "/100"))],
     "wrong formula: humidity over 100"),
    ("M_1", "integer_division", [M1_GOLD_BODY.format(
        expr=M1_EXPR.replace("(100 - p_lunar_deg)/100", "(100 - p_lunar_deg::int)/100"))],
     "wrong: integer division makes the lunar factor 0"),
    ("M_1", "rounded", [M1_GOLD_BODY.format(expr=f"ROUND({M1_EXPR}, 2)")],
     "wrong for the test: rounded to 2 places (2.80, tolerance 1e-5)"),
    ("M_1", "syntax_error", ["CREATE FUNCTION calculate_disf( RETURNS NUMERIC AS $$ BEGIN END $$;"],
     "a syntax error"),
    ("M_1", "then_fails", [M1_GOLD_BODY.format(expr=M1_EXPR), "SELECT 1/0;"],
     "the right function, then a statement that fails"),
    ("M_1", "writes_else", ["UPDATE observatories SET airtempc = 15;"],
     "writes something else (no function)"),
    ("M_1", "wrong_name", [M1_GOLD_BODY.format(expr=M1_EXPR).replace("calculate_disf", "calc_disf")],
     "the right function under another name"),
    ("M_1", "empty", [], "an empty prediction"),
    ("M_3", "gold", None, "the gold itself"),
    ("M_3", "inner_join", [
        "CREATE VIEW view_premium_quality_scans AS\n"
        "SELECT s.questregistry, s.arcref, s.zoneref, s.chronotag, p.scanresolmm, p.pointdense,"
        " p.coverpct, p.lappct, p.noisedb\nFROM scans s JOIN scanpointcloud p\n"
        "  ON p.arcref = s.arcref AND p.crewref = s.crewref\n"
        " AND p.scanresolmm <= 1 AND p.pointdense >= 1000 AND p.coverpct >= 95\n"
        " AND p.lappct >= 30 AND p.noisedb < 1.5;"],
     "right, different: inner join, filters in ON, plain CREATE VIEW (the test re-runs it: "
     "that second run fails, unnoticed)"),
    ("M_3", "ordered", [m3_view(tail="\nORDER BY s.QuestRegistry")],
     "right rows, ordered by id: another first row"),
    ("M_3", "noise_below_1", [m3_view(M3_WHERE.replace("< 1.5", "< 1.0"))],
     "wrong filter: noise < 1.0 drops ASD996783"),
    ("M_3", "no_noise_filter", [m3_view(M3_WHERE.replace(" AND spc.NoiseDb < 1.5", ""))],
     "wrong filter: no noise criterion (an extra row, after the first)"),
    ("M_3", "eight_columns", [m3_view(columns=M3_COLUMNS.replace(", spc.NoiseDb", ""))],
     "a column short"),
    ("M_3", "table_not_view", [m3_view(create="CREATE TABLE")],
     "writes a table of that name, not a view"),
    ("M_3", "wrong_name", [m3_view(name="premium_quality_scans")], "the view under another name"),
    ("M_3", "writes_else", ["UPDATE scans SET arcref = 'PR0000' WHERE questregistry = 'ASD996783';",
                            m3_view()], "changes a scan, then the right view"),
    ("M_3", "syntax_error", [m3_view().replace("SELECT", "SELEC", 1)], "a syntax error"),
    ("M_3", "empty", [], "an empty prediction"),
    ("M_1.follow_up", "gold", None, "the follow-up's gold"),
    ("M_1.follow_up", "parent_gold", [M1_GOLD_BODY.format(expr=M1_EXPR)],
     "the first turn's function again (no threshold parameter)"),
]


def git_show(gitdir: Path, commit: str, path: str) -> bytes:
    return subprocess.run(["git", "-C", str(gitdir), "show", f"{commit}:{path}"],
                          capture_output=True, check=True).stdout


def instances(site: Path) -> list[dict[str, Any]]:
    """The published Management lines, verbatim, and M_1's follow-up flattened into an
    instance of its own (``preprocess_sql``: M_1's solution, the state the follow-up builds on)."""
    lines: list[str] = []
    for path, iid in PUBLISHED:
        for line in git_show(site, SITE_COMMIT, path).decode().splitlines():
            if line.strip() and json.loads(line)["instance_id"] == iid:
                lines.append(line)
    items = [json.loads(x) for x in lines]
    parent = items[0]
    fu = parent["follow_up"]
    items.append({"instance_id": "M_1.follow_up", "selected_database": parent["selected_database"],
                  "query": fu["query"], "preprocess_sql": parent["sol_sql"], "clean_up_sqls": [],
                  "sol_sql": [fu["sol_sql"]], "external_knowledge": fu["external_knowledge"],
                  "test_cases": fu["test_cases"], "category": fu["category"],
                  "conditions": parent["conditions"]})
    (HERE / "instances.jsonl").write_text(
        "".join(x + "\n" for x in lines) + json.dumps(items[-1], ensure_ascii=False) + "\n",
        encoding="utf-8")
    return items


def eval_input(items: list[dict[str, Any]], path: Path) -> list[dict[str, Any]]:
    """One line per (instance, prediction): the instance with ``instance_id``
    ``<instance>__<label>`` and its ``pred_sqls`` (what the reference reads), written to
    ``path`` and, gzip-compressed, to ``eval_input.jsonl.gz`` here."""
    by_id = {i["instance_id"]: i for i in items}
    rows = []
    for iid, label, pred, _ in PREDICTIONS:
        item = dict(by_id[iid])
        item["instance_id"] = f"{iid}__{label}"
        item["pred_sqls"] = list(item["sol_sql"]) if pred is None else pred
        rows.append(item)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
    path.write_bytes(text)
    (HERE / "eval_input.jsonl.gz").write_bytes(gzip.compress(text, 9, mtime=0))
    return rows


def run_reference(reference: Path, python: str, rows: list[dict[str, Any]],
                  jsonl: Path) -> list[dict[str, Any]]:
    sys.path.insert(0, str(ROOT))
    from tests.fixtures.postgres import PostgresServer, _server_user, find_pg_bin

    work = Path(tempfile.mkdtemp(prefix="lsb-oracle-"))
    src = work / "ref"
    src.mkdir()
    archive = subprocess.run(["git", "-C", str(reference), "archive", REFERENCE_COMMIT,
                              "evaluation/src"], capture_output=True, check=True).stdout
    (work / "ref.tar").write_bytes(archive)
    with tarfile.open(work / "ref.tar") as tar:
        tar.extractall(src, filter="data")
    server = PostgresServer(Path(tempfile.mkdtemp(prefix="lsb-oracle-pg-")), find_pg_bin(),
                            _server_user())
    server._chown(server.root)
    server.init()
    server.start()
    try:
        server.superuser_execute("CREATE ROLE root LOGIN SUPERUSER PASSWORD '123123'",
                                 database="postgres")
        for db in DATABASES:
            server.superuser_execute(f"CREATE DATABASE {db}_template", database="postgres")
            server.superuser_execute((HERE / f"{db}.sql").read_text(encoding="utf-8"),
                                     database=f"{db}_template")
        out = work / "out"
        subprocess.run([python, "evaluation.py", "--jsonl_file", str(jsonl),
                        "--num_threads", "1", "--logging", "true", "--db_host", "127.0.0.1",
                        "--db_port", str(server.port), "--output_dir", str(out)],
                       cwd=src / "evaluation" / "src", check=True, timeout=600)
        exp = out / "eval_input"
        report = (exp / "report.txt").read_text()
        status = {json.loads(x)["instance_id"]: json.loads(x)["status"]
                  for x in (exp / "output_with_status.jsonl").read_text().splitlines()}
        results = []
        for row in rows:
            iid = row["instance_id"]
            m = re.search(rf"^Question_{re.escape(iid)}: \((\d+)/(\d+)\) test cases passed, "
                          rf"failed test cases: ([^|\n]*)(.*)$", report, re.M)
            assert m, iid
            log = (exp / f"instance_{iid}.log").read_text()
            why = re.findall(r"(?:Test case \d+ failed due to [^\n]*|psycopg2 Error executing "
                             r"query \d+: [^\n]*)", log)
            instance, label = iid.split("__")
            results.append({
                "instance": instance, "prediction": label,
                "reference_status": status[iid],
                "passed_test_cases": int(m.group(1)), "total_test_cases": int(m.group(2)),
                "failed_test_cases": [] if m.group(3).strip() == "None" else
                [t.strip() for t in m.group(3).split(",")],
                "phase": [p.strip() for p in m.group(4).split("|") if p.strip()],
                "reference_log": [re.sub(r"\s+", " ", w)[:200] for w in why][:2]})
        return results
    finally:
        server.stop("immediate")
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(server.root, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reference-git", type=Path, required=True)
    ap.add_argument("--site-git", type=Path, required=True)
    ap.add_argument("--python", required=True, help="a python with psycopg2 and tqdm")
    args = ap.parse_args()
    jsonl = Path(tempfile.mkdtemp(prefix="lsb-input-")) / "eval_input.jsonl"
    rows = eval_input(instances(args.site_git), jsonl)
    results = run_reference(args.reference_git, args.python, rows, jsonl)
    shutil.rmtree(jsonl.parent, ignore_errors=True)
    whats = {(i, lab): what for i, lab, _, what in PREDICTIONS}
    for r in results:
        r["what"] = whats[(r["instance"], r["prediction"])]
    (HERE / "oracle.json").write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n",
                                      encoding="utf-8")
    for r in results:
        print(f"{r['instance']:15} {r['prediction']:18} {r['reference_status']:8} "
              f"{r['passed_test_cases']}/{r['total_test_cases']} {r['reference_log'][:1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
