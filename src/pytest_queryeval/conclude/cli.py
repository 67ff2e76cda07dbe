"""The ``queryeval`` command: one entry point, a subcommand per capability (merge, import,
init, view), each imported only when it is asked for (``queryeval merge`` must not load the
importers, the viewer's page or a database driver)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .merge import OK, USAGE_ERROR, run

#: The ``queryeval`` subcommands and their one-line help, in the order ``--help`` lists them.
COMMANDS = {
    "merge": "merge the JSON reports of a sharded run: queryeval merge SHARD.json... "
             "-o REPORT.json (queryeval merge --help)",
    "import": "turn a benchmark's files into a suite: queryeval import NAME [options], "
              "as queryeval-import (queryeval import --help lists the importers)",
    "init": "write a first suite for a database: queryeval init --datasource PATH_OR_URL "
            "[--kind sql|sparql] [--dir DIR]",
    "view": "one offline HTML page over several runs: queryeval view RUN.json... -o view.html",
    "redteam": "write a case file of generated attacks on an agent case file: queryeval "
               "redteam CASES.yaml [--seed N] [--count N] (queryeval redteam --help)",
    "mine": "turn recorded spans into unreviewed, pinned cases: queryeval mine SPANS... "
            "--datasource NAME --out DIR; re-pin: queryeval mine --refresh DIR "
            "(queryeval mine --help)",
}


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch ``queryeval SUBCOMMAND ...``; ``queryeval import`` is ``queryeval-import`` (a
    user who typed it was once shown the merge usage, with no hint that importers exist)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "view":
        from ..report.view import main as view_main

        return view_main(args[1:])
    if args and args[0] == "merge":
        return run(args[1:])
    if args and args[0] == "import":
        from ..importers.cli import main as import_main

        return import_main(args[1:], prog="queryeval import")
    if args and args[0] == "mine":
        from ..importers.mine import main as mine_main

        return mine_main(args[1:])
    if args and args[0] == "redteam":
        from ..suite.redteam import main as redteam_main

        return redteam_main(args[1:])
    if args and args[0] == "init":
        from ..suite.init import main as init_main

        return init_main(args[1:])
    helped = bool(args) and args[0] in ("-h", "--help")
    lines = ["usage: queryeval {" + ",".join(COMMANDS) + "} [options]", ""]
    lines += [f"  {name:<7} {text}" for name, text in COMMANDS.items()]
    if args and not helped:
        lines.insert(0, f"queryeval: unknown command {args[0]!r}")
    print("\n".join(lines), file=sys.stdout if helped else sys.stderr)
    return OK if helped else USAGE_ERROR


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
