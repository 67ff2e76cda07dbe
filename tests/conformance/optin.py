"""The generator of the opt-in invariant (issue 48 item 6): a base suite, and one file (or
folder) that uses one opt-in capability, added to it.

A base is drawn from a seed: a few SQL cases on a real SQLite file whose predictions are right,
empty, wrong or unparsable (every base holds one empty and one unparsable answer: the answers
an opt-in capability has been seen to take over), with or without a SPARQL file of recorded
TEXT2SPARQL / GERBIL answers (an empty answer among them). The added file is drawn from
:data:`CAPABILITIES`, under a name that sorts before or after the base's files, at the top or
in a folder of its own with its own ``queryeval.yaml`` (where the capability is configured:
several models, a python source for repeats, a writable copy for a task, counterexamples, a
judge: the stand-in judge of tests/fixtures/openai_standin.py, as no model can run here).
"""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support import dump, write_suite

SCHEMA = "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, total REAL);"
ROWS = "INSERT INTO orders VALUES (1, 'ann', 30), (2, 'bob', 12), (3, 'ann', 7);"
#: base questions: gold, and a wrong prediction of it
QUESTIONS = [
    ("count", "SELECT count(*) FROM orders", "SELECT count(*) FROM orders WHERE total > 10"),
    ("ann", "SELECT sum(total) FROM orders WHERE customer = 'ann'",
     "SELECT max(total) FROM orders WHERE customer = 'ann'"),
    ("big", "SELECT id FROM orders WHERE total >= 12", "SELECT id FROM orders WHERE total > 12"),
    ("who", "SELECT DISTINCT customer FROM orders ORDER BY customer",
     "SELECT customer FROM orders ORDER BY customer"),
    ("top", "SELECT customer FROM orders ORDER BY total DESC LIMIT 1",
     "SELECT customer FROM orders ORDER BY total LIMIT 1"),
]
ANSWERS = ("right", "empty", "wrong", "unparsable")
UNPARSABLE = "SELEC count(*) FROM orders"


def _prediction(answer: str, gold: str, wrong: str) -> str:
    return {"right": gold, "empty": "", "wrong": wrong, "unparsable": UNPARSABLE}[answer]


def _res(*values: str) -> dict[str, Any]:
    return {"head": {"vars": ["a"]}, "results": {"bindings": [
        {"a": {"type": "uri", "value": "http://e/" + v}} for v in values]}}


SPARQL_FILE = {"kind": "sparql", "cases": [
    {"id": "sparql-right", "gold": "SELECT ?a WHERE { ?a ?p ?o }", "gold_result": _res("1", "2"),
     "predicted": "SELECT ?a WHERE { ?a ?p ?o }", "predicted_result": _res("1", "2")},
    {"id": "sparql-partial", "gold": "SELECT ?a WHERE { ?a ?p ?o }", "gold_result": _res("1", "2"),
     "predicted": "SELECT ?a WHERE { ?a ?p ?o }", "predicted_result": _res("1")},
    {"id": "sparql-empty", "gold": "SELECT ?a WHERE { ?a ?p ?o }", "gold_result": _res("3"),
     "predicted": "", "predicted_result": _res()},
]}


@dataclass(frozen=True)
class Base:
    """One generated base suite."""

    answers: tuple[str, ...]  # one per question of QUESTIONS
    sparql: bool

    def files(self) -> dict[str, Any]:
        cases = [{"id": f"base-{qid}", "question": f"question {qid}", "gold": gold,
                  "predicted": _prediction(answer, gold, wrong)}
                 for (qid, gold, wrong), answer in zip(QUESTIONS, self.answers, strict=True)]
        files: dict[str, Any] = {"test_base.yaml": dump({"kind": "sql", "datasource": "shop",
                                                          "cases": cases})}
        if self.sparql:
            files["test_base_sparql.yaml"] = dump(SPARQL_FILE)
        return files


#: A capability's added files: (case file, or a folder's files with its queryeval.yaml).
Added = Callable[[str], dict[str, Any]]


def _one_file(kind: str, cases: list[dict[str, Any]], **header: Any) -> Added:
    return lambda name: {f"{name}.yaml": dump({"kind": kind, "datasource": "shop", **header,
                                               "cases": cases})}


def _folder(config: dict[str, Any], cases: list[dict[str, Any]],
            extra: dict[str, str] | None = None, **header: Any) -> Added:
    """A folder of its own, configured by its own queryeval.yaml (the capability's settings
    reach its cases only)."""
    def files(name: str) -> dict[str, Any]:
        folder = name.replace("test_", "")
        out: dict[str, Any] = {f"{folder}/queryeval.yaml": dump(config),
                               f"{folder}/{name}.yaml": dump({"kind": "sql", **header,
                                                              "cases": cases})}
        out.update({f"{folder}/{k}": v for k, v in (extra or {}).items()})
        return out
    return files


COUNT = "SELECT count(*) FROM orders"
#: Right, with a label column execution does not accept: the judge is asked, and accepts it.
JUDGED = "SELECT count(*), 'orders' FROM orders"
#: The stand-in judge's verdict on it (tests/fixtures/openai_standin.py answers by content).
VERDICT = '{"category": "equivalent", "reason": "the extra column is a label"}'
STANDIN = '''"""A stand-in model for the repeats capability: a fixed answer."""


def predict(case):
    return "SELECT count(*) FROM orders"
'''

#: name -> the files that opt in to it
CAPABILITIES: dict[str, Added] = {
    "abstention": _one_file("sql", [
        {"id": "cap-abstain", "question": "What is each customer's salary?", "expect": "abstain",
         "predicted": {"abstain": True}},
        {"id": "cap-abstain-answered", "question": "What is the salary?", "expect": "abstain",
         "predicted": COUNT}]),
    "clarification": _one_file("sql", [
        {"id": "cap-clarify", "question": "Who are the biggest customers?", "expect": "clarify",
         "predicted": {"clarify": "Do you mean by total amount or by number of orders?"}}]),
    "agent": _one_file("sql", [
        {"id": "cap-agent", "question": "How many orders?", "gold": COUNT,
         "agent": {"trajectory": ["get_schema", "run_query"], "forbidden_tables": ["orders"]},
         "predicted": {"predicted": COUNT, "answer": "There are 3 orders.", "trajectory": [
             {"role": "assistant", "content": None, "tool_calls": [
                 {"id": "c1", "type": "function", "function": {
                     "name": "run_query", "arguments": '{"query": "DELETE FROM orders"}'}}]},
             {"role": "tool", "tool_call_id": "c1", "content": "refused"},
             {"role": "assistant", "content": None, "tool_calls": [
                 {"id": "c2", "type": "function", "function": {
                     "name": "run_query", "arguments": json.dumps({"query": COUNT})}}]},
             {"role": "tool", "tool_call_id": "c2", "content": "3"}]}}]),
    # an outside agent's runs from a predictions file, its folder's own source: a trajectory
    # that looks at sample rows and runs its query, replayed against the database
    "agent-file": _folder(
        {"predictions": {"source": "file", "path": "agent_runs.jsonl"}},
        [{"id": "cap-agent-file", "question": "How many orders?", "gold": COUNT,
          "agent": {"trajectory": ["sample_rows", "run_query"]}}],
        {"agent_runs.jsonl": json.dumps({"id": "cap-agent-file", "predicted": COUNT,
                                         "trajectory": [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "s", "type": "function", "function": {
                    "name": "sample_rows", "arguments": '{"table": "orders"}'}}]},
            {"role": "tool", "tool_call_id": "s", "content": "[[1, \"ann\", 30.0]]"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "q", "type": "function", "function": {
                    "name": "run_query", "arguments": json.dumps({"query": COUNT})}}]},
            {"role": "tool", "tool_call_id": "q", "content": "3"}]}) + "\n"},
        datasource="shop"),
    "conversation": _one_file("sql", [
        {"id": "cap-chat", "conversation": [
            {"role": "user", "content": "How many orders?", "gold": COUNT, "predicted": COUNT},
            {"role": "user", "content": "And ann's?",
             "gold": "SELECT count(*) FROM orders WHERE customer = 'ann'", "predicted": ""}]}]),
    "models": _folder(
        {"predictions": {"model-a": {"source": "file", "path": "a.jsonl"},
                         "model-b": {"source": "file", "path": "b.jsonl"}}},
        [{"id": "cap-models", "question": "How many orders?", "gold": COUNT}],
        {"a.jsonl": '{"id": "cap-models", "predicted": "SELECT count(*) FROM orders"}\n',
         "b.jsonl": '{"id": "cap-models", "predicted": ""}\n'}, datasource="shop"),
    "repeats": _folder(
        {"predictions": {"source": "python", "function": "standin_repeats:predict"}},
        [{"id": "cap-repeat", "question": "How many orders?", "gold": COUNT, "repeat": 2}],
        {"standin_repeats.py": STANDIN}, datasource="shop"),
    "task": _folder(
        {"datasources": {"store": {"type": "sqlite", "path": "../shop.db",
                                   "writable": "sandbox"}}},
        [{"id": "cap-task", "question": "Add 1 to every total.", "task": "dml",
          "gold": "UPDATE orders SET total = total + 1",
          "predicted": "UPDATE orders SET total = total + 2",
          "checks": [{"query": "SELECT id, total FROM orders", "compare": "gold"}]}],
        datasource="store"),
    "judge": _folder(
        {"judge": {"model": "standin-model", "base_url": "JUDGE_URL",
                   "api_key": "${QE_JUDGE_KEY}", "temperature": 0, "seed": 1, "retries": 0,
                   "timeout": 30}},
        [{"id": "cap-judge", "question": "How many orders?", "gold": COUNT,
          "predicted": JUDGED}],
        datasource="shop", thresholds={"execution_accuracy": 0, "judge_ex": 1}),
    "counterexamples": _folder(
        {"neighbours": {"databases": 5, "seconds": 5, "seed": 0}},
        [{"id": "cap-neighbours", "question": "How many of ann's orders?",
          "gold": "SELECT count(*) FROM orders WHERE customer = 'ann'",
          "predicted": "SELECT count(*) FROM orders WHERE total <> 12"}], datasource="shop"),
}


@dataclass(frozen=True)
class Combination:
    """A base and the capability added to it, and where."""

    seed: int
    base: Base
    capability: str
    name: str  # the added case file's name: before or after the base's in collection order
    folder: bool

    @property
    def id(self) -> str:
        return f"{self.capability}-{self.seed}"


def combinations(count: int, seed: int = 48) -> list[Combination]:
    """``count`` combinations from ``seed``: every capability once before any twice."""
    rng = random.Random(seed)
    caps = list(CAPABILITIES)
    out = []
    for i in range(count):
        if i % len(caps) == 0:
            rng.shuffle(caps)
        answers = ["empty", "unparsable", *rng.choices(ANSWERS, k=len(QUESTIONS) - 2)]
        rng.shuffle(answers)
        out.append(Combination(i, Base(tuple(answers), rng.random() < 0.5), caps[i % len(caps)],
                               rng.choice(["test_a_added", "test_z_added"]),
                               rng.random() < 0.5))
    return out


def write(root: Path, combo: Combination, *, added: bool, judge_url: str = "") -> Path:
    """The combination's base under ``root``, with its added files when ``added`` (a judge's
    at ``judge_url``: the stand-in judge the test serves)."""
    files = combo.base.files()
    if added:
        files.update({k: v.replace("JUDGE_URL", judge_url)
                      for k, v in CAPABILITIES[combo.capability](combo.name).items()})
    write_suite(root, {"datasources": {"shop": {"type": "sqlite", "path": "shop.db"}},
                       "thresholds": {"execution_accuracy": 1.0}}, files)
    with sqlite3.connect(root / "shop.db") as db:
        db.executescript(SCHEMA + ROWS)
    db.close()
    return root
