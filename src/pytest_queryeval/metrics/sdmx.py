"""SDMX indicator-selection metrics (epam/statgpt "Indicator Selection Eval").

A term is an ``(id, name)`` pair of one dimension of one dataset. Per dimension the selection is
compared with the target as sets: TP = selected ∩ target, FP = selected − target, FN = target −
selected. Everything here is plain data in, plain data out, so the rules can be tested (and
reused by reports) without pytest, YAML or an SDMX library.

Conventions (documented in ``docs/metrics-sdmx.md``):

* 0/0: precision is 1 when nothing is selected, recall is 1 when nothing is expected; F1 is 0
  when precision + recall is 0. A turn with no dimension at all scores 1 on every macro metric.
* A dimension takes part in a turn when the target or the selection has at least one term in
  it; an empty target dimension behaves like an absent one (as in the seed).
* Metric keys: ``DIM`` for the case's single target dataset, ``DATASET/DIM`` for every dimension
  when the targets name several datasets, and always for datasets the target does not name.
* A case's metric is the mean, over the target turns where it is defined, of the turn metric.

Why one module of this size: the per-dimension scores, their averages and the seed's Excel-cell
text follow one published method, and are checked against it as one unit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

#: Fields a term can be matched on; the seed matches on both.
MATCH_FIELDS = ("id", "name")
MACRO_METRICS = ("macro_precision", "macro_recall", "macro_f1")


class SelectionError(ValueError):
    """A selection (target or prediction) that does not have the documented shape.

    ``path`` locates the problem (``indicator_selection[0].dimensions[1].values[0].id``).
    """

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}" if path else message)


@dataclass(frozen=True, slots=True)
class SdmxTerm:
    """One selected or expected code. ``None`` means the field was not given."""

    id: str | None
    name: str | None

    def label(self) -> str:
        """The seed's ``ID: name`` rendering (one part alone when the other is missing)."""
        if self.id is not None and self.name is not None:
            return f"{self.id}: {self.name}"
        return self.id if self.id is not None else (self.name or "")

    def to_json(self) -> dict[str, str | None]:
        return {"id": self.id, "name": self.name}


#: ``{(dataset_id, dimension): [terms in the order given]}``.
Selection = dict[tuple[str, str], list[SdmxTerm]]


@dataclass(frozen=True, slots=True)
class MatchOptions:
    """How terms are compared: ``match_on`` fields, optionally case-insensitive names."""

    match_on: tuple[str, ...] = MATCH_FIELDS
    case_insensitive_names: bool = False
    #: A target term without an id is matched on its name alone. statgpt's documentation
    #: writes such targets when the codelist's ids are not at hand; the kind turns this on
    #: when the case does not set ``match_on`` itself.
    name_when_no_id: bool = False

    def key(self, term: SdmxTerm) -> tuple[str, ...] | None:
        """The comparison key, or None when a matched field is missing (never matches)."""
        parts: list[str] = []
        for name in self.match_on:
            value = term.id if name == "id" else term.name
            if value is None:
                return None
            if name == "name" and self.case_insensitive_names:
                value = value.strip().casefold()
            parts.append(value)
        return tuple(parts)

    def name_key(self, term: SdmxTerm) -> tuple[str, ...] | None:
        """The key of a name-only match (see ``name_when_no_id``); never equal to a full key."""
        if not self.name_when_no_id or "name" not in self.match_on or term.name is None:
            return None
        name = term.name
        if self.case_insensitive_names:
            name = name.strip().casefold()
        return ("\0name-only", name)

    def target_key(self, term: SdmxTerm) -> tuple[str, ...] | None:
        """A target term's key: its name alone when it has no id and the fallback is on."""
        if term.id is None and self.name_when_no_id:
            return self.name_key(term)
        return self.key(term)


# --------------------------------------------------------------------------- parsing


def _scalar(value: object, path: str) -> str | None:
    """A code or label as text; YAML turns ``NO``/``ON`` into booleans, which is refused."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise SelectionError(path, "is a boolean (YAML reads NO/YES/ON/OFF as booleans): quote it")
    if isinstance(value, str | int | float):
        return str(value)
    raise SelectionError(path, f"must be a string, not {type(value).__name__}")


def _unknown(path: str, keys: Iterable[Any], known: str) -> SelectionError:
    """Located at the first unknown key, so the report points at its line."""
    first = sorted(map(str, keys))[0]
    return SelectionError(f"{path}.{first}", f"unknown key (expected {known})")


def _named(entry: object, path: str, key: str, parts: str, strict: bool) -> str:
    """The name of an entry that names something and lists its parts (a dataset and its
    dimensions, a dimension and its values): both levels refuse the same mistakes alike."""
    if not isinstance(entry, Mapping):
        raise SelectionError(path, f"must be a mapping with {key} and {parts}")
    unknown = set(entry) - {key, parts}
    if strict and unknown:
        raise _unknown(path, unknown, f"{key}, {parts}")
    name = _scalar(entry.get(key), f"{path}.{key}")
    if not name:
        raise SelectionError(f"{path}.{key}", "is required")
    return name


def _listed(entry: Mapping[Any, Any], path: str, key: str, shape: str) -> list[Any]:
    """The parts an entry lists under ``key`` (none when it is absent)."""
    items = entry.get(key)
    if items is None:
        items = []
    if not isinstance(items, list):
        raise SelectionError(f"{path}.{key}", f"must be a list of {shape}")
    return items


def _add(sel: Selection, dataset: str, dim: str, terms: Iterable[SdmxTerm]) -> None:
    sel.setdefault((dataset, dim), []).extend(terms)


def parse_indicator_selection(data: object, path: str = "indicator_selection",
                              *, strict: bool = False) -> Selection:
    """Parse the seed's ``indicator_selection`` list (one entry per dataset).

    ``strict`` (targets) also refuses repeated dimensions and values without the matched
    fields; predictions are parsed leniently (repeats are merged, missing fields never match).
    """
    if data is None:
        return {}
    if not isinstance(data, list):
        raise SelectionError(path, "must be a list of {dataset_id, dimensions} entries")
    sel: Selection = {}
    for i, entry in enumerate(data):
        p = f"{path}[{i}]"
        dataset = _named(entry, p, "dataset_id", "dimensions", strict)
        dims = _listed(entry, p, "dimensions", "{dimension_name, values}")
        for j, dim_entry in enumerate(dims):
            dp = f"{p}.dimensions[{j}]"
            dim = _named(dim_entry, dp, "dimension_name", "values", strict)
            if strict and (dataset, dim) in sel:
                raise SelectionError(f"{dp}.dimension_name", f"{dim} is repeated in {dataset}")
            values = _listed(dim_entry, dp, "values", "{id, name}")
            terms: list[SdmxTerm] = []
            for k, v in enumerate(values):
                vp = f"{dp}.values[{k}]"
                if not isinstance(v, Mapping):
                    raise SelectionError(vp, "must be a mapping with id and/or name")
                unknown = set(v) - {"id", "name"}
                if strict and unknown:
                    raise _unknown(vp, unknown, "id, name")
                term = SdmxTerm(_scalar(v.get("id"), f"{vp}.id"),
                                _scalar(v.get("name"), f"{vp}.name"))
                if term.id is None and term.name is None:
                    raise SelectionError(vp, "needs an id or a name")
                terms.append(term)
            _add(sel, dataset, dim, terms)
    return sel


def parse_adapter_mapping(data: Mapping[Any, Any], path: str = "") -> Selection:
    """Parse ``{dataset_id: {DIM: {term_id: term_name}}}`` (statgpt's ``dimension_id_to_name``)."""
    sel: Selection = {}
    for dataset, dims in data.items():
        p = f"{path}.{dataset}" if path else str(dataset)
        ds = _scalar(dataset, p)
        if not ds:
            raise SelectionError(p, "an empty dataset id")
        if not isinstance(dims, Mapping):
            hint = (" (a target-shaped entry belongs in {indicator_selection: [...]})"
                    if dataset in ("dataset_id", "dimensions") else "")
            raise SelectionError(p, f"must map dimension ids to {{term_id: term_name}}{hint}")
        for dim, terms in dims.items():
            dp = f"{p}.{dim}"
            d = _scalar(dim, dp)
            if not d:
                raise SelectionError(dp, "an empty dimension id")
            if terms is None:
                terms = {}
            if not isinstance(terms, Mapping):
                raise SelectionError(dp, "must map term ids to term names")
            _add(sel, ds, d, [SdmxTerm(_scalar(tid, f"{dp}.{tid}"), _scalar(tname, f"{dp}.{tid}"))
                              for tid, tname in terms.items()])
    return sel


def parse_turn_selection(data: object, path: str = "") -> Selection:
    """One turn's selection: ``{indicator_selection: [...]}`` (target shape) or the adapter
    mapping; ``None`` is an empty selection (the system selected nothing)."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise SelectionError(path, "a turn selection is {indicator_selection: [...]} or "
                                   "{dataset_id: {DIM: {term_id: term_name}}}, not "
                                   f"{type(data).__name__}")
    if "indicator_selection" in data:
        return parse_indicator_selection(
            data["indicator_selection"], f"{path}.indicator_selection" if path
            else "indicator_selection")
    return parse_adapter_mapping(data, path)


# --------------------------------------------------------------------------- scoring


def _ratio(num: int, den: int) -> float:
    return 1.0 if den == 0 else num / den


def f1_score(precision: float, recall: float) -> float:
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


@dataclass
class DimensionScore:
    """TP/FP/FN of one dimension of one dataset in one turn."""

    dataset_id: str
    dimension: str
    key: str  # the metric key: "DIM" or "DATASET/DIM"
    in_target: bool
    tp: list[SdmxTerm] = field(default_factory=list)
    fp: list[SdmxTerm] = field(default_factory=list)
    fn: list[SdmxTerm] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return _ratio(len(self.tp), len(self.tp) + len(self.fp))

    @property
    def recall(self) -> float:
        return _ratio(len(self.tp), len(self.tp) + len(self.fn))

    @property
    def f1(self) -> float:
        return f1_score(self.precision, self.recall)

    def to_json(self) -> dict[str, object]:
        return {
            "dataset_id": self.dataset_id, "dimension": self.dimension, "key": self.key,
            "in_target": self.in_target, "precision": self.precision, "recall": self.recall,
            "f1": self.f1, "tp": [t.to_json() for t in self.tp],
            "fp": [t.to_json() for t in self.fp], "fn": [t.to_json() for t in self.fn],
        }


def score_dimension(target: Sequence[SdmxTerm], selected: Sequence[SdmxTerm],
                    options: MatchOptions = MatchOptions(), *, dataset_id: str = "",
                    dimension: str = "", key: str | None = None,
                    in_target: bool | None = None) -> DimensionScore:
    """Set comparison of one dimension. Repeated terms count once; a selected term missing a
    matched field is always a false positive."""
    target_keys: dict[tuple[str, ...], SdmxTerm] = {}
    for t in target:
        k = options.target_key(t)
        if k is not None:
            target_keys.setdefault(k, t)
    out = DimensionScore(dataset_id, dimension, key if key is not None else dimension,
                         bool(target) if in_target is None else in_target)
    matched: set[tuple[str, ...]] = set()
    seen_unkeyed: set[SdmxTerm] = set()
    for s in selected:
        k = options.key(s)
        if k is None or k not in target_keys:
            name_only = options.name_key(s)
            if name_only is not None and name_only in target_keys:
                if name_only not in matched:  # a name-only target term counts once
                    matched.add(name_only)
                    out.tp.append(target_keys[name_only])
                continue
        if k is None:
            if s not in seen_unkeyed:
                seen_unkeyed.add(s)
                out.fp.append(s)
        elif k in matched:
            continue
        elif k in target_keys:
            matched.add(k)
            out.tp.append(target_keys[k])
        else:
            matched.add(k)
            out.fp.append(s)
    out.fn = [t for k, t in target_keys.items() if k not in matched]
    return out


def dimension_key(dataset_id: str, dimension: str, primary_dataset: str | None) -> str:
    """``DIM`` for the case's single target dataset, else ``DATASET/DIM``."""
    return dimension if dataset_id == primary_dataset else f"{dataset_id}/{dimension}"


def primary_dataset(targets: Iterable[Selection]) -> str | None:
    """The only dataset the targets name (its dimensions get short keys), else None."""
    sels = list(targets)
    datasets = {ds for sel in sels for (ds, _dim), terms in sel.items() if terms}
    if not datasets:
        datasets = {ds for sel in sels for (ds, _dim) in sel}
    return next(iter(datasets)) if len(datasets) == 1 else None


@dataclass
class TurnScore:
    """All dimensions of one user turn with a target."""

    dimensions: list[DimensionScore]
    turn: int = 0  # index in the conversation
    content: str | None = None
    #: Codelist validation, when a structure is configured: ``(checked, invalid terms)``.
    checked_terms: int | None = None
    invalid_terms: list[dict[str, Any]] = field(default_factory=list)
    name_mismatches: list[dict[str, Any]] = field(default_factory=list)
    unchecked_dimensions: list[str] = field(default_factory=list)
    #: Which of a turn's acceptable targets was scored (``target``,
    #: ``alternative_targets[0]`` ...); None when the turn has no alternatives.
    target_used: str | None = None

    @property
    def not_in_target(self) -> list[DimensionScore]:
        return [d for d in self.dimensions if not d.in_target]

    @property
    def valid_term_rate(self) -> float | None:
        if self.checked_terms is None:
            return None
        return _ratio(self.checked_terms - len(self.invalid_terms), self.checked_terms)

    def metrics(self) -> dict[str, float]:
        """Per-dimension and macro metrics (and ``valid_term_rate`` when checked)."""
        out: dict[str, float] = {}
        for d in self.dimensions:
            out[f"precision[{d.key}]"] = d.precision
            out[f"recall[{d.key}]"] = d.recall
            out[f"f1[{d.key}]"] = d.f1
        n = len(self.dimensions)
        out["macro_precision"] = sum(d.precision for d in self.dimensions) / n if n else 1.0
        out["macro_recall"] = sum(d.recall for d in self.dimensions) / n if n else 1.0
        out["macro_f1"] = sum(d.f1 for d in self.dimensions) / n if n else 1.0
        rate = self.valid_term_rate
        if rate is not None:
            out["valid_term_rate"] = rate
        return out

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "turn": self.turn, "content": self.content, "metrics": self.metrics(),
            "dimensions": [d.to_json() for d in self.dimensions],
            "dimensions_not_in_target": [d.key for d in self.not_in_target],
        }
        if self.target_used is not None:
            out["target_used"] = self.target_used
        if self.checked_terms is not None:
            out["checked_terms"] = self.checked_terms
            out["invalid_terms"] = self.invalid_terms
            out["name_mismatches"] = self.name_mismatches
            out["unchecked_dimensions"] = self.unchecked_dimensions
        return out


def score_turn(target: Selection, selected: Selection, options: MatchOptions = MatchOptions(),
               *, primary: str | None = None, turn: int = 0,
               content: str | None = None) -> TurnScore:
    """Score one turn: target dimensions first (in target order), then the selection's
    dimensions that are not in the target (all their terms are false positives)."""
    dims: list[DimensionScore] = []
    for (ds, dim), terms in target.items():
        if not terms:
            continue  # an empty target dimension is treated as absent (seed)
        dims.append(score_dimension(terms, selected.get((ds, dim), []), options, dataset_id=ds,
                                    dimension=dim, key=dimension_key(ds, dim, primary),
                                    in_target=True))
    for (ds, dim), terms in selected.items():
        if not terms or target.get((ds, dim)):
            continue
        dims.append(score_dimension([], terms, options, dataset_id=ds, dimension=dim,
                                    key=dimension_key(ds, dim, primary), in_target=False))
    return TurnScore(dims, turn=turn, content=content)


def best_turn(candidates: Sequence[TurnScore]) -> TurnScore:
    """The best of a turn's scores against its acceptable targets: highest macro F1, then
    macro recall (statgpt favours recall), then macro precision; the first on a tie, so the
    main target wins over an alternative that scores the same."""
    def rank(t: TurnScore) -> tuple[float, float, float]:
        m = t.metrics()
        return (m["macro_f1"], m["macro_recall"], m["macro_precision"])

    best = candidates[0]
    for c in candidates[1:]:
        if rank(c) > rank(best):
            best = c
    return best


def combine_turns(turns: Sequence[TurnScore]) -> dict[str, float]:
    """Case metrics: each metric's mean over the turns where it is defined."""
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for t in turns:
        for name, value in t.metrics().items():
            sums[name] = sums.get(name, 0.0) + value
            counts[name] = counts.get(name, 0) + 1
    return {name: sums[name] / counts[name] for name in sums}


def failure_metrics(targets: Iterable[Selection], primary: str | None) -> dict[str, float]:
    """Zero on every metric the targets define: an unusable prediction scores 0, not 'missing'."""
    out = dict.fromkeys(MACRO_METRICS, 0.0)
    for sel in targets:
        for (ds, dim), terms in sel.items():
            if terms:
                key = dimension_key(ds, dim, primary)
                for m in ("precision", "recall", "f1"):
                    out[f"{m}[{key}]"] = 0.0
    return out


# --------------------------------------------------------------------------- codelist checks


class CodeLookup(Protocol):
    """What codelist validation needs from a parsed structure (see ``sources.sdmx_structure``)."""

    def codes(self, dataset_id: str, dimension: str) -> Mapping[str, str] | None:
        """``{code id: name}`` of the dimension's codelist, None when it cannot be resolved.
        An empty mapping means the dimension is not in the dataset's DSD (nothing is valid)."""
        ...


def check_terms(turn: TurnScore, selected: Selection, lookup: CodeLookup,
                options: MatchOptions = MatchOptions()) -> None:
    """Flag selected terms whose code is not in the dimension's codelist (hallucinations).

    Terms are checked by id (by name when only a name is given); a valid id with another name
    is recorded as a name mismatch (label drift), not as invalid. Dimensions without a
    resolvable codelist are listed as unchecked and left out of ``valid_term_rate``.
    """
    checked = 0
    invalid: list[dict[str, Any]] = []
    mismatches: list[dict[str, Any]] = []
    unchecked: list[str] = []
    fold = options.case_insensitive_names

    def norm(s: str) -> str:
        return s.strip().casefold() if fold else s

    for (ds, dim), terms in selected.items():
        if not terms:
            continue
        codes = lookup.codes(ds, dim)
        if codes is None:
            unchecked.append(f"{ds}/{dim}")
            continue
        names = {norm(n) for n in codes.values()}
        seen: set[SdmxTerm] = set()
        for term in terms:
            if term in seen:
                continue
            seen.add(term)
            checked += 1
            entry: dict[str, Any] = {"dataset_id": ds, "dimension": dim, **term.to_json()}
            if not codes:
                invalid.append({**entry, "reason": "dimension not in the data structure"})
            elif term.id is not None:
                if term.id not in codes:
                    invalid.append({**entry, "reason": "code not in codelist"})
                elif term.name is not None and norm(term.name) != norm(codes[term.id]):
                    mismatches.append({**entry, "codelist_name": codes[term.id]})
            elif term.name is not None and norm(term.name) not in names:
                invalid.append({**entry, "reason": "name not in codelist"})
    turn.checked_terms = checked
    turn.invalid_terms = invalid
    turn.name_mismatches = mismatches
    turn.unchecked_dimensions = unchecked


# --------------------------------------------------------------------------- formatting


def format_details(dim: DimensionScore) -> str:
    """One dimension in the seed's Excel-cell format (recall first, two decimals)."""
    lines = [f"[recall: {dim.recall:.2f}, precision: {dim.precision:.2f}]"]
    for title, terms in (("True Positives", dim.tp), ("False Negatives", dim.fn),
                         ("False Positives", dim.fp)):
        lines.append(f"{title} [{len(terms)}]")
        lines.extend(f"  * {t.label()}" for t in terms)
    return "\n".join(lines)


def format_turn_details(turn: TurnScore) -> str:
    """Every target dimension (its key, then the seed block), then "dimensions not in target"."""
    blocks = [f"{d.key}\n{format_details(d)}" for d in turn.dimensions if d.in_target]
    if turn.target_used is not None:
        blocks.insert(0, f"scored against {turn.target_used} (the best-matching target)")
    extra = turn.not_in_target
    if extra:
        blocks.append("dimensions not in target\n" + "\n".join(
            f"{d.key}\n{format_details(d)}" for d in extra))
    if turn.invalid_terms:
        blocks.append(f"Invalid Terms [{len(turn.invalid_terms)}]\n" + "\n".join(
            f"  * {i['dimension']}: {SdmxTerm(i['id'], i['name']).label()} ({i['reason']})"
            for i in turn.invalid_terms))
    return "\n\n".join(blocks) if blocks else "(nothing expected, nothing selected)"


def format_case_details(turns: Sequence[TurnScore]) -> str:
    """The "indicator selection details" cell: one turn as is, several under turn headers."""
    if len(turns) == 1:
        return format_turn_details(turns[0])
    parts = []
    for n, t in enumerate(turns, 1):
        head = f"turn {n}" + (f": {t.content}" if t.content else "")
        parts.append(f"{head}\n{format_turn_details(t)}")
    return "\n\n".join(parts)
