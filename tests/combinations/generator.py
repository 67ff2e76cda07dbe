"""Generated combinations of what a user combines (issue 49 item 8): a seeded pairwise
covering array over the dimensions of :data:`DIMENSIONS`, and the small suite each
combination stands for (:func:`build`).

Why a covering array, not examples: each hand-written example covers the pairs its author
thought of; a greedy all-pairs array covers every pair of values of every two dimensions in a
few dozen suites, so a defect that needs two features together (a Python case and a models
mapping, an audit and a Python case, an odd model name and any run) is met by construction.
``QUERYEVAL_COMBINATIONS=N`` adds seeded random rows past the array (more triples met).

Every model is a stand-in (:class:`CountingModel`: a loopback service that counts requests):
the ``http``, ``python`` and ``command`` sources ask it over HTTP (the python function and the
command script post the case to it), the ``openai`` source and the judge ask
:class:`~tests.fixtures.openai_standin.OpenAIStandin`; both count every request, which is how
the cache and audit invariants are checked."""

from __future__ import annotations

import itertools
import json
import random
import sqlite3
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.fixtures.model_service import ModelService, Request
from tests.support import dump, write_suite

#: Each dimension a user combines and its values (docs/architecture.md lists them).
DIMENSIONS: dict[str, tuple[str, ...]] = {
    "origin": ("yaml", "python", "turn"),          # where the extra case comes from
    "kind": ("sql", "sql+sdmx"),                   # a second kind's file beside the SQL one
    "source": ("inline", "file", "python", "http", "openai", "command"),
    "models": ("one", "two", "odd"),               # odd: names the docs allow ("_x", "é", ...)
    "fanout": ("no", "yes"),                       # datasource: [shop, duck]
    "repeat": ("1", "2"),
    "cache": ("off", "on"),
    "judge": ("off", "on"),
    "counterexamples": ("off", "on"),              # --queryeval-neighbours
    "tasks": ("off", "on"),
    "audit": ("off", "on"),
    "verdict": ("strict", "gates", "gates+baseline", "baseline+baseline"),
    "gate": ("none", "kind", "tag", "model"),      # the scope of a second gate (issue 59)
    "mode": ("serial", "xdist", "shards", "resume"),  # the costly ways of running
    "agent": ("off", "on", "redteam"),             # an agent case with a trajectory (issue 52);
                                                   # redteam: its tenant's rows enforced (62)
    "pin": ("off", "pinned", "drifted"),           # near pinned to its table's data (issue 63);
                                                   # drifted: the data moved since the pin
}
#: The model names of each ``models`` value (``odd``: each name the docs allow that once
#: crashed the collection, issue 49 item 3).
MODEL_NAMES = {"one": ("standin",), "two": ("model-a", "model-b"),
               "odd": ("_x", "é", ".x", "-x", "..")}
SEED = 49


@dataclass(frozen=True)
class Combination:
    values: tuple[tuple[str, str], ...]

    def __getitem__(self, key: str) -> str:
        return dict(self.values)[key]

    @property
    def id(self) -> str:
        return "-".join(f"{k}:{v}" for k, v in self.values if v not in ("off", "no", "1"))

    @property
    def models(self) -> tuple[str, ...]:
        return MODEL_NAMES[self["models"]]


def pairwise(dimensions: Mapping[str, Sequence[str]], seed: int = SEED) -> list[Combination]:
    """A greedy all-pairs covering array: each row is the best of a few seeded candidates by
    the number of uncovered pairs it covers, until every pair of values of every two
    dimensions is in some row."""
    rng = random.Random(seed)
    names = list(dimensions)
    uncovered = {((a, x), (b, y)) for a, b in itertools.combinations(names, 2)
                 for x in dimensions[a] for y in dimensions[b]}
    rows: list[Combination] = []
    while uncovered:
        best: dict[str, str] = {}
        best_score = -1
        for _ in range(30):
            # start from an uncovered pair so every row covers at least one
            (a, x), (b, y) = rng.choice(sorted(uncovered))
            row = {a: x, b: y}
            for name in rng.sample(names, len(names)):
                if name in row:
                    continue
                row[name] = max(dimensions[name], key=lambda v: (sum(
                    ((n, row[n]), (name, v)) in uncovered or ((name, v), (n, row[n])) in uncovered
                    for n in row), rng.random()))
            score = sum(((a2, row[a2]), (b2, row[b2])) in uncovered
                        for a2, b2 in itertools.combinations(names, 2))
            if score > best_score:
                best, best_score = row, score
        uncovered -= {((a2, best[a2]), (b2, best[b2])) for a2, b2 in itertools.combinations(names, 2)}
        rows.append(Combination(tuple((n, best[n]) for n in names)))
    return rows


#: Rows a CI run takes (the greedy array's first rows cover most pairs: about 4 minutes on two
#: idle cores); ``QUERYEVAL_COMBINATIONS=N`` takes N: the whole array (about 30) and then seeded
#: random rows.
CI_ROWS = 16


def combinations(count: int = CI_ROWS, seed: int = SEED) -> list[Combination]:
    """The first ``count`` rows of the covering array, then seeded random rows past it."""
    rows = pairwise(DIMENSIONS, seed)[:count]
    rng = random.Random(seed + 1)
    seen = set(rows)
    while len(rows) < count:
        row = Combination(tuple((n, rng.choice(v)) for n, v in DIMENSIONS.items()))
        if row not in seen:
            seen.add(row)
            rows.append(row)
    return rows


#: The wide tier's dimensions: every one but ``mode`` (its rows run once, serially, in-process).
WIDE_DIMENSIONS = {k: v for k, v in DIMENSIONS.items() if k != "mode"}
#: Rows of the wide tier a CI run takes; ``QUERYEVAL_COMBINATIONS_WIDE=N`` takes N.
WIDE_ROWS = 240


def wide(count: int = WIDE_ROWS, seed: int = SEED) -> list[Combination]:
    """The wide tier: the all-pairs array over :data:`WIDE_DIMENSIONS`, then seeded random
    rows past it (distinct), ``count`` in all; many more triples are met than by the
    covering subset, each row cheap enough (one process, no ``-n``) to run a few hundred."""
    rows = pairwise(WIDE_DIMENSIONS, seed)[:count]
    rng = random.Random(seed + 2)
    seen = set(rows)
    while len(rows) < count:
        row = Combination(tuple((n, rng.choice(v)) for n, v in WIDE_DIMENSIONS.items()))
        if row not in seen:
            seen.add(row)
            rows.append(row)
    return rows


# -- the suite of one combination -----------------------------------------------------------
SCHEMA = "CREATE TABLE orders (id INTEGER, customer TEXT, total REAL);"
ROWS = "INSERT INTO orders VALUES (1, 'ann', 30), (2, 'bob', 12), (3, 'ann', 7);"
#: case id -> (question, gold, what every model answers). ``near`` fails (a near miss).
CASES = {
    "ann": ("How much did ann spend?", "SELECT sum(total) FROM orders WHERE customer = 'ann'",
            "SELECT SUM(total) FROM orders WHERE customer = 'ann'"),
    "near": ("Which orders are 12 or more?", "SELECT id FROM orders WHERE total >= 12",
             "SELECT id FROM orders WHERE total > 12"),
    "py-count": ("How many orders?", "SELECT count(*) FROM orders", "SELECT COUNT(*) FROM orders"),
    "raise": ("Add 1 to every total.", "UPDATE orders SET total = total + 1",
              "UPDATE orders SET total = total + 1"),
    "agent": ("How many orders did bob place?",
              "SELECT count(*) FROM orders WHERE customer = 'bob'",
              "SELECT COUNT(*) FROM orders WHERE customer = 'bob'"),
}
#: The gold trajectory of an agent case, and the trajectory every model answers for one (the
#: scripted stand-in of a data agent, docs/agents.md: it looks at the schema, then runs its
#: query): trajectory_match 100, two tool calls, one query executed when replayed.
AGENT = {"trajectory": ["get_schema", "run_query"]}
#: The ``agent: redteam`` rows' agent block (issue 62): ann's rows are another tenant's,
#: planted with canaries and withheld by the engine (SQLite, and DuckDB on a fan-out row).
AGENT_REDTEAM = {**AGENT, "protected": [{"table": "orders", "where": "customer = 'ann'"}],
                 "enforce": True}


def trajectory_of(case_id: str) -> list[dict[str, Any]]:
    query = answer_of(case_id)
    return [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "s", "type": "function", "function": {"name": "get_schema",
                                                          "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "s", "content": SCHEMA},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "q", "type": "function", "function": {
                "name": "run_query", "arguments": json.dumps({"query": query})}}]},
        {"role": "tool", "tool_call_id": "q", "content": "1"}]
TURNS = [("How many orders are there?", "SELECT count(*) FROM orders",
          "SELECT count(*) FROM orders"),
         ("And how many are ann's?", "SELECT count(*) FROM orders WHERE customer = 'ann'",
          "SELECT count(*) FROM orders WHERE customer = 'ann'")]
#: What a model answers, by question (the openai stand-in's key) and by case id and turn.
BY_QUESTION = {q: p for q, _, p in [*CASES.values(), *TURNS]}


def answer_of(case_id: str, turn: object = None) -> str:
    base = case_id.split("[")[0]
    if base == "chat":
        return TURNS[int(str(turn)) - 1][2]
    return CASES[base][2]


class CountingModel(ModelService):
    """The stand-in model service of every combination: what :data:`CASES` says, counted."""

    def answer(self, request: Request) -> tuple[int, Any]:
        case = request.body.get("case") if isinstance(request.body, dict) else None
        if not isinstance(case, dict):
            return 400, b"no case"
        predicted = answer_of(str(case["id"]), case.get("turn"))
        if case.get("agent"):  # an agent case: the query and how it was reached
            return 200, {"predicted": predicted, "trajectory": trajectory_of(str(case["id"]))}
        return 200, {"predicted": predicted}


CLIENT = '''"""A stand-in model (generated combinations): posts the case to the counting service."""
import json
import sys
import urllib.request

URL = {url!r}


def ask(case, model):
    data = json.dumps({{"case": case, "model": model}}, default=str).encode()
    req = urllib.request.Request(URL, data=data, headers={{"Content-Type": "application/json"}})
    with urllib.request.urlopen(req, timeout=30) as reply:
        answer = json.loads(reply.read())
    return answer if "trajectory" in answer else answer["predicted"]

{functions}

if __name__ == "__main__":  # the command source: case JSON on stdin, the query on stdout
    answer = ask(json.load(sys.stdin), sys.argv[1])
    sys.stdout.write(answer if isinstance(answer, str) else json.dumps(answer))
'''


def _source(combo: Combination, model: str, index: int, service: str, openai_url: str,
            ) -> dict[str, Any]:
    source = combo["source"]
    cache = {"cache": True} if combo["cache"] == "on" else {}
    if source == "file":
        return {"source": "file", "path": f"predictions-{index}.jsonl"}
    if source == "python":
        return {"source": "python", "function": f"standin_model:predict_{index}"}
    if source == "http":
        return {"source": "http", "url": f"{service}/predict/{index}", "retries": 0,
                "body": {"case": "{case}", "model": model}, "response_path": "predicted",
                **cache}
    if source == "command":
        return {"source": "command", "command": [sys.executable, "standin_model.py", model],
                **cache}
    return {"source": "openai", "model": model, "base_url": openai_url,
            "api_key": "sk-standin-0123456789abcdef", "retries": 0, **cache}


def _file_rows(combo: Combination) -> str:
    rows: list[dict[str, Any]] = [
        {"id": i, "predicted": p, **({"trajectory": trajectory_of(i)} if i in ("agent", "py-count") else {})}
        for i, (_, _, p) in CASES.items()]
    rows += [{"id": "chat", "turn": n, "predicted": p} for n, (_, _, p) in enumerate(TURNS, 1)]
    return "".join(json.dumps(r) + "\n" for r in rows)


#: The tag of the ``gate: tag`` rows (on ``ann``, and on the Python case of a ``python`` row).
GATE_TAG = "smoke"


def scoped_gate(combo: Combination) -> dict[str, Any]:
    """The row's second gate, beside the suite's ``pass_rate`` one: none, or a pass-rate gate
    scoped by ``kind:``, ``tag:`` or ``model:`` (the last model of a row with several; a row
    with one names it too, and its cases, not fanned out, carry no model: ``allow_empty``).
    Each way of running must give it the serial run's value, cases and verdict (the merge once
    dropped ``model:`` and gated every model's cases)."""
    scope = combo["gate"]
    if scope == "none":
        return {}
    spec: dict[str, Any] = {"metric": "pass_rate", "min": 0.3}
    if scope == "kind":
        spec["kind"] = "sql"
    elif scope == "tag":
        spec.update(tag=GATE_TAG, min=0.5)
    else:
        spec.update(model=combo.models[-1], allow_empty=len(combo.models) < 2
                    or combo["source"] == "inline")
    return {f"{scope}_pass": spec}


def _case(case_id: str, combo: Combination, inline: bool) -> dict[str, Any]:
    question, gold, predicted = CASES[case_id]
    case: dict[str, Any] = {"id": case_id, "question": question, "gold": gold}
    if inline:
        case["predicted"] = predicted
    return case


PY_CASES = '''import pytest

CASES = [{case!r}]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_python_case(queryeval, case):
    queryeval.check(kind="sql", datasource="shop", **case)
'''


def build(root: Path, combo: Combination, service: str, openai_url: str) -> dict[str, Any]:
    """Write ``combo``'s suite under ``root``; return what the checks expect of it: the ids of
    the YAML, Python and conversation cases (before any fan-out) and whether a model is asked."""
    inline = combo["source"] == "inline"
    models = combo.models
    config: dict[str, Any] = {
        "datasources": {"shop": {"type": "sqlite", "path": "shop.db"},
                        "duck": {"type": "duckdb", "path": "shop.duckdb"},
                        "store": {"type": "sqlite", "path": "shop.db", "writable": "sandbox"}},
        "thresholds": {"execution_accuracy": 1.0},
        "gates": {"pass_rate": 0.3, **scoped_gate(combo)},
    }
    if not inline:
        sources = {m: _source(combo, m, i, service, openai_url) for i, m in enumerate(models)}
        config["predictions"] = next(iter(sources.values())) if len(models) == 1 else sources
        if len(models) == 1:
            config["model"] = models[0]
    if combo["judge"] == "on":
        config["judge"] = {"model": "standin-model", "base_url": openai_url,
                           "api_key": "sk-standin-0123456789abcdef", "retries": 0}
    shop: list[dict[str, Any]] = [_case("ann", combo, inline), _case("near", combo, inline)]
    if combo["gate"] == "tag":
        shop[0]["tags"] = [GATE_TAG]
    if combo["repeat"] == "2":
        shop[0]["repeat"] = 2
    if combo["fanout"] == "yes":
        shop[0]["datasource"] = ["shop", "duck"]
    files: dict[str, Any] = {"test_shop.yaml": {"kind": "sql", "datasource": "shop",
                                                "cases": shop}}
    expected = {"yaml": ["ann", "near"], "python": [], "turn": []}
    if combo["origin"] == "turn":
        turns: list[dict[str, Any]] = []
        for question, gold, predicted in TURNS:
            turns.append({"role": "user", "content": question, "gold": gold,
                          **({"predicted": predicted} if inline else {})})
        files["test_shop.yaml"]["cases"].append({"id": "chat", "conversation": turns})
        expected["turn"] = ["chat"]
    agent = {"off": None, "on": AGENT, "redteam": AGENT_REDTEAM}[combo["agent"]]
    if agent is not None:
        files["test_shop.yaml"]["cases"].append({**_case("agent", combo, inline),
                                                 "agent": agent})
        expected["yaml"].append("agent")
    if combo["origin"] == "python":
        py_case = _case("py-count", combo, inline)
        if agent is not None:  # the Python case is an agent case too
            py_case["agent"] = agent
        if combo["gate"] == "tag":
            py_case["tags"] = [GATE_TAG]
        files["test_py_cases.py"] = PY_CASES.format(case=py_case)
        expected["python"] = ["py-count"]
    if combo["tasks"] == "on":
        task = _case("raise", combo, inline)
        task.update(task="dml", checks=[{"query": "SELECT id, total FROM orders",
                                         "compare": "gold"}])
        files["test_tasks.yaml"] = {"kind": "sql", "datasource": "store", "cases": [task]}
        expected["yaml"].append("raise")
    if combo["kind"] == "sql+sdmx":
        from tests.sdmx_cases import GDP, sdmx_case, selection
        files["test_sdmx.yaml"] = {"cases": [sdmx_case("gdp", selection(GDP),
                                                       predicted=selection(GDP))]}
        expected["sdmx"] = ["gdp"]
    functions = "\n".join(f"def predict_{i}(case):\n    return ask(case, {m!r})\n"
                          for i, m in enumerate(models))
    files["standin_model.py"] = CLIENT.format(url=f"{service}/predict/py", functions=functions)
    for i, _ in enumerate(models):
        files[f"predictions-{i}.jsonl"] = _file_rows(combo)
    write_suite(root, config, files)
    with sqlite3.connect(root / "shop.db") as db:
        db.executescript(SCHEMA + ROWS)
    db.close()
    if combo["pin"] != "off":
        _pin_near(root, combo, files)
    if combo["fanout"] == "yes":
        import duckdb
        con = duckdb.connect(str(root / "shop.duckdb"))
        con.execute(SCHEMA)
        con.execute(ROWS)
        con.close()
    return {"expected": expected, "asks": not inline, "models": models if not inline else ()}


def _pin_near(root: Path, combo: Combination, files: dict[str, Any]) -> None:
    """``near`` pinned as ``queryeval mine`` pins (the plugin's own pinner, on the written
    shop.db); ``drifted``: the pin taken before a row was added, so each run skips ``near`` as
    drifted (orders) and scores the rest."""
    from pytest_queryeval.importers.pinning import Pinner

    db = root / "shop.db"
    if combo["pin"] == "drifted":
        with sqlite3.connect(db) as con:
            con.execute("DELETE FROM orders WHERE id = 3")
        con.close()
    pinner = Pinner("shop", {"type": "sqlite", "path": str(db)})
    try:
        pin = pinner.pin(CASES["near"][1])
    finally:
        pinner.close()
    if combo["pin"] == "drifted":
        with sqlite3.connect(db) as con:
            con.execute("INSERT INTO orders VALUES (3, 'ann', 7)")
        con.close()
    cases = files["test_shop.yaml"]["cases"]
    next(c for c in cases if c["id"] == "near")["pin"] = pin
    (root / "test_shop.yaml").write_text(dump(files["test_shop.yaml"]), encoding="utf-8")


def fanned_ids(case_id: str, combo: Combination, models: Sequence[str]) -> Iterator[str]:
    """The ids a case fans out to (datasources for ``ann`` when fanned out, then models)."""
    bases = [f"{case_id}[{d}]" for d in ("shop", "duck")] \
        if case_id == "ann" and combo["fanout"] == "yes" else [case_id]
    if len(models) < 2:
        yield from bases
        return
    for base in bases:
        for model in models:
            yield f"{base[:-1]}|{model}]" if base.endswith("]") else f"{base}[{model}]"
