"""Writes cases.json: the questions the TEXT2SPARQL oracle is run on (hand-built; see PROVENANCE.md).

Each question has a gold and a predicted SPARQL 1.1 JSON result (``pred: null`` = the system gave
no answer, which the reference's ``query`` command turns into an empty result).
"""
from __future__ import annotations

import json

DBR = "http://dbpedia.org/resource/"
PI = "http://ld.company.org/prod-instances/"


def uri(v):
    return {"type": "uri", "value": v}


def lit(v, dt=None, lang=None):
    b = {"type": "literal", "value": v}
    if dt:
        b["datatype"] = dt
    if lang:
        b["xml:lang"] = lang
    return b


def sel(vars_, rows):
    return {"head": {"vars": vars_}, "results": {"bindings": rows}}


def ask(b):
    return {"head": {}, "boolean": b}


XI = "http://www.w3.org/2001/XMLSchema#integer"
EMPTY = sel([], [])

mixed = [
    ("cd25:1-en", False, sel(["dept"], [{"dept": uri(PI + "dept-73191")}]),
     sel(["dept"], [{"dept": uri(PI + "dept-73191")}])),
    ("cd25:2-en", False, sel(["p"], [{"p": uri(DBR + "Santa_María_(ship)")}, {"p": uri(DBR + "Pinta_(ship)")},
                                     {"p": uri(DBR + "Niña")}]),
     sel(["p"], [{"p": uri(DBR + "Pinta_(ship)")}, {"p": uri(DBR + "Bruce_Peddie")}])),
    # the same value in two variables and two rows: one answer
    ("cd25:3-en", False, sel(["a", "b"], [{"a": uri(PI + "x"), "b": lit("Xavier", lang="en")},
                                          {"a": uri(PI + "y"), "b": lit("Yvonne")}]),
     sel(["s", "o"], [{"s": uri(PI + "x"), "o": uri(PI + "x")}, {"s": uri(PI + "x")},
                      {"s": lit("Xavier")}, {"o": lit("Yvonne", lang="de")}])),
    # unbound in the gold's first row; datatype ignored ("5" == "5"^^xsd:integer)
    ("cd25:4-en", False, sel(["n", "m"], [{"m": lit("5", XI)}, {"n": lit("7", XI), "m": lit("5", XI)}]),
     sel(["n"], [{"n": lit("5")}, {"n": lit("8")}])),
    # empty gold, empty prediction: 0 in the reference
    ("cd25:5-en", False, sel(["x"], []), sel(["x"], [])),
    # empty gold, some prediction
    ("cd25:6-en", False, sel(["x"], []), sel(["x"], [{"x": uri(PI + "x")}])),
    # no prediction at all (missing from the answers file)
    ("cd25:7-en", False, sel(["x"], [{"x": uri(PI + "x")}, {"x": uri(PI + "y")}]), None),
    # ASK: true/true, true/false (still 1: the key "true" is retrieved), false/false (0), false/true
    ("cd25:8-en", False, ask(True), ask(True)),
    ("cd25:9-en", False, ask(True), ask(False)),
    ("cd25:10-en", False, ask(False), ask(False)),
    ("cd25:11-en", False, ask(False), ask(True)),
    # ASK against SELECT
    ("cd25:12-en", False, ask(True), sel(["b"], [{"b": lit("true", "http://www.w3.org/2001/XMLSchema#boolean")}])),
    # result order matters: same set, reversed order; ndcg sees only values (ties by value)
    ("cd25:13-en", True, sel(["c"], [{"c": lit("Leipzig")}, {"c": lit("Dresden")}, {"c": lit("Chemnitz")}]),
     sel(["c"], [{"c": lit("Chemnitz")}, {"c": lit("Dresden")}, {"c": lit("Leipzig")}])),
    ("cd25:14-en", True, sel(["c"], [{"c": lit("a")}, {"c": lit("b")}, {"c": lit("c")}]),
     sel(["c"], [{"c": lit("c")}, {"c": lit("x")}, {"c": lit("a")}])),
    ("cd25:15-en", True, sel(["c"], [{"c": lit("a")}, {"c": lit("b")}, {"c": lit("c")}, {"c": lit("d")}]),
     sel(["c"], [{"c": lit("z")}, {"c": lit("y")}, {"c": lit("b")}])),
    # order matters but nothing predicted
    ("cd25:16-en", True, sel(["c"], [{"c": lit("a")}]), None),
    # (order matters with an empty gold is left out: trec_eval's ndcg then reads an empty
    # judgement list out of bounds and the reference hung; see PROVENANCE.md)
    ("cd25:17-en", False, sel(["v"], [{"v": lit(str(i))} for i in range(1, 13)]),
     sel(["v"], [{"v": lit(str(i))} for i in range(5, 20)])),
]

# no question where order matters: the reference writes no set_F_ndcg
plain = [
    ("ck25:1-en", False, sel(["x"], [{"x": uri(PI + "a")}, {"x": uri(PI + "b")}]),
     sel(["x"], [{"x": uri(PI + "a")}])),
    ("ck25:2-en", False, sel(["x"], [{"x": lit("0.1")}]), sel(["x"], [{"x": lit("0.1")}, {"x": lit("0.2")},
                                                                       {"x": lit("0.3")}])),
    ("ck25:3-en", False, ask(True), None),
]

# the reference's own fixture (tests/fixtures/result_set.json) as gold and prediction
own = [
    ("ck25:1-en", False, sel(["x"], [{"x": uri(PI + "dept-73191")}]), sel(["x"], [{"x": uri(PI + "dept-73191")}])),
    ("ck25:2-en", False, sel(["x"], [{"x": lit("+49-6200-33069465")}]), sel(["x"], [{"x": lit("+49-6200-33069465")}])),
    ("ck25:3-en", False, sel(["x"], [{"x": uri(PI + "empl-Waldtraud.Kuttner%40company.org")}]),
     sel(["x"], [{"x": uri(PI + "empl-Waldtraud.Kuttner%40company.org")}])),
]


def pack(rows):
    return [{"qname": q, "order_matters": o, "gold": g, "pred": p} for q, o, g, p in rows]


with open("cases.json", "w", encoding="utf-8") as f:
    json.dump({"mixed": pack(mixed), "plain": pack(plain), "own_fixture": pack(own)}, f,
              indent=1, ensure_ascii=False)
