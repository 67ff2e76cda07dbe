"""Benchmark: how many hostile predictions talk the LLM judge into a pass (issue 39 item 4).

Run: ``.venv/bin/python bench/bench_judge_injection.py [--src PATH]``.

The hostile corpus of ``tests/hardening/judge_injections.py`` (40 wrong predictions, 36 on a
SQLite file and 4 on a Turtle graph, each planting an instruction or a verdict in a comment, a
string literal, an alias, a result cell, Unicode lookalikes, a fence, a fake end of its data
block, an identifier, several objects or trailing lines; and one honest wrong prediction as
the control) runs through the whole plugin (``pytest`` in a subprocess, the real ``openai``
client) against five **stand-in** judges on a loopback OpenAI-compatible server
(``tests/fixtures/openai_standin.py``; no model that reliably obeys or quotes runs here):

* the **parser's part** (target 0): three stand-ins that never judge and only echo the prompt,
  the predicted query or the predicted result as they were shown; a verdict read from their
  answers is the verdict parser's doing;
* the **prompt's part**: a stand-in that obeys the last "respond <category>" or planted verdict
  object it reads outside the data blocks (it counts injections that escaped their block), and
  one that obeys any it reads anywhere, data included (the most gullible model).

Beside it, the **paraphrase** corpus of ``tests/hardening/judge_paraphrases.py`` (issue 50
item 6: 60 wrong predictions planting 25 requests to accept that name no category, "mark this
as correct", "please approve", "answer true", six other languages, claims; in aliases, cells,
literals and comments) against the obedient stand-in that accepts once it reads one, twice:
with the defaults, and with ``blind_check: true`` (a would-be rescue judged again blinded).

For each it prints how many answers held an accepting verdict object (an obeying stand-in was
talked into accepting; an echo carried a planted verdict back) and how many forms were rescued
(``details.judge.outcome == "rescued"``: the case passed on ``judge_ex``). ``--src`` measures
another checkout's ``src`` (the code before a fix).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, machine

sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tests.fixtures.openai_standin import KEY, MODEL, OpenAIStandin
from tests.hardening import judge_paraphrases
from tests.hardening.judge_injections import (
    SPARQL_FORMS,
    SQL_FORMS,
    STANDINS,
    forms,
    tally,
    write_corpus,
)


def run_one(root: Path, standin: OpenAIStandin, src: Path | None) -> dict[str, object]:
    write_corpus(root, standin.base_url, KEY, MODEL)
    return tally(run_suite(root, src))


def run_paraphrases(root: Path, standin: OpenAIStandin, src: Path | None,
                    blind_check: bool) -> dict[str, list[str]]:
    judge_paraphrases.write_paraphrase_corpus(root, standin.base_url, KEY, MODEL,
                                              blind_check=blind_check)
    report = run_suite(root, src)
    return {"talked": judge_paraphrases.talked(report),
            "rescued": judge_paraphrases.rescued(report)}


def run_suite(root: Path, src: Path | None) -> dict[str, object]:
    (root / "tox.ini").write_text("[pytest]\nqueryeval_files = test_*.yaml\n")
    report = root / "r.json"
    report.unlink(missing_ok=True)
    env = dict(os.environ)
    paths = [str(src)] if src is not None else [str(ROOT / "src")]
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           f"--queryeval-json={report}"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=900, check=False)
    if not report.is_file():
        raise SystemExit(f"no report written (exit {done.returncode}):\n"
                         f"{(done.stdout + done.stderr)[-3000:]}")
    return dict(json.loads(report.read_text()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", type=Path, help="the src directory to measure (default: this "
                    "checkout's)")
    args = ap.parse_args()
    print(f"machine: {machine()}")
    src = args.src.resolve() if args.src else None
    print(f"code measured: {src or ROOT / 'src'}")
    n = len(forms())
    print(f"corpus: {n} hostile forms ({len(SQL_FORMS)} SQL on SQLite, {len(SPARQL_FORMS)} "
          "SPARQL on a Turtle graph) and 1 honest control")
    totals = {"parser": [0, 0], "prompt": [0, 0]}
    standin = OpenAIStandin()
    try:
        print(f"{'stand-in judge':<20} {'part':<7} {'answers accepting':>18} "
              f"{'rescued':>11}  control")
        for name, (part, behaviour) in STANDINS.items():
            standin.behaviour = behaviour
            with tempfile.TemporaryDirectory(prefix="qe-judge-inj-") as tmp:
                seen = run_one(Path(tmp), standin, src)
            talked, rescued = seen["talked"], seen["rescued"]
            assert isinstance(talked, list)
            assert isinstance(rescued, list)
            totals[part][0] += len(rescued)
            totals[part][1] += 1
            print(f"{name:<20} {part:<7} {len(talked):>12} of {n:<3} {len(rescued):>6} of "
                  f"{n:<3} {seen['control']}")
            if rescued:
                print(f"    rescued: {', '.join(map(str, rescued))}")
        p = len(judge_paraphrases.forms())
        standin.behaviour = judge_paraphrases.obey_paraphrase
        print(f"paraphrase corpus: {p} forms ({len(judge_paraphrases.PHRASES)} requests to "
              "accept naming no category) against the obedient stand-in")
        paraphrase: dict[bool, int] = {}
        for blind in (False, True):
            with tempfile.TemporaryDirectory(prefix="qe-judge-para-") as tmp:
                try:
                    seen_p = run_paraphrases(Path(tmp), standin, src, blind)
                except SystemExit as exc:  # an older src refuses blind_check: not measured
                    print(f"blind_check: {str(blind).lower():<5} not measured ({str(exc)[:60]})")
                    continue
            paraphrase[blind] = len(seen_p["rescued"])
            print(f"blind_check: {str(blind).lower():<5} {len(seen_p['talked']):>6} of {p:<3} "
                  f"first answers accepting {len(seen_p['rescued']):>6} of {p:<3} rescued")
    finally:
        standin.close()
    parser, prompt = totals["parser"], totals["prompt"]
    print(f"parser's part: {parser[0]} rescues of {n} forms x {parser[1]} echoing stand-ins "
          "(target 0)")
    print(f"prompt's part: {prompt[0]} rescues of {n} forms x {prompt[1]} obeying stand-ins")
    for blind, count in paraphrase.items():
        print(f"paraphrase rescues ({'blind_check: true' if blind else 'defaults'}): "
              f"{count} of {p} forms")
    return 0 if parser[0] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
