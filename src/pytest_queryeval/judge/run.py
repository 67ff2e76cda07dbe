"""Asking the judge for one case: after execution, before the thresholds (issue 26 items 2-5).

Why after execution and only where it failed (``when: failures``): ROSE's measurements found
that asking only there agrees better with experts (kappa 0.837 against 0.807 when judging every
item) for far fewer calls. ``judge_ex`` is then 1 when execution passed (and, with ``always``,
the judge did not overturn it) or the judge accepts; 0 otherwise. ``execution_accuracy`` and
every other metric are left exactly as they are: a team gates on ``judge_ex`` by naming it.

A verdict is looked up by its content hash (:func:`.pins.pin_key`) in the pin file, then in
pytest's cache, before any call; ``--queryeval-judge-refresh`` asks again (and records a flip
from the pinned verdict). An answer that is not the expected structure is a judge error: the
case records it, gets no ``judge_ex`` (never a silent 0), and is an ``error`` when its
thresholds let ``judge_ex`` decide.

Why one module of this size: judging one case is one sequence over shared state (the pin
lookup, the first judgement, the refusal of a rescue the prediction asked for, the blinded
second judgement of ``blind_check``, the record), all reading the same session, pin store,
view and record; the prompts, the verdict parsing and the pins already live in their own
modules, and the sequence reads in :func:`judge_case`, its steps beside it in this module.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, cast

from .._util.boundedio import loads_json
from ..errors import QueryEvalError
from ..kindregistry import declared_text, declaring
from ..metricnames import JUDGE_EX
from ..model import Case, Scored
from ..predict.base import read_usage
from .config import JudgeSpec
from .pins import PinStore, pin_key
from .prompt import (
    BLIND_FORMAT,
    BLIND_TEMPLATE,
    PROMPT_FORMAT,
    SQL_TEMPLATE,
    Shown,
    blind_result,
    build_blind_prompt,
    build_prompt,
    show_result,
    strip_comments,
)
from .verdict import (
    SCHEMA,
    JudgeError,
    Verdict,
    VerdictJSON,
    majority,
    parse_verdict,
    planted_acceptance,
)

if TYPE_CHECKING:
    from ..model import Context
    from ..predict.chat import ChatPredictor
    from ..predict.exchange import Exchange
    from ..predict.pool import PredictionPool
    from .audit import ValueCache


class JudgeRecord(TypedDict, total=False):
    """``details.judge`` of a case: what the judge was asked and said, for the reports (the
    run's ``judge`` aggregate, the HTML and Markdown judge sections)."""

    #: The judge's model and when it is asked (``failures``, ``always``).
    model: str
    when: str
    #: Why judge_ex may not decide (a kappa below ``min_kappa``).
    refused: str
    #: Whether the judge was asked in this run (False: execution decided, or a pin did).
    asked: bool
    #: Why it was not asked.
    note: str
    #: The pin key of the question (model, prompt, both queries and results).
    key: str
    #: The judge's error (no verdict), or why its acceptance was refused.
    error: str
    #: Whether the verdict came from the pin file or the cache.
    pinned: bool
    #: The pinned verdict this run's answer contradicts (``--queryeval-judge-refresh``).
    flipped_from: VerdictJSON
    #: The verdict (:meth:`.verdict.Verdict.to_json`).
    category: str
    reason: str
    accepted: bool
    #: ``overturned`` (execution passed, the judge rejects) or ``rescued`` (the reverse).
    outcome: str
    #: How many calls were made, and each answer's text (cut).
    calls: int
    answers: list[str]
    #: ``blind_check: true``: the second, blinded judgement of a would-be rescue (its key,
    #: category, reason, accepted, pinned, calls, answers).
    blind: dict[str, Any]

#: ``details.judge`` outcomes the reports list.
RESCUED = "rescued"
OVERTURNED = "overturned"
#: The cache namespace of verdicts (beside the pin file).
CACHE = "judge-verdicts"


@dataclass
class JudgeSession:
    """What every judged case of a process shares: the pin files (loaded once, written when
    the session ends), the clients, and the count of calls against ``max_calls``."""

    refresh: bool = False
    stores: dict[Path, PinStore] = field(default_factory=dict)
    clients: dict[str, ChatPredictor] = field(default_factory=dict)
    calls: int = 0
    asks: int = 0
    refusals: dict[str, str | None] = field(default_factory=dict)
    #: Pin files that could not be read, with the message every case using them reports.
    pin_errors: dict[Path, str] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)

    def store(self, path: Path) -> PinStore:
        """The pin file's verdicts, read once; a file that cannot be read (not a regular file,
        too large, a damaged or too deeply nested line) is a :class:`JudgeError` of every case
        that uses it, read once too (issue 39 item 5)."""
        with self.lock:
            if path in self.pin_errors:
                raise JudgeError(self.pin_errors[path])
            if path not in self.stores:
                from .._util.paths import display

                try:
                    self.stores[path] = PinStore.load(path, display(path, Path.cwd()))
                except ValueError as exc:
                    self.pin_errors[path] = f"judge.pins: {exc}"
                    raise JudgeError(self.pin_errors[path]) from None
            return self.stores[path]

    def client(self, spec: JudgeSpec, context: Context) -> ChatPredictor:
        from ..predict.chat import ChatPredictor

        key = json.dumps(spec.chat_spec(), sort_keys=True, default=str)
        with self.lock:
            if key not in self.clients:
                self.clients[key] = ChatPredictor(spec.chat_spec(), context)
            return self.clients[key]

    def refusal(self, spec: JudgeSpec, cache: ValueCache | None) -> str | None:
        """Why ``judge_ex`` may not decide under ``spec`` (``min_kappa``), measured once."""
        if spec.min_kappa is None:
            return None
        key = f"{spec.labels}|{spec.model}|{spec.min_kappa}"
        with self.lock:
            if key not in self.refusals:
                from .audit import kappa_refusal

                self.refusals[key] = kappa_refusal(spec, cache)
            return self.refusals[key]

    def take_calls(self, spec: JudgeSpec, n: int, exchange: Exchange | None = None) -> bool:
        """Count ``n`` calls against ``max_calls``; False (none counted) when over. With an
        xdist exchange the count is the session's (a counter every worker shares), so
        ``max_calls`` caps the run, not each worker."""
        with self.lock:
            if exchange is not None and spec.max_calls is not None:
                if not exchange.take_count("judge-calls", n, spec.max_calls):
                    return False
            elif spec.max_calls is not None and self.calls + n > spec.max_calls:
                return False
            self.calls += n
            return True

    def next_ask(self) -> int:
        """A number unique to one ask of this process (the pool keys of its votes)."""
        with self.lock:
            self.asks += 1
            return self.asks

    def write(self) -> None:
        """Write each pin file this session added to, merged with what is on disk now (other
        xdist workers write theirs too)."""
        with self.lock:
            for path, store in self.stores.items():
                if not store.fresh:
                    continue
                with _file_lock(path):  # read-merge-write, one process at a time
                    try:
                        disk = PinStore.load(path)
                    except ValueError:
                        disk = PinStore(path)
                    disk.pins.update({k: store.pins[k] for k in store.fresh})
                    disk.labels.update({k: store.labels[k] for k in store.fresh
                                        if k in store.labels})
                    disk.write()
                store.fresh.clear()


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock for writing ``path`` (xdist workers end together), held on the
    directory that holds it, so neither the suite's directory nor the temporary directory gets
    a stray lock file (a lock file per pin file once piled up in the temporary directory, one
    for every path a run had written). Without ``fcntl`` (Windows) the write is still atomic,
    and a race may drop the other worker's new pins."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    path.resolve().parent.mkdir(parents=True, exist_ok=True)  # the write makes it anyway
    fd = os.open(path.resolve().parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def template_for(spec: JudgeSpec) -> str:
    return spec.prompt if spec.prompt is not None else SQL_TEMPLATE


@dataclass(frozen=True)
class View:
    """What the judge is shown of one case's queries and results (built once: the prompt,
    the quote check and the refusal of a rescue the prediction asked for all read it)."""

    predicted: str  # the prediction without its comments
    raw_predicted: str
    gold_result: Shown
    predicted_result: Shown

    def shown_data(self, schema: str = "") -> tuple[str, ...]:
        """The texts the judge sees as data, in :data:`.verdict._NAMES`'s order: an answer
        whose verdict stands in one of them quotes, it does not judge."""
        return (self.predicted, self.raw_predicted, self.predicted_result.text,
                self.gold_result.text, schema)


def view_of(case: Case, scored: Scored) -> View:
    from ..sources.dialects import dialect_of

    _, gold_table, predicted, pred_table = scored.compared  # type: ignore[misc]
    dialect = case.dialect or (dialect_of(case.source_spec) if case.source_spec else None)
    # SQLite names an unaliased column by its expression's source text, comments included
    # (``SELECT 3 /* ... */`` has a column ``3 /* ... */``): a name copied from the query is
    # shown without its comments too
    syntax = declared_text(case.kind, "query_syntax")
    columns = [strip_comments(c, syntax, dialect)
               if ("--" in c or "/*" in c or "#" in c) and c in predicted else c
               for c in pred_table.columns]
    return View(strip_comments(predicted, syntax, dialect), predicted,
                show_result(gold_table.columns, gold_table.rows),
                show_result(columns, pred_table.rows))


def _asked_for(case: Case, gold: str, view: View) -> str | None:
    """Why an acceptance that would rescue this case is refused: the text the prediction
    controls names the accepting category itself (:func:`.verdict.planted_acceptance`)."""
    planted = planted_acceptance(
        [view.predicted, view.predicted_result.text],
        [case.question or "", case.evidence or "", case.external_knowledge or "", gold,
         view.gold_result.text])
    if planted is None:
        return None
    return (f"not rescued: the prediction itself names {planted!r} to the judge (in its query "
            "or its result), so the judge's acceptance is no judgement; execution's verdict "
            "stands")


def judge_case(case: Case, scored: Scored, metrics: dict[str, float], details: dict[str, Any],
               ctx: Context, session: JudgeSession) -> str | None:
    """Set ``judge_ex`` (and what the calls cost) for one scored case; the judge's error
    message, or None."""
    spec = cast(JudgeSpec, case.judge)  # the engine asks only for a case with a judge
    executed = metrics.get("execution_accuracy")
    passed = executed == 1.0
    record: JudgeRecord = {"model": spec.model, "when": spec.when}
    details["judge"] = record
    refused = session.refusal(spec, getattr(ctx, "pytest_cache", None))
    if refused:
        record["refused"] = refused
    if _execution_stands(scored, executed, passed, spec, metrics, record):
        return None
    gold, gold_table, predicted, pred_table = scored.compared  # type: ignore[misc]
    template = template_for(spec)
    view = view_of(case, scored)
    # the prompt's format is part of the key: a verdict given to an older, unmarked prompt is
    # asked again
    key = pin_key(model=f"{spec.model}|votes={spec.votes}",
                  template=f"{template}\n{PROMPT_FORMAT}", gold=gold,
                  predicted=predicted, gold_digest=gold_table.signature(False),
                  predicted_digest=pred_table.signature(False))
    record["key"] = key
    try:
        store = session.store(spec.pins) if spec.pins is not None else None
    except JudgeError as exc:
        return _recorded_error(record, exc)
    verdict = _pinned_or_asked(case, scored, spec, template, key, store, metrics, record, ctx,
                               session, view)
    if isinstance(verdict, str):
        return verdict
    said = verdict.to_json()  # its three keys, in its order
    record["category"], record["reason"], record["accepted"] = \
        said["category"], said["reason"], said["accepted"]
    record["asked"] = True
    refused = None if passed or not verdict.accepted else _asked_for(case, gold, view)
    if refused is not None:
        message = JudgeError(refused).reason()
        record["accepted"] = False
        record["error"] = message
        return message
    if not passed and verdict.accepted and spec.blind_check:
        try:
            blind = _blind(case, scored, spec, metrics, record, ctx, session, store)
        except QueryEvalError as exc:
            return _recorded_error(record, exc)
        if not blind.accepted:
            metrics[JUDGE_EX] = 0.0
            record["accepted"] = False
            record["note"] = ("not rescued: the blinded judgement (the prediction's text "
                              "withheld, its result masked) rejects it")
            return None
    metrics[JUDGE_EX] = 1.0 if verdict.accepted else 0.0
    if passed and not verdict.accepted:
        record["outcome"] = OVERTURNED
    elif not passed and verdict.accepted:
        record["outcome"] = RESCUED
    return None


def _execution_stands(scored: Scored, executed: float | None, passed: bool, spec: JudgeSpec,
                      metrics: dict[str, float], record: JudgeRecord) -> bool:
    """Whether execution's verdict is ``judge_ex`` without asking: a query that did not
    execute leaves nothing to compare, and ``when: failures`` asks only where it failed."""
    if scored.compared is None or executed is None:
        metrics[JUDGE_EX] = 1.0 if passed else 0.0
        record["asked"] = False
        record["note"] = "not judged: both queries must execute"
        return True
    if passed and spec.when == "failures":
        metrics[JUDGE_EX] = 1.0
        record["asked"] = False
        return True
    return False


def _recorded_error(record: JudgeRecord, exc: QueryEvalError) -> str:
    """The case's error message for a failed judgement (a judge's own error keeps its
    prefix), recorded: the case gets no ``judge_ex``, never a silent 0."""
    message = exc.reason() if isinstance(exc, JudgeError) else f"judge error: {exc.reason()}"
    record["error"] = message
    return message


def _pinned_or_asked(case: Case, scored: Scored, spec: JudgeSpec, template: str, key: str,
                     store: PinStore | None, metrics: dict[str, float], record: JudgeRecord,
                     ctx: Context, session: JudgeSession, view: View) -> Verdict | str:
    """The verdict pinned or cached under ``key``, unless ``--queryeval-judge-refresh`` asks
    again; an answer asked is pinned and cached (a flip from the pinned one recorded). A str:
    the judge's error message, recorded."""
    pinned = _pinned(key, store, ctx)
    if pinned is not None and not session.refresh:
        record["pinned"] = True
        return pinned
    try:
        verdict = _ask(case, scored, spec, template, metrics, record, ctx, session, view)
    except QueryEvalError as exc:
        return _recorded_error(record, exc)
    if pinned is not None and pinned.accepted != verdict.accepted:
        record["flipped_from"] = pinned.to_json()
    record["pinned"] = False
    if store is not None:
        store.put(key, verdict, case=case.id, question=case.question)
    if hasattr(ctx, "cache_set"):
        ctx.cache_set(CACHE, key, {"category": verdict.category, "reason": verdict.reason})
    return verdict


def _blind(case: Case, scored: Scored, spec: JudgeSpec, metrics: dict[str, float],
           record: JudgeRecord, ctx: Context, session: JudgeSession,
           store: PinStore | None) -> Verdict:
    """The second judgement of a would-be rescue (``blind_check: true``, issue 50 item 6):
    the same pair without the prediction's text, its result masked (:func:`.prompt.
    blind_result`). Pinned and cached under its own key, like the first; its cost is added to
    the case's."""
    gold, gold_table, _predicted, pred_table = scored.compared  # type: ignore[misc]
    shown = blind_result(gold_table.rows, pred_table.columns, pred_table.rows)
    gold_shown = show_result(gold_table.columns, gold_table.rows)
    key = pin_key(model=f"{spec.model}|votes={spec.votes}",
                  template=f"{BLIND_TEMPLATE}\n{BLIND_FORMAT}", gold=gold, predicted="",
                  gold_digest=gold_table.signature(False), predicted_digest=shown.text)
    sub: dict[str, Any] = {"key": key}
    record["blind"] = sub
    pinned = _pinned(key, store, ctx)
    if pinned is not None and not session.refresh:
        sub.update(pinned.to_json(), pinned=True)
        return pinned
    client = session.client(spec, ctx)
    try:
        schema = client._schema(case)
    except QueryEvalError:
        schema = ""
    prompt = build_blind_prompt(
        question=case.question or "", gold=gold, gold_result=gold_shown,
        predicted_result=shown, schema=schema,
        evidence="\n".join(e for e in (case.evidence, case.external_knowledge) if e),
        near_misses=_near_misses(scored), language=_language_name(case.kind))
    spent: dict[str, float] = {}
    asked: JudgeRecord = {}
    verdict = ask_prompt(spec, prompt, spent, asked, ctx, session, pooled=True,
                         shown_data=("", "", shown.text, gold_shown.text, schema))
    for name, value in spent.items():
        metrics[name] = metrics.get(name, 0.0) + value
    sub.update(verdict.to_json(), pinned=False, calls=asked.get("calls", 0),
               answers=asked.get("answers", []))
    if store is not None:
        store.put(key, verdict, case=case.id, question=case.question)
    if hasattr(ctx, "cache_set"):
        ctx.cache_set(CACHE, key, {"category": verdict.category, "reason": verdict.reason})
    return verdict


def _pinned(key: str, store: PinStore | None, ctx: Context) -> Verdict | None:
    """The verdict pinned (else cached) under ``key``, or None."""
    pinned = store.get(key) if store is not None else None
    if pinned is None:
        cached = ctx.cache_get(CACHE, key) if hasattr(ctx, "cache_get") else None
        if isinstance(cached, dict):
            try:
                pinned = Verdict(str(cached["category"]), str(cached.get("reason", "")))
            except KeyError:
                pinned = None
    return pinned


def _ask(case: Case, scored: Scored, spec: JudgeSpec, template: str,
         metrics: dict[str, float], record: JudgeRecord, ctx: Context,
         session: JudgeSession, view: View) -> Verdict:
    """The prompt of one case (its schema introspected as the ``openai`` source does), asked."""
    client = session.client(spec, ctx)
    gold = scored.compared[0]  # type: ignore[index]
    try:
        schema = client._schema(case)
    except QueryEvalError:
        schema = ""
    prompt = build_prompt(
        question=case.question or "", gold=gold, predicted=view.predicted,
        gold_result=view.gold_result, predicted_result=view.predicted_result, schema=schema,
        evidence="\n".join(e for e in (case.evidence, case.external_knowledge) if e),
        near_misses=_near_misses(scored), language=_language_name(case.kind), template=template)
    return ask_prompt(spec, prompt, metrics, record, ctx, session, pooled=True,
                      shown_data=view.shown_data(schema))


def ask_prompt(spec: JudgeSpec, prompt: str, metrics: dict[str, float], record: JudgeRecord,
               ctx: Context, session: JudgeSession, pooled: bool = False,
               shown_data: tuple[str, ...] = (),
               parse: Callable[[str, tuple[str, ...]], Verdict] = parse_verdict,
               schema: Mapping[str, object] = SCHEMA) -> Verdict:
    """Ask the model ``votes`` times (at most ``concurrency`` at once) and take the majority;
    what the calls cost goes into ``metrics``, the answers into ``record``.

    ``pooled`` (a case's judge): the calls are requests of the run's prediction pool
    (:func:`_pooled`), so they share its bound, its session-wide slots under xdist and its
    end on Ctrl-C; the audit asks in its own threads."""
    if not session.take_calls(spec, spec.votes, getattr(ctx, "exchange", None)):
        raise JudgeError(f"max_calls ({spec.max_calls}) reached: the judge was not asked "
                         "(raise judge.max_calls, or pin the verdicts in an earlier run)")
    client = session.client(spec, ctx)
    extra: dict[str, Any] = {}
    if spec.response_format == "json_object":
        extra["response_format"] = {"type": "json_object", "schema": schema}
    elif spec.response_format == "json_schema":
        extra["response_format"] = {"type": "json_schema", "json_schema": {
            "name": "verdict", "schema": {**schema, "additionalProperties": False},
            "strict": True}}
    messages = [{"role": "user", "content": prompt}]

    def one(_: int) -> tuple[str, dict[str, float], float]:
        start = time.perf_counter()
        raw, _seconds, _details = client.complete(messages, **extra)
        return _content(raw), _usage(raw), time.perf_counter() - start

    pool = ctx.judge_pool() if pooled and hasattr(ctx, "judge_pool") else None
    if pool is not None:
        answers = _pooled(pool, spec, one, session)
    elif spec.votes == 1:  # in the case's own thread: Ctrl-C stops the call at once
        answers = [one(0)]
    else:
        with ThreadPoolExecutor(max_workers=max(1, min(spec.concurrency, spec.votes))) as pool:
            answers = list(pool.map(one, range(spec.votes)))
    tokens = sum(u.get("prompt_tokens", 0) + u.get("completion_tokens", 0) for _, u, _ in answers)
    metrics["judge_tokens"] = float(tokens)
    metrics["judge_latency_s"] = sum(s for _, _, s in answers)
    if spec.price is not None:
        metrics["judge_cost_usd"] = sum(spec.price.cost(u) or 0.0 for _, u, _ in answers)
    record["calls"] = len(answers)
    record["answers"] = [text[:2000] for text, _, _ in answers]
    verdicts = [parse(text, shown_data) for text, _, _ in answers]
    return verdicts[0] if len(verdicts) == 1 else majority(verdicts)


def _pooled(pool: PredictionPool, spec: JudgeSpec,
            one: Callable[[int], tuple[str, dict[str, float], float]],
            session: JudgeSession) -> list[tuple[str, dict[str, float], float]]:
    """The votes as requests of the prediction pool, in the group of the judge's model (its
    ``concurrency`` the bound; with an xdist exchange, the session's), the case waiting for
    them. Keys are unique to this ask (a pool hands an answer out once); a closed pool takes
    no request, so no call is made once the session ends."""
    from ..predict.base import Prediction

    group = f"judge:{spec.model}@{spec.base_url}"
    ask = session.next_ask()
    keys = [("judge", os.getpid(), ask, i) for i in range(spec.votes)]
    for i, key in enumerate(keys):
        def call(i: int = i) -> Prediction:
            return Prediction(one(i))

        if not pool.submit(key, group, spec.concurrency, call, counted=False):
            pool.cancel(keys)
            raise JudgeError(STOPPED)
    try:
        # each value is what ``call`` returned: one vote's (text, usage, seconds)
        return [cast("tuple[str, dict[str, float], float]", pool.take(key).value)
                for key in keys]
    except KeyError:  # the pool closed (Ctrl-C, the session's end) before the call started
        pool.cancel(keys)
        raise JudgeError(STOPPED) from None


#: A case's judge call that the end of the session withdrew.
STOPPED = "the judge was not asked: the session ended first"


def _content(raw: bytes) -> str:
    try:
        data = loads_json(raw.decode("utf-8", errors="replace"))
        content = data["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise JudgeError("the judge's reply has no choices[0].message.content") from None
    if not isinstance(content, str):
        raise JudgeError("the judge sent no text")
    return content


def _usage(raw: bytes) -> dict[str, float]:
    try:
        return read_usage(loads_json(raw.decode("utf-8", errors="replace")).get("usage"))
    except (ValueError, AttributeError):
        return {}


def _near_misses(scored: Scored) -> list[str]:
    """The relaxations under which execution would match, as facts for the prompt."""
    if scored.relaxed is None:
        return []
    from ..rules.nearmiss import EX_ONLY, RELAXATIONS

    try:
        values = scored.relaxed(EX_ONLY)
    except Exception:  # an explanation must never fail the case
        return []
    return [f"the results match with {RELAXATIONS[name]}" for name, m in values.items()
            if m.get("execution_accuracy") == 1.0 and name in RELAXATIONS]


def ask_labelled(spec: JudgeSpec, data: dict[str, Any], ctx: Context,
                 session: JudgeSession) -> Verdict:
    """``--queryeval-audit-judge``: the judge asked about one labelled pair, from what the pair
    holds (its recorded results when given; "(not given)" otherwise)."""
    from ..results import ResultTable

    def shown(key: str) -> Any:
        value = data.get(key)
        if isinstance(value, dict) and isinstance(value.get("columns"), list) \
                and isinstance(value.get("rows"), list):
            table = ResultTable([str(c) for c in value["columns"]],
                                [tuple(r) for r in value["rows"]])
            return show_result(table.columns, table.rows)
        return Shown("(not given)", "not executed")

    kind = str(data.get("kind") or declaring("pinned_before_kinds"))
    raw = str(data.get("predicted") or "")
    view = View(strip_comments(raw, declared_text(kind, "query_syntax")), raw,
                shown("gold_result"), shown("predicted_result"))
    schema = str(data.get("schema") or "")
    prompt = build_prompt(question=str(data.get("question") or ""),
                          gold=str(data.get("gold") or ""), predicted=view.predicted,
                          gold_result=view.gold_result, predicted_result=view.predicted_result,
                          schema=schema, evidence=str(data.get("evidence") or ""),
                          language=_language_name(kind), template=template_for(spec))
    return ask_prompt(spec, prompt, {}, {}, ctx, session, shown_data=view.shown_data(schema))


def _language_name(kind: str) -> str:
    """What the judge's prompt calls the kind's language (its ``language_name``)."""
    return declared_text(kind, "language_name") or kind.upper()
