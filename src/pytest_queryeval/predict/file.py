"""Predictions read from a file: JSONL, a JSON mapping/list, or a YAML mapping."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any, ClassVar

from .._util import safefile
from .._util.boundedio import MAX_JSON_DEPTH, depth_exceeds, repeated_pairs
from .._yaml.yamlload import load_file, plain
from ..errors import PredictionError
from ..model import Case, Context
from .base import Prediction, read_usage

_ID_KEYS = ("id", "case_id")
#: What a line the decoder's recursion could not parse stands for (the bound's error follows).
DEEP = object()
_VALUE_KEYS = ("predicted", "prediction", "pred", "output")
_TIME_KEYS = ("prediction_seconds", "latency", "latency_s", "seconds")


def _text(path: Path, name: str) -> str:
    """The file decoded as UTF-8; a byte that is not UTF-8 is the error of the line it is on
    (the file is the suite's input: one bad byte was an INTERNALERROR that ended the run
    with no report)."""
    try:
        return safefile.located_utf8(safefile.read_bytes(path, "predictions"))
    except ValueError as exc:
        raise PredictionError(f"{name}:{exc}") from None


class MissingTurn(PredictionError):
    """The file holds rows for a conversation but none for this turn: the turn is scored as
    ``missing`` (:mod:`..engine.conversation`), not as the suite's error."""


#: A row's ``id`` written as its first key, read where the decoder cannot read the row.
_FIRST_ID = re.compile(r'\s*\{\s*"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?[0-9]+)\s*,')


class FilePredictor:
    """Loads the whole file once; problems surface per case, never for the session."""

    #: Its answers are the file's: nothing is requested (:attr:`.base.Predictor.fixed`).
    fixed: ClassVar[bool] = True
    path_keys: ClassVar[tuple[str, ...]] = ("path",)
    shown_keys: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_spec(cls, spec: dict[str, Any], base: Path, search: list[Path],
                  context: Context | None = None) -> FilePredictor:
        if not isinstance(spec.get("path"), str):
            raise PredictionError("file predictions need a path")
        return cls((base / spec["path"]).resolve())

    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries: dict[str, dict[str, Any]] | None = None
        self._error: str | None = None
        self._dupes: dict[str, list[int]] = {}
        #: Rows with a ``turn`` (a conversation's user-turn number), by (id, turn).
        self._turns: dict[tuple[str, int], dict[str, Any]] = {}
        #: The line of each row, by id and by (id, turn), kept beside the rows (a key of the
        #: row's own, ``__line`` included, is the row's: an agent's record is searched whole).
        self._lines: dict[object, int] = {}
        #: The ids whose rows all have a ``turn``.
        self._turned: set[str] = set()
        #: Why a row's agent record cannot be read as one (an object of it gives a key twice),
        #: by id; and the same for the whole file (a ``.json`` file, whose rows cannot be told).
        self._repeated: dict[str, str] = {}
        self._twice_file: str | None = None
        #: Why a row cannot be read (nested too deep), by the id it gives.
        self._broken: dict[str, str] = {}

    def _load(self) -> None:
        entries: dict[str, dict[str, Any]] = {}
        name = str(self.path)
        try:
            if not self.path.exists():
                raise PredictionError(f"predictions file not found: {name}")
            if self.path.suffix == ".jsonl":
                with io.StringIO(_text(self.path, name), newline=None) as fh:
                    for lineno, line in enumerate(fh, 1):
                        if not line.strip():
                            continue
                        twice: list[str] = []
                        try:
                            row = json.loads(line, object_pairs_hook=repeated_pairs(twice))
                        except ValueError as exc:
                            raise PredictionError(f"{name}:{lineno}: invalid JSON: {exc}") from None
                        except RecursionError:  # the decoder's own stack: an INTERNALERROR
                            row = DEEP
                        if row is DEEP or depth_exceeds(row, MAX_JSON_DEPTH):
                            self._too_deep(row, f"{name}:{lineno}", line)
                            continue
                        self._add(entries, row, f"{name}:{lineno}", lineno)
                        if twice and isinstance(row, dict):
                            self._twice(row, f"{name}:{lineno}", twice[0])
            else:
                if self.path.suffix == ".json":
                    given_twice: list[str] = []
                    try:
                        data = json.loads(_text(self.path, name),
                                          object_pairs_hook=repeated_pairs(given_twice))
                    except ValueError as exc:
                        raise PredictionError(f"{name}: invalid JSON: {exc}") from None
                    except RecursionError:
                        data = DEEP
                    if given_twice:  # no row of it can be told: every agent case of the file
                        self._twice_file = _repeated(name, given_twice[0])
                    if data is DEEP or depth_exceeds(data, MAX_JSON_DEPTH):
                        raise PredictionError(f"{name}: invalid JSON: nested deeper than "
                                              f"{MAX_JSON_DEPTH} levels")
                else:
                    try:
                        data = plain(load_file(self.path))
                    except Exception as exc:
                        raise PredictionError(str(exc)) from None
                if isinstance(data, list):
                    for i, row in enumerate(data):
                        self._add(entries, row, f"{name}[{i}]", i)
                elif isinstance(data, dict):
                    for key, value in data.items():
                        entries[str(key)] = {"predicted": value}
                else:
                    raise PredictionError(f"{name}: expected a mapping id -> prediction or a list")
        except PredictionError as exc:
            self._error = str(exc)
        except OSError as exc:
            self._error = f"cannot read predictions file {name}: {exc}"
        self._entries = entries

    def _too_deep(self, row: object, where: str, line: str | None = None) -> None:
        """A row nested deeper than :data:`MAX_JSON_DEPTH`: its case's error when its ``id``
        can be read (one such line made every case of the file an error: the forty-seventh
        re-probe's O2), the file's otherwise."""
        why = f"{where}: invalid JSON: nested deeper than {MAX_JSON_DEPTH} levels"
        case_id = next((row[k] for k in _ID_KEYS if k in row), None) \
            if isinstance(row, dict) else None
        if row is DEEP and line is not None and (first := _FIRST_ID.match(line)):
            case_id = json.loads(first[1])  # too deep for the decoder: an id written first
        if not isinstance(case_id, str | int) or isinstance(case_id, bool):
            raise PredictionError(why)
        self._broken.setdefault(str(case_id), why)

    def _add(self, entries: dict[str, dict[str, Any]], row: object, where: str, lineno: int,
             ) -> None:
        if not isinstance(row, dict):
            raise PredictionError(f"{where}: expected an object with id and predicted")
        case_id = next((row[k] for k in _ID_KEYS if k in row), None)
        if case_id is None:
            raise PredictionError(f"{where}: missing 'id'")
        key = str(case_id)
        turn = row.get("turn")
        if turn is not None:  # one row per turn of a conversation (docs/conversations.md)
            if isinstance(turn, bool) or not isinstance(turn, int) or turn < 1:
                raise PredictionError(f"{where}: turn must be a user-turn number (1, 2, ...), "
                                      f"not {turn!r}")
            if (key, turn) in self._turns:
                self._dupes.setdefault(f"{key}#turn{turn}",
                                       [self._lines[key, turn]]).append(lineno)
            self._turns[key, turn] = dict(row)
            self._lines[key, turn] = lineno
            if key not in entries:
                entries[key] = {}
                self._turned.add(key)
                self._lines[key] = lineno
            return
        if key in entries:
            self._dupes.setdefault(key, [self._lines[key]]).append(lineno)
        entries[key] = dict(row)
        self._turned.discard(key)
        self._lines[key] = lineno

    def _twice(self, row: dict[str, Any], where: str, key: str) -> None:
        """A row an object of which gives ``key`` twice: its agent case's error (which of the
        two a reader took is its JSON parser's choice, and an agent's record is read whole:
        ``{"trajectory": [<a DELETE>], "trajectory": []}`` is no empty trajectory)."""
        case_id = next((row[k] for k in _ID_KEYS if k in row), None)
        if case_id is not None:
            self._repeated.setdefault(str(case_id), _repeated(where, key))

    def paths(self) -> list[Path]:
        return [self.path]

    def ids(self) -> list[str]:
        """The case ids the file holds, in file order ([] when it cannot be read: that
        error is each case's)."""
        if self._entries is None:
            self._load()
        assert self._entries is not None
        return [] if self._error else list(self._entries)

    def predict(self, case: Case) -> Prediction:
        if self._entries is None:
            self._load()
        if self._error:
            raise PredictionError(self._error)
        assert self._entries is not None
        if case.id in self._dupes:
            lines = ", ".join(map(str, self._dupes[case.id]))
            raise PredictionError(f"case id {case.id!r} appears more than once in {self.path} "
                                  f"(lines {lines})")
        if (broken := self._broken.get(case.id, self._broken.get(case.fanned_from or ""))):
            raise PredictionError(broken)
        if case.agent is not None:
            why = self._twice_file or self._repeated.get(case.id) or \
                self._repeated.get(case.fanned_from or case.id)
            if why is not None:
                raise PredictionError(why)
        if case.turn is not None:
            return self._turn(case, case.turn)
        key: str | None = case.id
        row = self._entries.get(case.id)
        if row is None and case.fanned_from is not None:  # one prediction for every source
            key, row = case.fanned_from, self._entries.get(case.fanned_from)
        if row is not None and key in self._turned:
            raise PredictionError(f"{self.path}: the rows for {case.id!r} have a turn, but "
                                  "the case is not a conversation")
        if row is None:
            raise PredictionError(f"no prediction for case {case.id!r} in {self.path}")
        return self._prediction(case, row)

    def _turn(self, case: Case, turn: int) -> Prediction:
        """Turn ``turn`` of conversation ``case``: its row, else :class:`MissingTurn`."""
        for key in (case.id, case.fanned_from):
            if key is None:
                continue
            if f"{key}#turn{turn}" in self._dupes:
                lines = ", ".join(map(str, self._dupes[f"{key}#turn{turn}"]))
                raise PredictionError(f"case id {key!r} turn {turn} appears more than once in "
                                      f"{self.path} (lines {lines})")
            row = self._turns.get((key, turn))
            if row is not None:
                return self._prediction(case, row)
        raise MissingTurn(f"no prediction for case {case.id!r} turn {turn} in {self.path}")

    def unused_rows(self, case: Case) -> str | None:
        """Why a row of conversation ``case`` is never asked (a history-only turn's, a turn
        past its user turns, a row without a turn), or None: the case's error, located at the
        row. A chat harness asks its agent every user turn, so such a row is what the agent
        did in this case; dropped silently, its ``DELETE`` passed ``write_attempts``."""
        if self._entries is None:
            self._load()
        if self._error or not case.turns:
            return None
        assert self._entries is not None
        scored = {t.number for t in case.turns if t.scored}
        for key in dict.fromkeys(k for k in (case.id, case.fanned_from) if k is not None):
            if key in self._entries and key not in self._turned and self._entries[key]:
                return (f"{self.path}:{self._lines[key]}: the row for {key!r} has no 'turn', "
                        "but the case is a conversation: it is not used (one row per "
                        "scored turn, each with its 'turn')")
            for (rid, turn), _ in sorted(self._turns.items(), key=lambda kv: kv[0][1]):
                if rid != key or turn in scored:
                    continue
                why = (f"the conversation has {len(case.turns)} user turn(s)"
                       if turn > len(case.turns) else
                       f"user turn {turn} is history only (no gold): it is not asked")
                return (f"{self.path}:{self._lines[key, turn]}: the row for {key!r} turn "
                        f"{turn} is not used ({why}); every row of a case must be used")
        return None

    def _prediction(self, case: Case, row: dict[str, Any]) -> Prediction:
        value_key = next((k for k in _VALUE_KEYS if k in row), None)
        if value_key is None:
            raise PredictionError(f"{self.path}: entry for {case.id!r} has no 'predicted' value")
        seconds = next((row[k] for k in _TIME_KEYS if isinstance(row.get(k), int | float)), None)
        usage = read_usage(row.get("usage")) or read_usage(row)
        model = row.get("model") if isinstance(row.get("model"), str) else None
        details = {k: v for k, v in row.items()
                   if k not in (*_ID_KEYS, value_key, "turn", *usage) and
                   not isinstance(v, dict | list)}
        value = row[value_key]
        if case.agent is not None:  # an agent case keeps its trajectory and answer
            from ..agents.trajectory import ENVELOPE_KEYS, carried

            value = carried(row, value, value_key)
            details = {k: v for k, v in details.items() if k not in ENVELOPE_KEYS}
        return Prediction(value, float(seconds) if seconds is not None else None, details,
                          usage, model)


def _repeated(where: str, key: str) -> str:
    return (f"{where}: an object gives the key {key[:60]!r} twice: which one a reader takes "
            "is its JSON parser's choice, and an agent's record is read whole")


#: Unmatched ids listed in the warning; the rest are counted.
UNMATCHED_LISTED = 10


def unmatched_message(display: str, total: int, listed: list[str]) -> str:
    """The warning for prediction ids that match no case (a typo, a renamed case)."""
    shown = ", ".join(repr(i) for i in listed[:UNMATCHED_LISTED])
    more = f" and {total - len(listed[:UNMATCHED_LISTED])} more" \
        if total > len(listed[:UNMATCHED_LISTED]) else ""
    return (f"{total} prediction id(s) in {display} match no collected case: {shown}{more}")
