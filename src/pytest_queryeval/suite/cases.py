"""Case files → :class:`~pytest_queryeval.model.Case` objects, with strict located validation.

Nothing here raises for a bad case: each problem becomes ``file:line: key path: message`` on the
affected case, so that one typo fails one item and the rest of the suite still runs.

Why one module of this size: every rule of a case entry lives with the reader that applies it
(one ``CaseReader`` step per rule), so a message and the rule that raises it are found together.
"""

from __future__ import annotations

import csv
import json
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, cast

from .. import kinds as kind_registry
from .._util.numeric import option_limit
from .._util.safetext import is_safe, printable
from .._util.wording import suggest as _suggest
from .._yaml.yamlload import LocDict, LocList, load_file, plain
from ..errors import ConfigError
from ..model import Case, Kind, Threshold
from ..results import ResultTable
from ..rules.thresholds import apply_default, parse_threshold
from .config import SuiteConfig
from .deprecated import QueryevalDeprecationWarning, renamed_key

#: Keys every case may carry, whatever its kind.
CASE_KEYS = frozenset({
    "id", "name", "question", "gold", "predicted", "kind", "datasource", "difficulty", "tags",
    "thresholds", "xfail", "skip", "gold_result", "predicted_result", "comments",
    "conversation", "timeout", "max_rows", "repeat", "repeat_rule", "repeat_verdict", "severity",
    "evidence",
    "external_knowledge", "judge", "expect", "clarification", "reply", "history",
    "conversation_scoring", "agent", "reviewed", "provenance", "pin",
})
#: Keys a file-level header may set as defaults for its cases (``gold``/``question``: a file of
#: many predictions for one question states its gold once).
FILE_KEYS = frozenset({"cases", "kind", "datasource", "difficulty", "tags", "thresholds",
                       "xfail", "skip", "timeout", "max_rows", "gold", "gold_result", "question",
                       "repeat", "repeat_rule", "repeat_verdict", "severity", "judge", "expect",
                       "history", "conversation_scoring", "agent"})
#: ``severity:`` values; ``critical`` cases fail the baseline gate on any pass → fail flip.
SEVERITIES = ("critical", "high", "medium", "low")
#: Marker names pytest reserves: a tag may not shadow them.
RESERVED_MARKS = frozenset({"skip", "skipif", "xfail", "parametrize", "usefixtures",
                            "filterwarnings", "xdist_group", "tryfirst", "trylast"})
_TAG = re.compile(r"^[A-Za-z][A-Za-z0-9_.+-]*$")  # pytest refuses a marker "_x"
OPTION_KEYS_COMMON = frozenset({"timeout", "max_rows"})

MetricCheck = Callable[[str, str], bool]


class _Errors:
    """Collects located messages for one case."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.items: list[str] = []

    def add(self, container: object, key: object, path: str, message: str) -> None:
        if isinstance(container, LocDict):  # noqa: SIM114 (apart: a list's key must be an int)
            line = container.line_of(key)
        elif isinstance(container, LocList) and isinstance(key, int):
            line = container.line_of(key)
        else:
            line = getattr(container, "line", 0)
        if not path.strip() or path != " ".join(path.split()):
            path = repr(path)  # a blank or whitespace-padded key must stay visible
        self.items.append(f"{self.file}:{line}: {path}: {message}")


def is_turn_list(data: list[Any]) -> bool:
    """statgpt's documentation writes a test case as a bare list of conversation turns
    (``- role: user``, ``content``, ``target``); no case has a ``role`` key, so such a list is
    never mistaken for a list of cases."""
    return bool(data) and all(isinstance(t, dict) and "role" in t for t in data)


def _turn_list_case(turns: list[Any], path: Path) -> LocDict:
    """The one sdmx case a bare turn list stands for, named by its file like a one-case file."""
    case = LocDict()
    case.line = getattr(turns, "line", 1)
    case["id"] = path.stem.removeprefix("test_")
    case["kind"] = kind_registry.declaring("inferred_from_conversation")
    case["conversation"] = turns
    case.key_lines = dict.fromkeys(case, case.line)
    return case


def load_cases(path: Path, display: str, suite: SuiteConfig,
               is_metric: MetricCheck | None = None,
               ini_thresholds: dict[str, Threshold] | None = None,
               extra_names: Callable[[str], Iterable[str]] | None = None,
               cli_thresholds: dict[str, Threshold] | None = None) -> list[Case]:
    """Load one case file. Raises ConfigError only for a file that is not YAML at all.
    ``cli_thresholds`` (``--queryeval-threshold``) win over every level, for the kinds that
    produce their metric."""
    data: object = load_file(path, display)
    if data is None:
        raise ConfigError("the file is empty: expected a case or a mapping with 'cases:'",
                          display, 1)
    header: LocDict
    entries: object
    if isinstance(data, list) and is_turn_list(data):
        data = _turn_list_case(data, path)
    if isinstance(data, list):
        header, entries = LocDict(), data
        header.line, header.key_lines = 1, {}
    elif isinstance(data, dict) and "cases" in data:
        header, entries = cast(LocDict, data), data["cases"]  # the loader builds LocDicts
        if not isinstance(entries, list):
            raise ConfigError("'cases' must be a list of cases", display,
                              getattr(data, "key_lines", {}).get("cases"), "cases")
    elif isinstance(data, dict):
        header, one = LocDict(), LocList([data])
        header.line, header.key_lines = 1, {}
        one.line = getattr(data, "line", 1)
        one.item_lines = [one.line]
        entries = one
        if "id" not in data:  # a one-case file may be named by its file
            data["id"] = path.stem.removeprefix("test_")
            if isinstance(data, LocDict):
                data.key_lines["id"] = data.line
    else:
        raise ConfigError("expected a case mapping, a list of cases or a mapping with 'cases:'",
                          display, 1)

    reader = CaseReader(path, display, header, suite, is_metric, ini_thresholds or {},
                        extra_names, cli_thresholds or {})
    out: list[Case] = []
    for index, entry in enumerate(entries):
        line = entries.line_of(index) if isinstance(entries, LocList) else 1
        if not isinstance(entry, dict):
            case = Case(id=f"case-{index + 1}", kind="invalid", file=path, line=line)
            case.errors.append(f"{display}:{line}: cases[{index}]: a case must be a mapping")
            out.append(case)
            continue
        out.extend(reader.read_fanned(index, cast(LocDict, entry)))  # as the loader builds it
    return out


def encode(value: object) -> str:
    """The JSON text a case's identity digests (:func:`~..plugin.resume.identity`): here, where
    :func:`_set_aside` encodes a case's recorded tables as it reads them."""
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


def _set_aside(case: Case, keys: list[str]) -> None:
    """Take the recorded tables ``keys`` out of ``case.raw`` once they are read: every case
    lives to the end of the session, and its table twice (lists, and the table's tuples) was
    most of a case's memory. :func:`~..plugin.resume.identity` digests their JSON text instead."""

    raw = case.raw
    if not all(type(k) is str for k in raw):
        return  # json's sort_keys orders only strings here: the mapping stays whole
    try:
        encoded = tuple((k, encode(raw[k])) for k in keys)
    except (TypeError, ValueError, RecursionError):
        return
    for k in keys:
        del raw[k]
    case.raw_encoded += encoded


def _threshold_map(spec: object, where: str, container: object, errors: _Errors,
                   ) -> dict[str, tuple[Threshold, Any]]:
    out: dict[str, tuple[Threshold, Any]] = {}
    if spec is None:
        return out
    if not isinstance(spec, dict):
        errors.add(container, "thresholds", where, "must be a mapping of metric: bound")
        return out
    for metric, bound in spec.items():
        try:
            out[str(metric)] = (parse_threshold(str(metric), bound), spec)
        except ValueError as exc:
            errors.add(spec, metric, f"{where}.{metric}", str(exc))
    return out


def inline(entry: Mapping[Any, Any]) -> bool:
    """Whether a case entry writes its own prediction (``predicted:``, ``predicted_result:``
    or a conversation turn's ``predicted:``): nothing is requested for it, so it has neither
    repeats nor a latency."""
    turns = entry.get("conversation")
    return "predicted" in entry or "predicted_result" in entry or (
        isinstance(turns, list) and any(isinstance(t, dict) and "predicted" in t
                                        for t in turns))


class CaseReader:
    """One case file's entries → :class:`Case` objects; every problem becomes a located
    message on the case it belongs to (the file's header applies to each)."""

    def __init__(self, path: Path, display: str, header: LocDict, suite: SuiteConfig,
                 is_metric: MetricCheck | None, ini_thresholds: dict[str, Threshold],
                 extra_names: Callable[[str], Iterable[str]] | None,
                 cli_thresholds: dict[str, Threshold] | None = None) -> None:
        self.path, self.display, self.header, self.suite = path, display, header, suite
        self.is_metric, self.ini_thresholds, self.extra_names = \
            is_metric, ini_thresholds, extra_names
        self.cli_thresholds = cli_thresholds or {}
        self.file_defaults = {key: value for key, value in header.items() if key != "cases"}
        #: the suite's secrets, one set for every case of the file
        self.secrets = frozenset(suite.secrets)

    def read_fanned(self, index: int, entry: LocDict) -> list[Case]:
        """The cases of ``cases[index]``, once per model when ``predictions:`` names several
        and the case writes no prediction of its own (:mod:`.models`)."""
        if not self.suite.models or inline({**self.file_defaults, **entry}):
            return self.fanned_sources(index, entry)
        from .models import assign

        return [assign(case, model, self.suite.models, self.suite.model_errors)
                for model in self.suite.models
                for case in self.fanned_sources(index, entry)]

    def fanned_sources(self, index: int, entry: LocDict) -> list[Case]:
        """The cases of ``cases[index]``: one, or one per source when ``datasource:`` is a
        list (``<id>[<source>]``, each validated on its own source)."""
        names = entry.get("datasource", self.file_defaults.get(
            "datasource", self.suite.defaults.get("datasource")))
        if not isinstance(names, list):
            return [self.read(index, entry)]
        if not names or not all(isinstance(n, str) for n in names) or len(set(names)) != len(names):
            case = self.read(index, entry, datasource="")
            container = entry if "datasource" in entry else self.header
            key = f"cases[{index}].datasource" if "cases" in self.header and \
                "datasource" in entry else "datasource"
            line = container.line_of("datasource") if isinstance(container, LocDict) else \
                getattr(container, "line", 0)
            case.errors.append(f"{self.display}:{line}: {key}: a list of datasource names, "
                               "each once, fans the case out (one item per source)")
            return [case]
        out = []
        for name in names:
            case = self.read(index, entry, datasource=name)
            case.fanned_from = case.id
            case.id = f"{case.id}[{name}]"
            if case.source_spec is not None:
                from ..sources.dialects import dialect_of

                case.dialect = dialect_of(case.source_spec)
            out.append(case)
        sources = {c.datasource: c.source_spec for c in out
                   if c.datasource is not None and c.source_spec is not None}
        for case in out:
            case.fanned_sources = sources
        return out

    def read(self, index: int, entry: LocDict, datasource: str | None = None) -> Case:
        """The case of ``cases[index]`` (on ``datasource`` when it is fanned out); its errors
        say what is wrong with it."""
        draft = _Draft(self, index, entry)
        if datasource is not None:
            draft.merged["datasource"] = datasource or None
        for step in (draft.kind, draft.unknown_keys, draft.identity, draft.question_and_hints,
                     draft.difficulty, draft.tags, draft.severity_and_marks, draft.datasource,
                     draft.recorded_results, draft.options, draft.repeat, draft.thresholds,
                     draft.judge, draft.expect, draft.agent, draft.conversation,
                     draft.kind_validation):
            step()
        draft.case.errors.extend(draft.errors.items)
        return draft.case


class _Draft:
    """One case while it is read: the merged layers (suite defaults < file header < case), the
    case's key prefix, its errors, and the :class:`Case` the steps fill in, in order."""

    def __init__(self, reader: CaseReader, index: int, entry: LocDict) -> None:
        self.reader, self.index, self.entry, self.header = reader, index, entry, reader.header
        suite = reader.suite
        self.errors = _Errors(reader.display)
        self.prefix = f"cases[{index}]" if "cases" in self.header else ""
        self.merged: dict[str, Any] = {}
        for layer in (suite.defaults, reader.file_defaults, entry):
            for key, value in layer.items():
                if key != "tags":
                    self.merged[key] = value
        # kind first: it decides which option keys are allowed
        kind_name = self.merged.get("kind")
        if kind_name is None and "conversation" in entry:
            kind_name = kind_registry.declaring("inferred_from_conversation")
        self.kind_name = kind_name
        self.case_id = entry.get("id")
        case = Case(id=str(self.case_id) if self.case_id is not None else f"case-{index + 1}",
                    kind=str(kind_name) if kind_name else "unknown", file=reader.path,
                    line=entry.line)
        case.raw = plain(entry)
        case.secrets = reader.secrets
        case.prediction_source = suite.predictions
        case.prediction_base = suite.predictions_base
        case.prediction_errors = list(suite.predictions_errors)
        case.pricing = suite.pricing
        case.model_label = suite.model
        case.neighbours = suite.neighbours
        case.errors.extend(suite.errors)
        self.case = case
        self.kind_obj: Kind | None = None
        self.option_keys: frozenset[str] = OPTION_KEYS_COMMON

    def kp(self, key: str) -> str:
        """``key``'s path as a message names it (``cases[2].gold`` in a list of cases)."""
        return f"{self.prefix}.{key}" if self.prefix else key

    def _where(self, key: str) -> Any:
        """The mapping that set ``key``: the case, else the file header (for its line)."""
        return self.entry if key in self.entry else self.header

    def kind(self) -> None:
        entry, kind_name = self.entry, self.kind_name
        if kind_name is None:
            self.errors.add(entry, "id", self.kp("kind"), "missing: set kind (one of "
                            f"{', '.join(kind_registry.known_kinds())}) on the case or "
                            "the file")
        else:
            try:
                self.kind_obj = kind_registry.get_kind(str(kind_name))
            except KeyError:
                self.errors.add(self._where("kind"), "kind", self.kp("kind"),
                                f"unknown kind {kind_name!r} "
                                f"(known: {', '.join(kind_registry.known_kinds())})")
            except ImportError as exc:
                self.errors.add(entry, "kind", self.kp("kind"),
                                f"kind {kind_name!r} cannot be loaded: {exc}")
        if self.kind_obj is not None:
            self.option_keys = self.kind_obj.option_keys | OPTION_KEYS_COMMON

    def unknown_keys(self) -> None:
        header, entry, option_keys = self.header, self.entry, self.option_keys
        for key in header:
            if key not in FILE_KEYS and key not in option_keys:
                self.errors.add(header, key, key,
                                f"unknown key{_suggest(str(key), FILE_KEYS | option_keys)}")
        for key in entry:
            if key not in CASE_KEYS and key not in option_keys:
                self.errors.add(entry, key, self.kp(str(key)),
                                f"unknown key{_suggest(str(key), CASE_KEYS | option_keys)}")

    def identity(self) -> None:
        entry, case_id = self.entry, self.case_id
        if case_id is None:
            self.errors.add(entry, None, self.kp("id"), "missing: every case needs a unique id")
        elif not isinstance(case_id, str | int) or not str(case_id).strip():
            self.errors.add(entry, "id", self.kp("id"), "must be a non-empty string")
        elif "::" in str(case_id) or not is_safe(str(case_id)):
            self.errors.add(entry, "id", self.kp("id"), "must not contain '::', control "
                            "characters or lone surrogates")
            # the id names the pytest item (and goes into an environment variable): keep it safe
            self.case.id = printable(self.case.id).replace("\n", "\\n").replace("\t", "\\t")

    def question_and_hints(self) -> None:
        """``question`` (an sdmx conversation's user turns when there is none), the hints
        (``evidence``, ``external_knowledge``), ``gold`` and an inline ``predicted``."""
        case, entry = self.case, self.entry
        q = self.merged.get("question")
        if q is None and isinstance(self.kind_name, str) \
                and kind_registry.declares(self.kind_name, "conversation"):
            turns = entry.get("conversation")
            if isinstance(turns, list):
                q = " / ".join(str(t.get("content", "")) for t in turns
                               if isinstance(t, dict) and t.get("role") == "user")
        case.question = None if q is None else str(q)
        self._hints()
        case.gold = plain(self.merged.get("gold"))
        if "predicted" in entry:
            case.predicted = plain(entry["predicted"])

    def _hints(self) -> None:
        """``evidence`` (a string) and ``external_knowledge`` (a string, or a list of strings
        or numbers, joined with newlines) onto the case."""
        case, entry = self.case, self.entry
        evidence = entry.get("evidence")
        if evidence is not None:
            if isinstance(evidence, str):
                case.evidence = evidence
            else:
                self.errors.add(entry, "evidence", self.kp("evidence"), "must be a string")
        knowledge = entry.get("external_knowledge")
        if knowledge is None:
            return
        if isinstance(knowledge, str):
            case.external_knowledge = knowledge
        elif isinstance(knowledge, list) and all(
                isinstance(k, str | int | float) and not isinstance(k, bool) for k in knowledge):
            case.external_knowledge = "\n".join(str(k) for k in knowledge)
        else:
            self.errors.add(entry, "external_knowledge", self.kp("external_knowledge"),
                            "must be a string or a list of strings")

    def difficulty(self) -> None:
        value = self.merged.get("difficulty")
        if value is not None and not isinstance(value, str | int):
            self.errors.add(self.entry, "difficulty", self.kp("difficulty"), "must be a string")
        self.case.difficulty = None if value is None else str(value)

    def tags(self) -> None:
        """Tags of every layer, in order, each once; each must be a usable marker name."""
        entry, header = self.entry, self.header
        tags: list[str] = []
        for layer, container in ((self.reader.suite.defaults, None),
                                 (self.reader.file_defaults, header), (entry, entry)):
            value = layer.get("tags")
            if value is None:
                continue
            if not isinstance(value, list):
                self.errors.add(container, "tags",
                                self.kp("tags") if container is entry else "tags",
                                "must be a list of names")
                continue
            for t in value:
                name = str(t)
                if not _TAG.match(name):
                    self.errors.add(container, "tags", self.kp("tags"),
                                    f"tag {name!r} is not a valid marker name (letters, "
                                    "digits, _ . + -; starting with a letter)")
                elif name in RESERVED_MARKS:
                    self.errors.add(container, "tags", self.kp("tags"),
                                    f"tag {name!r} is reserved by pytest")
                elif name not in tags:
                    tags.append(name)
        self.case.tags = tags

    def severity_and_marks(self) -> None:
        """``severity`` and the ``xfail`` / ``skip`` reasons."""
        severity = self.merged.get("severity")
        if severity is not None:
            if severity not in SEVERITIES:
                self.errors.add(self._where("severity"), "severity", self.kp("severity"),
                                f"must be one of {', '.join(SEVERITIES)}, not {severity!r}")
            else:
                self.case.severity = str(severity)
        reviewed = self.merged.get("reviewed", True)
        if not isinstance(reviewed, bool):
            self.errors.add(self._where("reviewed"), "reviewed", self.kp("reviewed"),
                            f"must be true or false, not {reviewed!r}")
        else:
            self.case.reviewed = reviewed
        provenance = self.merged.get("provenance")
        if provenance is not None and not isinstance(provenance, dict):
            self.errors.add(self._where("provenance"), "provenance", self.kp("provenance"),
                            "must be a mapping (queryeval mine writes trace, source)")
        self.pin()
        for key in ("xfail", "skip"):
            value = self.merged.get(key)
            if value is None or value is False:
                continue
            if value is True:
                value = f"marked {key} in {self.reader.display}"
            if not isinstance(value, str):
                self.errors.add(self.entry, key, self.kp(key), "must be a reason string")
                continue
            setattr(self.case, key, value)

    def pin(self) -> None:
        """``pin:`` checked field by field: it is read back from a file anyone may have edited,
        and its table names reach a query."""
        if "pin" not in self.entry:
            return
        from ..sources.pins import pin_problems

        value = self.entry["pin"]
        problems = pin_problems(value)
        for container, key, path, message in problems:
            self.errors.add(self.entry if container is None else container,
                            "pin" if container is None else key, self.kp("pin") + path, message)
        if not problems:
            self.case.pin = {str(k): (dict(v) if isinstance(v, dict) else v)
                             for k, v in value.items()}

    def datasource(self) -> None:
        """The named datasource's spec, errors and secrets onto the case."""
        ds_name = self.merged.get("datasource")
        if ds_name is None:
            return
        suite, case = self.reader.suite, self.case
        ds = suite.datasources.get(str(ds_name))
        if ds is None:
            known = ", ".join(sorted(suite.datasources)) or "none defined in queryeval.yaml"
            self.errors.add(self._where("datasource"), "datasource", self.kp("datasource"),
                            f"unknown datasource {ds_name!r} (known: {known})")
            return
        case.datasource = ds.name
        case.source_spec = dict(ds.spec)
        if isinstance(self.merged.get("gold"), dict) and kind_registry.declares(case.kind, "gold_by_dialect"):
            from ..sources.dialects import dialect_of

            case.dialect = dialect_of(case.source_spec)
        case.errors.extend(ds.errors)
        case.secrets = case.secrets | frozenset(ds.secrets)

    def recorded_results(self) -> None:
        """``gold_result`` / ``predicted_result``: CSV files (:func:`_load_result_files`) or
        a recorded table."""
        case, entry, merged = self.case, self.entry, self.merged
        read: list[str] = []
        for key in ("gold_result", "predicted_result"):
            if _names_files(merged.get(key)):
                _load_result_files(case, self.reader.path, key, merged[key], self._where(key),
                                   self.kp(key), self.errors)
                continue
            if key in merged and merged[key] is not None:
                try:
                    data = case.raw[key] if key in entry else plain(merged[key])  # copied once
                    setattr(case, key, ResultTable.from_recorded(data))
                except (ValueError, TypeError, AttributeError, KeyError) as exc:
                    self.errors.add(entry, key, self.kp(key), str(exc))
                else:
                    if key in entry:
                        read.append(key)
        if read:
            _set_aside(case, read)

    def options(self) -> None:
        """The kind's option keys of every layer; ``timeout`` and ``max_rows`` positive."""
        options = {key: plain(value) for key, value in self.merged.items()
                   if key in self.option_keys}
        for key in ("timeout", "max_rows"):
            # defaults: are checked where they are written (config.py)
            if key in options and (key in self.entry or key in self.header):
                try:
                    option_limit(key, options[key])
                except ValueError as exc:
                    self.errors.add(self._where(key), key, self.kp(key), str(exc))
        self.case.options = options

    def repeat(self) -> None:
        """``repeat`` (a positive integer) and ``repeat_rule`` (all, majority, any). A case
        that writes its own prediction and asks for repeats is a mistake: the same text N
        times."""
        from ..rules.repeats import RULES

        case, entry, merged = self.case, self.entry, self.merged
        value = merged.get("repeat", 1)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            self.errors.add(self._where("repeat"), "repeat", self.kp("repeat"),
                            f"must be a positive integer, not {value!r}")
        else:
            case.repeat = value
            if value > 1 and "repeat" in entry and inline(entry):
                self.errors.add(entry, "repeat", self.kp("repeat"),
                                f"repeat: {value} with an inline prediction scores the same "
                                f"text {value} times; repeat asks a live predictions source "
                                "(http, command, python, openai) for N predictions: remove "
                                "'repeat' or the inline one")
        key = renamed_key(merged, "repeat_rule") or "repeat_rule"
        if key != "repeat_rule":
            where = self._where(key)
            warnings.warn(QueryevalDeprecationWarning(
                f"{case.file}:{where.line_of(key) if isinstance(where, LocDict) else 0}: "
                f"{self.kp(key)}: {key} is deprecated, use repeat_rule (same values)"),
                stacklevel=2)
        rule = merged.get(key, "all")
        if rule not in RULES:
            self.errors.add(self._where(key), key, self.kp(key),
                            f"must be one of {', '.join(RULES)}, not {rule!r}")
        else:
            case.repeat_rule = str(rule)

    def thresholds(self) -> None:
        """ini < suite < file < case < command line, metric by metric; names checked against
        the kind; then the kind's default when none of them judges the answer."""
        reader, case, header, entry = self.reader, self.case, self.header, self.entry
        ini, suite_th = reader.ini_thresholds, reader.suite.thresholds
        resolved: dict[str, Threshold] = dict(ini)
        for metric, (bound, _) in suite_th.items():
            resolved[metric] = bound
        file_th = _threshold_map(header.get("thresholds"), "thresholds", header, self.errors)
        case_th = _threshold_map(entry.get("thresholds"), self.kp("thresholds"), entry,
                                 self.errors)
        for metric, (bound, _) in {**file_th, **case_th}.items():
            resolved[metric] = bound
        if inline(entry):
            for source, label in ((file_th, "thresholds"), (case_th, self.kp("thresholds"))):
                if "prediction_seconds" in source:
                    container = source["prediction_seconds"][1]
                    self.errors.add(container, "prediction_seconds",
                                    f"{label}.prediction_seconds",
                                    "an inline prediction (predicted: in the case file) has no "
                                    "latency to measure: bound prediction_seconds where the "
                                    "predictions come from a source (predictions: or "
                                    "--queryeval-predictions), or remove it here")
        is_metric = reader.is_metric
        if self.kind_obj is not None and is_metric is not None:
            for source, label in ((file_th, "thresholds"), (case_th, self.kp("thresholds"))):
                for metric, (_, container) in source.items():
                    if not is_metric(case.kind, metric):
                        # the did-you-mean list only for a name that needs one: every
                        # kind's sorted catalogue per case was 2 % of a 1,000-case run
                        hints = _names_hint(case.kind) + list(
                            reader.extra_names(case.kind) if reader.extra_names else [])
                        self.errors.add(container, metric, f"{label}.{metric}",
                                        f"unknown metric for kind {case.kind}"
                                        f"{_suggest(metric, hints)}")
                        # named as the case's error, never as a threshold that gated it
                        resolved.pop(metric, None)
            # suite/ini thresholds may target other kinds: keep only those this kind produces
            inherited = set(ini) | set(suite_th)
            for metric in inherited - set(file_th) - set(case_th):
                if not is_metric(case.kind, metric):
                    resolved.pop(metric, None)
        for metric, bound in reader.cli_thresholds.items():
            if is_metric is None or is_metric(case.kind, metric):
                resolved[metric] = bound
        case.thresholds = resolved
        case.gated_above = frozenset(g.metric for g in reader.suite.gates.values()
                                     if g.op == "<=")
        if self.kind_obj is not None:
            added, problem = apply_default(resolved, self.kind_obj, case,
                                           record_only=reader.suite.record_only)
            case.default_thresholds = added
            if problem:
                self.errors.add(entry, "thresholds", self.kp("thresholds"), problem)

    def judge(self) -> None:
        """``judge:``: the suite's, then the file header's, then the case's, key by key
        (``judge: false`` turns it off); only query kinds have results to show a judge."""
        from ..judge.config import check_layer, merge, resolve

        layers: list[dict[str, Any] | None] = [self.reader.suite.judge]
        base = self.reader.path.parent
        for container, label in ((self.header, "judge"), (self.entry, self.kp("judge"))):
            if "judge" not in container or (container is self.header and "cases" not in
                                            self.header):
                continue
            where = f"{self.reader.display}:{container.line_of('judge')}"
            layer, problems = check_layer(
                container["judge"], where,
                lambda m, k: f"{self.reader.display}:"
                             f"{m.line_of(k) if isinstance(m, LocDict) else getattr(m, 'line', 0)}",
                base)
            for problem in problems:  # located already; name the case's key path
                self.errors.items.append(problem.replace(": judge.", f": {label}.", 1)
                                         if label != "judge" else problem)
            layers.append(layer)
        merged = merge(*layers)
        if merged is None:
            return
        if not kind_registry.declares(self.case.kind, "judged"):
            if "judge" in self.entry or ("judge" in self.header and "cases" in self.header):
                container = self.entry if "judge" in self.entry else self.header
                self.errors.add(container, "judge", self.kp("judge"),
                                f"the judge compares query results: kind {self.case.kind} has "
                                "none (sql and sparql cases only)")
            return
        if "pins" not in merged and "__pins_default__" not in merged:
            # a judge declared in case files only: its pins beside the nearest queryeval.yaml
            from ..judge.config import DEFAULT_PINS

            files = self.reader.suite.files
            merged["__pins_default__"] = str(
                ((files[-1].parent if files else base) / DEFAULT_PINS).resolve())
        spec, unresolved = resolve(merged, f"{self.reader.display}:{self.entry.line}")
        if unresolved:
            self.errors.items.append(unresolved)
        self.case.judge = spec

    def expect(self) -> None:
        """``expect: abstain``: no answer is right. Such a case has no gold to run, and is
        judged by ``abstained`` alone (a bound on an answer metric means nothing there)."""
        from ..metricnames import UNANSWERED_BOUNDS
        from ..rules.abstain import ABSTAINED, EXPECT_VALUES
        from ..rules.thresholds import judges_answer

        case = self.case
        case.abstain_patterns = self.reader.suite.abstain_patterns
        case.abstention = self.reader.suite.abstention
        case.clarify_patterns = self.reader.suite.clarify_patterns
        value = self.merged.get("expect")
        if value is None and ("clarification" in self.entry or "reply" in self.entry):
            value = "answer"  # located below: only expect: clarify takes them
        if value is None:
            return
        where = self._where("expect")
        if value not in EXPECT_VALUES:
            self.errors.add(where, "expect", self.kp("expect"),
                            f"must be one of {', '.join(EXPECT_VALUES)}, not {value!r}")
            return
        case.expect = str(value)
        if value == "clarify" or "clarification" in self.entry or "reply" in self.entry:
            from ..rules.clarify import check_case, clarify_thresholds

            problems = check_case(self.entry, value)
            for container, key, path, message in problems:
                self.errors.add(container, key, self.kp(path), message)
            if value == "clarify" and not problems:
                spec, reply = self.entry.get("clarification"), self.entry.get("reply")
                case.clarification = dict(spec) if isinstance(spec, dict) else None
                case.reply = reply if isinstance(reply, str) else None
                clarify_thresholds(case, self.entry.get("thresholds") or {})
                if case.reply is not None:  # two turns: the question back, then the gold
                    from .reply import reply_conversation

                    reply_conversation(case, self.entry, self.kp, self.errors)
        if value != "abstain":
            return
        for key in ("gold", "gold_result", "conversation"):
            if key in self.entry:
                self.errors.add(self.entry, key, self.kp(key),
                                f"a case with expect: abstain has no {key}: the right output is "
                                "no answer (remove one of the two)")
        kept = {m: t for m, t in case.thresholds.items()
                if not judges_answer(m) or m in UNANSWERED_BOUNDS}
        bound = case.thresholds.get(ABSTAINED, Threshold(ABSTAINED, min=1.0))
        case.thresholds = {**kept, ABSTAINED: bound}
        case.default_thresholds = [] if ABSTAINED in (self.entry.get("thresholds") or {}) \
            else [ABSTAINED]

    def agent(self) -> None:
        """``agent:`` (:mod:`..agents.spec`): the suite's, the file's and the case's blocks
        merged key by key (a suite lists the forbidden tables once, a case its trajectory)."""
        layers = [layer.get("agent") for layer in (self.reader.suite.defaults,
                                                   self.reader.file_defaults, self.entry)
                  if "agent" in layer]
        if not layers:
            from ..metricnames import AGENT_METRICS

            for metric in AGENT_METRICS & set(self.case.thresholds):
                del self.case.thresholds[metric]  # a suite's bound: for its agent cases
                own = self.entry.get("thresholds")
                if isinstance(own, dict) and metric in own:
                    self.errors.add(own, metric, self.kp(f"thresholds.{metric}"),
                                    "a metric of agent cases: this case has no agent:")
            return
        from ..agents.spec import read_agent

        merged: object = {}
        for layer in layers:
            merged = {**merged, **layer} if isinstance(layer, dict) and \
                isinstance(merged, dict) else layer
        spec, problems = read_agent(plain(merged))
        where = self._where("agent")
        for path, message in problems:
            self.errors.add(where, "agent", self.kp(path), message)
        self.case.agent = spec

    def conversation(self) -> None:
        """A sql/sparql/json ``conversation:``: its turns (:mod:`.conversation`)."""
        from .conversation import has_turns, read_conversation

        if self.kind_obj is None or not has_turns(self.entry, self.case.kind):
            if "history" in self.entry:
                self.errors.add(self.entry, "history", self.kp("history"),
                                "history: is for a conversation case of kind sql, sparql or json")
            if self.case.turns is not None:  # a reply: case's turns (suite/reply.py)
                return
            from ..metricnames import CONVERSATION_METRICS

            for metric in CONVERSATION_METRICS & set(self.case.thresholds):
                del self.case.thresholds[metric]  # a suite's bound: for its conversations
                own = self.entry.get("thresholds")
                if isinstance(own, dict) and metric in own:
                    self.errors.add(own, metric, self.kp(f"thresholds.{metric}"),
                                    "a metric of conversation cases: this case has no "
                                    "conversation")
            return
        read_conversation(self.case, self.entry, self.merged, self.kp, self.errors,
                          self.kind_obj, self.reader.is_metric, self.reader.suite.record_only)

    def kind_validation(self) -> None:
        """The kind's own checks, once the generic ones found nothing (a kind's validator
        never breaks collection)."""
        kind, errors = self.kind_obj, self.errors
        if kind is None or errors.items or self.case.expect == "abstain" or (
                self.case.expect == "clarify" and self.case.reply is None):  # nothing to run
            return
        display, entry = self.reader.display, self.entry
        if self.case.turns is not None:
            from ..rules.conversation import turn_problems

            for key_path, message in turn_problems(kind, self.case):
                errors.items.append(f"{display}:{_line_for(entry, key_path)}: "
                                    f"{self.kp(key_path)}: {message}")
            return
        try:
            for key_path, message in kind.validate(self.case):
                root = re.split(r"[.\[]", key_path, maxsplit=1)[0]
                if root not in entry and root in self.header:  # set at file level: point there
                    errors.items.append(f"{display}:{_line_for(self.header, key_path)}: "
                                        f"{key_path}: {message}")
                    continue
                errors.items.append(f"{display}:{_line_for(entry, key_path)}: "
                                    f"{self.kp(key_path)}: {message}")
        except Exception as exc:
            errors.items.append(f"{display}:{entry.line}: {self.kp('kind')}: "
                                f"validation failed: {exc!r}")


def _names_files(value: object) -> bool:
    """A result written as a CSV path or a list of them (not a recorded table)."""
    return isinstance(value, str) or (isinstance(value, list) and bool(value)
                                      and all(isinstance(v, str) for v in value))


def _load_result_files(case: Case, path: Path, field_name: str, value: str | list[str], container: object,
                       key_path: str, errors: _Errors) -> None:
    """``gold_result: file.csv`` / ``[a.csv, b.csv]`` (gold alternatives) and
    ``predicted_result: file.csv`` (a result the model's query gave, Spider 2.0's
    executed-CSV submissions): paths relative to the case file, read the way Spider 2.0's
    evaluator reads them (:mod:`..metrics.results_csv`)."""
    which = "gold" if field_name == "gold_result" else "predicted"
    if not kind_registry.declares(case.kind, "result_files"):
        errors.add(container, field_name, key_path,
                   f"{which} result CSV files are for kind sql (elsewhere: a recorded table)")
        return
    if field_name == "predicted_result" and not isinstance(value, str):
        errors.add(container, field_name, key_path,
                   "one predicted result file (a list of files is for gold_result)")
        return
    from ..metrics.results_csv import CsvError, frame_table, read_csv_file

    names = [value] if isinstance(value, str) else list(value)
    tables = []
    for i, name in enumerate(names):
        where, key, kp_ = (container, field_name, key_path) if isinstance(value, str) \
            else (value if isinstance(value, LocList) else container, i, f"{key_path}[{i}]")
        file = Path(name) if Path(name).is_absolute() else path.parent / name
        if not name.lower().endswith(".csv"):
            errors.add(where, key, kp_, f"{name!r}: a {which} result file must be a .csv file")
            continue
        try:
            table = frame_table(read_csv_file(file))
        except FileNotFoundError:
            errors.add(where, key, kp_, f"{name!r}: no such file (relative to {path.name})")
            continue
        except (OSError, UnicodeDecodeError, CsvError, csv.Error) as exc:
            errors.add(where, key, kp_, f"{name!r}: cannot be read as CSV: {exc}")
            continue
        table.meta["file"] = name
        tables.append(table)
    if field_name == "predicted_result":
        case.predicted_result = tables[0] if tables else None
        return
    case.gold_result_files = tables
    case.gold_result_multi = not isinstance(value, str)


def _line_for(entry: object, key_path: str) -> int:
    """Best line for a dotted key path inside a case (falls back to the case line)."""
    node: Any = entry
    line: int = getattr(entry, "line", 0)
    for part in re.split(r"[.\[\]]+", key_path):
        if not part:
            continue
        key: int | str = int(part) if part.isdigit() else part
        in_dict = isinstance(node, LocDict) and key in node
        in_list = isinstance(node, LocList) and isinstance(key, int) and key < len(node)
        if in_dict or in_list:
            line = node.line_of(key)
            node = node[key]
        else:
            break
    return line


def _names_hint(kind: str) -> list[str]:
    return kind_registry.declared_metrics(kind)
