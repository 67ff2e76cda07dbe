"""The gold audit of SDMX cases: every target and alternative target scored as the
prediction, its codes checked against the codelists of the case's ``sdmx-structure`` source."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ...model import Case, Context, Kind
from . import TOLERANCE, AuditResult, self_check


class TargetTurn(Protocol):
    """What the audit reads of the SDMX kind's parsed turn (``kinds.sdmx.TargetTurn``, which
    imports this module: a protocol keeps the two from importing each other)."""

    @property
    def index(self) -> int: ...
    @property
    def target(self) -> Any: ...
    @property
    def raw(self) -> Any: ...
    @property
    def alternatives(self) -> tuple[Any, ...]: ...


def audit_targets(case: Case, kind: Kind, ctx: Context, result: AuditResult,
                  turns: Sequence[TargetTurn], by_name: bool) -> None:
    """The targets (``turns``, as the kind parsed them) as the prediction: the kind checks the
    selected codes against the codelists of the case's ``sdmx-structure`` datasource;
    ``by_name``: the case matches terms by name too, so a name the codelist spells otherwise
    is a finding."""
    primary = [{"indicator_selection": t.raw["target"]["indicator_selection"]} for t in turns]
    answers: list[tuple[str, list[Any]]] = [("", primary)]
    for pos, turn in enumerate(turns):  # every alternative target is a gold answer too
        known = [("target", _selection_key(turn.target))]
        for j, selection in enumerate(turn.alternatives):
            key = _selection_key(selection)
            same = next((name for name, k in known if k == key), None)
            if same is not None:
                result.add("redundant-alternative", f"conversation[{turn.index}]."
                           f"alternative_targets[{j}] selects the same terms as {same}: the "
                           "alternative adds nothing")
            known.append((f"alternative_targets[{j}]", key))
        for j, alt in enumerate(turn.raw.get("alternative_targets") or []):
            prediction = list(primary)
            prediction[pos] = {"indicator_selection": alt["indicator_selection"]}
            answers.append((f"conversation[{turn.index}].alternative_targets[{j}]: ", prediction))
    bound = case.thresholds.get("valid_term_rate")
    seen: set[str] = set()  # a term an alternative shares with the target is reported once
    for where, prediction in answers:
        scored = self_check(case, kind, ctx, result, prediction, None,
                             explained=["valid_term_rate"], where=where)
        if scored is None:
            continue
        for term in scored.details.get("invalid_terms") or []:
            if _first_sight(term, seen):
                result.add("code-not-in-codelist", where + _term(term) + f": {term.get('reason')}")
        for term in (scored.details.get("name_mismatches") or []) if by_name else []:
            if _first_sight(term, seen):
                result.add("codelist-name-mismatch", where + _term(term) + ": the codelist "
                           f"calls it {term.get('codelist_name')!r}")
        rate = scored.metrics.get("valid_term_rate")
        if bound is not None and bound.min is not None and rate is not None \
                and not scored.details.get("invalid_terms") and rate < 1 - TOLERANCE:
            result.add("gold-below-threshold", f"{where}valid_term_rate = {rate:.4f} scoring "
                       f"the gold against itself (threshold {bound.describe()})")


def _selection_key(selection: Mapping[tuple[str, str], list[Any]]) -> Any:
    """A selection compared as the metrics see it: terms per (dataset, dimension), as sets."""
    return sorted((k, sorted(set(map(repr, v)))) for k, v in selection.items() if v)


def _first_sight(term: Mapping[str, object], seen: set[str]) -> bool:
    key = json.dumps({k: v for k, v in term.items() if k != "reason"}, sort_keys=True,
                     default=str)
    if key in seen:
        return False
    seen.add(key)
    return True


def _term(term: Mapping[str, object]) -> str:
    name = f" ({term['name']})" if term.get("name") else ""
    return (f"conversation[{term.get('turn')}] {term.get('dataset_id')} "
            f"{term.get('dimension')}={term.get('id')}{name}")
