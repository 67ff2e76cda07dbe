"""Runs the TEXT2SPARQL reference, unmodified, on cases.json and writes oracle.json.

Usage (see PROVENANCE.md): REF=<text2sparql-client work tree> <venv with pytrec_eval 0.5>/python make_oracle.py

The reference's ``query`` command turns each endpoint answer into a pytrec dict with
``DBpediaDict2PytrecDict.tranform`` (a missing answer becomes its empty result) and lists the
RESULT_ORDER_MATTERS questions under ``order_required``; the SPARQL endpoint is the only part
replaced: the recorded results in cases.json are what it would have returned. Then the reference's
``evaluate`` command runs as a subprocess, exactly as its CLI would.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.environ["REF"])
from text2sparql_client.utils.evaluation_metrics import DBpediaDict2PytrecDict

MISSING = {"head": {"link": [], "vars": []},
           "results": {"distinct": False, "ordered": True, "bindings": []}}  # commands/query.py

here = Path(__file__).parent
cases = json.loads((here / "cases.json").read_text(encoding="utf-8"))
out = {}
for suite, questions in cases.items():
    true_set, pred_set, order_required = {}, {}, []
    for q in questions:
        true_set.update(DBpediaDict2PytrecDict(q["qname"]).tranform(q["gold"]))
        if q["order_matters"]:
            order_required.append(q["qname"])
        pred = q["pred"] if q["pred"] is not None else MISSING
        pred_set.update(DBpediaDict2PytrecDict(q["qname"]).tranform(pred))
    if order_required:
        true_set["order_required"] = order_required
    with tempfile.TemporaryDirectory() as tmp:
        t, p, o = (Path(tmp) / n for n in ("true.json", "pred.json", "out.json"))
        t.write_text(json.dumps(true_set), encoding="utf-8")
        p.write_text(json.dumps(pred_set), encoding="utf-8")
        code = ("from text2sparql_client.commands.evaluate import evaluate_command; "
                "evaluate_command()")
        subprocess.run([sys.executable, "-c", code, "api_name", str(t), str(p), "-o", str(o)],
                       check=True, env={**os.environ, "PYTHONPATH": os.environ["REF"]})
        results = json.loads(o.read_text(encoding="utf-8"))
    out[suite] = {"true_set": true_set, "pred_set": pred_set, "results": results}
(here / "oracle.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n",
                                  encoding="utf-8")
