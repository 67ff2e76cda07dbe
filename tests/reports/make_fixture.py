"""Regenerate the fixture reports (``python tests/reports/make_fixture.py``).

The cases are written out by hand below; the aggregates are derived from them the way the core
does (population standard deviation, pass rate = passed incl. xpassed over passed + failed +
errors; a missing difficulty is grouped as "unknown") so the committed JSON
is self-consistent. ``test_fixture.py`` re-derives them independently.
"""

from __future__ import annotations

import copy
import json
import statistics
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

SQL_T = {"execution_accuracy": {"min": 1.0}}
SPARQL_T = {"execution_accuracy": {"min": 1.0}}
JSON_T = {"json_similarity": {"min": 0.8}}
SDMX_T = {"macro_f1": {"min": 0.75}}

SDMX_OK = (
    "INDICATOR\n[recall: 1.00, precision: 1.00]\nTrue Positives [1]\n"
    "  * LP: Population, Persons for countries / Index for country groups\n"
    "False Negatives [0]\nFalse Positives [0]\n\n"
    "COUNTRY\n[recall: 1.00, precision: 1.00]\nTrue Positives [1]\n  * MEX: Mexico\n"
    "False Negatives [0]\nFalse Positives [0]"
)
SDMX_BAD = (
    "INDICATOR\n[recall: 1.00, precision: 0.67]\nTrue Positives [2]\n"
    "  * GDP: gross domestic product\n  * GDPPC: GDP per capita\nFalse Negatives [0]\n"
    "False Positives [1]\n  * GDP_CONST: gross domestic product constant prices\n\n"
    "COUNTRY\n[recall: 0.50, precision: 1.00]\nTrue Positives [1]\n  * FRA: France\n"
    "False Negatives [1]\n  * DEU: Germany\nFalse Positives [0]"
)


def case(cid: str, kind: str, difficulty: str | None, outcome: str, metrics: dict[str, float],
         **kw: Any) -> dict[str, Any]:
    thresholds = {"sql": SQL_T, "sparql": SPARQL_T, "json": JSON_T, "sdmx": SDMX_T}[kind]
    failed = [m for m, t in thresholds.items()
              if m in metrics and metrics[m] < t.get("min", float("-inf"))]
    out: dict[str, Any] = {
        "id": cid,
        "nodeid": f"suite/test_{kind}.yaml::{cid}",
        "file": f"suite/test_{kind}.yaml",
        "line": kw.pop("line", 1),
        "kind": kind,
        "difficulty": difficulty,
        "tags": kw.pop("tags", []),
        "question": kw.pop("question"),
        "outcome": outcome,
        "metrics": metrics,
        "labels": kw.pop("labels", {}),
        "thresholds": thresholds,
        "failed_metrics": failed if outcome == "failed" else [],
        "predicted": kw.pop("predicted", None),
        "gold": kw.pop("gold", None),
        "error": kw.pop("error", None),
        "reason": kw.pop("reason", None),
        "diff": kw.pop("diff", []),
        "details": kw.pop("details", {}),
    }
    assert not kw, kw
    return out


def sql(cid: str, level: str, outcome: str, ex: float, sf1: float, esm: float, secs: float | None,
        **kw: Any) -> dict[str, Any]:
    m = {"execution_accuracy": ex, "soft_f1": sf1, "exact_set_match": esm}
    if secs is not None:
        m["prediction_seconds"] = secs
    kw.setdefault("labels", {"hardness": level})
    return case(cid, "sql", level, outcome, m, **kw)


def current_cases() -> list[dict[str, Any]]:
    return [
        sql("artists-count", "easy", "passed", 1.0, 1.0, 1.0, 0.82, tags=["smoke"], line=4,
            question="How many artists are there?",
            predicted="SELECT COUNT(*) FROM artists", gold="SELECT count(*) FROM artists"),
        sql("albums-by-acdc", "easy", "passed", 1.0, 1.0, 0.0, 1.10, tags=["smoke", "joins"],
            line=9, question="List the albums by AC/DC.",
            predicted="SELECT a.Title FROM albums a JOIN artists r USING (ArtistId) "
                      "WHERE r.Name = 'AC/DC'",
            gold="SELECT Title FROM albums WHERE ArtistId = 1"),
        sql("tracks-long", "easy", "failed", 0.0, 0.5, 0.0, 0.95, tags=["filters"], line=15,
            question="Which tracks are longer than 10 minutes? <b>bold</b> & | pipes",
            predicted="=HYPERLINK(\"http://evil.example\",\"x\") -- SELECT Name FROM tracks",
            gold="SELECT Name FROM tracks WHERE Milliseconds > 600000",
            diff=["missing rows (2 of 4):", "  ('Occupation / Precipice',)",
                  "  ('Through a Looking Glass',)", "extra rows (0)"]),
        sql("genre-top", "medium", "failed", 0.0, 0.8, 0.0, 1.42, tags=["aggregation"], line=21,
            question="What is the most common genre?",
            predicted="SELECT GenreId FROM tracks GROUP BY GenreId ORDER BY COUNT(*) DESC LIMIT 1",
            gold="SELECT g.Name FROM genres g JOIN tracks t USING (GenreId) GROUP BY g.Name "
                 "ORDER BY COUNT(*) DESC LIMIT 1",
            diff=["missing rows (1 of 1):", "  ('Rock',)", "extra rows (1):", "  (1,)"]),
        sql("invoices-total", "medium", "passed", 1.0, 1.0, 1.0, 1.30, tags=["aggregation"],
            line=27, question="What is the total of all invoices?",
            predicted="SELECT SUM(Total) FROM invoices", gold="SELECT sum(Total) FROM invoices"),
        sql("customer-countries", "hard", "error", 0.0, 0.0, 0.0, None, tags=["aggregation"],
            line=33, question="Which countries have more customers than the average country?",
            error="prediction error: HTTP 503 from predictor", predicted=None,
            gold="SELECT Country FROM customers GROUP BY Country HAVING COUNT(*) > "
                 "(SELECT AVG(c) FROM (SELECT COUNT(*) c FROM customers GROUP BY Country))"),
        sql("employee-chain", "extra", "passed", 1.0, 1.0, 0.0, 2.75, tags=["joins"], line=40,
            question="Who reports to the employee that reports to the general manager?",
            predicted="SELECT e.LastName FROM employees e JOIN employees m "
                      "ON e.ReportsTo = m.EmployeeId WHERE m.ReportsTo = 1",
            gold="SELECT LastName FROM employees WHERE ReportsTo IN "
                 "(SELECT EmployeeId FROM employees WHERE ReportsTo = 1)"),
        # SPARQL
        case("ahu-list", "sparql", "easy", "passed",
             {"execution_accuracy": 1.0, "entity_set_f1": 1.0, "row_match_f1": 1.0,
              "prediction_seconds": 0.61}, tags=["smoke", "brick"], line=3,
             question="List all air handling units.",
             predicted="SELECT ?ahu WHERE { ?ahu a brick:AHU }",
             gold="SELECT ?ahu WHERE { ?ahu a brick:Air_Handling_Unit }"),
        case("zone-temps", "sparql", "easy", "failed",
             {"execution_accuracy": 0.0, "entity_set_f1": 0.5, "row_match_f1": 0.4,
              "prediction_seconds": 0.77}, tags=["brick"], line=8,
             question="Which zone temperature sensors exist?",
             predicted="SELECT ?s WHERE { ?s a brick:Temperature_Sensor }",
             gold="SELECT ?s WHERE { ?s a brick:Zone_Air_Temperature_Sensor }",
             diff=["extra rows (3):", "  <urn:b59#OAT>", "  <urn:b59#SAT>", "  <urn:b59#RAT>"]),
        case("vav-feeds", "sparql", "medium", "passed",
             {"execution_accuracy": 1.0, "entity_set_f1": 1.0, "row_match_f1": 1.0,
              "prediction_seconds": 1.05}, tags=["brick"], line=14,
             question="Which VAVs are fed by AHU-1?",
             predicted="SELECT ?v WHERE { :AHU1 brick:feeds ?v }",
             gold="SELECT ?v WHERE { :AHU1 brick:feeds ?v . ?v a brick:VAV }"),
        case("meter-points", "sparql", "medium", "skipped", {}, tags=["brick"], line=20,
             question="Which points does the main meter have?", reason="no meter in this model"),
        case("setpoint-chain", "sparql", "hard", "passed",
             {"execution_accuracy": 1.0, "entity_set_f1": 1.0, "row_match_f1": 1.0,
              "prediction_seconds": 1.90}, tags=["brick"], line=26,
             question="Which setpoints control the zones of floor 2?",
             predicted="SELECT ?sp WHERE { ?z brick:isPartOf :Floor2 . ?sp brick:isPointOf ?z }",
             gold="SELECT ?sp WHERE { ?z brick:isPartOf :Floor2 . ?sp brick:isPointOf ?z }"),
        # JSON
        case("filter-year", "json", "easy", "passed",
             {"structural_similarity": 1.0, "semantic_similarity": 0.98, "json_similarity": 0.99,
              "prediction_seconds": 0.40}, tags=["smoke"], line=2,
             question="Sales in 2023",
             predicted={"filter": {"year": 2023}, "measure": "sales"},
             gold={"filter": {"year": 2023}, "measure": "sales"}),
        case("filter-region", "json", "easy", "passed",
             {"structural_similarity": 0.9, "semantic_similarity": 0.92, "json_similarity": 0.91,
              "prediction_seconds": 0.50}, tags=[], line=7,
             question="Sales in EMEA, by quarter",
             predicted={"filter": {"region": "EMEA"}, "group_by": ["quarter"]},
             gold={"filter": {"region": "EMEA"}, "group_by": ["quarter"], "measure": "sales"}),
        case("nested-sort", "json", "medium", "failed",
             {"structural_similarity": 0.5, "semantic_similarity": 0.7, "json_similarity": 0.6,
              "prediction_seconds": 0.70}, tags=["sorting"], line=12,
             question="Top 5 products by margin, descending",
             predicted={"sort": "margin", "limit": 5},
             gold={"sort": {"field": "margin", "order": "desc"}, "limit": 5},
             diff=["$.sort: 'margin' != {'field': 'margin', 'order': 'desc'}"]),
        case("date-range", "json", "medium", "xfailed",
             {"structural_similarity": 0.4, "semantic_similarity": 0.5, "json_similarity": 0.45,
              "prediction_seconds": 0.65}, tags=["sorting"], line=18,
             question="Orders between March and May", reason="known gap: date ranges"),
        # SDMX
        case("mex-population", "sdmx", "easy", "passed",
             {"macro_precision": 1.0, "macro_recall": 1.0, "macro_f1": 1.0,
              "precision[INDICATOR]": 1.0, "recall[INDICATOR]": 1.0, "f1[INDICATOR]": 1.0,
              "precision[COUNTRY]": 1.0, "recall[COUNTRY]": 1.0, "f1[COUNTRY]": 1.0,
              "prediction_seconds": 2.10}, tags=["imf", "weo"], line=1,
             question="Could you give me the population numbers for Mexico?",
             details={"sdmx_details": SDMX_OK}),
        case("gdp-fra-deu", "sdmx", "easy", "failed",
             {"macro_precision": 0.835, "macro_recall": 0.75, "macro_f1": 0.74,
              "precision[INDICATOR]": 0.67, "recall[INDICATOR]": 1.0, "f1[INDICATOR]": 0.8,
              "precision[COUNTRY]": 1.0, "recall[COUNTRY]": 0.5, "f1[COUNTRY]": 0.67,
              "prediction_seconds": 2.60}, tags=["imf", "weo"], line=20,
             question="GDP and GDP per capita for France and Germany",
             details={"sdmx_details": SDMX_BAD},
             diff=["INDICATOR: FP GDP_CONST", "COUNTRY: FN DEU"]),
        case("cpi-usa", "sdmx", "hard", "passed",
             {"macro_precision": 1.0, "macro_recall": 1.0, "macro_f1": 1.0,
              "precision[INDICATOR]": 1.0, "recall[INDICATOR]": 1.0, "f1[INDICATOR]": 1.0,
              "prediction_seconds": 3.05}, tags=["imf"], line=40,
             question="Consumer price inflation in the United States"),
        case("trade-balance", "sdmx", None, "passed",
             {"macro_precision": 1.0, "macro_recall": 0.8, "macro_f1": 0.89,
              "prediction_seconds": 2.40}, tags=["imf", "weo"], line=60,
             question="Trade balance of Japan"),
    ]


def current_run_cases() -> list[dict[str, Any]]:
    """The current run; the prediction error left ``customer-countries`` unscored."""
    cases = current_cases()
    for c in cases:
        if c["outcome"] == "error":
            c["metrics"] = {}
    return cases


def baseline_cases() -> list[dict[str, Any]]:
    """The previous run: 19 cases shared with current, one removed, ``employee-chain`` new."""
    by_id = {c["id"]: copy.deepcopy(c) for c in current_cases()}
    del by_id["employee-chain"]  # new in the current run
    # genre-top passed before (regression now)
    g = by_id["genre-top"]
    g.update(outcome="passed", failed_metrics=[], diff=[])
    g["metrics"].update(execution_accuracy=1.0, soft_f1=1.0, exact_set_match=1.0)
    # customer-countries passed before, errors now (regression)
    c = by_id["customer-countries"]
    c.update(outcome="passed", error=None, predicted="SELECT Country FROM customers")
    c["metrics"] = {"execution_accuracy": 1.0, "soft_f1": 1.0, "exact_set_match": 0.0,
                    "prediction_seconds": 1.50}
    # zone-temps failed before too, with lower entity_set_f1
    by_id["zone-temps"]["metrics"]["entity_set_f1"] = 0.25
    # nested-sort was failing before too; filter-region failed before (fixed now)
    f = by_id["filter-region"]
    f.update(outcome="failed", failed_metrics=["json_similarity"])
    f["metrics"].update(structural_similarity=0.6, semantic_similarity=0.7, json_similarity=0.65)
    # gdp-fra-deu was worse before
    s = by_id["gdp-fra-deu"]
    s["metrics"].update(macro_precision=0.5, macro_recall=0.5, macro_f1=0.5)
    # slower predictions everywhere on the sql side
    for cid in ("artists-count", "albums-by-acdc"):
        by_id[cid]["metrics"]["prediction_seconds"] += 0.5
    removed = copy.deepcopy(by_id["artists-count"])
    removed.update(id="albums-count", nodeid="suite/test_sql.yaml::albums-count",
                   question="How many albums are there?", outcome="failed",
                   failed_metrics=["execution_accuracy"])
    removed["metrics"].update(execution_accuracy=0.0, soft_f1=0.0)
    return [*by_id.values(), removed]


def group_stats(cases: list[dict[str, Any]]) -> dict[str, Any]:
    outcomes = [c["outcome"] for c in cases]
    passed = outcomes.count("passed") + outcomes.count("xpassed")
    failed, errors = outcomes.count("failed"), outcomes.count("error")
    names = sorted({m for c in cases for m in c["metrics"]})
    metrics = {}
    for m in names:
        vals = [c["metrics"][m] for c in cases if m in c["metrics"]]
        metrics[m] = {"mean": statistics.fmean(vals), "std": statistics.pstdev(vals),
                      "n": len(vals)}
    denom = passed + failed + errors
    return {"count": len(cases), "scored": sum(1 for c in cases if c["metrics"]),
            "passed": passed, "failed": failed, "errors": errors,
            "skipped": outcomes.count("skipped"), "xfailed": outcomes.count("xfailed"),
            "pass_rate": passed / denom if denom else None, "metrics": metrics}


def diff_key(c: dict[str, Any]) -> str:
    return c["difficulty"] if c["difficulty"] is not None else "unknown"


def aggregates(cases: list[dict[str, Any]]) -> dict[str, Any]:
    def by(key: Any) -> dict[str, Any]:
        groups: dict[str, list[dict[str, Any]]] = {}
        for c in cases:
            for k in key(c):
                groups.setdefault(k, []).append(c)
        return {k: group_stats(v) for k, v in groups.items()}

    kinds = by(lambda c: [c["kind"]])
    return {
        "overall": group_stats(cases),
        "by_kind": kinds,
        "by_kind_difficulty": {
            k: {d: group_stats([c for c in cases if c["kind"] == k and diff_key(c) == d])
                for d in dict.fromkeys(diff_key(c) for c in cases if c["kind"] == k)}
            for k in kinds
        },
        "by_difficulty": by(lambda c: [diff_key(c)]),
        "by_tag": by(lambda c: c["tags"]),
    }


SETTINGS = {
    "sql": {"execution_accuracy": {"float_tolerance": 1e-6}, "dialect": "sqlite"},
    "sparql": {"engine": "pyoxigraph"},
    "json": {"alpha": 0.5, "beta": 0.5, "model": "all-MiniLM-L6-v2"},
    "sdmx": {"match": "id+name"},
}


def report(cases: list[dict[str, Any]], started: str, predictions: str) -> dict[str, Any]:
    agg = aggregates(cases)
    ex = agg["overall"]["metrics"]["execution_accuracy"]["mean"]
    return {
        "version": 1,
        "run": {"started": started, "finished": started.replace("10:00:00", "10:02:05"),
                "duration_s": 125.0, "exitstatus": 1, "interrupted": False,
                "queryeval_version": "0.1.0", "predictions": predictions,
                "settings": copy.deepcopy(SETTINGS)},
        "cases": cases,
        "aggregates": agg,
        "gates": [
            {"name": "execution_accuracy.mean", "metric": "execution_accuracy", "stat": "mean",
             "scope": "overall", "value": ex, "op": ">=", "limit": 0.6, "passed": ex >= 0.6},
            {"name": "pass_rate", "metric": "pass_rate", "stat": "pass_rate", "scope": "overall",
             "value": agg["overall"]["pass_rate"], "op": ">=", "limit": 0.9,
             "passed": agg["overall"]["pass_rate"] >= 0.9},
        ],
    }


def main() -> None:
    cur = report(current_run_cases(), "2026-11-22T10:00:00+00:00", "predictions/model-v2.jsonl")
    base = report(baseline_cases(), "2026-11-15T10:00:00+00:00", "predictions/model-v1.jsonl")
    for name, data in (("current.json", cur), ("baseline.json", base)):
        (HERE / name).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n",
                                 encoding="utf-8")


if __name__ == "__main__":
    main()
