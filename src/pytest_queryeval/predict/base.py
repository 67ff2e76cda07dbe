"""The predictor contract and helpers shared by the prediction sources."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from ..errors import PredictionError
from ..kindregistry import declares
from ..model import Case, Context

if TYPE_CHECKING:
    from collections.abc import Callable

    from .breaker import Breaker

#: Default ``max_bytes`` of the http and command sources: the most one answer (body, stdout)
#: may hold, counted while it is read. A prediction is a query or a small JSON object.
DEFAULT_MAX_BYTES = 16 * 1024 * 1024


def positive_number(spec: Mapping[str, object], key: str, default: float) -> float:
    """``spec[key]`` as a positive number (PredictionError naming the key otherwise)."""
    from .._util.numeric import option_limit

    try:
        return float(option_limit(key, spec.get(key, default)))
    except ValueError as exc:
        raise PredictionError(f"predictions {key} {exc}") from None


@dataclass
class Prediction:
    #: The answer: a query's text, a JSON object or an SDMX selection (``MISSING`` when the
    #: case's turns carry their own).
    value: object
    #: Wall time of obtaining the prediction (HTTP round trip, callable, command), if measured.
    seconds: float | None = None
    #: Extra timing or metadata the source reported (recorded, never gated).
    details: dict[str, object] = field(default_factory=dict)
    #: What the request cost, as the source reported it: ``prompt_tokens``,
    #: ``completion_tokens``, ``cost_usd`` (numbers; empty when the source reports none).
    #: Recorded as metrics; ``cost_usd`` is otherwise priced with the suite's ``pricing:``.
    usage: dict[str, float] = field(default_factory=dict)
    #: The model that answered, the key of its price in ``pricing:`` (None: the suite's
    #: ``model:`` label is used).
    model: str | None = None
    #: A note for the case's failure reason, should the query fail (see :func:`extracted`).
    hint: str | None = None


class Predictor(Protocol):
    """A prediction source: everything the engine asks of one, so a new source is one module
    plus one line in :data:`~pytest_queryeval.predict.PREDICTOR_SOURCES` (never a test of its
    class or its ``source:`` name). Live sources (python, http, command, openai) are called
    from the prediction pool's threads, several cases at once (``concurrency:``): ``predict``
    must be safe to call concurrently, and each call makes one request."""

    #: The answers come from a fixed set written before the run (a predictions file): no live
    #: request, so the pool never asks ahead, a repeated case runs once (the same answer each
    #: time) and a missing answer is the suite's error, never the model's failure. Asked of
    #: the class too, before a case's source is built (a spec that cannot build still says).
    fixed: ClassVar[bool]
    #: The keys of its ``predictions:`` mapping that name files, relative to the file that
    #: defines them: reports show those outside the rootdir relative to it, without building
    #: the source (a report is written for cases that never asked it).
    path_keys: ClassVar[tuple[str, ...]]
    #: The keys of its ``predictions:`` mapping whose value names it in the report's one line
    #: (``openai:gpt-4o``), tried in order, then :attr:`path_keys` (optional: none).
    shown_keys: ClassVar[tuple[str, ...]]

    @classmethod
    def from_spec(cls, spec: dict[str, Any], base: Path, search: list[Path],
                  context: Context | None = None) -> Predictor:
        """Build it from a ``predictions:`` mapping (paths relative to ``base``; ``context``,
        the evaluator, gives the openai source its datasources and the suite's cases).
        Raises PredictionError naming what is wrong."""
        ...

    def predict(self, case: Case) -> Prediction:
        """Raise :class:`~pytest_queryeval.errors.PredictionError` when none can be had."""
        ...

    def paths(self) -> list[Path]:
        """The files it reads ([] for a live source): ids of a fixed source that match no
        collected case are warned about under the first."""
        ...

    def ids(self) -> list[str]:
        """The case ids a fixed source holds, in its order ([] for a live one, which answers
        any case, and for a set that cannot be read: that error is each case's)."""
        ...


class AnswerStore(Protocol):
    """Answers kept between runs (:class:`.cache.PredictionCache`)."""

    def answer(self, case: Case, request: object, ask: Callable[[], Prediction]) -> Prediction:
        """The answer stored for ``request``, else ``ask()``'s."""
        ...


class AnswerLog(Protocol):
    """Live answers kept as they arrive in the run's journal (:mod:`..plugin.journal`), and
    those an earlier attempt of the run received: a retry does not ask again what it paid
    for."""

    def get(self, case: Case, repeat: int) -> Prediction | None:
        """The answer an earlier attempt received for run ``repeat`` of ``case``."""
        ...

    def put(self, case: Case, repeat: int, prediction: Prediction) -> None:
        """Journal an answer just received."""
        ...


class LiveSource:
    """What every live source (python, http, command, openai) declares alike: each answer is
    a request made when asked, the pool may make it ahead, and it reads no file of answers."""

    fixed: ClassVar[bool] = False
    path_keys: ClassVar[tuple[str, ...]] = ()
    shown_keys: ClassVar[tuple[str, ...]] = ()
    #: Its answers kept between runs (``cache: true``: set by ``from_spec`` through
    #: :func:`.cache.use_cache`); None: each is asked when wanted.
    answers: AnswerStore | None = None
    #: A network source's circuit breaker (:mod:`.breaker`): None for the others.
    breaker: Breaker | None = None

    def preflight(self) -> str | None:
        """Ask the server something cheap, within the source's ``preflight_timeout``: None
        when it answered (or the source has nothing to check), else why not. Called once per
        source when the run starts (:func:`.breaker.preflight_all`)."""
        return None

    def cached(self, case: Case, request: object, ask: Callable[[], Prediction]) -> Prediction:
        """``ask()``, or the answer stored for ``request`` (what is sent for ``case``)."""
        return ask() if self.answers is None else self.answers.answer(case, request, ask)

    def paths(self) -> list[Path]:
        return []

    def ids(self) -> list[str]:
        return []


def get_path(data: object, path: str | None) -> object:
    """Follow ``a.b.0.c`` into nested JSON; raises KeyError naming the missing step."""
    if not path:
        return data
    node = data
    for step in path.split("."):
        if isinstance(node, list):
            try:
                node = node[int(step)]
            except (ValueError, IndexError):
                raise KeyError(f"no item {step!r} in a list of {len(node)}") from None
        elif isinstance(node, dict):
            if step not in node:
                raise KeyError(f"no key {step!r} (keys: {', '.join(map(str, list(node)[:10]))})")
            node = node[step]
        else:
            raise KeyError(f"cannot take {step!r} of a {type(node).__name__}")
    return node


def maybe_json(text: str) -> object:
    """Structured predictions (JSON objects, SDMX selections) may arrive as JSON text."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        from .._util.boundedio import loads_json

        try:
            return loads_json(stripped)
        except ValueError:  # not JSON, or nested deeper than Python reads: the text
            return text
    return text


def refuse_repeated(text: str, what: str) -> None:
    """PredictionError when the JSON ``text`` (an agent case's answer) gives a key twice in
    one object: which of the two a reader took is its JSON parser's choice, and an agent's
    record is read whole (``{"trajectory": [<a DELETE>], "trajectory": []}`` is no empty
    trajectory)."""
    stripped = text.strip()
    if stripped[:1] not in ("{", "["):
        return
    from .._util.boundedio import repeated_key

    twice = repeated_key(stripped)
    if twice is not None:
        raise PredictionError(f"{what} gives the key {twice[:60]!r} twice in one object: "
                              "which one a reader takes is its JSON parser's choice, and an "
                              "agent's record is read whole")


#: The token counts a source may report, under the names of the OpenAI API's ``usage``.
USAGE_KEYS = ("prompt_tokens", "completion_tokens")


def read_usage(data: object) -> dict[str, float]:
    """``{prompt_tokens, completion_tokens, cost_usd}`` from a ``usage`` mapping (an
    OpenAI-shaped reply, a command's or a file's record). Token counts that are not whole
    non-negative numbers, and a cost that is not a non-negative number, are left out rather
    than guessed."""
    if not isinstance(data, dict):
        return {}
    out: dict[str, float] = {}
    for key in (*USAGE_KEYS, "cost_usd"):
        value = data.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if value >= 0 and math.isfinite(value) and (key == "cost_usd" or float(value).is_integer()):
            out[key] = float(value)
    return out


#: ``extract:`` of the http and command sources: ``fenced`` takes the query out of the
#: answer's fenced code block, as the openai source does (:func:`.prompt.extract_query`).
EXTRACT_MODES = ("fenced",)
#: Added to the failure reason of an answer that holds a fenced block nobody took out.
FENCE_HINT = ("the answer contains a fenced code block; set extract: fenced in predictions: "
              "to score the query inside it")


def extract_mode(spec: Mapping[str, object]) -> str | None:
    """``spec["extract"]``, checked (PredictionError naming the key), or None."""
    value = spec.get("extract")
    if value is None or value in EXTRACT_MODES:
        return value
    raise PredictionError(f"predictions.extract: must be {' or '.join(EXTRACT_MODES)} (the "
                          f"query in the answer's fenced code block), not {value!r}")


def extracted(prediction: Prediction, kind: str, mode: str | None) -> Prediction:
    """The answer of a chat-style service behind ``http`` or ``command``: with ``extract:
    fenced``, the query of its fenced block (how it was found in ``details.extraction``);
    without, an answer holding a fenced block gets :data:`FENCE_HINT`, since "'Here' does not
    start an SQL statement" alone does not say what to change."""
    value = prediction.value
    if not isinstance(value, str):
        return prediction
    from .prompt import extract_query, has_fenced_block

    if mode == "fenced":
        query, how = extract_query(value, kind)
        prediction.details["extraction"] = how
        prediction.value = maybe_json(query) if declares(kind, "json_answers") else query
    elif has_fenced_block(value):
        prediction.hint = FENCE_HINT
    return prediction
