"""``kind: sdmx`` — indicator selection of natural-language-to-SDMX systems (epam/statgpt).

A case is the seed's test-case file: a ``conversation`` whose user turns carry
``target.indicator_selection``. The prediction for a case is one turn-selection or a list of
them, one per user turn with a target, in order (see ``docs/metrics-sdmx.md``); inline it is
``predicted:`` beside each ``target``. The metrics live in :mod:`pytest_queryeval.metrics.sdmx`;
codelist checks use an ``sdmx-structure`` datasource parsed once per session.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import GoldError, PredictionError
from ..metrics.sdmx import (
    MACRO_METRICS,
    MATCH_FIELDS,
    MatchOptions,
    Selection,
    SelectionError,
    TurnScore,
    best_turn,
    check_terms,
    combine_turns,
    failure_metrics,
    format_case_details,
    parse_indicator_selection,
    parse_turn_selection,
    primary_dataset,
    score_turn,
)
from ..model import MISSING, Case, Context, Scored
from ._fences import note as note_fence
from ._fences import strip_fence

if TYPE_CHECKING:
    from .goldchecks.findings import AuditResult

_PER_DIMENSION = re.compile(r"^(precision|recall|f1)\[[^\[\]]+\]$")
#: Turn keys; ``predicted`` is the inline prediction of that turn.
TURN_KEYS = frozenset({"role", "content", "target", "alternative_targets", "predicted"})
#: Target keys of statgpt's full schema that this evaluation does not score (accepted, ignored).
IGNORED_TARGET_KEYS = frozenset({"is_out_of_scope", "tool_calls", "query_normalization"})
ROLES = frozenset({"user", "assistant", "system", "tool"})
STRUCTURE_TYPE = "sdmx-structure"


@dataclass(frozen=True, slots=True)
class TargetTurn:
    """A user turn with a target: its position in the conversation and what it expects."""

    index: int
    content: str | None
    target: Selection
    raw: Mapping[str, Any]
    #: ``alternative_targets``: other acceptable answers to the turn; the best match wins.
    alternatives: tuple[Selection, ...] = ()


def match_options(options: Mapping[str, Any]) -> MatchOptions:
    """``match_on`` / ``case_insensitive_names`` from the case options (validated before).

    Without ``match_on``, terms match on id and name, and a target term without an id on its
    name alone (statgpt's documented form when ids are not at hand); an explicit
    ``match_on: [id, name]`` requires both on every target term.
    """
    match_on = options.get("match_on", list(MATCH_FIELDS))
    if isinstance(match_on, str):
        match_on = [match_on]
    return MatchOptions(tuple(str(m) for m in match_on),
                        bool(options.get("case_insensitive_names", False)),
                        name_when_no_id="match_on" not in options)


def target_turns(raw: Mapping[str, Any]) -> list[TargetTurn]:
    """The user turns with a target, in order (raises SelectionError on a malformed one)."""
    out: list[TargetTurn] = []
    conversation = raw.get("conversation")
    if not isinstance(conversation, list):
        return out
    for i, turn in enumerate(conversation):
        if not isinstance(turn, Mapping) or "target" not in turn:
            continue
        sel = _parse_target(turn["target"], f"conversation[{i}].target")
        alternatives = tuple(
            _parse_target(alt, f"conversation[{i}].alternative_targets[{j}]")
            for j, alt in enumerate(turn.get("alternative_targets") or []))
        content = turn.get("content")
        out.append(TargetTurn(i, None if content is None else str(content), sel, turn,
                              alternatives))
    return out


def _parse_target(target: object, path: str) -> Selection:
    if not isinstance(target, Mapping):
        raise SelectionError(path, "must be a mapping with indicator_selection")
    return parse_indicator_selection(target.get("indicator_selection"),
                                     f"{path}.indicator_selection", strict=True)


class SdmxKind:
    """The ``sdmx`` kind: per-dimension P/R/F1 of (id, name) terms, macro-averaged."""

    name: ClassVar[str] = "sdmx"
    #: What it declares to the modules outside kinds/ (:mod:`..kindregistry`).
    conversation: ClassVar[bool] = True
    json_answers: ClassVar[bool] = True
    inferred_from_conversation: ClassVar[bool] = True
    code_selection: ClassVar[bool] = True
    fence_language: ClassVar[str] = "json"
    language_name: ClassVar[str] = "JSON"
    headline_metrics: ClassVar[tuple[str, ...]] = ("macro_precision", "macro_recall", "macro_f1")
    #: What gates a case no threshold judges (docs/reference.md, "Thresholds"): every
    #: expected term selected, nothing else.
    default_thresholds: ClassVar[Mapping[str, float]] = {"macro_f1": 1.0}
    option_keys: ClassVar[frozenset[str]] = frozenset({"match_on", "case_insensitive_names"})

    # ------------------------------------------------------------ contract

    def is_metric(self, name: str) -> bool:
        return (name in MACRO_METRICS or name == "valid_term_rate"
                or _PER_DIMENSION.match(name) is not None)

    def metric_names(self) -> list[str]:
        """Names for "did you mean" hints (per-dimension names need a real dimension id)."""
        return [*MACRO_METRICS, "valid_term_rate", "precision[DIM]", "recall[DIM]", "f1[DIM]"]

    def difficulty(self, case: Case) -> str | None:
        return None

    def validate(self, case: Case) -> Iterable[tuple[str, str]]:
        problems: list[tuple[str, str]] = []
        problems.extend(self._validate_options(case.options))
        spec = case.source_spec
        if spec is not None and spec.get("type") != STRUCTURE_TYPE:
            problems.append(("datasource", f"an sdmx case's datasource must be of type "
                             f"{STRUCTURE_TYPE} (codelist validation), not {spec.get('type')!r}"))
        conversation = case.raw.get("conversation")
        if conversation is None:
            problems.append(("conversation", "missing: an sdmx case needs a conversation"))
            return problems
        if not isinstance(conversation, list) or not conversation:
            problems.append(("conversation", "must be a non-empty list of turns"))
            return problems
        n_targets = 0
        for i, turn in enumerate(conversation):
            p = f"conversation[{i}]"
            if not isinstance(turn, Mapping):
                problems.append((p, "must be a mapping with role and content"))
                continue
            unknown = sorted(str(k) for k in turn if k not in TURN_KEYS)
            if unknown:
                problems.append((f"{p}.{unknown[0]}", f"unknown key (turn keys: "
                                 f"{', '.join(sorted(TURN_KEYS))})"))
            role = turn.get("role")
            if role not in ROLES:
                problems.append((f"{p}.role", f"must be one of {', '.join(sorted(ROLES))}"))
            content = turn.get("content")
            if content is not None and not isinstance(content, str):
                problems.append((f"{p}.content", "must be a string"))
            if "predicted" in turn and "target" not in turn:
                problems.append((f"{p}.predicted", "only a turn with a target takes a prediction"))
            if "alternative_targets" in turn and "target" not in turn:
                problems.append((f"{p}.alternative_targets",
                                 "only a turn with a target takes alternative targets"))
            if "target" not in turn:
                continue
            if role != "user":
                problems.append((f"{p}.target", "only user turns carry a target"))
            n_targets += 1
            problems.extend(self._validate_target(turn["target"], f"{p}.target", case))
            alternatives = turn.get("alternative_targets")
            if alternatives is not None:
                if not isinstance(alternatives, list) or not alternatives:
                    problems.append((f"{p}.alternative_targets",
                                     "must be a non-empty list of targets"))
                else:
                    for j, alt in enumerate(alternatives):
                        problems.extend(self._validate_target(
                            alt, f"{p}.alternative_targets[{j}]", case))
            if "predicted" in turn:
                try:
                    parse_turn_selection(turn["predicted"], f"{p}.predicted")
                except SelectionError as exc:
                    problems.append((exc.path, exc.message))
        if n_targets == 0:
            problems.append(("conversation", "no user turn has a target"))
        return problems

    def audit(self, case: Case, ctx: Context, result: AuditResult) -> None:
        """``--queryeval-audit-golds``: every target and alternative target scored as the
        prediction, its codes checked against the codelists (:mod:`.goldchecks.sdmx`)."""
        from .goldchecks.sdmx import audit_targets

        try:
            turns = target_turns(case.raw)
        except SelectionError as exc:
            result.add("invalid-case", f"target: {exc}")
            return
        audit_targets(case, self, ctx, result, turns,
                      by_name="name" in match_options(case.options).match_on)

    def evaluate(self, case: Case, prediction: object, ctx: Context) -> Scored:
        options = match_options(case.options)
        try:
            turns = target_turns(case.raw)
        except SelectionError as exc:  # validate() reports this; evaluate() is callable alone
            raise GoldError(f"target: {exc}") from exc
        if not turns:
            raise GoldError(f"sdmx case {case.id!r}: no user turn has a target")
        primary = primary_dataset(t.target for t in turns)
        fences: list[str | None] = []
        try:
            selections = self._selections(case, turns, prediction, fences)
        except SelectionError as exc:
            failed = Scored(metrics=failure_metrics((t.target for t in turns), primary),
                            reason=f"invalid prediction: {exc}",
                            details={"prediction_shape": _SHAPE_HELP})
            note_fence(failed.details, next((f for f in fences if f), None))
            return failed
        lookup = self._structure(case, ctx)
        scores: list[TurnScore] = []
        for turn, selected in zip(turns, selections, strict=True):
            candidates = [score_turn(target, selected, options, primary=primary,
                                     turn=turn.index, content=turn.content)
                          for target in (turn.target, *turn.alternatives)]
            score = best_turn(candidates)
            if turn.alternatives:
                which = next(i for i, c in enumerate(candidates) if c is score)
                score.target_used = ("target" if which == 0
                                     else f"alternative_targets[{which - 1}]")
            if lookup is not None:
                check_terms(score, selected, lookup, options)
            scores.append(score)
        metrics = combine_turns(scores)
        text = format_case_details(scores)
        details: dict[str, Any] = {
            "match_on": list(options.match_on),
            "case_insensitive_names": options.case_insensitive_names,
            "turns": [s.to_json() for s in scores],
            "dimensions_not_in_target": sorted({d.key for s in scores for d in s.not_in_target}),
            "sdmx_details": text,
        }
        if lookup is not None:
            details["invalid_terms"] = [{"turn": s.turn, **i} for s in scores
                                        for i in s.invalid_terms]
            details["name_mismatches"] = [{"turn": s.turn, **m} for s in scores
                                          for m in s.name_mismatches]
            details["structure_files"] = list(getattr(lookup, "files", []))
        note_fence(details, next((f for f in fences if f), None))
        return Scored(metrics=metrics, diff=text.splitlines(), details=details)

    # ------------------------------------------------------------ helpers

    @staticmethod
    def _validate_options(options: Mapping[str, Any]) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        match_on = options.get("match_on")
        if match_on is not None:
            items = [match_on] if isinstance(match_on, str) else match_on
            if (not isinstance(items, list) or not items
                    or any(m not in MATCH_FIELDS for m in items) or len(set(items)) != len(items)):
                out.append(("match_on", "must be [id, name], [id] or [name]"))
        ci = options.get("case_insensitive_names")
        if ci is not None and not isinstance(ci, bool):
            out.append(("case_insensitive_names", "must be true or false"))
        return out

    def _validate_target(self, target: object, path: str, case: Case) -> list[tuple[str, str]]:
        """One target (or alternative target): ``{indicator_selection: [...]}``."""
        if not isinstance(target, Mapping):
            return [(path, "must be a mapping with indicator_selection")]
        problems = [(f"{path}.{key}", "unknown key (expected indicator_selection)")
                    for key in target
                    if key != "indicator_selection" and key not in IGNORED_TARGET_KEYS]
        if "indicator_selection" not in target:
            problems.append((f"{path}.indicator_selection", "missing"))
            return problems
        try:
            sel = parse_indicator_selection(target["indicator_selection"],
                                            f"{path}.indicator_selection", strict=True)
        except SelectionError as exc:
            problems.append((exc.path, exc.message))
            return problems
        problems.extend(self._check_match_fields(target["indicator_selection"], sel,
                                                 match_options(case.options),
                                                 f"{path}.indicator_selection"))
        return problems

    @staticmethod
    def _check_match_fields(data: list[dict[str, Any]] | None, sel: Selection, options: MatchOptions,
                            path: str) -> list[tuple[str, str]]:
        """A target value must carry every field it is matched on, or it could never match."""
        out: list[tuple[str, str]] = []
        for i, entry in enumerate(data or []):
            for j, dim in enumerate(entry.get("dimensions") or []):
                for k, value in enumerate(dim.get("values") or []):
                    for f in options.match_on:
                        if f == "id" and options.name_when_no_id and value.get("name"):
                            continue  # matched on its name alone
                        if value.get(f) is None:
                            out.append((f"{path}[{i}].dimensions[{j}].values[{k}]",
                                        f"needs '{f}' (match_on: {list(options.match_on)})"))
        return out

    @staticmethod
    def _selections(case: Case, turns: list[TargetTurn], prediction: object,
                    fences: list[str | None]) -> list[Selection]:
        """One selection per target turn, from the predictions source or inline turns
        (``fences`` collects the code fences stripped from JSON text)."""
        if prediction is MISSING:
            inline = [t for t in turns if "predicted" in t.raw]
            if not inline:
                raise PredictionError(f"no prediction for sdmx case {case.id!r}: give "
                                      "'predicted:' beside each target or a predictions source")
            missing = [t.index for t in turns if "predicted" not in t.raw]
            if missing:
                raise PredictionError(
                    f"sdmx case {case.id!r}: no 'predicted:' in conversation turn(s) "
                    f"{', '.join(map(str, missing))} (every turn with a target needs one)")
            return [parse_turn_selection(t.raw["predicted"], f"conversation[{t.index}].predicted")
                    for t in turns]
        prediction = _decode(prediction, "", fences)
        if isinstance(prediction, list):
            prediction = [_decode(p, f"[{i}]", fences) for i, p in enumerate(prediction)]
            if len(prediction) != len(turns):
                raise SelectionError("", f"{len(prediction)} turn selections for "
                                         f"{len(turns)} user turn(s) with a target")
            return [parse_turn_selection(p, f"[{i}]") for i, p in enumerate(prediction)]
        if len(turns) != 1:
            raise SelectionError("", f"one turn selection for {len(turns)} user turns with a "
                                     "target: give a list, one selection per turn")
        return [parse_turn_selection(prediction)]

    @staticmethod
    def _structure(case: Case, ctx: Context) -> Any:
        """The session-shared parsed structure of the case's sdmx-structure datasource."""
        spec = case.source_spec
        if spec is None or spec.get("type") != STRUCTURE_TYPE:
            return None
        from ..sources import sdmx_structure  # keeps the structure module (and sdmx1) lazy

        return ctx.shared(sdmx_structure.cache_key(spec),
                          lambda: sdmx_structure.structure_from_spec(spec))


def _decode(value: object, path: str, fences: list[str | None]) -> Any:
    """Predictors (http, command) often return the selection as JSON text, at times in a
    Markdown code fence (stripped, and recorded in ``fences``)."""
    if not isinstance(value, str):
        return value
    value, fence = strip_fence(value)
    fences.append(fence)
    try:
        return json.loads(value)
    except ValueError as exc:
        raise SelectionError(path, f"not valid JSON ({exc})") from exc


_SHAPE_HELP = ("one turn selection, or a list with one per user turn that has a target; a turn "
               "selection is {indicator_selection: [{dataset_id, dimensions: [{dimension_name, "
               "values: [{id, name}]}]}]} or {dataset_id: {DIM: {term_id: term_name}}}")
