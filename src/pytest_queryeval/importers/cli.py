"""``queryeval-import``: turn a benchmark's files into a YAML suite for the plugin."""

from __future__ import annotations

import sys

#: name -> (module, help text, entry function of the module)
IMPORTERS = {
    "spider": ("pytest_queryeval.importers.spider", "Spider gold/pred txt (or dev.json) → SQL suite",
               "main"),
    "buildingqa": ("pytest_queryeval.importers.buildingqa",
                   "BuildingQA <bldg>_combined.json → SPARQL suite", "main"),
    "bird": ("pytest_queryeval.importers.bird",
             "BIRD dev.json / mini_dev JSON (+ prediction file) → SQL suite", "main"),
    "bird-predictions": ("pytest_queryeval.importers.bird",
                         "BIRD prediction file → predictions JSONL", "main_predictions"),
    "livesqlbench": ("pytest_queryeval.importers.livesqlbench",
                     "LiveSQLBench jsonl → SQL suite (Query: soft_ex; Management: its test cases "
                     "on copies)", "main"),
    "qald": ("pytest_queryeval.importers.qald",
             "QALD-9/10 JSON → SPARQL suite (recorded answers)", "main"),
    "text2sparql": ("pytest_queryeval.importers.text2sparql",
                    "TEXT2SPARQL questions YAML → SPARQL suite", "main"),
    "spider2-lite": ("pytest_queryeval.importers.spider2",
                     "Spider 2.0-lite eval jsonl + gold CSVs → SQL suite (spider2_ex)", "main"),
    "ehrsql": ("pytest_queryeval.importers.ehrsql",
               "EHRSQL 2024 / TrustSQL answer.json + prediction.json → SQL suite "
               "(abstention: ehrsql)", "main"),
    "sparc": ("pytest_queryeval.importers.sparc",
              "SParC/CoSQL interactions (TSSE text or JSON) → SQL conversation suite", "main"),
}


def main(argv: list[str] | None = None, prog: str = "queryeval-import") -> int:
    """``queryeval-import NAME ...``, also reached as ``queryeval import NAME ...`` (``prog``
    names the command in the usage)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help") or args[0] not in IMPORTERS:
        lines = [f"usage: {prog} {{{','.join(IMPORTERS)}}} [options]", ""]
        lines += [f"  {name:<17} {text}" for name, (_, text, _) in IMPORTERS.items()]
        print("\n".join(lines), file=sys.stderr if args and args[0] not in ("-h", "--help") else sys.stdout)
        return 0 if args and args[0] in ("-h", "--help") else 2
    from ._common import invoked_as

    module_name, _, function = IMPORTERS[args[0]]
    module = __import__(module_name, fromlist=[function])
    with invoked_as(prog):
        return int(getattr(module, function)(args[1:]))


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
