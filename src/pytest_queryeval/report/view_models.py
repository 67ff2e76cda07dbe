"""The models of ``queryeval view``: which model each column of the page is, and how the models
compare.

Why: a team compares models (this week's and a candidate, a multi-model run's, one run per
model), and a page that showed ``case[model-a]`` and ``case[model-b]`` as two cases, or called a
case flaky because model A passed it and model B did not, could not. A multi-model run's records
name their model (``model``, ids ``case[model]``); a run of one model names it in its ``run``
header (:func:`run_model`). The comparison is the per-run reports' own: the models table of
:func:`.models.table`, the pass rate as :func:`.casestats.group_stats` counts it, the
McNemar pairs and disagreements of :func:`.model_pairs.compare_models`, so for one
multi-model run the page says what its report says.

Kept apart from :mod:`.view` (which lays out the page) so that the model rules are read in one
place; this module knows nothing of the page.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypedDict

from .model_pairs import ModelPair, model_of

Record = Mapping[str, object]


class ModelsRow(TypedDict):
    """One row of the models table, one cell per model (``rates``: the pass rates a row of
    rates shows, None elsewhere)."""

    group: str
    label: str
    cells: list[str]
    rates: list[float | None]


class Pair(ModelPair):
    """:class:`.model_pairs.ModelPair` and its sentence (:func:`.models.pair_text`)."""

    text: str


class Models(TypedDict):
    """The models compared: each one's latest column, the table (models as columns), each
    pair's McNemar test and the cases the models disagree on (case, outcome per model)."""

    names: list[str]
    columns: list[int]
    rows: list[ModelsRow]
    pairs: list[Pair]
    disagreements: list[tuple[str, list[str]]]
    disagreement_count: int


class _AsRow(Mapping[str, object]):
    """A record as its row of the page: ``id`` the row's key, no ``file`` and no ``model``
    (one run per model pairs a case by its id, a multi-model run by its id as written)."""

    __slots__ = ("_key", "_record")

    def __init__(self, key: str, record: Record) -> None:
        self._key, self._record = key, record

    def __getitem__(self, name: str) -> object:
        if name == "id":
            return self._key
        if name == "file":
            return ""
        if name == "model":
            raise KeyError(name)
        return self._record[name]

    def __iter__(self) -> Iterator[str]:
        return iter(["id", "file", *(k for k in self._record if k not in ("id", "file", "model"))])

    def __len__(self) -> int:
        return sum(1 for _ in self)


def run_model(report: Record) -> str | None:
    """The model of a run whose records name none: its ``run.model`` label
    (``--queryeval-model-label``, else the suite's ``model:``), else its ``run.predictions``
    source (``file:preds.jsonl``, as :func:`..predict.describe_predictions` writes it), a URL's
    password masked; None when the report names neither (such runs count as runs of one
    model)."""
    from .._util.secrets import mask_url

    run = report.get("run")
    found = (run.get("model") or run.get("predictions")) if isinstance(run, Mapping) else None
    return mask_url(str(found)) if found else None


def model_columns(records: Sequence[Record]) -> list[tuple[str | None, list[Record]]]:
    """A run's columns: one per model its records name (by name), then one for its records of
    no model (a multi-model run's cases with their own prediction); [(None, all)] when no
    record names a model (the run's model is then :func:`run_model`)."""
    groups: dict[str | None, list[Record]] = {}
    for record in records:
        groups.setdefault(model_of(record), []).append(record)
    if not any(groups):
        return [(None, groups.get(None, []))]
    names: list[str | None] = [*sorted(m for m in groups if m is not None)]
    if None in groups:
        names.append(None)
    return [(name, groups[name]) for name in names]


def written(record: Record, key: str) -> str:
    """The record's ``key`` (id or nodeid) as the case is written: without the ``[model]``
    a multi-model run's fan-out appends, so a case's models share its row."""
    value = str(record.get(key) or record.get("id"))
    model = model_of(record)
    suffix = f"[{model}]"
    return value[:-len(suffix)] if model and value.endswith(suffix) else value


def compare(models: Sequence[str | None], tables: Sequence[Mapping[str, Record]],
            text: Callable[[object, int], str]) -> tuple[Models | None, set[str]]:
    """The models' comparison (None for fewer than two models) and the row keys of every case
    they disagree on. ``models``: each column's model (None: no model, left out); ``tables``:
    each column's records by row key; ``text``: how a label from a report is made safe.

    Each model is its latest column. The table is :func:`.models.table` turned to one column
    per model, then the pass rate per kind and per difficulty (per kind and difficulty with
    several kinds); the pairs and disagreements are
    :func:`.model_pairs.compare_models` of those columns, each case paired by its row."""
    from ..figures.numbers import doc_num, doc_pct
    from .casestats import group_stats
    from .model_pairs import compare_models
    from .models import pair_text, table

    latest = _latest_columns(models)
    if len(latest) < 2:
        return None, set()
    names = sorted(latest)
    by_model = {m: list(tables[latest[m]].values()) for m in names}
    stats = {m: group_stats(by_model[m]) for m in names}
    atoms = _atoms(names, by_model)
    kinds = sorted({k for found in atoms.values() for k, _ in found})
    header, rows = table({"models": stats, "by_kind": dict.fromkeys(kinds)}, doc_num, doc_pct)
    out: list[ModelsRow] = [
        ModelsRow(group="model", label=h, cells=[r[i] for r in rows],
                  rates=[stats[m]["pass_rate"] if h == "pass" else None for m in names])
        for i, h in enumerate(header) if i > 0]
    out.extend(_rate_rows(names, atoms, stats, kinds, text))
    # the records as compare_models pairs them: by the row's key, whatever the file or model
    compared = compare_models({m: [_AsRow(key, rec) for key, rec in tables[latest[m]].items()]
                               for m in names})
    pairs = [Pair(a=p["a"], b=p["b"], cases=p["cases"], a_only=p["a_only"], b_only=p["b_only"],
                  p_value=p["p_value"], better=p["better"], text=pair_text(p))
             for p in compared["pairs"]]
    disagree = _disagreeing(names, latest, tables)
    return Models(names=names, columns=[latest[m] for m in names], rows=out, pairs=pairs,
                  disagreements=[(text(d["case"], 1000),
                                  [str(d["outcomes"][m] or "not run") for m in names])
                                 for d in compared["disagreements"]],
                  disagreement_count=compared["disagreement_count"]), disagree


def _latest_columns(models: Sequence[str | None]) -> dict[str, int]:
    """Each model's last column: a model run again on the page is compared as it is now."""
    latest: dict[str, int] = {}
    for index, model in enumerate(models):
        if model is not None:
            latest[model] = index
    return latest


def _atoms(names: list[str], by_model: Mapping[str, list[Record]]
           ) -> dict[str, dict[tuple[str, str], list[Record]]]:
    """Each model's records by kind and difficulty, read once: its groups are unions of these."""
    from ..figures.columns import difficulty_of

    atoms: dict[str, dict[tuple[str, str], list[Record]]] = {}
    for m in names:
        mine = atoms[m] = {}
        for r in by_model[m]:
            mine.setdefault((str(r.get("kind")), difficulty_of(r)), []).append(r)
    return atoms


def _rate_rows(names: list[str], atoms: Mapping[str, dict[tuple[str, str], list[Record]]],
               stats: Mapping[str, dict[str, Any]], kinds: list[str],
               text: Callable[[object, int], str]) -> list[ModelsRow]:
    """The pass rate per kind, per difficulty, and per kind and difficulty when there are
    several kinds (with one, that last block would repeat the difficulties)."""
    from ..figures.columns import ordered_difficulties

    out: list[ModelsRow] = []
    for kind in kinds:
        out.append(_rate_row(names, atoms, stats, text, "kind", kind, kind, None))
    diffs = ordered_difficulties(d for found in atoms.values() for _, d in found)
    for diff in diffs:
        out.append(_rate_row(names, atoms, stats, text, "difficulty", diff, None, diff))
    if len(kinds) > 1:
        for kind in kinds:
            for diff in diffs:
                if any((kind, diff) in found for found in atoms.values()):
                    out.append(_rate_row(names, atoms, stats, text, "kind_difficulty",
                                         f"{kind} · {diff}", kind, diff))
    return out


def _rate_row(names: list[str], atoms: Mapping[str, dict[tuple[str, str], list[Record]]],
              stats: Mapping[str, dict[str, Any]], text: Callable[[object, int], str],
              group: str, label: str, kind: str | None, diff: str | None) -> ModelsRow:
    """One group's pass rate per model, counted as the run's report counts it; a group that
    holds all of a model's records reuses its overall figures."""
    from ..figures.numbers import doc_pct
    from .casestats import group_stats

    cells, values = [], []
    for m in names:
        groups = [recs for (k, d), recs in atoms[m].items()
                  if (kind is None or k == kind) and (diff is None or d == diff)]
        found = stats[m] if len(groups) == len(atoms[m]) else \
            group_stats([r for recs in groups for r in recs])
        judged = found["passed"] + found["failed"] + found["errors"] \
            + found["xfailed_by_gating"]
        cells.append(f"{doc_pct(found['pass_rate'])} of {judged}" if found["count"] else "")
        values.append(found["pass_rate"])
    return ModelsRow(group=group, label=text(label, 200), cells=cells, rates=values)


def _disagreeing(names: list[str], latest: Mapping[str, int],
                 tables: Sequence[Mapping[str, Record]]) -> set[str]:
    """compare_models' rule (every model has the case, their outcomes differ) for every case:
    it lists at most 200, and the page marks them all."""
    from ..baseline.verdicts import judged_outcome

    first = tables[latest[names[0]]]
    return {key for key in first
            if all(key in tables[latest[m]] for m in names)
            and len({judged_outcome(tables[latest[m]][key]) for m in names}) > 1}
