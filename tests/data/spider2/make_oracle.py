"""Build the Spider 2.0 EX conformance items and score them with the reference, unmodified.

Run from a checkout of xlang-ai/Spider2 (see PROVENANCE.md for the commit and the command). The
comparison functions are imported from ``spider2-lite/evaluation_suite/evaluate.py`` as is; only
``google.cloud.bigquery`` (imported at the top of that file, unused by the comparison) is stubbed.
Predicted tables take the reference's path for an executed query: ``DataFrame.from_records``
(as ``pd.read_sql_query``), ``to_csv(index=False)``, ``pd.read_csv``.
"""
from __future__ import annotations

import datetime as dt
import decimal
import importlib.util
import json
import math
import os
import shutil
import sys
import tempfile
import types
from pathlib import Path

import pandas as pd

REF, OUT = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
SUITE = REF / "spider2-lite" / "evaluation_suite"
GOLD = SUITE / "gold" / "exec_result"

google = types.ModuleType("google")
cloud = types.ModuleType("google.cloud")
cloud.bigquery = types.ModuleType("google.cloud.bigquery")
google.cloud = cloud
sys.modules.update({"google": google, "google.cloud": cloud, "google.cloud.bigquery": cloud.bigquery})
stdout, stderr, cwd = sys.stdout, sys.stderr, os.getcwd()
os.chdir(tempfile.mkdtemp())  # the module opens log.txt in the working directory
spec = importlib.util.spec_from_file_location("evaluate", SUITE / "evaluate.py")
ev = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ev)
sys.stdout, sys.stderr = stdout, stderr
os.chdir(cwd)

# Real instances: single-file, one _a file with flat condition_cols, per-gold lists, empty golds,
# the example submission's CSVs, local (SQLite) instances.
INSTANCES = [
    "bq051", "local010", "sf_bq421",
    "bq077", "bq116", "local097", "local279", "sf_bq147", "bq143", "bq228",
    "bq002", "bq098", "local002", "ga003", "sf001", "sf_bq131", "bq181", "bq229", "bq279",
    "bq096", "bq018", "local017", "ga017", "bq061", "bq010", "bq282", "bq268", "bq328",
    "bq003", "bq011", "bq019", "local275", "local310", "sf_bq056", "sf014", "ga011", "bq204",
]
SUBMISSION_CSV = SUITE / "example_submission_folder_csv"


def enc(v):
    if isinstance(v, float) and not math.isfinite(v):
        return {"$float": repr(v)}
    if isinstance(v, decimal.Decimal):
        return {"$decimal": str(v)}
    if isinstance(v, dt.datetime):
        return {"$datetime": v.isoformat()}
    if isinstance(v, dt.date):
        return {"$date": v.isoformat()}
    return v


def rows_of(df):
    return [[None if (isinstance(v, float) and math.isnan(v)) else v for v in r]
            for r in df.astype(object).itertuples(index=False, name=None)]


def vectors(df):
    return [[enc(v) for v in col] for col in df.transpose().values.tolist()]


def score(pred_pd, gold_files, multi, cc, io_):
    try:
        golds = [ev.load_gold_csv(str(OUT / "exec_result" / f)) for f in gold_files]
        if multi:
            return ev.compare_multi_pandas_table(pred_pd, golds, cc, io_), None
        return ev.compare_pandas_table(pred_pd, golds[0], cc, io_), None
    except Exception as e:  # the reference scores 0 ("Python Script Error")
        return 0, f"{type(e).__name__}: {e}"


def executed(columns, rows, tmp):
    df = pd.DataFrame.from_records(rows, columns=columns, coerce_float=True)
    df.to_csv(tmp, index=False)
    return pd.read_csv(tmp)


def mutations(gold_df):
    cols = list(gold_df.columns)
    rows = rows_of(gold_df)
    yield "exact", cols, rows
    yield "reordered_extra", ["extra", *cols[::-1]], [["x", *r[::-1]] for r in rows]
    yield "rows_reversed", cols, rows[::-1]
    if len(rows) >= 2:
        first = [r[0] for r in rows]
        rot = first[1:] + first[:1]
        yield "misaligned", cols, [[rot[i], *r[1:]] for i, r in enumerate(rows)]
    for name, delta in (("plus_0.009", 0.009), ("plus_0.011", 0.011)):
        yield name, cols, [[v + delta if isinstance(v, (int, float)) and not isinstance(v, bool)
                            else v for v in r] for r in rows]
    if rows:
        yield "row_dropped", cols, rows[:-1]
    yield "null_zero_swapped", cols, [[0 if v is None else (None if v == 0 and not isinstance(v, str) else v)
                                       for v in r] for r in rows]
    yield "as_text", cols, [[None if v is None else str(v) for v in r] for r in rows]
    yield "empty", cols, []


def synthetic():
    """Hard cases on hand-made golds (written to exec_result/syn_*.csv)."""
    D = decimal.Decimal
    golds = {
        "syn_ties.csv": "name,score\na,1\nb,1\nc,2\na,2\n",
        "syn_floats.csv": "v\n1.0\n2.5\n0.0\n",
        "syn_nulls.csv": "k,v\nx,\ny,3\n,0\n",
        "syn_bool.csv": "flag,n\nTrue,1\nFalse,0\n",
        "syn_dates.csv": "d,n\n2020-01-01,1\n2020-01-02 05:00:00,2\n",
        "syn_multi_a.csv": "a,b\n1,x\n2,y\n",
        "syn_multi_b.csv": "a,b\n10,x\n20,y\n",
        "syn_mixed.csv": "a,b,c\n1,1.5,u\n2,2.0,v\n",
        "syn_na_text.csv": "s\nNA\nfoo\nNULL\n",
        "syn_near.csv": "v\n1.0\n10.0\n9.995\n",
    }
    for name, text in golds.items():
        (OUT / "exec_result" / name).write_text(text)
    cases = [
        # (id, gold files, multi, condition_cols, ignore_order, columns, rows)
        ("ties_same", ["syn_ties.csv"], False, [], True, ["n", "s"], [["a", 2], ["c", 2], ["b", 1], ["a", 1]]),
        ("ties_misaligned", ["syn_ties.csv"], False, [], True, ["n", "s"], [["a", 1], ["b", 2], ["c", 1], ["a", 2]]),
        ("ties_ordered", ["syn_ties.csv"], False, [], False, ["n", "s"], [["a", 1], ["b", 1], ["c", 2], ["a", 2]]),
        ("ties_ordered_swapped", ["syn_ties.csv"], False, [], False, ["n", "s"], [["b", 1], ["a", 1], ["c", 2], ["a", 2]]),
        ("floats_close", ["syn_floats.csv"], False, [], True, ["v"], [[1.0099], [2.4901], [-0.0099]]),
        ("floats_far", ["syn_floats.csv"], False, [], True, ["v"], [[1.0101], [2.5], [0.0]]),
        ("floats_edge_0.01", ["syn_floats.csv"], False, [], True, ["v"], [[1.01], [2.5], [0.0]]),
        ("floats_edge_0.0099999", ["syn_floats.csv"], False, [], True, ["v"], [[1.0099999], [2.5], [0.01]]),
        ("floats_decimal", ["syn_floats.csv"], False, [], True, ["v"], [[D("1.000")], [D("2.50")], [D("0E-2")]]),
        ("floats_ints", ["syn_floats.csv"], False, [], False, ["v"], [[1], [2.5], [0]]),
        ("nulls_as_zero", ["syn_nulls.csv"], False, [], False, ["k", "v"], [["x", 0], ["y", 3], [None, None]]),
        ("nulls_as_null", ["syn_nulls.csv"], False, [], False, ["k", "v"], [["x", None], ["y", 3], [None, 0]]),
        ("nulls_near_zero", ["syn_nulls.csv"], False, [1], True, ["v"], [[0.005], [3], [None]]),
        ("nulls_text_zero", ["syn_nulls.csv"], False, [0], False, ["k"], [["x"], ["y"], ["0"]]),
        ("nulls_empty_string", ["syn_nulls.csv"], False, [0], False, ["k"], [["x"], ["y"], [""]]),
        ("bool_as_int", ["syn_bool.csv"], False, [], False, ["f", "n"], [[1, 1], [0, 0]]),
        ("bool_as_bool", ["syn_bool.csv"], False, [], False, ["f", "n"], [[True, 1], [False, 0]]),
        ("bool_as_text", ["syn_bool.csv"], False, [], False, ["f", "n"], [["true", 1], ["false", 0]]),
        ("bool_with_null", ["syn_bool.csv"], False, [0], False, ["f"], [[True], [None]]),
        ("dates_datetime", ["syn_dates.csv"], False, [0], False, ["d"], [[dt.datetime(2020, 1, 1)], [dt.datetime(2020, 1, 2, 5)]]),
        ("dates_midnight", ["syn_dates.csv"], False, [0], False, ["d"], [[dt.datetime(2020, 1, 1)], [dt.datetime(2020, 1, 2)]]),
        ("dates_mixed", ["syn_dates.csv"], False, [0], False, ["d"], [[dt.date(2020, 1, 1)], ["2020-01-02 05:00:00"]]),
        ("dates_micro", ["syn_dates.csv"], False, [0], False, ["d"], [[dt.datetime(2020, 1, 1, 0, 0, 0, 5)], [dt.datetime(2020, 1, 2, 5)]]),
        ("multi_second", ["syn_multi_a.csv", "syn_multi_b.csv"], True, [], True, ["a", "b"], [[20, "y"], [10, "x"]]),
        ("multi_flat_cc", ["syn_multi_a.csv", "syn_multi_b.csv"], True, [1], True, ["b"], [["x"], ["y"]]),
        ("multi_nested_cc", ["syn_multi_a.csv", "syn_multi_b.csv"], True, [[1], [0]], True, ["a"], [[10], [20]]),
        ("multi_nested_short", ["syn_multi_a.csv", "syn_multi_b.csv"], True, [[0]], True, ["a"], [[10], [20]]),
        ("multi_one_flat_cc0", ["syn_multi_a.csv"], True, [0, 1], True, ["a"], [[1], [2]]),
        ("multi_one_flat_cc1", ["syn_multi_a.csv"], True, [1, 0], True, ["b"], [["x"], ["y"]]),
        ("multi_none", ["syn_multi_a.csv", "syn_multi_b.csv"], True, [None], True, ["a", "b"], [[1, "x"], [2, "y"]]),
        ("cc_out_of_range", ["syn_multi_a.csv"], False, [5], True, ["a", "b"], [[1, "x"], [2, "y"]]),
        ("cc_negative", ["syn_multi_a.csv"], False, [-1], True, ["b"], [["y"], ["x"]]),
        ("cc_int", ["syn_multi_a.csv"], False, 1, True, ["b"], [["y"], ["x"]]),
        ("cc_nested_single", ["syn_multi_a.csv"], False, [[1]], True, ["b"], [["y"], ["x"]]),
        ("mixed_int_float_frame", ["syn_mixed.csv"], False, [], True, ["a", "b", "c"], [[1.0, 1.5, "u"], [2.0, 2, "v"]]),
        ("mixed_extra_text", ["syn_mixed.csv"], False, [0], True, ["a"], [["1"], ["2"]]),
        ("mixed_text_col", ["syn_mixed.csv"], False, [0], True, ["a"], [[1], ["2x"]]),
        ("na_text", ["syn_na_text.csv"], False, [], True, ["s"], [["foo"], [None], [0]]),
        ("na_text_literal", ["syn_na_text.csv"], False, [], True, ["s"], [["foo"], ["NA"], ["null"]]),
        ("near_sort_quirk", ["syn_near.csv"], False, [], True, ["v"], [[1.0], [9.999], [10.004]]),
        ("near_sort_quirk2", ["syn_near.csv"], False, [], True, ["v"], [[1.0], [10.0], [9.99]]),
        ("whitespace_row", ["syn_na_text.csv"], False, [], True, ["s"], [["foo"], ["  "], [None], [None]]),
        ("bigint", ["syn_multi_b.csv"], False, [0], True, ["a"], [[2 ** 70], [10]]),
        ("inf_nan", ["syn_floats.csv"], False, [], True, ["v"], [[float("inf")], [float("nan")], [2.5]]),
    ]
    return cases


def main():
    (OUT / "exec_result").mkdir(parents=True, exist_ok=True)
    (OUT / "pred_csv").mkdir(parents=True, exist_ok=True)
    standard = ev.load_jsonl_to_dict(str(SUITE / "gold" / "spider2lite_eval.jsonl"))
    items, golds_seen, eval_lines = [], {}, []
    tmp = Path(tempfile.mkdtemp()) / "pred.csv"
    for iid in INSTANCES:
        paths, single = ev.resolve_gold_paths(iid, str(GOLD))
        files = [p.name for p in paths]
        for f in files:
            shutil.copyfile(GOLD / f, OUT / "exec_result" / f)
        std = standard[iid]
        eval_lines.append(json.dumps(std))
        cc, io_ = std.get("condition_cols"), std.get("ignore_order", False)
        multi = not single
        if (SUBMISSION_CSV / f"{iid}.csv").exists():
            shutil.copyfile(SUBMISSION_CSV / f"{iid}.csv", OUT / "pred_csv" / f"{iid}.csv")
            pred_pd = pd.read_csv(OUT / "pred_csv" / f"{iid}.csv")
            s, err = score(pred_pd, files, multi, cc, io_)
            items.append({"id": f"{iid}#submission", "instance_id": iid, "gold_files": files,
                          "multi": multi, "condition_cols": cc, "ignore_order": io_,
                          "pred_csv": f"pred_csv/{iid}.csv",
                          "oracle": {"spider2_ex": s, "error": err,
                                     "pred_vectors": vectors(pred_pd)}})
        for gi, f in enumerate(files):
            gold_df = ev.load_gold_csv(str(OUT / "exec_result" / f))
            golds_seen[f] = {"dtypes": [str(d) for d in gold_df.dtypes], "vectors": vectors(gold_df)}
            for name, cols, rows in mutations(gold_df):
                if gi > 0 and name not in ("exact", "misaligned"):
                    continue
                pred_pd = executed(cols, rows, tmp)
                s, err = score(pred_pd, files, multi, cc, io_)
                items.append({"id": f"{iid}#{f[:-4]}#{name}", "instance_id": iid, "gold_files": files,
                              "multi": multi, "condition_cols": cc, "ignore_order": io_,
                              "pred": {"columns": cols, "rows": [[enc(v) for v in r] for r in rows]},
                              "oracle": {"spider2_ex": s, "error": err,
                                         "pred_vectors": vectors(pred_pd)}})
    for cid, files, multi, cc, io_, cols, rows in synthetic():
        pred_pd = executed(cols, rows, tmp)
        s, err = score(pred_pd, files, multi, cc, io_)
        items.append({"id": f"syn#{cid}", "instance_id": None, "gold_files": files, "multi": multi,
                      "condition_cols": cc, "ignore_order": io_,
                      "pred": {"columns": cols, "rows": [[enc(v) for v in r] for r in rows]},
                      "oracle": {"spider2_ex": s, "error": err, "pred_vectors": vectors(pred_pd)}})
        for f in files:
            gold_df = ev.load_gold_csv(str(OUT / "exec_result" / f))
            golds_seen[f] = {"dtypes": [str(d) for d in gold_df.dtypes], "vectors": vectors(gold_df)}
    texts = [
        "SELECT 1", "```sql\nSELECT 1\n```", "Here it is:\n```sql\nSELECT 2\n```\nDone.",
        "```SQL\nSELECT 3\n```", "```\nSELECT 4\n```", "```sql SELECT 5```", "```sql\n  SELECT 6  \n\n```",
        "```sql\nSELECT 7\n```\n```sql\nSELECT 8\n```", "```sql\n\n```", "```sql\nSELECT 9\n``` trailing",
    ]
    extraction = [{"text": t, "oracle": ev.extract_sql_query(t)} for t in texts]
    (OUT / "eval.jsonl").write_text("\n".join(eval_lines) + "\n")
    (OUT / "oracle.json").write_text(json.dumps(
        {"pandas": pd.__version__, "items": items, "golds": golds_seen, "extraction": extraction},
        indent=1, allow_nan=False) + "\n")
    print(f"{len(items)} items, {len(golds_seen)} gold files, pandas {pd.__version__}")


main()
