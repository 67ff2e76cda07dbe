"""Runs one case from prediction to verdict, and holds the session's shared resources.

Independent of pytest: the plugin hands it cases and a cache; the tests drive it directly.

Why one module of this size: one case's way from prediction to verdict (predict, score, judge,
thresholds, near misses, usage) is one sequence whose order is the behaviour; the steps that
have a life of their own (the pool, the kinds, the judge) live in their packages.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import threading
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .. import kinds as kind_registry
from .._util.secrets import Scrubber, quiet_library_logs
from ..errors import ConfigError, PredictionError, QueryEvalError, SourceDown, SourceUnavailable
from ..kinds._optin import relaxed_ex
from ..metricnames import REPEAT_METRICS
from ..model import MISSING, Case, Scored, Threshold
from ..predict import INLINE, Prediction, Predictor, fixed_source, make_predictor
from ..predict.pool import PredictionPool, RequestKey, concurrency_of
from ..rules.repeats import FIXED_NOTE, combine, signature
from ..rules.thresholds import evaluate as check_thresholds
from ..sources import pgreads
from ..sources.base import DataSource, declared
from .abstain import abstain_outcome, abstention, unanswered
from .clarify import clarification, clarify_outcome, with_prediction
from .goldcache import GoldCache
from .steps import CaseOutcome as CaseOutcome
from .steps import ask, failures_count_as_model, model_failure, record_usage
from .steps import near_miss as _near_miss

if TYPE_CHECKING:
    from ..baseline.evidence import Budget
    from ..judge.run import JudgeSession
    from ..model import Kind
    from ..neighbours.check import Settings
    from ..predict.base import AnswerLog
    from ..predict.cache import CacheSettings
    from ..predict.exchange import Exchange


#: How many values :meth:`Evaluator.cache_get` keeps from its last reads: the cases sent
#: ahead and the one running (a few gold results, not every one of a session).
RECENT_READS = 8


class _Cache(Protocol):
    """What the engine asks of pytest's ``config.cache`` (JSON values by key); a
    ``mkdir(name)`` of its own, when it has one, gives :attr:`Evaluator.cache_dir`."""

    def get(self, key: str, default: object) -> object: ...

    def set(self, key: str, value: object) -> None: ...


@dataclass
class Hooks:
    """Extension callbacks (the plugin wires them to ``pytest_queryeval_*`` hooks)."""

    predict: Callable[[Case], Any] | None = None
    #: Whether a ``pytest_queryeval_predict`` implementation is registered now (None: whenever
    #: ``predict`` is set). The plugin always wires ``predict``; without an implementation a
    #: predictions file is still the same text every run.
    predict_active: Callable[[], bool] | None = None
    datasource: Callable[[str, dict[str, Any]], Any] | None = None
    metrics: Callable[[Case, Any, Any], list[dict[str, float] | None]] | None = None


class Evaluator:
    """The :class:`~pytest_queryeval.model.Context` of one pytest session (or worker): what
    every case of the run shares (sources, predictors, the gold cache, the prediction pool).
    Named apart from ``pytest.Session``, which the plugin handles beside it."""

    #: A run scores predictions (the gold audit's context says True).
    auditing = False

    def __init__(self, *, cache: _Cache | None = None, no_cache: bool = False,
                 override: Predictor | None = None, override_inline: bool = False,
                 hooks: Hooks | None = None, search_paths: list[Path] | None = None,
                 concurrency: int | None = None, repeat: int | None = None,
                 neighbours: Settings | None = None, neighbour_base: Settings | None = None,
                 judge_refresh: bool = False, gold_cache: Path | None = None,
                 prediction_cache: CacheSettings | None = None) -> None:
        self._cache = cache
        self._start_lookups()
        #: ``--queryeval-gold-cache DIR``: gold results shared by every runner of the run.
        self.gold_cache = None if gold_cache is None else GoldCache(gold_cache)
        self.no_cache = no_cache
        self.override = override
        #: ``--queryeval-predictions-override-inline``: the override replaces inline ones too.
        self.override_inline = override_inline
        self.hooks = hooks or Hooks()
        self.search_paths = search_paths or []
        self.cases: list[Case] = []
        #: ``--queryeval-concurrency``: the bound of every live source (else its own).
        self.concurrency = concurrency
        #: Predictions requested ahead (:meth:`start_pool`); None until the run starts.
        self.pool: PredictionPool | None = None
        #: Whether :meth:`preflight` ran (once per session).
        self._preflown = False
        #: Requests made ahead that the case did not ask after all (:meth:`forget`).
        self._stale: set[RequestKey] = set()
        #: An xdist worker's share of the session (:mod:`..predict.exchange`), set when the
        #: run starts even when no prediction is live: the judge's calls and count use it.
        self.exchange: Exchange | None = None
        self._closed = False
        self.scrubber = Scrubber()
        #: The checksums of pinned tables computed this run, per source (:mod:`.drift`).
        self.pin_sums: dict[int, dict[str, str]] = {}
        #: ``--queryeval-repeat N``: predictions per case for this run, whatever cases say.
        self.repeat_override = repeat
        #: ``--queryeval-neighbours`` / ini (a :class:`..neighbours.check.Settings`, or None),
        #: and what a suite's ``neighbours:`` starts from.
        self.neighbours = neighbours
        self.neighbour_base = neighbour_base
        #: ``--queryeval-judge-refresh``: ask the judge again, whatever is pinned.
        self.judge_refresh = judge_refresh
        #: The prediction cache's run options (read by the live sources, :mod:`..predict.cache`).
        self.prediction_cache = prediction_cache
        self._judge: JudgeSession | None = None
        #: The run's journal of live answers, and the answers earlier attempts received
        #: (``--queryeval-json``, ``--queryeval-resume``: :mod:`..plugin.journal`); None: none.
        self.answer_log: AnswerLog | None = None
        #: Whether anything reads the records beyond the terminal (the plugin's
        #: ``Runner.records_read``): without a reader, a kind leaves out the labels only a
        #: record shows that cost an import (SQL's ``sql_hardness`` by sqlglot, issue 53).
        self.labels_read = True
        #: ``--queryeval-gating=evidence``: the adaptive repeats' budget
        #: (:class:`..baseline.evidence.Budget`); None: each case runs its ``repeat:``.
        self.budget: Budget | None = None
        quiet_library_logs()

    def _start_lookups(self) -> None:
        """The session's memos, empty: what cases look up again and again (each lookup was a
        file read or a JSON dump per case, issue 53), and the sources and shared objects a
        run opens once."""
        #: The last values :meth:`cache_get` read, by key (:data:`RECENT_READS` of them): a
        #: case's gold is looked up when its queries are sent ahead and again when it runs,
        #: and neighbouring cases share golds; each lookup was a JSON file read (issue 53).
        self._recent: OrderedDict[str, Any] = OrderedDict()
        self._recent_lock = threading.Lock()
        #: Predictions :meth:`fixed_prediction` looked up for cases not run yet, by case id.
        self._looked_up: OrderedDict[str, tuple[Case, Prediction]] = OrderedDict()
        self._sources: dict[str, DataSource] = {}
        #: The agent's enforced side of a planted copy, by the id of the source it wraps.
        self._enforced: dict[int, DataSource] = {}
        #: The source of a spec object already asked for, by its id (the spec kept, so an id
        #: reused by another object never matches): the key below is a JSON dump per call.
        self._by_spec: dict[int, tuple[Any, str | None, DataSource]] = {}
        #: The last spec that needed its key: every case holds its own copy of its
        #: datasource's spec, so the key was a JSON dump per case (issue 53); an equal copy
        #: (the same types too: ``1`` and ``true`` are other keys) has the same source.
        self._last_spec: tuple[Any, str | None, DataSource] | None = None
        #: :meth:`_predictor_key` by the id of a ``predictions:`` mapping (cases share the
        #: suite's), the mapping and base kept: a JSON dump per case, twice (issue 53).
        self._predictor_keys: dict[int, tuple[Any, Path, str]] = {}
        self._shared: dict[str, Any] = {}
        self._predictors: dict[str, Predictor] = {}
        #: Sources and shared objects are opened once, whichever thread asks first.
        self._open_lock = threading.RLock()

    # -- Context protocol ---------------------------------------------------------------
    @property
    def all_cases(self) -> list[Case]:
        return self.cases

    def source(self, case: Case) -> DataSource:
        spec = case.source_spec
        if spec is None:
            raise SourceUnavailable(f"case {case.id!r} names no datasource")
        if getattr(case.agent, "protected", ()):
            spec = _planted(case, spec)
        return self._source_of(case, spec)

    def agent_source(self, case: Case) -> DataSource:
        """The datasource the agent's tools and the replay of its trajectory read: the case's
        own, unless it protects data; then the agent's side of the planted copy (PostgreSQL:
        as the role made for the copy), with ``enforce:`` behind the engine's barriers
        (:mod:`..agents.enforce`)."""
        gold = self.source(case)
        if not getattr(case.agent, "protected", ()):
            return gold
        from ..agents.copies import planted_for

        planted = planted_for(case.source_spec or {}, case.agent.protected,
                              case.agent.canary_seed, case.agent.enforce,
                              case.agent.instructions)
        if planted.agent_spec is None:
            return gold
        agent = self._source_of(case, planted.agent_spec)
        if not case.agent.enforce:
            return agent
        with self._open_lock:
            wrapped = self._enforced.get(id(agent))
            if wrapped is None:
                from ..agents.enforce import enforced

                wrapped = self._enforced[id(agent)] = enforced(planted, agent, gold)
            return wrapped

    def _source_of(self, case: Case, spec: dict[str, Any]) -> DataSource:
        """The source of ``spec`` (opened once per equal spec)."""
        known = self._by_spec.get(id(spec))
        if known is not None and known[0] is spec and known[1] == case.datasource:
            return known[2]
        last = self._last_spec
        if last is not None and last[1] == case.datasource and _same_spec(last[0], spec):
            self._by_spec[id(spec)] = (spec, case.datasource, last[2])
            return last[2]
        name = case.datasource or "default"
        key = name + json.dumps(spec, sort_keys=True, default=str)
        with self._open_lock:  # the openai source describes datasources from pool threads
            if key not in self._sources:
                src = None
                if self.hooks.datasource is not None:
                    src = self.hooks.datasource(name, dict(spec))
                if src is None:
                    from ..sources import open_source

                    src = open_source(name, dict(spec))
                else:
                    src = declared(src, name, str(spec.get("type", "")))
                self._sources[key] = src
            self._by_spec[id(spec)] = (spec, case.datasource, self._sources[key])
            self._last_spec = (spec, case.datasource, self._sources[key])
            return self._sources[key]

    def _cache_key(self, namespace: str, key: str) -> str:
        return f"queryeval/{namespace}/{hashlib.sha256(key.encode()).hexdigest()[:40]}"

    def cache_get(self, namespace: str, key: str) -> Any | None:
        """pytest's cache first, then the shared gold directory (a hit is kept locally)."""
        if self.no_cache:
            return None
        local = self._cache_key(namespace, key)
        with self._recent_lock:  # the judge's look-ups may come from the pool's threads
            recent = self._recent.get(local)
            if recent is not None:
                self._recent.move_to_end(local)
                return recent
        try:
            hit = None if self._cache is None else self._cache.get(local, None)
        except RecursionError:  # a cache file nested past the JSON reader's recursion: a miss
            hit = None
        if hit is None and self.gold_cache is not None:
            hit = self.gold_cache.get(namespace, key)  # None for what it does not share
            if hit is not None and self._cache is not None:
                self._cache.set(local, hit)
        if hit is not None:  # its readers decode it, never change it
            with self._recent_lock:
                self._recent[local] = hit
                while len(self._recent) > RECENT_READS:
                    self._recent.popitem(last=False)
        return hit

    @property
    def caching(self) -> bool:
        """Whether :meth:`cache_set` keeps anything (off with ``--queryeval-no-cache``, or
        without pytest's cache and a shared gold directory): a value to cache need not be
        encoded otherwise."""
        return not self.no_cache and (self._cache is not None or self.gold_cache is not None)

    def cache_set(self, namespace: str, key: str, value: object) -> None:
        if self.no_cache:
            return
        with self._recent_lock:
            self._recent.pop(self._cache_key(namespace, key), None)
        if self._cache is not None:
            self._cache.set(self._cache_key(namespace, key), value)
        if self.gold_cache is not None:
            self.gold_cache.set(namespace, key, value)

    @property
    def pytest_cache(self) -> Any:
        """pytest's cache itself (the judge's last audit is kept there), None with no-cache."""
        return None if self.no_cache else self._cache

    @property
    def cache_dir(self) -> Path | None:
        """A directory under pytest's cache for file caches (embeddings); None without cache."""
        mkdir = getattr(self._cache, "mkdir", None)
        if self._cache is None or self.no_cache or mkdir is None:
            return None
        return Path(mkdir("queryeval"))

    def shared(self, key: str, factory: Callable[[], Any]) -> Any:
        with self._open_lock:
            if key not in self._shared:
                self._shared[key] = factory()
            return self._shared[key]

    def judge_session(self) -> JudgeSession:
        """The judge's pins, clients and call count (:class:`..judge.run.JudgeSession`), made
        when the first case is judged."""
        with self._open_lock:
            if self._judge is None:
                from ..judge.run import JudgeSession

                self._judge = JudgeSession(refresh=self.judge_refresh)
            return self._judge

    # -- predictions -------------------------------------------------------------------
    def repeats(self, case: Case) -> int:
        """How many predictions the case asks for: ``--queryeval-repeat``, else its
        ``repeat``; 1 when its prediction is written in the suite (inline or a predictions
        file: the same text every run, see :data:`repeats.FIXED_NOTE`)."""
        wanted = self.repeat_override or case.repeat
        if wanted > 1 and self._fixed_prediction(case):
            return 1
        return wanted

    def _fixed_prediction(self, case: Case) -> bool:
        inline = _inline_prediction(case) is not None
        if self.override is not None and (not inline or self.override_inline):
            return self.override.fixed
        if inline:
            return True
        if self.hooks.predict is not None and (self.hooks.predict_active is None
                                               or self.hooks.predict_active()):
            return False  # a plugin's predictor: may be live
        return fixed_source(case.prediction_source)

    def warm(self, case: Case, *, hook_active: bool = True) -> None:
        """Open ``case``'s datasource and let it start what it runs in (a sandbox worker)
        while the session still collects. Only where no ``pytest_queryeval_datasource`` hook
        may answer (``hook_active``: a hook is asked when a case first needs its source, as
        documented); any problem is left for the case to report when it runs."""
        from ..sources import source_type

        if hook_active or case.source_spec is None \
                or not source_type(case.source_spec.get("type")).warm:
            return  # a server or a graph is opened when a case first needs it, as before
        with contextlib.suppress(Exception):
            warm = getattr(self.source(case), "warm", None)
            if warm is not None:
                warm()

    def fixed_prediction(self, case: Case, *, hook_active: bool = True) -> Prediction | None:
        """What :meth:`predict` will return for ``case`` when the suite holds it (inline, or
        a predictions file that no ``pytest_queryeval_predict`` hook may answer before:
        ``hook_active``), so its queries may be run ahead (:mod:`..plugin.nodes`): asking twice
        gives the same and asks no one. None for any other, and for a case that predicts
        more than once or cannot predict (it reports why when it runs)."""
        if case.errors or case.skip or case.prediction_errors or self.repeats(case) != 1 \
                or case.turns is not None \
                or (self.pool is not None and (case.id, 0) in self.pool):
            return None
        inline = _inline_prediction(case) is not None
        if self.override is not None and (not inline or self.override_inline):
            fixed = self.override.fixed
        elif inline:
            fixed = True
        else:
            fixed = not hook_active and fixed_source(case.prediction_source)
        if not fixed:
            return None
        try:
            prediction = self._predict(case, 0)
        except QueryEvalError:
            return None
        # :meth:`predict` takes it when the case runs (it was looked up twice: issue 53)
        self._looked_up[case.id] = (case, prediction)
        while len(self._looked_up) > RECENT_READS:  # sent ahead for a case that never ran
            self._looked_up.popitem(last=False)
        return prediction

    def live_request(self, case: Case, *, hook_active: bool = False,
                     ) -> tuple[str, int, Callable[[], Prediction]] | None:
        """The request a live source (python, http, command...) would make for ``case``, as
        ``(source key, concurrency, call)``; None when the prediction is inline, comes from a
        file, may come from the ``pytest_queryeval_predict`` hook (``hook_active``: the hook
        runs in the main thread, when the case runs) or cannot be had (the case reports why
        when it runs). Follows the precedence of :meth:`predict`."""
        if case.errors or case.skip or case.turns is not None:  # asked turn by turn
            return None
        inline = _inline_prediction(case)
        spec: dict[str, Any] | None = None
        if self.override is not None and (inline is None or self.override_inline):
            predictor, key = self.override, "--queryeval-predictions"
        elif inline is not None or hook_active or case.prediction_errors:
            return None
        else:
            spec = case.prediction_source
            if spec is None or spec.get("source") == INLINE or fixed_source(spec):
                return None
            try:
                predictor = self._source_predictor(case, spec)
            except QueryEvalError:
                return None
            key = self._predictor_key(case, spec)
        if predictor.fixed:
            return None
        return key, concurrency_of(spec, self.concurrency), _bind(predictor, case)

    def requests(self, case: Case, *, hook_active: bool = False,
                 ) -> list[tuple[RequestKey, str, int, Callable[[], Prediction]]]:
        """The pool requests of ``case``'s live predictions, one per repeat (keys
        ``(id, 0..n-1)``, see :meth:`repeats`); [] when its prediction is not live."""
        request = self.live_request(case, hook_active=hook_active)
        if request is None:
            return []
        key, limit, call = request
        return [((case.id, r), key, limit, self._logged(call, case, r))
                for r in range(self.repeats(case))]

    def _logged(self, call: Callable[[], Prediction], case: Case, repeat: int,
                ) -> Callable[[], Prediction]:
        """``call``, a live request, answered from the journal of an earlier attempt when it
        holds the answer, and journaled when it is made (:attr:`answer_log`)."""
        log = self.answer_log
        if log is None:
            return call

        def logged() -> Prediction:
            got = log.get(case, repeat)
            if got is not None:
                return got
            prediction = call()
            log.put(case, repeat, prediction)
            return prediction

        return logged

    def preflight(self) -> dict[str, str]:
        """Check, once per session and all at once, that the server of each live source the
        run's requests were built for answers (:mod:`..predict.breaker`); a source whose
        server does not is stopped, so each of its cases errors at once with the one reason.
        ``{source: reason}`` of those."""
        if self._preflown:
            return {}
        self._preflown = True
        from ..predict.breaker import preflight_all

        checks = []
        for source in [*self._predictors.values(), self.override]:
            breaker = getattr(source, "breaker", None)  # a network source (LiveSource)
            check = getattr(source, "preflight", None)
            if breaker is not None and check is not None:
                checks.append((breaker, check))
        return preflight_all(checks)

    def forget(self, keys: Iterable[RequestKey]) -> None:
        """Requests made ahead for a Python case whose test then gave other fields: never
        taken (withdrawn when not started); the case asks its source when it runs."""
        keys = list(keys)
        self._stale.update(keys)
        if self.pool is not None:
            self.pool.cancel(keys)

    def start_pool(self, exchange: Exchange | None = None) -> PredictionPool:
        """The pool the run's live predictions are requested ahead in (each source bounded by
        its concurrency; shared with other xdist workers through ``exchange``). Made once,
        when the run starts; :meth:`predict` takes a case's prediction from it."""
        if self.pool is None:
            self.pool = PredictionPool(exchange)
        return self.pool

    def judge_pool(self) -> PredictionPool:
        """The pool a case's judge calls are requests of (started here when no prediction
        was live); a closed one once the session ended, so it takes no further call."""
        pool = self.start_pool(self.exchange)
        if self._closed:
            pool.close()
        return pool

    def predict(self, case: Case, repeat: int = 0) -> Prediction:
        """Inline > ``--queryeval-predictions`` > the predict hook > ``predictions:``.

        The command-line override stands for the predictions source (how CI compares model
        versions); a case that carries its own prediction keeps it unless
        ``override_inline`` is set. ``repeat`` is the run's index (0 to
        :meth:`repeats` - 1): each run is a request of its own, never a cached answer. A
        prediction requested ahead (:meth:`start_pool`) is waited for; any other is requested
        now.
        """
        if self.pool is not None and (case.id, repeat) in self.pool \
                and (case.id, repeat) not in self._stale:
            try:
                return self.pool.take((case.id, repeat))
            except KeyError:  # withdrawn (xdist moved the case) or the pool closed
                pass
        if repeat == 0 and self._looked_up:
            known = self._looked_up.pop(case.id, None)
            if known is not None and known[0] is case:
                return known[1]
        return self._predict(case, repeat)

    def _predict(self, case: Case, repeat: int) -> Prediction:
        """:meth:`predict`'s look-up, from the case, the override, the hook or the source."""
        inline = _inline_prediction(case)
        override = self.override
        if override is not None and (inline is None or self.override_inline):
            if override.fixed:
                return override.predict(case)
            return self._logged(lambda: override.predict(case), case, repeat)()
        if inline is not None:
            return inline
        got = self.hook_or_source(case, case, "it 'predicted:'")
        if isinstance(got, Prediction):
            return got
        if got.fixed:
            return ask(got, case)
        source = got
        return self._logged(lambda: ask(source, case), case, repeat)()

    def hook_or_source(self, case: Case, asked: Case, give: str) -> Prediction | Predictor:
        """The ``pytest_queryeval_predict`` hook's answer for ``asked`` (the case, or one turn
        of a conversation), else the predictor of ``case``'s ``predictions:`` source; a case
        with neither is a PredictionError that says what to ``give``."""
        if self.hooks.predict is not None:
            start = time.perf_counter()
            value = self.hooks.predict(asked)
            if value is not None:
                return Prediction(value, time.perf_counter() - start)
        if case.prediction_errors:
            raise PredictionError("; ".join(case.prediction_errors))
        spec = case.prediction_source
        if spec is None or spec.get("source") == INLINE:
            raise PredictionError(f"no prediction for case {case.id!r}: give {give}, "
                                  "configure 'predictions:' in queryeval.yaml or pass "
                                  "--queryeval-predictions")
        return self._source_predictor(case, spec)

    def _predictor_key(self, case: Case, spec: dict[str, Any]) -> str:
        base = case.prediction_base or case.file.parent
        known = self._predictor_keys.get(id(spec))
        if known is not None and known[0] is spec and known[1] == base:
            return known[2]
        key = json.dumps(spec, sort_keys=True, default=str) + str(base)
        self._predictor_keys[id(spec)] = (spec, base, key)
        return key

    def _source_predictor(self, case: Case, spec: dict[str, Any]) -> Predictor:
        base = case.prediction_base or case.file.parent
        key = self._predictor_key(case, spec)
        if key not in self._predictors:
            self._predictors[key] = make_predictor(spec, base, self.search_paths, context=self)
        return self._predictors[key]

    def unmatched_prediction_ids(self) -> list[tuple[Path, list[str]]]:
        """Ids of fixed sources (predictions files) that match no collected case, per file
        (the first the source reads: :meth:`.Predictor.paths`).

        A typo or a renamed case would otherwise go unnoticed: its prediction is silently
        unused. Checked against the file's users: every case for ``--queryeval-predictions``,
        the cases whose ``predictions:`` names the file otherwise; an id of a collected case
        answered by another source is not listed (the file may answer it when it is given
        as ``--queryeval-predictions``).
        """
        users: dict[Path, tuple[Predictor, set[str]]] = {}
        if self.override is not None:
            if self.override.fixed and self.override.paths():
                users[self.override.paths()[0]] = (self.override, {c.id for c in self.cases})
        else:
            for case in self.cases:
                spec = case.prediction_source
                if not spec or not fixed_source(spec):
                    continue
                try:
                    predictor = self._source_predictor(case, spec)
                except QueryEvalError:
                    continue  # each case reports it
                if predictor.fixed and predictor.paths():
                    users.setdefault(predictor.paths()[0], (predictor, set()))[1].update(
                        i for i in (case.id, case.fanned_from) if i is not None)
        # an id naming a collected case that takes its answers from another source (a folder
        # of agent cases under a live one) is no typo: the message says "match no case"
        collected = {i for c in self.cases for i in (c.id, c.fanned_from) if i is not None}
        out: list[tuple[Path, list[str]]] = []
        for path, (predictor, ids) in users.items():
            extra = [i for i in predictor.ids() if i not in ids and i not in collected]
            if extra:
                out.append((path, extra))
        return out

    def close(self, drain: bool = False) -> None:
        """``drain``: the run ended normally; requests other xdist workers wait for finish.
        The judge's new verdicts are written to their pin files either way (they were paid
        for)."""
        self._closed = True
        if self._judge is not None:
            self._judge.write()
        if self.pool is not None:
            if drain:
                self.pool.finish()
            else:
                self.pool.close()
        for src in self._sources.values():
            with contextlib.suppress(Exception):  # closing must never hide the session's result
                src.close()
        self._sources.clear()
        self._by_spec.clear()
        self._last_spec = None  # the next ask opens the source again (a changed file is seen)


def _bind(predictor: Predictor, case: Case) -> Callable[[], Prediction]:
    def call() -> Prediction:
        return ask(predictor, case)

    return call


def _inline_prediction(case: Case) -> Prediction | None:
    """The prediction written in the case file, or None when it must come from a source."""
    if case.predicted is not MISSING:
        return Prediction(case.predicted)
    if case.predicted_result is not None:  # a recorded prediction is an inline one
        return Prediction(MISSING)
    if (case.turns is not None or kind_registry.declares(case.kind, "conversation")) \
            and _has_turn_predictions(case):
        return Prediction(MISSING)
    return None


def _has_turn_predictions(case: Case) -> bool:
    turns = case.raw.get("conversation")
    return isinstance(turns, list) and any(isinstance(t, dict) and "predicted" in t for t in turns)


def run_case(case: Case, evaluator: Evaluator) -> CaseOutcome:
    """Predict, evaluate and judge one case (each of its repeats). Never raises for a problem
    of the case."""
    evaluator.scrubber.add(case.secrets)
    if case.errors:
        return CaseOutcome("error", error="\n".join(case.errors))
    try:
        kind = kind_registry.get_kind(case.kind)
    except (KeyError, ImportError) as exc:
        return CaseOutcome("error", error=f"kind {case.kind!r} is not available: {exc}")
    runs = evaluator.repeats(case)
    if case.turns is not None:  # a conversation: each scored turn is asked and scored
        from .conversation import run_conversation

        if runs == 1:
            return run_conversation(case, evaluator, kind)
        return combine(case, [run_conversation(case, evaluator, kind) for _ in range(runs)])
    budget = evaluator.budget
    if runs == 1 and budget is not None and not evaluator._fixed_prediction(case):
        return _adaptive(case, evaluator, kind, budget)
    if runs == 1:
        outcome = _run_once(case, evaluator, kind, 0)
        if (evaluator.repeat_override or case.repeat) > 1:
            outcome.details["repeat"] = {"n": 1, "note": FIXED_NOTE}
        return outcome
    return combine(case, [_run_once(case, evaluator, kind, r) for r in range(runs)])


def _adaptive(case: Case, evaluator: Evaluator, kind: Kind, budget: Budget) -> CaseOutcome:
    """The case asked once, then again while the evidence gate's budget says its runs do
    not settle it (:meth:`..baseline.evidence.Budget.again`); its runs combined as repeats
    are (``details.repeat.adaptive``)."""
    runs = [_run_once(case, evaluator, kind, 0)]
    statuses = [runs[0].status]
    while budget.again(case.id, statuses):
        runs.append(_run_once(case, evaluator, kind, len(runs)))
        statuses.append(runs[-1].status)
    budget.finished(case.id, statuses)
    if len(runs) == 1:
        return runs[0]
    outcome = combine(case, runs)
    outcome.details["repeat"]["adaptive"] = True
    return outcome


def _run_once(case: Case, evaluator: Evaluator, kind: Kind, repeat: int) -> CaseOutcome:
    """One prediction of the case, scored and judged on its own."""
    try:
        prediction = evaluator.predict(case, repeat)
    except QueryEvalError as exc:
        if failures_count_as_model(case, exc):
            return model_failure(case, exc)
        outcome = CaseOutcome("error", error=exc.reason(), signature="error:" + exc.reason())
        if isinstance(exc, SourceDown):  # what the source had tried when it stopped asking
            outcome.details["source_down"] = {"connection_attempts": exc.attempts}
        return outcome
    except Exception as exc:
        error = _internal("predictor", exc)
        return CaseOutcome("error", error=error, signature="error:" + error)
    return score_prediction(case, evaluator, kind, prediction)


def _located(case: Case, exc: QueryEvalError) -> str:
    """``exc``'s reason; a source that could not be used also names the ``queryeval.yaml``
    line that defined it (opening is lazy, so a missing file is found by the first case)."""
    reason = exc.reason()
    spec = case.source_spec
    if isinstance(exc, SourceUnavailable) and spec is not None:
        from ..sources.defined import defined_at

        name = case.datasource or "default"
        found = defined_at(name, spec)
        where = None if found is None else f"{found[0]}:{found[1]}"
        if where is not None and where not in reason:
            return f"{reason} (datasources.{name} at {where})"
    return reason


def score_prediction(case: Case, evaluator: Evaluator, kind: Kind,
                     prediction: Prediction) -> CaseOutcome:
    """One prediction of the case scored and judged: its kind's metrics, the hooks' metrics,
    the judge, the thresholds and the near misses (each turn of a conversation too:
    :mod:`.conversation`). An agent case's prediction is an envelope: its final query is
    scored so, and the agent metrics are added (:mod:`..agents.case`)."""
    if case.agent is not None and prediction.value is not MISSING:
        import dataclasses

        from ..agents.case import envelope_of

        env = envelope_of(prediction.value, prediction.details)
        prediction = dataclasses.replace(prediction, value=env.predicted)
        return _with_agent(case, evaluator, env,
                           _score_prediction(case, evaluator, kind, prediction, env))
    return _score_prediction(case, evaluator, kind, prediction, None)


def _with_agent(case: Case, evaluator: Evaluator, env: Any, outcome: CaseOutcome) -> CaseOutcome:
    """The agent metrics of an outcome the kind did not score (an abstention, a question
    back, an error): its counts still stand, and its thresholds on them still judge."""
    if "agent" in outcome.details:
        return outcome
    from ..agents.case import agent_scores, failed_agent_thresholds, uncounted

    metrics, details = agent_scores(case, evaluator, env, None)
    outcome.metrics.update(metrics)
    outcome.details["agent"] = details
    why = uncounted(details)
    if why is not None:  # a count that could not be taken is no count of 0
        outcome.status, outcome.error, outcome.signature = "error", why, "error:" + why
        return outcome
    failed = failed_agent_thresholds(case, metrics)
    if failed:
        outcome.failed.extend(failed)
        if outcome.status == "passed":
            outcome.status = "failed"
    return outcome


def _score_prediction(case: Case, evaluator: Evaluator, kind: Kind, prediction: Prediction,
                      env: Any) -> CaseOutcome:
    predicted = None if prediction.value is MISSING else prediction.value
    unanswered_outcome = _abstained_or_asked(case, evaluator, kind, prediction, predicted)
    if unanswered_outcome is not None:
        return unanswered_outcome
    try:
        with pgreads.counted() if env is not None else contextlib.nullcontext():
            scored = kind.evaluate(case, prediction.value, evaluator)  # an agent's: counted
    except QueryEvalError as exc:
        return CaseOutcome("error", predicted=predicted, error=_located(case, exc),
                           details=dict(exc.details or {}))
    except Exception as exc:
        return CaseOutcome("error", predicted=predicted, error=_internal(f"kind {case.kind}", exc))
    if scored.relaxed is not None:
        # computed once for all its readers: relaxed_ex, the judge's near-miss facts and the
        # failure's near-miss list (each a full table comparison per relaxation)
        scored.relaxed = functools.cache(scored.relaxed)
    metrics = dict(scored.metrics)
    if prediction.seconds is not None:
        metrics["prediction_seconds"] = prediction.seconds
    details = dict(scored.details)
    if prediction.details:
        details["prediction"] = prediction.details
    if prediction.usage:
        record_usage(case, prediction, metrics, details)
    hook_error = _add_hook_metrics(case, evaluator, prediction, scored, metrics)
    if hook_error is not None:
        return CaseOutcome("error", metrics=metrics, predicted=predicted, error=hook_error)
    if env is not None:
        from ..agents.case import agent_scores, uncounted

        rows = scored.compared[3].rows if scored.compared is not None else None
        final = scored.compared[2] if scored.compared is not None else None
        read = scored.compared[3].meta.get("read", ()) if scored.compared is not None \
            else scored.read
        agent_metrics, details["agent"] = agent_scores(
            case, evaluator, env, rows, final, read,
            failure=None if final is not None else scored.reason)
        metrics.update(agent_metrics)
        why = uncounted(details["agent"])
        if why is not None:  # a count that could not be taken is no count of 0
            return CaseOutcome("error", metrics=metrics, predicted=predicted, error=why,
                               details=details, signature="error:" + why)
    relaxed = scored.relaxed
    value = relaxed_ex(case, metrics, relaxed, details)
    if value is not None:
        metrics["relaxed_ex"] = value
    judge_error = _judge(case, scored, metrics, details, evaluator)
    return _judged_outcome(case, evaluator, prediction, predicted, scored, relaxed, metrics,
                           details, judge_error)


def _abstained_or_asked(case: Case, evaluator: Evaluator, kind: Kind, prediction: Prediction,
                        predicted: Any) -> CaseOutcome | None:
    """The outcome of a prediction that abstains or asks a question back, or of a case that
    expects one (:mod:`.abstain`, :mod:`.clarify`): the kind never scores those. None: an
    answer, for the kind."""
    how = None if prediction.value is MISSING else abstention(
        prediction.value, case.abstain_patterns, case.abstention, case.kind)
    asked = None if prediction.value is MISSING else clarification(prediction.value,
                                                                   case.clarify_patterns)
    if asked is not None or case.expect == "clarify":
        empty = unanswered(case, kind, evaluator) if case.expect == "answer" else None
        return with_prediction(case, prediction,
                               clarify_outcome(case, predicted, asked, how, evaluator, empty))
    if how is not None or case.expect == "abstain":
        empty = unanswered(case, kind, evaluator) if case.expect == "answer" else None
        return with_prediction(case, prediction, abstain_outcome(case, predicted, how, empty))
    return None


def _add_hook_metrics(case: Case, evaluator: Evaluator, prediction: Prediction, scored: Scored,
                      metrics: dict[str, float]) -> str | None:
    """The ``pytest_queryeval_metrics`` hooks' metrics added to ``metrics``; a hook that
    raises makes the case an error (its message returned), whatever it had scored."""
    if evaluator.hooks.metrics is None:
        return None
    try:
        for extra in evaluator.hooks.metrics(case, prediction.value, scored):
            if extra:
                metrics.update({str(k): float(v) for k, v in extra.items()})
    except Exception as exc:
        return _internal("pytest_queryeval_metrics hook", exc)
    return None


def _judge(case: Case, scored: Scored, metrics: dict[str, float], details: dict[str, Any],
           evaluator: Evaluator) -> str | None:
    """``judge_ex`` of a case with a judge (:mod:`..judge.run`); the judge's error, or None.
    The judge never breaks the case's own verdict: its own failure is an error message too."""
    if case.judge is None:
        return None
    from ..judge.run import judge_case

    try:
        return judge_case(case, scored, metrics, details, evaluator, evaluator.judge_session())
    except Exception as exc:
        judge_error = _internal("judge", exc)
        details.setdefault("judge", {})["error"] = judge_error
        return judge_error


def _judged_outcome(case: Case, evaluator: Evaluator, prediction: Prediction, predicted: Any,
                    scored: Scored, relaxed: Callable[..., Any] | None,
                    metrics: dict[str, float], details: dict[str, Any],
                    judge_error: str | None) -> CaseOutcome:
    """The thresholds' verdict on the metrics, the near misses of a failure and the reason
    shown; an error where the judge was to decide and could not (never a silent 0)."""
    # consistency, pass_at_k, pass_all_k judge the runs together (repeats.combine)
    failed = check_thresholds({m: t for m, t in case.thresholds.items()
                               if m not in REPEAT_METRICS}, metrics)
    status = "failed" if scored.reason or failed else "passed"
    diff = list(scored.diff)
    if failed and not scored.reason and relaxed is not None:
        _near_miss(case, metrics, relaxed, details, diff)
    # its readers are done: what it holds (both tables, the case's comparison, the cached
    # values) is let go with the case, even where something keeps ``scored`` (a metrics hook)
    scored.relaxed = None
    reason = scored.reason
    if reason and prediction.hint:
        # an empty text that stands for "no answer" (an agent's budget ran out) says why it
        # is empty, not that an empty statement was refused
        empty = isinstance(prediction.value, str) and not prediction.value.strip()
        reason = prediction.hint if empty else f"{reason} ({prediction.hint})"
    unmeasured = _unmeasured_latency(case, evaluator, failed)
    if unmeasured:
        reason = f"{reason}; {unmeasured}" if reason else unmeasured
    refused = (details.get("judge") or {}).get("refused") if case.judge is not None else None
    if judge_error is None and refused and "judge_ex" in case.thresholds:
        judge_error = refused  # min_kappa: a judge measured below it decides nothing
    if judge_error is not None and "judge_ex" in case.thresholds:
        return CaseOutcome("error", metrics, dict(scored.labels), failed, predicted, reason,
                           judge_error, diff, details,
                           signature(prediction.value, scored.signature, scored.reason))
    return CaseOutcome(status, metrics, dict(scored.labels), failed, predicted, reason,
                       None, diff, details,
                       signature(prediction.value, scored.signature, scored.reason))


def _unmeasured_latency(case: Case, evaluator: Evaluator,
                        failed: list[tuple[Threshold, float | None]]) -> str | None:
    """Why a ``prediction_seconds`` threshold failed on no value: a bare ``-`` and FAIL told
    the user nothing. An inline prediction was never requested, so it has no latency (a
    threshold written beside it is refused when the file is read; one inherited from the
    suite, the ini or the command line reaches the case); a predictions file may give none."""
    if not any(t.metric == "prediction_seconds" and value is None for t, value in failed):
        return None
    overridden = evaluator.override is not None and evaluator.override_inline
    if _inline_prediction(case) is not None and not overridden:
        return ("prediction_seconds not measured: the prediction is inline (written in the "
                "case file), so it has no latency to bound")
    return ("prediction_seconds not measured: the predictions source recorded no latency for "
            "this case (a predictions file gives it as prediction_seconds or latency)")


def _internal(where: str, exc: Exception) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    last = f" ({Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    return f"internal error in {where}: {type(exc).__name__}: {exc}{last}"


def _planted(case: Case, spec: dict[str, Any]) -> dict[str, Any]:
    """An agent case with ``protected:`` data runs on a planted copy of its datasource: the
    spec of that copy as its gold reads it (its tools and the replay of its trajectory read
    the agent's side of the same copy, :meth:`Evaluator.agent_source`). A target that cannot
    be planted is the case's error, located at its line."""
    from ..agents.canaries import PlantError
    from ..agents.copies import planted_spec

    try:
        return planted_spec(spec, getattr(case.agent, "protected", ()),
                            getattr(case.agent, "canary_seed", 0),
                            getattr(case.agent, "enforce", False),
                            getattr(case.agent, "instructions", ()))
    except PlantError as exc:
        raise ConfigError(str(exc), file=str(case.file), line=case.line,
                          key="agent.protected") from None


def _same_spec(a: object, b: object) -> bool:
    """Equal, and of the same types throughout (``1 == True == 1.0`` are other JSON keys)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return a.keys() == b.keys() and all(_same_spec(v, b[k]) for k, v in a.items())
    if isinstance(a, list | tuple):
        assert isinstance(b, list | tuple)
        return len(a) == len(b) and all(_same_spec(x, y) for x, y in zip(a, b, strict=True))
    return a == b
