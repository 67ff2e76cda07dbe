"""Case files → :class:`~pytest_queryeval.model.Case` objects, with strict located validation.

Nothing here raises for a bad case: each problem becomes ``file:line: key path: message`` on the
affected case, so that one typo fails one item and the rest of the suite still runs.
"""

from __future__ import annotations

import csv
import difflib
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from . import kinds as kind_registry
from .config import SuiteConfig
from .errors import ConfigError
from .model import Case, Threshold
from .results import ResultTable
from .safetext import is_safe, printable
from .thresholds import parse_threshold
from .yamlload import LocDict, LocList, load_file, plain

#: Keys every case may carry, whatever its kind.
CASE_KEYS = frozenset({
    "id", "name", "question", "gold", "predicted", "kind", "datasource", "difficulty", "tags",
    "thresholds", "xfail", "skip", "gold_result", "predicted_result", "comments",
    "conversation", "timeout", "max_rows", "repeat", "repeat_verdict", "severity", "evidence",
    "external_knowledge",
})
#: Keys a file-level header may set as defaults for its cases (``gold``/``question``: a file of
#: many predictions for one question states its gold once).
FILE_KEYS = frozenset({"cases", "kind", "datasource", "difficulty", "tags", "thresholds",
                       "xfail", "skip", "timeout", "max_rows", "gold", "gold_result", "question",
                       "repeat", "repeat_verdict", "severity"})
#: ``severity:`` values; ``critical`` cases fail the baseline gate on any pass → fail flip.
SEVERITIES = ("critical", "high", "medium", "low")
#: Marker names pytest reserves: a tag may not shadow them.
RESERVED_MARKS = frozenset({"skip", "skipif", "xfail", "parametrize", "usefixtures",
                            "filterwarnings", "xdist_group", "tryfirst", "trylast"})
_TAG = re.compile(r"^[A-Za-z_][A-Za-z0-9_.+-]*$")
OPTION_KEYS_COMMON = frozenset({"timeout", "max_rows"})

MetricCheck = Callable[[str, str], bool]


class _Errors:
    """Collects located messages for one case."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.items: list[str] = []

    def add(self, container: Any, key: Any, path: str, message: str) -> None:
        if isinstance(container, LocDict) or (isinstance(container, LocList) and isinstance(key, int)):
            line = container.line_of(key)
        else:
            line = getattr(container, "line", 0)
        if not path.strip() or path != " ".join(path.split()):
            path = repr(path)  # a blank or whitespace-padded key must stay visible
        self.items.append(f"{self.file}:{line}: {path}: {message}")


def _suggest(name: str, options: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, sorted(options), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


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
    case["kind"] = "sdmx"
    case["conversation"] = turns
    case.key_lines = dict.fromkeys(case, case.line)
    return case


def load_cases(path: Path, display: str, suite: SuiteConfig,
               is_metric: MetricCheck | None = None,
               ini_thresholds: dict[str, Threshold] | None = None,
               extra_names: Callable[[str], Iterable[str]] | None = None) -> list[Case]:
    """Load one case file. Raises ConfigError only for a file that is not YAML at all."""
    data: Any = load_file(path, display)
    if data is None:
        raise ConfigError("the file is empty: expected a case or a mapping with 'cases:'",
                          display, 1)
    header: Any
    entries: Any
    if isinstance(data, list) and is_turn_list(data):
        data = _turn_list_case(data, path)
    if isinstance(data, list):
        header, entries = LocDict(), data
        header.line, header.key_lines = 1, {}
    elif isinstance(data, dict) and "cases" in data:
        header, entries = data, data["cases"]
        if not isinstance(entries, list):
            raise ConfigError("'cases' must be a list of cases", display,
                              getattr(data, "key_lines", {}).get("cases"), "cases")
    elif isinstance(data, dict):
        header, entries = LocDict(), LocList([data])
        header.line, header.key_lines = 1, {}
        entries.line = entries.item_lines = getattr(data, "line", 1)
        entries.item_lines = [entries.line]
        if "id" not in data:  # a one-case file may be named by its file
            data["id"] = path.stem.removeprefix("test_")
            if isinstance(data, LocDict):
                data.key_lines["id"] = data.line
    else:
        raise ConfigError("expected a case mapping, a list of cases or a mapping with 'cases:'",
                          display, 1)

    file_errors = _Errors(display)
    file_defaults: dict[str, Any] = {}
    for key, value in header.items():
        if key == "cases":
            continue
        file_defaults[key] = value
    out: list[Case] = []
    for index, entry in enumerate(entries):
        line = entries.line_of(index) if isinstance(entries, LocList) else 1
        if not isinstance(entry, dict):
            case = Case(id=f"case-{index + 1}", kind="invalid", file=path, line=line)
            case.errors.append(f"{display}:{line}: cases[{index}]: a case must be a mapping")
            out.append(case)
            continue
        out.append(_build_case(path, display, index, entry, header, file_defaults, suite,
                               file_errors, is_metric, ini_thresholds or {}, extra_names))
    return out


def _threshold_map(spec: Any, where: str, container: Any, errors: _Errors,
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


def _build_case(path: Path, display: str, index: int, entry: Any, header: Any,
                file_defaults: dict[str, Any], suite: SuiteConfig, file_errors: _Errors,
                is_metric: MetricCheck | None, ini_thresholds: dict[str, Threshold],
                extra_names: Callable[[str], Iterable[str]] | None = None) -> Case:
    errors = _Errors(display)
    prefix = f"cases[{index}]" if "cases" in header else ""

    def kp(key: str) -> str:
        return f"{prefix}.{key}" if prefix else key

    merged: dict[str, Any] = {}
    for layer in (suite.defaults, file_defaults, entry):
        for key, value in layer.items():
            if key == "tags":
                continue
            merged[key] = value

    # kind first: it decides which option keys are allowed
    kind_name = merged.get("kind")
    if kind_name is None and "conversation" in entry:
        kind_name = "sdmx"
    case_id = entry.get("id")
    line = entry.line
    case = Case(id=str(case_id) if case_id is not None else f"case-{index + 1}",
                kind=str(kind_name) if kind_name else "unknown", file=path, line=line)
    case.raw = plain(entry)
    case.secrets = frozenset(suite.secrets)
    case.prediction_source = suite.predictions
    case.prediction_base = suite.predictions_base
    case.prediction_errors = list(suite.predictions_errors)
    case.pricing = suite.pricing
    case.model_label = suite.model
    case.errors.extend(suite.errors)
    kind = None
    if kind_name is None:
        errors.add(entry, "id", kp("kind"), "missing: set kind (sql, sparql, json or sdmx) "
                   "on the case or the file")
    else:
        try:
            kind = kind_registry.get_kind(str(kind_name))
        except KeyError:
            where = entry if "kind" in entry else header
            errors.add(where, "kind", kp("kind"), f"unknown kind {kind_name!r} "
                       f"(known: {', '.join(kind_registry.known_kinds())})")
        except ImportError as exc:
            errors.add(entry, "kind", kp("kind"), f"kind {kind_name!r} cannot be loaded: {exc}")
    option_keys = (kind.option_keys if kind else frozenset()) | OPTION_KEYS_COMMON

    for key in header:
        if key not in FILE_KEYS and key not in option_keys:
            errors.add(header, key, key, f"unknown key{_suggest(str(key), FILE_KEYS | option_keys)}")
    for key in entry:
        if key not in CASE_KEYS and key not in option_keys:
            errors.add(entry, key, kp(str(key)),
                       f"unknown key{_suggest(str(key), CASE_KEYS | option_keys)}")

    if case_id is None:
        errors.add(entry, None, kp("id"), "missing: every case needs a unique id")
    elif not isinstance(case_id, str | int) or not str(case_id).strip():
        errors.add(entry, "id", kp("id"), "must be a non-empty string")
    elif "::" in str(case_id) or not is_safe(str(case_id)):
        errors.add(entry, "id", kp("id"), "must not contain '::', control characters or lone "
                   "surrogates")
        # the id names the pytest item (and goes into an environment variable): keep it safe
        case.id = printable(case.id).replace("\n", "\\n").replace("\t", "\\t")

    q = merged.get("question")
    if q is None and kind_name == "sdmx":
        turns = entry.get("conversation")
        if isinstance(turns, list):
            q = " / ".join(str(t.get("content", "")) for t in turns
                           if isinstance(t, dict) and t.get("role") == "user")
    case.question = None if q is None else str(q)
    _hints(case, entry, kp, errors)
    case.gold = plain(merged.get("gold"))
    if "predicted" in entry:
        case.predicted = plain(entry["predicted"])

    diff_ = merged.get("difficulty")
    if diff_ is not None and not isinstance(diff_, str | int):
        errors.add(entry, "difficulty", kp("difficulty"), "must be a string")
    case.difficulty = None if diff_ is None else str(diff_)

    tags: list[str] = []
    for layer, container in ((suite.defaults, None), (file_defaults, header), (entry, entry)):
        value = layer.get("tags")
        if value is None:
            continue
        if not isinstance(value, list):
            errors.add(container, "tags", kp("tags") if container is entry else "tags",
                       "must be a list of names")
            continue
        for t in value:
            name = str(t)
            if not _TAG.match(name):
                errors.add(container, "tags", kp("tags"), f"tag {name!r} is not a valid "
                           "marker name (letters, digits, _ . + -; not starting with a digit)")
            elif name in RESERVED_MARKS:
                errors.add(container, "tags", kp("tags"), f"tag {name!r} is reserved by pytest")
            elif name not in tags:
                tags.append(name)
    case.tags = tags

    severity = merged.get("severity")
    if severity is not None:
        if severity not in SEVERITIES:
            errors.add(entry if "severity" in entry else header, "severity", kp("severity"),
                       f"must be one of {', '.join(SEVERITIES)}, not {severity!r}")
        else:
            case.severity = str(severity)

    for key in ("xfail", "skip"):
        value = merged.get(key)
        if value is None or value is False:
            continue
        if value is True:
            value = f"marked {key} in {display}"
        if not isinstance(value, str):
            errors.add(entry, key, kp(key), "must be a reason string")
            continue
        setattr(case, key, value)

    # datasource
    ds_name = merged.get("datasource")
    if ds_name is not None:
        ds = suite.datasources.get(str(ds_name))
        where = entry if "datasource" in entry else header
        if ds is None:
            known = ", ".join(sorted(suite.datasources)) or "none defined in queryeval.yaml"
            errors.add(where, "datasource", kp("datasource"),
                       f"unknown datasource {ds_name!r} (known: {known})")
        else:
            case.datasource = ds.name
            case.source_spec = dict(ds.spec)
            case.errors.extend(ds.errors)
            case.secrets = case.secrets | frozenset(ds.secrets)

    for key in ("gold_result", "predicted_result"):
        if _names_files(merged.get(key)):
            _load_result_files(case, path, key, merged[key], entry if key in entry else header,
                               kp(key), errors)
            continue
        if key in merged and merged[key] is not None:
            try:
                data = case.raw[key] if key in entry else plain(merged[key])  # copied once
                setattr(case, key, ResultTable.from_recorded(data))
            except (ValueError, TypeError, AttributeError, KeyError) as exc:
                errors.add(entry, key, kp(key), str(exc))

    options: dict[str, Any] = {}
    for key, value in merged.items():
        if key in option_keys:
            options[key] = plain(value)
    for key in ("timeout", "max_rows"):
        if key in options:
            v = options[key]
            if isinstance(v, bool) or not isinstance(v, int | float) or v <= 0:
                errors.add(entry if key in entry else header, key, kp(key),
                           "must be a positive number")
    case.options = options
    _repeat(case, entry, header, merged, errors, kp)

    # thresholds: ini < suite < file < case, metric by metric
    resolved: dict[str, Threshold] = dict(ini_thresholds)
    for metric, (bound, _) in suite.thresholds.items():
        resolved[metric] = bound
    file_th = _threshold_map(header.get("thresholds"), "thresholds", header, errors)
    case_th = _threshold_map(entry.get("thresholds"), kp("thresholds"), entry, errors)
    for metric, (bound, _) in {**file_th, **case_th}.items():
        resolved[metric] = bound
    if kind is not None and is_metric is not None:
        hints = _names_hint(case.kind) + list(extra_names(case.kind) if extra_names else [])
        for source, label in ((file_th, "thresholds"),
                                     (case_th, kp("thresholds"))):
            for metric, (_, container) in source.items():
                if not is_metric(case.kind, metric):
                    errors.add(container, metric, f"{label}.{metric}",
                               f"unknown metric for kind {case.kind}"
                               f"{_suggest(metric, hints)}")
        # suite/ini thresholds may target other kinds: keep only those this kind produces
        inherited = set(ini_thresholds) | set(suite.thresholds)
        for metric in inherited - set(file_th) - set(case_th):
            if not is_metric(case.kind, metric):
                resolved.pop(metric, None)
    case.thresholds = resolved

    if kind is not None and not errors.items:
        try:
            for key_path, message in kind.validate(case):
                root = re.split(r"[.\[]", key_path, maxsplit=1)[0]
                if root not in entry and root in header:  # set at file level: point there
                    errors.items.append(f"{display}:{_line_for(header, key_path)}: "
                                        f"{key_path}: {message}")
                    continue
                errors.items.append(f"{display}:{_line_for(entry, key_path)}: "
                                    f"{kp(key_path)}: {message}")
        except Exception as exc:  # a kind's validator must never break collection
            errors.items.append(f"{display}:{line}: {kp('kind')}: validation failed: {exc!r}")
    case.errors.extend(file_errors.items)
    case.errors.extend(errors.items)
    return case


def _repeat(case: Case, entry: Any, header: Any, merged: dict[str, Any], errors: _Errors,
            kp: Callable[[str], str]) -> None:
    """``repeat`` (a positive integer) and ``repeat_verdict`` (all, majority, any). A case that
    writes its own prediction and asks for repeats is a mistake: the same text N times."""
    from .repeats import VERDICTS

    value = merged.get("repeat", 1)
    where = entry if "repeat" in entry else header
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        errors.add(where, "repeat", kp("repeat"), f"must be a positive integer, not {value!r}")
    else:
        case.repeat = value
        turns = entry.get("conversation")
        inline = "predicted" in entry or "predicted_result" in entry or (
            isinstance(turns, list) and any(isinstance(t, dict) and "predicted" in t
                                            for t in turns))
        if value > 1 and "repeat" in entry and inline:
            errors.add(entry, "repeat", kp("repeat"),
                       f"repeat: {value} with an inline prediction scores the same text "
                       f"{value} times; repeat asks a live predictions source (http, command, "
                       "python, openai) for N predictions: remove 'repeat' or the inline one")
    verdict = merged.get("repeat_verdict", "all")
    if verdict not in VERDICTS:
        errors.add(entry if "repeat_verdict" in entry else header, "repeat_verdict",
                   kp("repeat_verdict"), f"must be one of {', '.join(VERDICTS)}, not {verdict!r}")
    else:
        case.repeat_verdict = str(verdict)


def _hints(case: Case, entry: Any, kp: Callable[[str], str], errors: _Errors) -> None:
    """``evidence`` (a string) and ``external_knowledge`` (a string, or a list of strings or
    numbers, joined with newlines) onto the case."""
    evidence = entry.get("evidence")
    if evidence is not None:
        if isinstance(evidence, str):
            case.evidence = evidence
        else:
            errors.add(entry, "evidence", kp("evidence"), "must be a string")
    knowledge = entry.get("external_knowledge")
    if knowledge is None:
        return
    if isinstance(knowledge, str):
        case.external_knowledge = knowledge
    elif isinstance(knowledge, list) and all(
            isinstance(k, str | int | float) and not isinstance(k, bool) for k in knowledge):
        case.external_knowledge = "\n".join(str(k) for k in knowledge)
    else:
        errors.add(entry, "external_knowledge", kp("external_knowledge"),
                   "must be a string or a list of strings")


def _names_files(value: Any) -> bool:
    """A result written as a CSV path or a list of them (not a recorded table)."""
    return isinstance(value, str) or (isinstance(value, list) and bool(value)
                                      and all(isinstance(v, str) for v in value))


def _load_result_files(case: Case, path: Path, field_name: str, value: Any, container: Any,
                       key_path: str, errors: _Errors) -> None:
    """``gold_result: file.csv`` / ``[a.csv, b.csv]`` (gold alternatives) and
    ``predicted_result: file.csv`` (a result the model's query gave, Spider 2.0's
    executed-CSV submissions): paths relative to the case file, read the way Spider 2.0's
    evaluator reads them (:mod:`.results_csv`)."""
    which = "gold" if field_name == "gold_result" else "predicted"
    if case.kind != "sql":
        errors.add(container, field_name, key_path,
                   f"{which} result CSV files are for kind sql (elsewhere: a recorded table)")
        return
    if field_name == "predicted_result" and not isinstance(value, str):
        errors.add(container, field_name, key_path,
                   "one predicted result file (a list of files is for gold_result)")
        return
    from .results_csv import CsvError, frame_table, read_csv_file

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


def _line_for(entry: Any, key_path: str) -> int:
    """Best line for a dotted key path inside a case (falls back to the case line)."""
    node: Any = entry
    line: int = getattr(entry, "line", 0)
    for part in re.split(r"[.\[\]]+", key_path):
        if not part:
            continue
        key: Any = int(part) if part.isdigit() else part
        in_dict = isinstance(node, LocDict) and key in node
        in_list = isinstance(node, LocList) and isinstance(key, int) and key < len(node)
        if in_dict or in_list:
            line = node.line_of(key)
            node = node[key]
        else:
            break
    return line


def _names_hint(kind: str) -> list[str]:
    try:
        k = kind_registry.get_kind(kind)
    except (KeyError, ImportError):
        return []
    names = getattr(k, "metric_names", None)
    if callable(names):
        try:
            return list(names())
        except Exception:
            return []
    return list(names) if isinstance(names, Iterable) else []
