"""``queryeval-import``: turn a benchmark's files into a YAML suite for the plugin."""

from __future__ import annotations

import sys

IMPORTERS = {
    "spider": ("pytest_queryeval.importers.spider", "Spider gold/pred txt (or dev.json) → SQL suite"),
    "buildingqa": ("pytest_queryeval.importers.buildingqa",
                   "BuildingQA <bldg>_combined.json → SPARQL suite"),
}


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help") or args[0] not in IMPORTERS:
        lines = ["usage: queryeval-import {spider,buildingqa} [options]", ""]
        lines += [f"  {name:<11} {text}" for name, (_, text) in IMPORTERS.items()]
        print("\n".join(lines), file=sys.stderr if args and args[0] not in ("-h", "--help") else sys.stdout)
        return 0 if args and args[0] in ("-h", "--help") else 2
    module = __import__(IMPORTERS[args[0]][0], fromlist=["main"])
    return int(module.main(args[1:]))


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
