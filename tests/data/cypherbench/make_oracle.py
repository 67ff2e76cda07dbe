"""Make oracle.json: CypherBench's metric functions, run unmodified, on generated pairs.

Usage (see PROVENANCE.md):  python make_oracle.py /path/to/cypherbench-checkout > oracle.json
                            python make_oracle.py CHECKOUT graph_pairs.json > graph_oracle.json

Each pair is a gold and a predicted Cypher text with the records each returns, as the neo4j
driver's ``Result.data()`` gives them (mappings; ``{"$date": ...}`` stands for a
``neo4j.time.Date``, ``{"$datetime": ...}`` for a ``neo4j.time.DateTime``), or ``{"error":
...}`` for a predicted query that fails. The reference's ``execution_accuracy`` and
``executable`` are called with a stand-in connector (named as such: no Neo4j server runs
here) whose ``run_query`` returns those records, or raises ``neo4j.exceptions.ClientError``.
A call that raises is recorded as ``{"raises": "<exception name>"}``.

This script is this project's (MIT); it imports the reference, it copies none of it.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

SEED = 51


def _value(rng: random.Random, depth: int = 0) -> object:
    r = rng.random()
    if r < 0.25:
        return rng.randint(-3, 3)
    if r < 0.35:
        return rng.choice([1.0, 0.5, 2.0, -1.5])
    if r < 0.55:
        return rng.choice(["a", "b", "Keanu", "1", "2020-01-02", ""])
    if r < 0.6:
        return rng.choice([True, False])
    if r < 0.65:
        return None
    if r < 0.72:
        return {"$date": rng.choice(["2020-01-02", "1999-03-31"])}
    if r < 0.74:
        return {"$datetime": "2020-01-02T10:00:00"}
    if depth == 0 and r < 0.87:
        kind = rng.random()
        if kind < 0.6:
            return [rng.randint(0, 4) for _ in range(rng.randint(0, 3))]
        if kind < 0.8:
            return [rng.choice(["x", "y", "z"]) for _ in range(rng.randint(0, 3))]
        return [rng.choice([1, None, "x"]) for _ in range(rng.randint(1, 3))]
    if depth == 0:
        return {"name": rng.choice(["Ann", "Bob"]), "born": rng.choice([1960, 1970])}
    return rng.randint(0, 2)


def _table(rng: random.Random, width: int, height: int) -> list[dict[str, object]]:
    cols = [f"c{i}" for i in range(width)]
    return [{c: _value(rng) for c in cols} for _ in range(height)]


def _variant(rng: random.Random, gold: list[dict[str, object]]) -> list[dict[str, object]]:
    """A prediction made from the gold: rows shuffled, columns renamed and permuted, a row
    dropped or doubled, a cell changed, lists reordered, a number as a float or a bool."""
    rows = [dict(r) for r in gold]
    cols = list(rows[0]) if rows else []
    edit = rng.random()
    if edit < 0.2:
        rng.shuffle(rows)
    elif edit < 0.35 and rows:
        rows.pop(rng.randrange(len(rows)))
    elif edit < 0.45 and rows:
        rows.append(dict(rng.choice(rows)))
    elif edit < 0.6 and rows:
        row = rng.choice(rows)
        row[rng.choice(cols)] = _value(rng)
    elif edit < 0.7:
        for row in rows:
            for c in cols:
                if isinstance(row[c], list):
                    row[c] = list(reversed(row[c]))
                elif isinstance(row[c], bool):
                    row[c] = int(row[c])
                elif isinstance(row[c], int):
                    row[c] = float(row[c])
    perm = cols[:]
    if rng.random() < 0.6:
        rng.shuffle(perm)
    names = [f"p{i}" if rng.random() < 0.5 else c for i, c in enumerate(perm)]
    return [{n: r[c] for n, c in zip(names, perm, strict=True)} for r in rows]


GOLD_TEXTS = [
    "MATCH (n:Person) RETURN n.name",
    "MATCH (n:Person) RETURN n.name ORDER BY n.name",
    "MATCH (n:Person) WITH n ORDER BY n.born LIMIT 3 RETURN n.name",
    "MATCH (n:Person {name: 'order by'}) RETURN n.name",
    "MATCH (n:Person) RETURN n.name order by n.name DESC",
    "MATCH (n:Person) RETURN n.name ORDER\nBY n.name",
]


def pairs() -> list[dict[str, object]]:
    rng = random.Random(SEED)
    out: list[dict[str, object]] = []
    for i in range(400):
        width = rng.choice([1, 1, 2, 2, 3, 4, 5])
        height = rng.choice([0, 1, 2, 3, 4, 6])
        gold_text = rng.choice(GOLD_TEXTS)
        gold = _table(rng, width, height)
        r = rng.random()
        if r < 0.05:
            pred_text, pred = gold_text, gold  # the same text: scored 1 without comparing
        elif r < 0.12:
            pred_text, pred = f"MATCH (x) RETURN x -- {i}", {"error": "syntax"}
        elif r < 0.2:
            pred_text, pred = f"MATCH (x) RETURN x -- {i}", _table(rng, width, height)
        elif r < 0.25:
            pred_text, pred = f"MATCH (x) RETURN x -- {i}", _table(rng, rng.choice([1, 2, 3]),
                                                                   height)
        elif r < 0.3:
            pred_text, pred = f"MATCH (x) RETURN x -- {i}", []
        else:
            pred_text = f"MATCH (m) RETURN m -- {i}"
            pred = _variant(rng, gold) if gold else _table(rng, width, rng.choice([0, 1]))
        out.append({"id": f"p{i:03d}", "gold_text": gold_text, "pred_text": pred_text,
                    "gold": gold, "pred": pred})
    return out


def main(checkout: str, pairs_file: str | None = None) -> None:
    sys.path.insert(0, checkout)
    import neo4j
    import neo4j.time
    from cypherbench.metrics.executable import executable
    from cypherbench.metrics.execution_accuracy import execution_accuracy

    def decode(v: object) -> object:
        if isinstance(v, dict) and "$date" in v:
            y, m, d = map(int, str(v["$date"]).split("-"))
            return neo4j.time.Date(y, m, d)
        if isinstance(v, dict) and "$datetime" in v:
            return neo4j.time.DateTime.from_iso_format(str(v["$datetime"]))
        if isinstance(v, dict):
            return {k: decode(x) for k, x in v.items()}
        if isinstance(v, list):
            return [decode(x) for x in v]
        return v

    class StandInConnector:
        """Stands in for ``Neo4jConnector``: answers each text with its recorded records."""

        def __init__(self, answers: dict[str, object]) -> None:
            self.answers = answers

        def run_query(self, cypher: str, timeout: object = None, **kwargs: object) -> object:
            answer = self.answers[cypher]
            if isinstance(answer, dict) and "error" in answer:
                raise neo4j.exceptions.ClientError(str(answer["error"]))
            return [{k: decode(v) for k, v in row.items()} for row in answer]  # type: ignore[attr-defined]

    results = []
    chosen = pairs() if pairs_file is None else json.loads(Path(pairs_file).read_text(encoding="utf-8"))
    for pair in chosen:
        # the gold is asked under its text; a prediction with the same text is never run
        conn = StandInConnector({pair["pred_text"]: pair["pred"],  # type: ignore[dict-item]
                                 pair["gold_text"]: pair["gold"]})
        row: dict[str, object] = dict(pair)
        for name, func in (("execution_accuracy", execution_accuracy),
                           ("executable", executable)):
            try:
                row[name] = func(pred_cypher=pair["pred_text"], target_cypher=pair["gold_text"],
                                 neo4j_connector=conn)
            except Exception as exc:  # the reference's own crash, recorded
                row[name] = {"raises": type(exc).__name__}
        results.append(row)
    # one pair a line: a diff of a regenerated oracle shows which pairs changed
    sys.stdout.write('{"reference": "megagonlabs/cypherbench@94605181d12d9bc837f737a37b9d46471c2f3eff", '
                     f'"seed": {SEED}, "pairs": [\n')
    sys.stdout.write(",\n".join(json.dumps(row) for row in results))
    sys.stdout.write("\n]}\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
