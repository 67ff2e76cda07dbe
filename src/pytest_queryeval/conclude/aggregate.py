"""Aggregates over case records (the JSON report's ``cases``) and the session gates.

Works on plain JSON records so the controller can aggregate what xdist workers sent, and so
baselines written by an earlier run aggregate the same way.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..figures.by_turn import COUNTS, MISSING, PASSED, scored_turns
from ..figures.columns import ordered_metrics
from ..metricnames import (
    JUDGE_EX,
)
from ..model import NO_DIFFICULTY
from ..report.casestats import Partial as _Partial
from ..report.casestats import group_stats
from ..report.model_pairs import models_aggregates
from ..suite.config import Gate

if TYPE_CHECKING:
    from ..model import RecordLike



def aggregate(records: Sequence[RecordLike]) -> dict[str, Any]:
    # Each record is read once, into the partial of its atom (kind, difficulty, tags,
    # dialect); every group is a union of atoms (a record counts once per tag it lists).
    atoms: dict[tuple[str, str, tuple[str, ...], str | None], list[Mapping[str, Any]]] = {}
    for rec in records:
        dialect = rec.get("dialect")
        key = (str(rec.get("kind")), str(rec.get("difficulty") or NO_DIFFICULTY),
               tuple(str(tag) for tag in rec.get("tags") or ()),
               str(dialect) if dialect else None)
        atom = atoms.get(key)
        if atom is None:
            atoms[key] = [rec]
        else:
            atom.append(rec)
    partials = {key: _Partial(recs) for key, recs in atoms.items()}
    by_kind: dict[str, list[Any]] = {}
    by_kd: dict[str, dict[str, list[Any]]] = {}
    by_diff: dict[str, list[Any]] = {}
    by_tag: dict[str, list[Any]] = {}
    by_dialect: dict[str, list[Any]] = {}
    misnamed = _misnamed_kinds(atoms)
    for key in atoms:
        kind, diff, tags, dialect = key
        if kind not in misnamed:
            by_kind.setdefault(kind, []).append(key)
            by_kd.setdefault(kind, {}).setdefault(diff, []).append(key)
        by_diff.setdefault(diff, []).append(key)
        for tag in tags:
            by_tag.setdefault(tag, []).append(key)
        if dialect:
            by_dialect.setdefault(dialect, []).append(key)
    # Groups often hold the very same atoms (one kind, no difficulties, one tag): compute
    # each distinct group once, and hand every place its own copy.
    done: dict[tuple[Any, ...], dict[str, Any]] = {}

    def stats(group: Sequence[Any]) -> dict[str, Any]:
        key = tuple(group)
        if key not in done:
            total = _Partial()
            for atom in group:
                total.add(partials[atom])
            done[key] = total.stats()
            return done[key]
        s = done[key]
        return {**s, "metrics": {m: {**v, "missing": dict(v["missing"])}
                                 for m, v in s["metrics"].items()}}

    dialects = {"by_dialect": {d: stats(v) for d, v in sorted(by_dialect.items())}} \
        if by_dialect else {}  # only a suite with fanned-out or per-dialect cases has it
    return {
        "overall": stats(list(atoms)),
        "by_kind": {k: stats(v) for k, v in sorted(by_kind.items())},
        "by_kind_difficulty": {k: {d: stats(v) for d, v in sorted(ds.items())}
                               for k, ds in sorted(by_kd.items())},
        "by_difficulty": {d: stats(v) for d, v in sorted(by_diff.items())},
        "by_tag": {t: stats(v) for t, v in sorted(by_tag.items())},
        **dialects,
        **conversation_aggregates(records),
        **models_aggregates(records, group_stats),  # only a run that fans its cases out per model has it
    }


def _misnamed_kinds(atoms: Mapping[tuple[str, str, tuple[str, ...], str | None],
                                   Sequence[Mapping[str, Any]]]) -> set[str]:
    """Kinds no registered kind answers to whose every case is an error (a misspelt
    ``kind: sqll``, a case file that could not be read): their cases count in the overall
    line and are listed as errors with their located reason, but a table of their own
    would present a typo as a kind."""
    from .. import kindregistry

    known = set(kindregistry.known_kinds())
    seen: dict[str, bool] = {}
    for (kind, *_), recs in atoms.items():
        if kind not in known:
            errored = all(r.get("outcome") == "error" for r in recs)
            seen[kind] = seen.get(kind, True) and errored
    return {kind for kind, errored in seen.items() if errored}


def conversation_aggregates(records: Sequence[RecordLike]) -> dict[str, Any]:
    """``by_turn`` and ``conversations``: per turn number, over every conversation case's
    scored turns, how many there are, how many passed (``turn_accuracy``) or are missing and
    each metric's mean; over the conversations, their ``interaction_accuracy`` (the mean of the
    case metric) and the share of all scored turns that passed. Empty when no record is a
    conversation (a suite without one reports as before).

    Only the records are read (each turn's outcome and metrics), so ``queryeval merge`` and
    ``--queryeval-resume`` compute what a serial run does; the sums are ``math.fsum``, exact
    whatever the order of the records.
    """
    per_turn: dict[int, _Turns] = {}
    cases = interactions_passed = dropped = 0
    interaction: list[float] = []
    dropped_seen = False
    for rec in records:
        turns = scored_turns(rec)
        if turns is None:
            continue
        cases += 1
        value = (rec.get("metrics") or {}).get("interaction_accuracy")
        if isinstance(value, int | float) and not isinstance(value, bool) and value == value:
            interaction.append(float(value))
            interactions_passed += value == 1
        tsse = (rec.get("details") or {}).get("dropped_turns")
        if isinstance(tsse, int) and not isinstance(tsse, bool):
            dropped_seen, dropped = True, dropped + tsse
        for entry in turns:
            slot = per_turn.setdefault(int(entry["turn"]), _Turns())
            slot.add(entry)
    if not cases:
        return {}
    by_turn = {str(number): per_turn[number].stats() for number in sorted(per_turn)}
    turns_n = sum(s.turns for s in per_turn.values())
    passed_n = sum(s.passed for s in per_turn.values())
    missing_n = sum(s.missing for s in per_turn.values())
    conversations: dict[str, Any] = {
        "cases": cases,
        "interaction_accuracy": math.fsum(interaction) / len(interaction) if interaction
        else None,
        "interactions_passed": interactions_passed,
        "turn_accuracy": passed_n / turns_n if turns_n else None,
        "turns": turns_n, "passed": passed_n,
    }
    if missing_n:
        conversations["missing"] = missing_n
    if dropped_seen:  # conversation_scoring: tsse
        conversations["dropped_turns"] = dropped
    return {"by_turn": by_turn, "conversations": conversations}


class _Turns:
    """The scored turns of one turn number, over every conversation case."""

    __slots__ = ("missing", "passed", "turns", "values")

    def __init__(self) -> None:
        self.turns = self.passed = self.missing = 0
        self.values: dict[str, list[float]] = {}

    def add(self, entry: Mapping[str, Any]) -> None:
        self.turns += 1
        outcome = entry.get("outcome")
        self.passed += outcome == PASSED
        self.missing += outcome == MISSING
        for name, value in (entry.get("metrics") or {}).items():
            if isinstance(value, int | float) and not (isinstance(value, float)
                                                        and math.isnan(value)):
                self.values.setdefault(str(name), []).append(float(value))

    def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {"turns": self.turns, "passed": self.passed}
        if self.missing:
            out["missing"] = self.missing
        out["turn_accuracy"] = self.passed / self.turns
        for name in ordered_metrics(self.values):
            if name not in COUNTS:
                xs = self.values[name]
                out[name] = math.fsum(xs) / len(xs)
        return out


def reference_aggregates(records: Sequence[RecordLike]) -> dict[str, Any]:
    """TEXT2SPARQL's and GERBIL's session figures, computed the references' way.

    ``set_f1_ndcg``, ``macro_f1_qald`` and ``micro_f1`` are not means of per-case values (an
    extra averaged term, a harmonic mean of means, summed counts), so they are computed here
    from each scored case's metrics and details, in report order (file, line, id), which is
    the order the references sum their questions in.
    """
    t2s_found: list[tuple[Mapping[str, Any], bool]] = []
    gerbil_found: list[Mapping[str, Any]] = []
    for rec in records:
        metrics = rec.get("metrics") or {}
        details = rec.get("details") or {}
        t2s = details.get("text2sparql")
        if isinstance(t2s, Mapping) and "set_f1" in metrics:
            t2s_found.append((metrics, bool(t2s.get("order_matters"))))
        gerbil = details.get("gerbil")
        if isinstance(gerbil, Mapping) and "qald_f1" in metrics:
            gerbil_found.append(gerbil)
    out: dict[str, Any] = {}
    # The references' modules only for a run whose records they score (issue 61 item 4: a
    # SQL run imported the SPARQL figures' code at its end).
    if t2s_found:
        from ..metrics import text2sparql

        out["text2sparql"] = text2sparql.aggregate(
            [text2sparql.Question(m, ordered) for m, ordered in t2s_found])
    if gerbil_found:
        from ..metrics import gerbil_qa

        out["gerbil"] = gerbil_qa.aggregate([gerbil_qa.counts_from_json(g)
                                             for g in gerbil_found])
    from ..metrics.pass_k import pass_k_aggregate

    pass_k = pass_k_aggregate(records)
    if pass_k is not None:
        out["pass_k"] = pass_k
    abstention = abstention_aggregate(records)
    if abstention is not None:
        out["abstention"] = abstention
    from ..metrics.clarification import clarification_aggregate

    clarification = clarification_aggregate(records)
    if clarification is not None:
        out["clarification"] = clarification
    return out


def abstention_aggregate(records: Sequence[RecordLike]) -> dict[str, Any] | None:
    """Abstention precision and recall and the EHRSQL 2024 reliability score RS(0/5/10/N), from
    the records alone (so ``queryeval merge`` recomputes them); None when no case expects
    abstention and no prediction abstained.

    Every case the engine judged (passed, failed or in error) is one question: one that expects
    abstention scores +1 when the prediction abstained, else -1; one that expects an answer
    scores 0 when the prediction abstained, +1 when the case passed, else -1 (a right answer
    is a passing case: bound ``ehrsql_ex`` to compare results exactly as the reference does).
    """
    from ..metrics.reliability import reliability_scores

    judged = [r for r in records if r.get("status") in ("passed", "failed", "error")]
    flags = [_abstention_flags(r) for r in judged]
    if not any(expected or abstained for expected, abstained in flags):
        return None
    scores = []
    for rec, (expected, abstained) in zip(judged, flags, strict=True):
        if expected:
            scores.append(1 if abstained else -1)
        else:
            scores.append(0 if abstained else 1 if rec.get("status") == "passed" else -1)
    both = sum(1 for expected, abstained in flags if expected and abstained)
    abstained_n = sum(1 for _, abstained in flags if abstained)
    expected_n = sum(1 for expected, _ in flags if expected)
    rs = reliability_scores(scores)
    return {
        "questions": len(scores), "expected": expected_n, "abstained": abstained_n,
        "abstention_precision": both / abstained_n if abstained_n else None,
        "abstention_recall": both / expected_n if expected_n else None,
        **{f"reliability_score_{p.lower()}": value for p, value in rs.items()},
    }


def _abstention_flags(record: RecordLike) -> tuple[bool, bool]:
    """(expects abstention, the prediction abstained), from ``details.abstention``."""
    info = (record.get("details") or {}).get("abstention")
    if not isinstance(info, Mapping):
        return False, False
    return bool(info.get("expected")), bool(info.get("abstained"))


def _under(record: RecordLike, scope: Path, seen: dict[tuple[str, Path], bool]) -> bool:
    """Whether the record's case file lies under ``scope``; ``seen`` keeps the answer per
    file and scope (resolving the path once per record and gate cost more than the gates)."""
    file = str(record.get("path") or record.get("file") or "")
    inside = seen.get((file, scope))
    if inside is None:
        path = Path(file)
        path = path.parent.resolve() / path.name  # a linked case file is where it is found
        inside = seen[(file, scope)] = path == scope or scope in path.parents
    return inside


def evaluate_gates(gates: Iterable[Gate], records: Sequence[RecordLike]) -> list[dict[str, Any]]:
    """Each gate over the cases under its config's directory (and kind/tag filter)."""
    results: list[dict[str, Any]] = []
    seen: dict[tuple[str, Path], bool] = {}
    for gate in gates:
        selected = [r for r in records if _under(r, gate.scope, seen)
                    and (gate.kind is None or r.get("kind") == gate.kind)
                    and (gate.tag is None or gate.tag in (r.get("tags") or []))
                    and (gate.model is None or r.get("model") == gate.model)
                    and not (gate.reviewed_only and r.get("reviewed") is False)]
        stats = group_stats(selected)
        reason = None
        if gate.k is not None:  # pass@k / pass^k of the repeated cases, for the gate's k
            value, over, reason = _pass_k_value(gate, selected)
        elif gate.stat == "pass_rate":
            value = stats["pass_rate"]
            # skipped and xfailed cases are selected but not judged
            over = (stats["passed"] + stats["failed"] + stats["errors"]
                    + stats["xfailed_by_gating"])
        else:
            metric = stats["metrics"].get(gate.metric)
            value = None if not metric else metric["mean"] if gate.stat == "mean" else \
                math.fsum(_values(selected, gate.metric))
            over = metric["n"] if metric else 0
        refused = _judge_refusal(selected) if gate.metric == JUDGE_EX else None
        if value is None and reason is None:
            reason = ("nothing scored: no case matched" if not selected else
                      "nothing scored: no case was judged" if gate.stat == "pass_rate" else
                      f"nothing scored: no case has {gate.metric}")
        results.append({
            "name": gate.name, "metric": gate.metric, "stat": gate.stat,
            "scope": str(gate.scope), "kind": gate.kind, "tag": gate.tag,
            **({"model": gate.model} if gate.model else {}),
            **({"k": gate.k} if gate.k is not None else {}),
            **({"reviewed_only": True} if gate.reviewed_only else {}),
            "value": value, "op": gate.op, "limit": gate.limit, "cases": stats["count"],
            # the cases the value is computed over (``cases`` also counts the unscored ones)
            "n": over if value is not None else 0,
            "allow_empty": gate.allow_empty, "reason": reason,
            # a gate that scores nothing cannot vouch for the run: it fails unless allowed
            "passed": gate.allow_empty if value is None else (
                value >= gate.limit - 1e-12 if gate.op == ">=" else value <= gate.limit + 1e-12),
        })
        if refused:  # min_kappa: a judge measured below it gates nothing
            results[-1].update(passed=False, reason=refused)
    return results


def _pass_k_value(gate: Gate, records: Sequence[RecordLike],
                  ) -> tuple[float | None, int, str | None]:
    """A ``k:`` gate's figure over ``records`` (value, cases it averages, why there is none)."""
    from ..metrics.pass_k import gate_figure

    assert gate.k is not None
    return gate_figure(records, gate.metric, gate.k)


def _judge_refusal(records: Sequence[RecordLike]) -> str | None:
    """Why ``judge_ex`` may not gate these cases (``judge: {min_kappa:}``), or None."""
    for rec in records:
        judge = (rec.get("details") or {}).get("judge")
        if isinstance(judge, Mapping) and judge.get("refused"):
            return str(judge["refused"])
    return None


def _values(records: Iterable[RecordLike], metric: str) -> list[float]:
    """``metric`` of every record that has it (a ``total_max`` gate sums any metric)."""
    out = []
    for rec in records:
        value = (rec.get("metrics") or {}).get(metric)
        if isinstance(value, int | float) and not math.isnan(value):
            out.append(float(value))
    return out
