"""The reference artifacts the conformance layer runs: one :class:`Artifact` per entry of
:data:`ARTIFACTS` (issue 48 item 6).

An entry is all the layer knows of an artifact: how its suite is made from the files of
``tests/data`` (``queryeval-import`` where the project has an importer for the benchmark's own
files; otherwise the suite a user writes from them: recorded gold and predicted results), the
run options, how the headline is read from a JSON report, and the reference's printed figure
with the file that prints it. Every artifact's empty, unparsable and missing answers go in as
they are: an answer set the system left empty is an empty ``predicted:`` (the reference scores
it 0), a prediction the evaluator cannot parse stays as written, a missing turn stays missing.

tau-bench's airline trajectories and HumanEval's estimator (``passk/``) run ``repeat:`` against
a stand-in model (:data:`STAND_IN`) that gives a task's requests its trials in the order the
session makes them, counted in a file the xdist workers share: which run gets which trial is
scheduling (``runs_in_any_order``), how many runs of a task pass, all pass@k and pass^k read,
is not.

Artifacts whose reference figures are per item only (no printed session figure to compare a
run's headline with) are checked where their oracle is (docs/metrics.md, "Reference
artifacts"): BIRD's Soft-F1 / Denodo (``calculate_f1_score`` per row-set pair; BIRD's printed
EX table is ``bird-chinook-ex``, on Chinook: no BIRD database is here), Soft EX (per text, value pair
and Chinook pair), Spider 2.0-lite, Ambrosia (per fixture and hash order), EHRSQL's scoring
runs with the scorer's rounding and error branches (``every_branch``, ``first_100_rows``),
SDMX and the JSON paper's worked examples (per example), BuildingQA (no reference run at all).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support import Report, dump, write_suite

#: A recorded answer's query text: the recorded result is what is scored; the text only has
#: to be a SPARQL query that parses.
ANSWERED = "SELECT ?v WHERE { ?s ?p ?v }"


@dataclass(frozen=True)
class Artifact:
    """One reference artifact: its suite, its run, its headline and the reference's figure."""

    #: the test id (``test_reference_runs.py::...[NAME]``), as docs/metrics.md cites it
    name: str
    #: the reference and its commit, as docs/metrics.md names it
    reference: str
    #: writes the suite into its folder from the reference data (``shared_data``)
    build: Callable[[Path, Path], None]
    #: the headline, read from a run's JSON report
    headline: Callable[[Report], Any]
    #: the reference's printed figure, read from the file it printed it to
    expected: Callable[[Path], Any]
    #: where the figure is printed (a path under tests/data)
    source: str
    #: what answers the artifact holds beside right and wrong ones
    answers: str
    #: options of every run of the suite beside strict gating and the reports
    options: tuple[str, ...] = field(default=())
    #: a case's repeated runs may be recorded in another order by another way of running: the
    #: stand-in model answers a task's n-th request as trial n, and which run asks n-th is the
    #: prediction pool's scheduling (the pass counts, all pass@k and pass^k read, are the same)
    runs_in_any_order: bool = False
    #: the suite reads the Bolt server of ``tests/fixtures/bolt_server.py``: its config names
    #: :data:`BOLT_URL`, which the run replaces with the server's URL
    bolt: bool = False


#: The URL a Bolt artifact's config names until its run writes the fixture server's there.
BOLT_URL = "bolt://127.0.0.1:1"


def _load(path: Path) -> Any:
    opener: Any = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def _literals(values: list[str]) -> dict[str, Any]:
    """A flattened answer set (value -> 1, as the references keep it) as a SPARQL JSON result
    whose flattening is that set, in that order (ndcg reads the order)."""
    return {"head": {"vars": ["v"]}, "results": {"bindings": [
        {"v": {"type": "literal", "value": v}} for v in values]}}


def _sparql_suite(folder: Path, name: str, cases: list[dict[str, Any]]) -> None:
    # record_only: the figures, not a gate: the run passes, its headline is the figure
    write_suite(folder, {"record_only": True}, {f"test_{name}.yaml": dump(
        {"kind": "sparql", "cases": cases})})


def _recorded_case(cid: str, gold: Any, answer: Any, **extra: Any) -> dict[str, Any]:
    """A question with its recorded gold and answer; ``answer`` None is no answer at all: an
    empty prediction, with the empty result the reference scores it by."""
    return {"id": cid, "gold": ANSWERED, "gold_result": gold,
            "predicted": "" if answer is None else ANSWERED,
            "predicted_result": _literals([]) if answer is None else answer, **extra}


def _answer_set(values: list[str]) -> dict[str, Any] | None:
    """A published flattened answer set; an empty one is a system that gave no answer (the
    organisers' and GERBIL's files cannot tell an empty result from no query)."""
    return _literals(values) if values else None


# -- TEXT2SPARQL'25: the organisers' published results -----------------------------------------
#: questions_db25.yaml: the db25 questions with RESULT_ORDER_MATTERS (tests/data/text2sparql25)
DB25_ORDERED = {46, 96}
T2S_HEAD = ("set_P", "set_recall", "set_F", "ndcg", "set_F_ndcg")
T2S_OURS = ("set_precision", "set_recall", "set_f1", "ndcg", "set_f1_ndcg")


def _flattened(answers: dict[str, int]) -> dict[str, Any] | None:
    """A published answer set as the result it was flattened from: the client flattens an ASK
    result to ``{"true": 0|1}``, any other to value -> 1 (an empty set: no answer)."""
    if list(answers) == ["true"]:
        return {"head": {}, "boolean": bool(answers["true"])}
    return _answer_set(list(answers))


def _t2s25_build(dataset: str, team: str) -> Callable[[Path, Path], None]:
    def build(data: Path, folder: Path) -> None:
        root = data / "text2sparql25"
        gold = _load(root / f"{dataset}_true_result_set.json")
        pred = _load(root / team / f"{dataset}_system_result_set.json")
        published = _load(root / team / f"{dataset}_eval.json")
        cases = []
        for q in (q for q in published if q != "average"):
            ordered = dataset == "db25" and int(q.split(":")[1].split("-")[0]) in DB25_ORDERED
            cases.append(_recorded_case(
                q, _flattened(gold.get(q, {})) or _literals([]), _flattened(pred.get(q, {})),
                **({"features": ["RESULT_ORDER_MATTERS"]} if ordered else {})))
        _sparql_suite(folder, f"{dataset}_{team.lower()}", cases)
    return build


def _t2s_headline(keys: int) -> Callable[[Report], Any]:
    def headline(report: Report) -> Any:
        agg = report["aggregates"].get("text2sparql") or {}
        return {h: agg.get(o) for h, o in zip(T2S_HEAD[:keys], T2S_OURS[:keys], strict=True)}
    return headline


def _t2s25_expected(dataset: str, team: str, keys: int) -> Callable[[Path], Any]:
    def expected(data: Path) -> Any:
        average = _load(data / "text2sparql25" / team / f"{dataset}_eval.json")["average"]
        return {h: average[h] for h in T2S_HEAD[:keys]}
    return expected


# -- TEXT2SPARQL client's evaluate on built questions ------------------------------------------
def _t2s_client_build(session: str) -> Callable[[Path, Path], None]:
    def build(data: Path, folder: Path) -> None:
        cases = [_recorded_case(q["qname"], q["gold"], q["pred"],
                                **({"features": ["RESULT_ORDER_MATTERS"]}
                                   if q["order_matters"] else {}))
                 for q in _load(data / "text2sparql" / "cases.json")[session]]
        _sparql_suite(folder, session, cases)
    return build


def _t2s_client_expected(session: str) -> Callable[[Path], Any]:
    def expected(data: Path) -> Any:
        average = _load(data / "text2sparql" / "oracle.json")[session]["results"]["average"]
        return {h: average[h] for h in T2S_HEAD}
    return expected


# -- GERBIL QA (FMeasureCalculator) ------------------------------------------------------------
def _gerbil_build(session: str) -> Callable[[Path, Path], None]:
    def build(data: Path, folder: Path) -> None:
        questions = _load(data / "gerbil" / "cases.json")[session]
        cases = [_recorded_case(f"{session}-{i}", _literals(q["gold"]),
                                _answer_set(q["answer"]))
                 for i, q in enumerate(questions)]
        _sparql_suite(folder, session, cases)
    return build


def _gerbil_headline(report: Report) -> Any:
    from pytest_queryeval.metrics.gerbil_qa import AGGREGATE_LABELS

    agg = report["aggregates"].get("gerbil") or {}
    return {label: agg.get(name) for name, label in AGGREGATE_LABELS.items()}


def _gerbil_expected(session: str) -> Callable[[Path], Any]:
    def expected(data: Path) -> Any:
        from pytest_queryeval.metrics.gerbil_qa import AGGREGATE_LABELS

        printed = _load(data / "gerbil" / "oracle.json")[session]
        # doubles printed with Double.toHexString; NaN (0/0) is the report's null
        return {label: None if printed[label] == "NaN" else float.fromhex(printed[label])
                for label in AGGREGATE_LABELS.values()}
    return expected


# -- Spider (evaluation.py --etype match) ------------------------------------------------------
def _spider_build(data: Path, folder: Path) -> None:
    from pytest_queryeval.importers.cli import main as queryeval_import

    spider = data / "spider"
    assert queryeval_import(["spider", "--gold", str(spider / "gold_example.txt"),
                             "--pred", str(spider / "pred_example.txt"),
                             "--tables", str(spider / "tables.json"),
                             "--out", str(folder)]) == 0


def _spider_headline(report: Report) -> Any:
    from pytest_queryeval.metrics.spider import format_table

    return format_table(report["aggregates"]["spider"])


def _spider_expected(data: Path) -> Any:
    printed = (data / "spider" / "oracle" / "spider_head_match__gold_example.txt").read_text()
    return printed[printed.index(" " * 21 + "easy"):]


# -- BIRD mini_dev evaluation_ex.py (its printed EX table) ---------------------------------------
#: evaluation_utils.print_data's two rows of figures: counts, then EX (percent, two decimals)
BIRD_LEVELS = ("simple", "moderate", "challenging")


def _bird_build(data: Path, folder: Path) -> None:
    """``bird_chinook/``'s mini_dev files through ``queryeval-import bird``, the database laid
    out as the reference read it (``dbs/chinook/chinook.sqlite``)."""
    import shutil

    from pytest_queryeval.importers.cli import main as queryeval_import

    inputs = data / "bird_chinook"
    (folder / "dbs" / "chinook").mkdir(parents=True)
    shutil.copyfile(data / "chinook" / "Chinook_Sqlite.sqlite",
                    folder / "dbs" / "chinook" / "chinook.sqlite")
    assert queryeval_import(["bird", str(inputs / "mini_dev_sqlite.json"), "--pred",
                             str(inputs / "predict_mini_dev.json"), "--db",
                             str(folder / "dbs" / "{db}" / "{db}.sqlite"),
                             "--out", str(folder)]) == 0


def _bird_headline(report: Report) -> Any:
    """The count and EX rows as ``print_data`` lays them out, from the report's bird_ex means
    (per difficulty, then the session's)."""
    agg = report["aggregates"]
    groups = [agg["by_difficulty"].get(level) or {} for level in BIRD_LEVELS]
    counts = [g.get("count") for g in groups] + [agg["overall"]["count"]]
    means = [(g.get("metrics") or {}).get("bird_ex", {}).get("mean") for g in groups]
    means.append(agg["overall"]["metrics"]["bird_ex"]["mean"])
    return ["{:20} {:<20} {:<20} {:<20} {:<20}".format("count", *counts),
            "{:20} {:<20.2f} {:<20.2f} {:<20.2f} {:<20.2f}".format(
                "EX", *(None if m is None else m * 100 for m in means))]


def _bird_expected(data: Path) -> Any:
    printed = (data / "bird_chinook" / "oracle_evaluation_ex.txt").read_text().splitlines()
    return [line for line in printed if line.split()[:1] in (["count"], ["EX"])]


# -- test-suite-sql-eval's turn table (SParC) --------------------------------------------------
TSSE_SETS = {
    "tsse": ("spider/tsse_gold.txt", "spider/tsse_predict.txt", "tsse/oracle_tsse_match.txt"),
    "sparc": ("tsse/sparc_gold.txt", "tsse/sparc_predict.txt", "tsse/oracle_sparc_match.txt"),
}


def _tsse_build(name: str) -> Callable[[Path, Path], None]:
    def build(data: Path, folder: Path) -> None:
        from pytest_queryeval.importers.cli import main as queryeval_import

        gold, pred, _ = TSSE_SETS[name]
        assert queryeval_import(["sparc", str(data / gold), "--pred", str(data / pred),
                                 "--tables", str(data / "spider" / "tables.json"),
                                 "--out", str(folder), "--reference"]) == 0
    return build


def _tsse_headline(report: Report) -> Any:
    """The reference's two tables (per hardness, per turn) from the records, as
    ``--queryeval-spider-table`` prints them."""
    from pytest_queryeval.figures.turn_table import turn_table_lines

    lines = turn_table_lines(report["cases"], full=True)
    return [line.rstrip() for line in lines[1:13]]


def _tsse_expected(name: str) -> Callable[[Path], Any]:
    def expected(data: Path) -> Any:
        printed = (data / TSSE_SETS[name][2]).read_text().splitlines()
        start = max(i for i, line in enumerate(printed) if line.split()[:1] == ["easy"])
        return [line.rstrip() for line in [*printed[start:start + 5], *printed[-7:]]]
    return expected


# -- EHRSQL 2024 scoring program (scoring_v2.py run unmodified) ---------------------------------
def _select(answer: str) -> str:
    """The query whose result is an answer of the scorer's ``answer.json`` (``[['x']]``)."""
    import ast

    rows = ast.literal_eval(answer)
    return " UNION ALL ".join("SELECT " + ", ".join(repr(v) for v in row) for row in rows)


def _ehrsql_build(run: str) -> Callable[[Path, Path], None]:
    def build(data: Path, folder: Path) -> None:
        import sqlite3

        pairs = _load(data / "ehrsql" / "oracle.json")["suites"][run]["pairs"]
        cases = []
        for i, (real, pred) in enumerate(pairs):
            case: dict[str, Any] = {"id": f"q{i}", "question": f"question {i}",
                                    "predicted": None if pred == "null" else _select(pred)}
            if real == "null":  # unanswerable: the right output is no answer
                case["expect"] = "abstain"
            else:
                case["gold"] = _select(real)
            cases.append(case)
        write_suite(folder, {"datasources": {"db": {"type": "sqlite", "path": "empty.sqlite"}},
                             "thresholds": {"execution_accuracy": 1.0}},
                    {f"test_{run}.yaml": dump({"kind": "sql", "datasource": "db",
                                               "cases": cases})})
        sqlite3.connect(folder / "empty.sqlite").close()
    return build


EHRSQL_KEYS = {"accuracy0": "0", "accuracy5": "5", "accuracy10": "10", "accuracyN": "n"}


def _ehrsql_headline(report: Report) -> Any:
    """RS(0/5/10/N) as ``scores.json`` prints them (percent)."""
    agg = report["aggregates"].get("abstention") or {}
    return {key: None if agg.get(f"reliability_score_{p}") is None
            else agg[f"reliability_score_{p}"] * 100 for key, p in EHRSQL_KEYS.items()}


def _ehrsql_expected(run: str) -> Callable[[Path], Any]:
    def expected(data: Path) -> Any:
        return dict(_load(data / "ehrsql" / "oracle.json")["suites"][run]["scores_json"])
    return expected


def _ehrsql_1000_build(data: Path, folder: Path) -> None:
    """The 1,000 pairs of ``ehrsql/pairs1000`` through ``queryeval-import ehrsql`` (its
    ``abstention: ehrsql``), as tests/abstention/test_ehrsql_preset.py imports them."""
    from pytest_queryeval.importers.cli import main as queryeval_import

    inputs = data / "ehrsql" / "pairs1000"  # shared_data: decompressed
    assert queryeval_import(["ehrsql", str(inputs / "answer.json"), "--predictions",
                             str(inputs / "prediction.json"), "--out", str(folder)]) == 0
    (folder / "tox.ini").write_text("[pytest]\nqueryeval_files = test_*.yaml\n",
                                    encoding="utf-8")


def _ehrsql_1000_expected(data: Path) -> Any:
    return dict(_load(data / "ehrsql" / "pairs1000" / "oracle.json")["scores_json"])


# -- tau-bench display_metrics (pass^k) and HumanEval estimate_pass_at_k (pass@k) -------------
#: The stand-in model of the pass^k entries (no model runs here): a task's n-th request is
#: its trial n mod N, n counted in a file per task under an exclusive lock, so the count is the
#: session's, whichever xdist worker's pool makes the request (tests/engine's stand-in counts
#: per process, which ``-n 2`` splits: a worker asking two runs of a task gave trials 0 and 1
#: twice). A live source is not told the run's index (``Case.json_input`` has none), and each
#: run of a session is one request (``PredictionPool``: a key is requested once), so every
#: session asks each task N times and gets each trial once, in some order.
STAND_IN = """
import fcntl
import json
from pathlib import Path

HERE = Path(__file__).parent
TRIALS = json.loads((HERE / "trials.json").read_text())
RIGHT = {right}
WRONG = {wrong}


def predict(case):
    task = case["id"].split("[")[0]
    with open(HERE / ("calls-" + task), "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        n = len(f.read())
        f.write("x")
    reward = TRIALS[task][n % len(TRIALS[task])]
    return RIGHT if 1 - 1e-6 <= reward <= 1 + 1e-6 else WRONG
"""


def _stand_in() -> str:
    from tests.sdmx_cases import GDP, MEX, selection

    return STAND_IN.format(right=json.dumps(selection(GDP)), wrong=json.dumps(selection(MEX)))


def _airline_build(data: Path, folder: Path) -> None:
    """tau-bench's stored gpt-4o airline trajectories (50 tasks x 4 trials) as the suite of
    tests/engine/test_pass_k_runs.py: ``repeat: 4`` against the stand-in model, each request
    of a task answered as a trial's reward says."""
    from tests.engine.test_pass_k_runs import _airline_suite

    _airline_suite(folder, data)
    (folder / "stand_in.py").write_text(_stand_in(), encoding="utf-8")


def _pass_k_headline(figure: str) -> Callable[[Report], Any]:
    def headline(report: Report) -> Any:
        return (report["aggregates"].get("pass_k") or {}).get(figure)
    return headline


def _airline_expected(data: Path) -> Any:
    return _load(data / "passk" / "airline.json")["pass_hat_k"]


def _humaneval_build(index: int) -> Callable[[Path, Path], None]:
    def build(data: Path, folder: Path) -> None:
        """A generated suite of (n samples, c correct) cases: case i runs ``repeat: n`` against
        the same stand-in model, c of its n answers right."""
        from tests.sdmx_cases import GDP, sdmx_case, selection

        pairs = _load(data / "passk" / "humaneval.json")["suites"][index]["cases"]
        trials = {f"task-{i:02d}": [1.0] * c + [0.0] * (n - c) for i, (n, c) in enumerate(pairs)}
        cases = [{**sdmx_case(task, selection(GDP)), "repeat": len(rewards)}
                 for task, rewards in trials.items()]
        write_suite(folder, {"predictions": {"source": "python", "function": "stand_in:predict"}},
                    {"test_humaneval.yaml": {"kind": "sdmx", "repeat_rule": "any",
                                             "thresholds": {"macro_precision": 1.0},
                                             "cases": cases},
                     "trials.json": trials, "stand_in.py": _stand_in()})
    return build


def _humaneval_expected(index: int) -> Callable[[Path], Any]:
    def expected(data: Path) -> Any:
        return _load(data / "passk" / "humaneval.json")["suites"][index]["mean"]
    return expected


def _cypherbench_pairs(data: Path) -> list[dict[str, Any]]:
    """The film-graph pairs the reference scored on the records its own ``run_query`` read
    through the neo4j driver from the Bolt server (``graph_oracle_bolt.json``), less the one
    it raises on (a gold holding a list with null: its run would stop there)."""
    pairs = _load(data / "cypherbench" / "graph_oracle_bolt.json")["pairs"]
    return [p for p in pairs if not isinstance(p["execution_accuracy"], dict)]


def _cypherbench_build(data: Path, folder: Path) -> None:
    """Those pairs as a ``kind: cypher`` suite on a ``type: bolt`` source: the server the
    reference read, through the plugin's own driver path and CypherBench view."""
    cases = [{"id": p["id"], "gold": p["gold_text"], "predicted": p["pred_text"]}
             for p in _cypherbench_pairs(data)]
    write_suite(folder, {"datasources": {"movies": {"type": "bolt", "url": BOLT_URL,
                                                    "timeout": 20}}},
                {"test_cypherbench.yaml": {"kind": "cypher", "datasource": "movies",
                                           "cases": cases}})


def _cypherbench_headline(report: Report) -> Any:
    metrics = report["aggregates"]["by_kind"]["cypher"]["metrics"]
    return (metrics["cypherbench_ex"]["mean"], metrics["cypherbench_executable"]["mean"],
            metrics["cypherbench_ex"]["n"])


def _cypherbench_expected(data: Path) -> Any:
    """The mean of the reference's scores, as its evaluate.py averages them (before its
    rounding to four digits)."""
    pairs = _cypherbench_pairs(data)
    return (sum(p["execution_accuracy"] for p in pairs) / len(pairs),
            sum(p["executable"] for p in pairs) / len(pairs), len(pairs))


def _evalbench_trajectories(data: Path) -> list[dict[str, Any]]:
    return list(_load(data / "evalbench" / "oracle.json")["trajectories"])


def _evalbench_edges(data: Path) -> list[dict[str, Any]]:
    """The inputs the plugin once read differently (falsy and text trajectories, falsy
    errors, a null gold, names outside the OpenAI rule), scored by TrajectoryMatcher only."""
    return list(_load(data / "evalbench" / "edge_oracle.json")["items"])


#: An agent case of the EvalBench artifact per trajectory and per native-tool filter (the
#: reference's ``filter_native_tools``): ``(case id suffix, filter, index of the Jaccard
#: configuration in the oracle's scores; the ordered one is two further)``.
_EVALBENCH_FILTERS = (("filter", True, 0), ("raw", False, 1))


def _evalbench_build(data: Path, folder: Path) -> None:
    """``evalbench/oracle.json``'s 120 OpenAI tool-call trajectories as agent cases (each
    scored with and without the native-tool filter), the trajectories and the agents' own
    errors (``generated_error``) in a predictions file, as a user brings an outside agent's
    runs; the final query is one the database answers (the trajectory is what is scored)."""
    import sqlite3

    with sqlite3.connect(folder / "db.sqlite") as con:
        con.execute("CREATE TABLE t (x INTEGER)")
    con.close()
    cases, rows = [], []
    for i, item in enumerate(_evalbench_trajectories(data)):
        for suffix, flt, _ in _EVALBENCH_FILTERS:
            cid = f"t{i:03d}-{suffix}"
            cases.append({"id": cid, "question": f"trajectory {i}", "gold": "SELECT 1",
                          "agent": {"trajectory": item["gold"], "filter_native_tools": flt}})
            rows.append({"id": cid, "predicted": "SELECT 1", "trajectory": item["trajectory"],
                         **({"error": item["error"]} if item["error"] is not None else {})})
    for i, edge in enumerate(_evalbench_edges(data)):  # the forms read as the reference reads
        for suffix, flt, _ in _EVALBENCH_FILTERS:
            cid = f"e{i:03d}-{suffix}"
            cases.append({"id": cid, "question": edge["form"], "gold": "SELECT 1",
                          "agent": {"trajectory": edge["gold"], "filter_native_tools": flt}})
            rows.append({"id": cid, "predicted": "SELECT 1", "trajectory": edge["generated"],
                         **({"error": edge["error"]} if edge["error"] is not None else {})})
    (folder / "agent_runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows),
                                             encoding="utf-8")
    write_suite(folder, {"datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
                         "predictions": {"source": "file", "path": "agent_runs.jsonl"}},
                {"test_agents.yaml": {"kind": "sql", "datasource": "db", "cases": cases}})


#: The scores of an agent case the EvalBench artifact compares, in the reference's order:
#: TrajectoryMatcher (Jaccard), TrajectoryMatcher (``enforce_order``), AgentSteps, TurnCount.
_EVALBENCH_METRICS = ("trajectory_match", "trajectory_match_ordered", "tool_calls",
                      "turn_count")


def _evalbench_headline(report: Report) -> Any:
    return {c["id"]: tuple(c["metrics"].get(m) for m in _EVALBENCH_METRICS[
        :2 if c["id"].startswith("e") else None]) for c in report["cases"]}


def _evalbench_expected(data: Path) -> Any:
    """Each score the reference gave each trajectory, under each filter."""
    return {f"t{i:03d}-{suffix}": (item["scores"][k][0], item["scores"][k + 2][0],
                                   item["agent_steps"][0], item["turn_count"][0])
            for i, item in enumerate(_evalbench_trajectories(data))
            for suffix, _, k in _EVALBENCH_FILTERS} | {
        f"e{i:03d}-{suffix}": (edge["scores"][k][0], edge["scores"][k + 2][0])
        for i, edge in enumerate(_evalbench_edges(data)) for suffix, _, k in _EVALBENCH_FILTERS}


#: Every reference artifact the layer runs. The ids are cited in docs/metrics.md.
ARTIFACTS: list[Artifact] = [
    Artifact(
        "spider-dev-match", "taoyds/spider evaluation.py @ b7b5b8c (--etype match)",
        _spider_build, _spider_headline, _spider_expected,
        "spider/oracle/spider_head_match__gold_example.txt (the whole printed table)",
        "1,034 dev pairs; predictions the evaluator cannot parse",
        ("--queryeval-spider-table",)),
    Artifact(
        "bird-chinook-ex", "bird-bench/mini_dev evaluation_ex.py @ 4d970a9 (--num_cpus 1)",
        _bird_build, _bird_headline, _bird_expected,
        "bird_chinook/oracle_evaluation_ex.txt (the count and EX rows: simple, moderate, "
        "challenging, total)",
        "60 Chinook pairs: empty and blank answers, unparsable text, queries that fail on the "
        "schema, an empty gold result"),
    Artifact(
        "tsse-example", "taoyds/test-suite-sql-eval evaluation.py @ e97acc5 (turn table)",
        _tsse_build("tsse"), _tsse_headline, _tsse_expected("tsse"),
        "tsse/oracle_tsse_match.txt (the per-hardness and per-turn tables)",
        "132 interactions, 322 turns; unparsable predictions", ("--queryeval-spider-table",)),
    Artifact(
        "sparc-dev-subset", "taoyds/test-suite-sql-eval evaluation.py @ e97acc5 (turn table)",
        _tsse_build("sparc"), _tsse_headline, _tsse_expected("sparc"),
        "tsse/oracle_sparc_match.txt (the per-hardness and per-turn tables)",
        "32 SParC interactions: an unparsable turn, missing last turns, an interaction with no "
        "predicted turn, a `value` placeholder", ("--queryeval-spider-table",)),
    Artifact(
        "text2sparql-client-mixed", "AKSW/text2sparql-client evaluate @ 980e0e1 (pytrec_eval 0.5)",
        _t2s_client_build("mixed"), _t2s_headline(5), _t2s_client_expected("mixed"),
        "text2sparql/oracle.json mixed.results.average",
        "empty and missing answers, ASK, RESULT_ORDER_MATTERS questions"),
    Artifact(
        "text2sparql25-ck25-labic", "TEXT2SPARQL'25 organisers' evaluation (text2sparql-client)",
        _t2s25_build("ck25", "LABIC"), _t2s_headline(3), _t2s25_expected("ck25", "LABIC", 3),
        "text2sparql25/LABIC/ck25_eval.json average (set_P, set_recall, set_F)",
        "34 of 50 answer sets empty"),
    Artifact(
        "text2sparql25-db25-dbpedia-cg",
        "TEXT2SPARQL'25 organisers' evaluation (text2sparql-client)",
        _t2s25_build("db25", "DBPEDIA-CG"), _t2s_headline(5),
        _t2s25_expected("db25", "DBPEDIA-CG", 5),
        "text2sparql25/DBPEDIA-CG/db25_eval.json average",
        "150 of 200 answer sets empty; RESULT_ORDER_MATTERS questions"),
    Artifact(
        "gerbil-qanary-fixture", "dice-group/gerbil FMeasureCalculator @ 794c41a",
        _gerbil_build("qanary_fixture"), _gerbil_headline, _gerbil_expected("qanary_fixture"),
        "gerbil/oracle.json qanary_fixture (GERBIL's own test data)", "right and wrong answers"),
    Artifact(
        "gerbil-mixed", "dice-group/gerbil FMeasureCalculator @ 794c41a",
        _gerbil_build("mixed"), _gerbil_headline, _gerbil_expected("mixed"),
        "gerbil/oracle.json mixed", "empty answers against a gold and against an empty gold"),
    Artifact(
        "gerbil-all-empty-answers", "dice-group/gerbil FMeasureCalculator @ 794c41a",
        _gerbil_build("all_empty_answers"), _gerbil_headline,
        _gerbil_expected("all_empty_answers"), "gerbil/oracle.json all_empty_answers",
        "every answer empty"),
    Artifact(
        "ehrsql-scoring-three", "glee4810/ehrsql-2024 scoring_v2.py @ 4659789",
        _ehrsql_build("three"), _ehrsql_headline, _ehrsql_expected("three"),
        "ehrsql/oracle.json suites.three.scores_json",
        "a right answer, a wrong one, an abstention (null) on an unanswerable question"),
    Artifact(
        "ehrsql-scoring-all-abstain", "glee4810/ehrsql-2024 scoring_v2.py @ 4659789",
        _ehrsql_build("all_abstain"), _ehrsql_headline, _ehrsql_expected("all_abstain"),
        "ehrsql/oracle.json suites.all_abstain.scores_json",
        "abstentions (null) on answerable and unanswerable questions"),
    Artifact(
        "ehrsql-scoring-all-wrong", "glee4810/ehrsql-2024 scoring_v2.py @ 4659789",
        _ehrsql_build("all_wrong"), _ehrsql_headline, _ehrsql_expected("all_wrong"),
        "ehrsql/oracle.json suites.all_wrong.scores_json",
        "a wrong answer, and an answer to an unanswerable question"),
    Artifact(
        "ehrsql-1000", "glee4810/ehrsql-2024 scoring_v2.py @ 4659789",
        _ehrsql_1000_build, _ehrsql_headline, _ehrsql_1000_expected,
        "ehrsql/pairs1000/oracle.json scores_json",
        "1,000 MIMIC-IV valid pairs, 69 unanswerable: null and 'null' abstentions, 3 empty "
        "texts (answers), 4 flat lists of strings, ' null', error_pred"),
    Artifact(
        "tau-bench-airline", "sierra-research/tau-bench run.py display_metrics @ 59a200c",
        _airline_build, _pass_k_headline("pass_hat_k"), _airline_expected,
        "passk/airline.json pass_hat_k (display_metrics's printed pass^1..4)",
        "gpt-4o airline trajectories, 50 tasks x 4 trials (repeat: 4, a stand-in model)",
        runs_in_any_order=True),
    Artifact(
        "humaneval-estimator", "openai/human-eval estimate_pass_at_k @ 6d43fb9",
        _humaneval_build(1), _pass_k_headline("pass_at_k"), _humaneval_expected(1),
        "passk/humaneval.json suites[1].mean (mean pass@1..3)",
        "12 tasks of 3 to 6 samples, uneven (repeat: n, c of n answers right)",
        runs_in_any_order=True),
    Artifact(
        "cypherbench-graph", "megagonlabs/cypherbench execution_accuracy, executable @ 9460518",
        _cypherbench_build, _cypherbench_headline, _cypherbench_expected,
        "cypherbench/graph_oracle_bolt.json (the reference's score of each pair, read through "
        "its run_query from the Bolt server, averaged)",
        "27 pairs on the example film graph on FalkorDB's Bolt listener: a missing property, "
        "empty results, the same text as the gold", bolt=True),
    Artifact(
        "evalbench-trajectory", "GoogleCloudPlatform/evalbench 1.20.0 TrajectoryMatcher, "
        "AgentSteps, TurnCount (PyPI wheel, sha256 ac31c475...)",
        _evalbench_build, _evalbench_headline, _evalbench_expected,
        "evalbench/oracle.json trajectories and evalbench/edge_oracle.json forms (each score, "
        "both filter settings)",
        "120 OpenAI tool-call trajectories from a predictions file: agents' own errors "
        "(generated_error), native tools beside MCP tools, repeated calls, asked-back rounds; "
        "26 edge forms (falsy and text trajectories, falsy errors, a null gold, names outside "
        "the OpenAI rule)"),
]
