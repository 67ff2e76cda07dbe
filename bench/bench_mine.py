"""``queryeval mine`` on 1,000 recorded spans of the example agent (issue 63 item 6).

1. Record: the example agent (example_suite/agents: the scripted stand-in model, tools run on
   a copy of Chinook) answers its questions in turn, traced as OpenInference spans
   (bench/agent_spans.py), until 1,000 spans; some questions carry a planted secret (a key a
   user pasted), some are the same question spelled otherwise.
2. Mine: ``queryeval mine`` of the span file into a suite whose ``queryeval.yaml`` names the
   Chinook copy, pins included (``--runs`` times, each into a fresh folder; the median).
3. Measure: the deduplication ratio (traces with a question / cases); how many of the planted
   secrets reach the case file or mined.json (target 0); the mining time for 1,000 spans
   (target < 10 s); the share of mined cases that replay bit-identically on their pinned
   state (target >= 95 %): the pins computed again equal the written ones (no drift), and the
   gold run through the plugin's own source gives the very result text the trace recorded
   (the agent's ``run_query`` output: the first 20 rows as JSON). Last, the mined suite run
   by pytest with the golds as the predictions: passed, drifted.

``--real-model N`` also records N spans from the real local model (SmolLM2-135M-Instruct under
llama-cpp-python's server, as tests/fixtures/llm_server.py starts it) and mines them. Each
run's first step is forced to call ``run_query`` (``tool_choice``): the 135M model calls no tool
on its own (0 tool calls in 500 spans), so its traces would hold no query to mine; the query
it writes, and all that follows, is the model's, sampled at temperature 0.8 with a seed per
trace (production traffic varies; at temperature 0 each question gives one trace).

    python bench/bench_mine.py [--spans 1000] [--runs 3] [--real-model 0]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import agent_spans
from _common import ROOT, machine

from pytest_queryeval.conclude.cli import main as queryeval


def mine(spans: Path, suite: Path) -> tuple[float, str]:
    """Seconds of one ``queryeval mine`` (in this process) into ``suite``, and what it said."""
    out = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = queryeval(["mine", str(spans), "--datasource", "chinook", "--out", str(suite),
                          "--trajectory"])
    seconds = time.perf_counter() - t0
    assert code == 0, out.getvalue()
    return seconds, out.getvalue()


def new_suite(base: Path, name: str, db: Path) -> Path:
    suite = base / name
    suite.mkdir()
    (suite / "queryeval.yaml").write_text(
        f"datasources:\n  chinook: {{type: sqlite, path: {db}}}\n"
        "predictions: {source: file, path: golds.jsonl}\n", encoding="utf-8")
    (suite / "pytest.ini").write_text("[pytest]\nqueryeval_files = test_*.yaml\n")
    return suite


def recorded(spans: Path) -> dict[str, str]:
    """Each trace's observed result text (its last query that ran without an error)."""
    from pytest_queryeval.importers.mine import group_traces, read_spans

    traces = group_traces((s, spans.name) for s in read_spans(spans))
    return {t.trace_id: t.observed[1] for t in traces if t.observed}


def bit_identical(suite: Path, spans: Path, db: Path) -> tuple[int, int, list[str]]:
    """(cases replayed identically, cases with a gold, why each other one was not)."""
    import yaml

    from pytest_queryeval.importers.pinning import Pinner
    from pytest_queryeval.sources import open_source

    cases = [c for c in yaml.safe_load((suite / "test_mined.yaml").read_text())["cases"]
             if "gold" in c]
    results = recorded(spans)
    source = open_source("chinook", {"type": "sqlite", "path": str(db)})
    pinner = Pinner("chinook", {"type": "sqlite", "path": str(db)})
    same, why = 0, []
    try:
        for case in cases:
            pin = pinner.pin(case["gold"])
            rows = source.execute(case["gold"], trusted=True).rows[:20]
            text = json.dumps({"rows": [list(r) for r in rows]}, default=str)
            if pin != case.get("pin"):
                why.append(f"{case['id']}: pin differs")
            elif text != results.get(case["provenance"]["trace"]):
                why.append(f"{case['id']}: result differs")
            else:
                same += 1
    finally:
        source.close()
        pinner.close()
    return same, len(cases), why


def replay(suite: Path) -> str:
    """The mined suite run by pytest, the golds as the predictions: the summary figures."""
    import yaml

    cases = yaml.safe_load((suite / "test_mined.yaml").read_text())["cases"]
    (suite / "golds.jsonl").write_text("".join(
        json.dumps({"id": c["id"], "predicted": c.get("gold", {"abstain": True})}) + "\n"
        for c in cases))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:randomly", f"--queryeval-json={suite / 'r.json'}"],
                          cwd=suite, capture_output=True, text=True, timeout=600, check=False)
    report = json.loads((suite / "r.json").read_text())
    outcomes = [c["outcome"] for c in report["cases"]]
    drifted = sum(1 for c in report["cases"] if c.get("drifted"))
    return (f"{outcomes.count('passed')} passed, {outcomes.count('failed')} failed, "
            f"{outcomes.count('error')} errors, {drifted} drifted of {len(outcomes)} "
            f"(exit {done.returncode})")


def leaked(suite: Path, planted: list[str]) -> int:
    text = (suite / "test_mined.yaml").read_text() + (suite / "mined.json").read_text()
    return sum(1 for secret in planted if secret in text
               or secret.removeprefix("Bearer ") in text)


def scripted(base: Path, db: Path, args: argparse.Namespace) -> None:
    server = agent_spans.scripted_model()
    agent = agent_spans.Agent(server.base_url, agent_spans.MODEL_NAME, db)
    t0 = time.perf_counter()
    try:
        spans = agent_spans.record(agent, args.spans, list(agent_spans.script()))
    finally:
        server.close()
    recording = time.perf_counter() - t0
    path = base / "spans.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in spans), encoding="utf-8")
    planted = sum(1 for s in spans if "my key is" in json.dumps(s.get("attributes"))
                  and not s.get("parentSpanId"))
    print(f"recorded: {len(spans)} spans, {planted} traces with a planted secret, "
          f"in {recording:.2f} s (the scripted stand-in model)")
    times, said, suite = [], "", base
    for run in range(args.runs):
        suite = new_suite(base, f"suite{run}", db)
        seconds, said = mine(path, suite)
        times.append(seconds)
    summary = json.loads((suite / "mined.json").read_text())
    print(said.strip().splitlines()[0])
    print(f"deduplication ratio: {summary['deduplication_ratio']}x "
          f"({summary['with_question']} traces with a question -> {summary['cases']} cases)")
    print(f"planted secrets in a case file: {leaked(suite, agent_spans.SECRETS)} of "
          f"{len(agent_spans.SECRETS)} planted forms (target 0); masked: "
          f"{len(summary['masked'])} strings")
    print(f"mining {len(spans)} spans: median {statistics.median(times):.3f} s over "
          f"{len(times)} runs (min {min(times):.3f}, max {max(times):.3f}; target < 10 s)")
    same, total, why = bit_identical(suite, path, db)
    print(f"replayed bit-identically on the pinned state: {same} of {total} mined cases with "
          f"a gold ({100 * same / total:.1f} %; target >= 95 %)"
          + "".join(f"\n  {w}" for w in why))
    print(f"pytest replay of the mined suite, the golds as predictions: {replay(suite)}")


def real_model(base: Path, db: Path, spans_wanted: int) -> None:
    """Spans from the real local model, mined: what a 135M model's traces give."""
    sys.path.insert(0, str(ROOT))
    from tests.fixtures import llm_server as fx

    reason = fx.missing()
    if reason or fx.gguf_path() is None:
        print(f"real model: not run ({reason or 'no GGUF'})")
        return
    port = fx.free_port()
    url = f"http://127.0.0.1:{port}/v1"
    log = (base / "llm.log").open("ab")
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model",
                             str(fx.gguf_path()), "--model_alias", fx.MODEL, "--host",
                             "127.0.0.1", "--port", str(port), "--api_key", fx.KEY, "--n_ctx",
                             "2048", "--n_threads", "1", "--n_threads_batch", "1",
                             "--logits_all", "False", "--seed", "1"],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + fx.START_TIMEOUT
        while not fx._get_models(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                print("real model: the server did not start")
                return
            time.sleep(0.2)
        agent = agent_spans.Agent(url, fx.MODEL, db, api_key=fx.KEY, first_tool="run_query",
                                  temperature=0.8)
        t0 = time.perf_counter()
        spans = agent_spans.record(agent, spans_wanted, list(agent_spans.script()))
        seconds = time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(20)
    path = base / "real-spans.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in spans), encoding="utf-8")
    traces = len({s["traceId"] for s in spans})
    print(f"real model: {len(spans)} spans ({traces} traces) in {seconds:.1f} s "
          f"({seconds / len(spans):.2f} s a span: 1,000 spans would take "
          f"{1000 * seconds / len(spans) / 60:.0f} min)")
    suite = new_suite(base, "real", db)
    took, said = mine(path, suite)
    summary = json.loads((suite / "mined.json").read_text())
    print(f"real model mined in {took:.3f} s: {summary['cases']} cases "
          f"(deduplication {summary['deduplication_ratio']}x); " + said.splitlines()[0])
    same, total, why = bit_identical(suite, path, db)
    tools = sum(1 for s in spans if any(a["key"] == "tool.name" for a in s["attributes"]))
    print(f"real model: {tools} tool spans; planted secrets in a case file: "
          f"{leaked(suite, agent_spans.SECRETS)}; replayed bit-identically: {same} of {total} "
          "cases with a gold" + "".join(f"\n  {w}" for w in why[:5]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    ap.add_argument("--spans", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--real-model", type=int, default=0, metavar="N",
                    help="also record N spans from the real local model (0: not run)")
    args = ap.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory(prefix="bench-mine-") as tmp:
        base = Path(tmp)
        db = base / "chinook.sqlite"
        shutil.copy(agent_spans.CHINOOK, db)
        scripted(base, db, args)
        if args.real_model:
            real_model(base, db, args.real_model)


if __name__ == "__main__":
    main()
