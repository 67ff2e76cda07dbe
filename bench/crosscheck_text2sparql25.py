"""TEXT2SPARQL'25: the plugin's per-question set metrics against every evaluation the
organisers published, on a checkout of AKSW/text2sparql.aksw.org (not shipped: pass its path).

    python bench/crosscheck_text2sparql25.py PATH/TO/text2sparql.aksw.org

Prints, per dataset and team, how many published questions the plugin reproduces bit for bit,
and marks the answer-set files that are one file copied into several team folders (they do
not belong to the evaluation published beside them). The vendored subset is tested in
tests/sparql_metrics/test_text2sparql25_published.py.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import Counter
from pathlib import Path

from pytest_queryeval.metrics.text2sparql import question_metrics


def main(root: Path) -> int:
    totals = Counter[str]()
    for dataset in ("ck25", "db25"):
        gold = json.loads((root / "docs/benchmark" / f"{dataset}_true_result_set.json").read_text())
        files = sorted((root / "docs/results").glob(f"*/{dataset}_system_result_set.json"))
        digest = {f: hashlib.sha256(f.read_bytes()).hexdigest() for f in files}
        shared = Counter(digest.values())
        for f in files:
            evaluation = f.with_name(f"{dataset}_eval.json")
            if not evaluation.exists():
                continue
            published = json.loads(evaluation.read_text())
            pred = json.loads(f.read_text())
            questions = [q for q in published if q != "average"]
            same = sum(
                (m["set_precision"], m["set_recall"], m["set_f1"])
                == (published[q]["set_P"], published[q]["set_recall"], published[q]["set_F"])
                for q in questions
                for m in [question_metrics(gold.get(q, {}), pred.get(q, {}))])
            kind = "shared file" if shared[digest[f]] > 1 else "own file"
            totals[kind + " questions"] += len(questions)
            totals[kind + " agree"] += same
            print(f"{dataset} {f.parent.name:12} {kind:11} {same:4}/{len(questions)}")
    print(f"own files: {totals['own file agree']}/{totals['own file questions']} questions "
          f"bit for bit; shared files: {totals['shared file agree']}/"
          f"{totals['shared file questions']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
