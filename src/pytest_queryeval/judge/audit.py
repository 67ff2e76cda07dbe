"""``--queryeval-audit-judge LABELS.jsonl``: the judge measured against expert labels (issue 26
item 6), and ``min_kappa``: a judge measured below it does not decide a case.

Why from recorded verdicts first: a published set (ROSE-VEC ships each method's verdicts beside
the experts' labels) and a team's own earlier runs already hold what the judge said, so the
agreement is recomputed exactly, offline, for free. Only the items without one ask the judge
(the suite's ``judge:``), from what the item itself holds (question, schema, both queries and,
when given, both results).

A labels file is JSON Lines, one labelled pair a line::

    {"id": "bird-17", "question": "...", "gold": "SELECT ...", "predicted": "SELECT ...",
     "label": true, "verdict": "equivalent"}

``label`` is the expert's: is the prediction correct. ``verdict`` (optional) is the judge's
recorded answer: a category, ``true``/``false`` (accepted or not), or a list of them for
repeated asks of the same item (the flip rate). ``schema``, ``evidence``, ``kind`` (sql,
sparql), ``gold_result`` and ``predicted_result`` (``{"columns": [...], "rows": [[...]]}``)
feed the prompt of an item that is asked.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .agreement import agreement, flip_rate
from .verdict import CATEGORIES

if TYPE_CHECKING:
    from .config import JudgeSpec


class ValueCache(Protocol):
    """Where the last ``--queryeval-audit-judge`` kappa is kept: pytest's cache (``get``)."""

    def get(self, key: str, default: object, /) -> object: ...

#: Keys of one labelled pair.
LABEL_KEYS = frozenset({"id", "question", "gold", "predicted", "label", "verdict", "schema",
                        "evidence", "kind", "gold_result", "predicted_result", "db_id"})


@dataclass
class LabelledPair:
    id: str
    label: bool
    #: The recorded verdicts as accept (True) / reject (False), one per ask; [] when none.
    verdicts: list[bool] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)


class LabelsError(ValueError):
    """A labels file that cannot be read (the message names the file and line)."""


def _accepted(value: object, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if value in CATEGORIES:
        return bool(value != "wrong")
    raise LabelsError(f"{where}: verdict: must be true/false or one of {', '.join(CATEGORIES)}"
                      f", not {value!r}")


def load_labels(path: Path, display: str | None = None) -> list[LabelledPair]:
    """The pairs of ``path``; a wrong line is a :class:`LabelsError` naming file and line."""
    name = display or str(path)
    from .._util import boundedio, safefile

    try:  # a FIFO, a device or a huge file is refused, never waited on or read whole
        text = safefile.read_text(path, "judge")
    except safefile.UnsafeFile as exc:
        raise LabelsError(f"{name}: cannot read the labels: {exc}") from None
    except OSError as exc:
        raise LabelsError(f"{name}: cannot read the labels: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise LabelsError(f"{name}: cannot read the labels: not UTF-8 text ({exc.reason})"
                          ) from None
    pairs: list[LabelledPair] = []
    seen: set[str] = set()
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{name}:{lineno}"
        try:
            data = boundedio.loads_json(line)
        except boundedio.BoundedReadError as exc:
            raise LabelsError(f"{where}: {exc}") from None
        if not isinstance(data, dict):
            raise LabelsError(f"{where}: a labelled pair must be a JSON object")
        unknown = sorted(set(data) - LABEL_KEYS)
        if unknown:
            raise LabelsError(f"{where}: {unknown[0]}: unknown key (allowed: "
                              f"{', '.join(sorted(LABEL_KEYS))})")
        label = data.get("label")
        if label in ("true", "false"):
            label = label == "true"
        if not isinstance(label, bool):
            raise LabelsError(f"{where}: label: must be true (the expert accepts the "
                              f"prediction) or false, not {label!r}")
        item_id = str(data.get("id", f"line-{lineno}"))
        if item_id in seen:
            raise LabelsError(f"{where}: id: {item_id!r} is given twice")
        seen.add(item_id)
        raw = data.get("verdict")
        asks = raw if isinstance(raw, list) else [] if raw is None else [raw]
        verdicts = [_accepted(v, where) for v in asks]
        if raw is None and not (isinstance(data.get("gold"), str)
                                and isinstance(data.get("predicted"), str)):
            raise LabelsError(f"{where}: no recorded verdict, and no gold and predicted queries "
                              "to ask the judge about")
        pairs.append(LabelledPair(item_id, label, verdicts, data))
    if not pairs:
        raise LabelsError(f"{name}: no labelled pairs")
    return pairs


@dataclass
class AuditReport:
    """What ``--queryeval-audit-judge`` measured."""

    labels: str
    model: str | None
    items: int
    #: Items whose verdict was asked in this run (the others were recorded).
    asked: int
    errors: list[str]
    kappa: float
    precision: float
    recall: float
    tp: int
    fp: int
    fn: int
    tn: int
    flip_rate: float
    #: Items asked more than once (the flip rate's denominator).
    repeated: int

    def to_json(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["kappa"] = None if math.isnan(self.kappa) else self.kappa
        return out

    def lines(self) -> list[str]:
        kappa = "undefined" if math.isnan(self.kappa) else f"{self.kappa:.4f}"
        out = [f"judge audit on {self.labels} ({self.items} labelled pairs, {self.asked} asked "
               f"now, {self.items - self.asked - len(self.errors)} from recorded verdicts"
               f"{f', model {self.model}' if self.model else ''}):",
               f"  Cohen's kappa {kappa}  precision {self.precision:.4f}  recall "
               f"{self.recall:.4f}  FP {self.fp}  FN {self.fn}  (TP {self.tp}, TN {self.tn})",
               f"  flip rate {self.flip_rate:.4f} over {self.repeated} items asked more than once"]
        out.extend(f"  judge error: {e}" for e in self.errors[:10])
        return out


Ask = Callable[[LabelledPair], bool]


def audit(pairs: list[LabelledPair], labels: str, ask: Ask | None = None,
          model: str | None = None) -> AuditReport:
    """The agreement over ``pairs``: each item's first recorded verdict, else ``ask(item)``
    (an item that cannot be asked, or whose answer is a judge error, is left out and listed)."""
    from ..errors import QueryEvalError

    expert: list[bool] = []
    judge: list[bool] = []
    errors: list[str] = []
    asked = 0
    for pair in pairs:
        if pair.verdicts:
            verdict = pair.verdicts[0]
        elif ask is None:
            errors.append(f"{pair.id}: no recorded verdict and no judge: configured to ask")
            continue
        else:
            try:
                verdict = ask(pair)
            except QueryEvalError as exc:
                errors.append(f"{pair.id}: {exc.reason()}")
                continue
            asked += 1
            pair.verdicts.append(verdict)
        expert.append(pair.label)
        judge.append(verdict)
    if not expert:
        raise LabelsError(f"{labels}: no item has a verdict: "
                          + "; ".join(errors[:3]))
    a = agreement(expert, judge)
    asks = [p.verdicts for p in pairs if p.verdicts]
    return AuditReport(labels, model, len(pairs), asked, errors, a.kappa, a.precision, a.recall,
                       a.tp, a.fp, a.fn, a.tn, flip_rate(asks),
                       sum(1 for v in asks if len(v) > 1))


def measured_kappa(labels: Path, cache: ValueCache | None = None, model: str | None = None,
                   ) -> tuple[float | None, str]:
    """The judge's last measured kappa on ``labels`` and where it comes from: the labels'
    recorded verdicts when every item has one, else the last ``--queryeval-audit-judge`` of
    that file and model kept in the cache; (None, why) when it was never measured."""
    try:
        pairs = load_labels(labels)
    except LabelsError as exc:
        return None, str(exc)
    if all(p.verdicts for p in pairs):
        report = audit(pairs, str(labels))
        return report.kappa, f"{len(pairs)} recorded verdicts in {labels.name}"
    if cache is not None:
        last = cache.get(cache_key(labels, model), None)
        if isinstance(last, dict) and isinstance(last.get("kappa"), int | float):
            return float(last["kappa"]), (f"the last --queryeval-audit-judge on {labels.name} "
                                          f"({last.get('items')} pairs)")
    return None, (f"{labels.name} has items without a recorded verdict and no "
                  "--queryeval-audit-judge of it was run")


def cache_key(labels: Path, model: str | None) -> str:
    import hashlib

    digest = hashlib.sha256(f"{labels.resolve()}|{model}".encode()).hexdigest()[:32]
    return f"queryeval/judge-audit/{digest}"


def kappa_refusal(spec: JudgeSpec | None, cache: ValueCache | None = None) -> str | None:
    """Why ``judge_ex`` may not decide under ``spec`` (its ``min_kappa``), or None."""
    if spec is None or spec.min_kappa is None or spec.labels is None:
        return None
    kappa, source = measured_kappa(spec.labels, cache, spec.model)
    if kappa is None or math.isnan(kappa):
        return (f"judge_ex cannot decide: judge.min_kappa is {spec.min_kappa:g} and the judge's "
                f"kappa was never measured ({source})")
    if kappa < spec.min_kappa:
        return (f"judge_ex cannot decide: the judge's measured kappa {kappa:.4f} ({source}) is "
                f"below judge.min_kappa {spec.min_kappa:g}")
    return None
