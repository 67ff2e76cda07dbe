"""The case model and the contracts between the engine and the kind evaluators.

Kept free of pytest so every kind, metric and source can be tested (and reused) without it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NotRequired, Protocol, TypedDict, TypeVar

from .kindregistry import declares
from .results import ResultTable

#: The difficulty of a case that has none (not given, and its kind rates none): spelled the
#: same in the JSON records and aggregates, the terminal, HTML, Markdown and Excel reports.
NO_DIFFICULTY = "unknown"

if TYPE_CHECKING:
    from .judge.config import JudgeSpec
    from .kinds.goldchecks.findings import AuditResult
    from .sources.base import DataSource

#: What a session-wide shared object is (:meth:`Context.shared`).
T = TypeVar("T")

#: Marker for "no inline prediction" (``None`` is a legitimate prediction value).
MISSING: Any = type("Missing", (), {"__repr__": lambda self: "MISSING"})()


@dataclass(frozen=True, slots=True)
class Threshold:
    """A bound on one metric: the case passes when ``min <= value <= max``."""

    metric: str
    min: float | None = None
    max: float | None = None

    def ok(self, value: float | None) -> bool:
        if value is None or value != value:  # missing or NaN never passes a bound
            return False
        if self.min is not None and value < self.min:
            return False
        return not (self.max is not None and value > self.max)

    def describe(self) -> str:
        parts = []
        if self.min is not None:
            parts.append(f">= {self.min:g}")
        if self.max is not None:
            parts.append(f"<= {self.max:g}")
        return " and ".join(parts)

    def to_json(self) -> dict[str, float]:
        out: dict[str, float] = {}
        if self.min is not None:
            out["min"] = self.min
        if self.max is not None:
            out["max"] = self.max
        return out


@dataclass(slots=True)
class Turn:
    """One user turn of a sql/sparql/json ``conversation:`` as read (:mod:`.suite.conversation`).
    ``number`` is its place among the user turns (1-based); a turn with a gold is scored."""

    number: int
    #: Its index in the ``conversation:`` list (for located messages).
    index: int
    question: str
    #: The turn's gold (as the kind reads ``gold:``), its recorded result, its inline prediction.
    gold: Any = None
    gold_result: ResultTable | None = None
    predicted: Any = MISSING
    #: ``expect:`` of the turn: answer (the default), abstain or clarify.
    expect: str = "answer"
    #: The turn's thresholds (the case's, then the turn's own); empty for a history-only turn.
    thresholds: dict[str, Threshold] = field(default_factory=dict)
    #: The scripted assistant turns that follow it, as written (sent as history).
    replies: list[str] = field(default_factory=list)
    #: The turn mapping as written (plain data): per-turn keys other readers add.
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def scored(self) -> bool:
        return self.gold is not None or self.gold_result is not None or self.expect != "answer"


@dataclass(slots=True)
class Case:
    """One evaluation case, fully resolved (file defaults and suite config merged in).

    Slotted: every collected case lives to the end of the session, and an instance
    ``__dict__`` of its 39 fields was 1.6 KB of each case's memory."""

    id: str
    kind: str
    file: Path
    line: int  # 1-based line of the case in its YAML file
    question: str | None = None
    #: Hints given to the system under test with the question, as the benchmark ships them:
    #: BIRD's ``evidence`` and LiveSQLBench's ``external_knowledge`` (a list in YAML is joined
    #: with newlines). None when the case has none. Predictors receive them in
    #: :meth:`json_input`; prompt templates read them from here.
    evidence: str | None = None
    external_knowledge: str | None = None
    gold: Any = None  # str | list[str] (alternatives) | dict (json) | None (sdmx: see conversation)
    predicted: Any = MISSING  # inline prediction, or MISSING
    difficulty: str | None = None
    tags: list[str] = field(default_factory=list)
    #: ``severity:`` (critical | high | medium | low); critical cases fail the baseline gate on
    #: any pass → fail flip
    severity: str | None = None
    #: ``reviewed: false``: a case mined from production traces (``queryeval mine``) that no
    #: person has confirmed yet; its gold is an observed query, not an accepted one.
    reviewed: bool = True
    #: ``pin:``: a fingerprint of the data the case's queries read when it was mined
    #: (``{tables: {name: rows:N:digest}}`` or ``{file: sha256:...}``); a run that finds the
    #: data changed reports the case ``drifted`` instead of scoring it. None: not pinned.
    pin: dict[str, Any] | None = None
    thresholds: dict[str, Threshold] = field(default_factory=dict)
    #: The metrics of ``thresholds`` that are the kind's default (no threshold in effect
    #: judged the answer): the summary counts them apart.
    default_thresholds: list[str] = field(default_factory=list)
    xfail: str | None = None
    skip: str | None = None
    datasource: str | None = None
    #: The resolved datasource spec (``type``, paths made absolute, ``${VAR}`` expanded).
    source_spec: dict[str, Any] | None = None
    gold_result: ResultTable | None = None
    predicted_result: ResultTable | None = None
    #: Gold result CSV files (``gold_result: path`` or a list of paths, SQL cases), read as
    #: Spider 2.0's evaluator reads them; each is a gold alternative.
    gold_result_files: list[ResultTable] | None = None
    #: The files were given as a list: Spider 2.0's several-gold-files mode (``_a``, ``_b``...).
    gold_result_multi: bool = False
    #: Kind-specific options (``compare``, ``efficiency``, ``alpha``, ``match_on``, ``db_id``...).
    options: dict[str, Any] = field(default_factory=dict)
    #: The metrics a suite gate in effect for the case bounds from above (``gates:
    #: {tool_calls: {mean_max: 1}}``): an agent case's counts the record's shape lowered are
    #: judged on what it holds there too (:func:`~.agents.scoring.gated_counts`).
    gated_above: frozenset[str] = frozenset()
    #: The case mapping as written (plain data), for kinds that read more (SDMX conversations).
    #: An inline recorded result (``gold_result`` / ``predicted_result``) is left out once it
    #: is read into its table: :attr:`raw_encoded` keeps its JSON text instead.
    raw: dict[str, Any] = field(default_factory=dict)
    #: The keys of the case mapping that :attr:`raw` leaves out, each with the JSON text
    #: :func:`~pytest_queryeval.plugin.resume.identity` digests (``json.dumps(value, sort_keys=True,
    #: default=str, ensure_ascii=False)``): a recorded table as text is a fraction of its lists.
    raw_encoded: tuple[tuple[str, str], ...] = ()
    #: Located validation errors; a case with errors fails with them and is never scored.
    errors: list[str] = field(default_factory=list)
    #: Secrets to scrub from every report (expanded ``${VAR}`` values, URL passwords).
    secrets: frozenset[str] = frozenset()
    #: The ``predictions:`` source that applies to this case (suite config), its base
    #: directory, and any located problem with it (which fails only cases that need it).
    prediction_source: dict[str, Any] | None = None
    prediction_base: Path | None = None
    prediction_errors: list[str] = field(default_factory=list)
    #: ``repeat:`` (predictions asked per case, for non-deterministic models) and
    #: ``repeat_rule:`` (how the runs' outcomes make the case's: all, majority or any).
    repeat: int = 1
    repeat_rule: str = "all"
    #: The suite's ``pricing:`` (model -> :class:`~pytest_queryeval.predict.pricing.Price`) and its
    #: ``model:`` label, the price looked up when the source does not name its model.
    pricing: dict[str, Any] = field(default_factory=dict)
    model_label: str | None = None
    #: The suite's ``neighbours:`` (see :func:`~pytest_queryeval.neighbours.check.settings_for`).
    neighbours: dict[str, Any] | None = None
    #: A case written with ``datasource:`` a list is one case per source: its id is
    #: ``<id>[<source>]``, ``fanned_from`` the id as written (predictions files may use it) and
    #: ``dialect`` the source's SQL dialect (a marker, and a breakdown of the reports). A case
    #: whose ``gold:`` is keyed by dialect has its ``dialect`` too.
    fanned_from: str | None = None
    dialect: str | None = None
    #: The model of a case fanned out per model (``predictions:`` naming several, see
    #: :mod:`.suite.models`): its id is ``<id>[<model>]`` and its record says ``model``.
    model: str | None = None
    #: Every source of a fanned-out case (name -> resolved spec): the gold audit runs a
    #: transpiled gold's original on the source of its dialect.
    fanned_sources: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: ``judge:`` resolved (:class:`~pytest_queryeval.judge.config.JudgeSpec`); None: no judge.
    judge: JudgeSpec | None = None
    #: ``expect:``: ``answer`` (the default), ``abstain`` (no answer is right: the question
    #: cannot be answered from the data; see :mod:`.engine.abstain`) or ``clarify`` (a
    #: question back is right).
    expect: str = "answer"
    #: The suite's ``abstain_patterns:``: regular expressions whose match makes a text
    #: prediction a refusal.
    abstain_patterns: tuple[str, ...] = ()
    #: The suite's ``abstention:`` rule: ``default``, or ``ehrsql`` (the EHRSQL reference's
    #: ``'null'`` text abstains too; see :mod:`.engine.abstain`).
    abstention: str = "default"
    #: The suite's ``clarify_patterns:``: regular expressions whose match makes a text
    #: prediction a question back; ``clarification:`` and ``reply:`` of an ``expect: clarify``
    #: case (see :mod:`.engine.clarify`).
    clarify_patterns: tuple[str, ...] = ()
    clarification: dict[str, object] | None = None
    reply: str | None = None
    # -- conversations of sql/sparql/json cases (issue 42, docs/conversations.md) --------
    #: The scored user turns of a ``conversation:`` (:mod:`.suite.conversation`); None for a
    #: one-question case (and for SDMX conversations, which keep their own format).
    turns: list[Turn] | None = None
    #: ``history:``: what the assistant said in earlier turns, ``gold`` or ``predicted``.
    history_mode: str = "gold"
    #: ``conversation_scoring:``: ``all`` (a missing turn scores 0) or ``tsse`` (dropped, as the
    #: Spider test-suite evaluator's ``zip`` does; :mod:`.metrics.tsse`).
    conversation_scoring: str = "all"
    #: On the case of one turn (:func:`.rules.conversation.turn_case`): its number and the
    #: earlier turns as ``{"role", "content"}`` messages, sent to every source.
    turn: int | None = None
    history: list[dict[str, str]] | None = None
    #: ``agent:`` (:class:`.agents.spec.AgentSpec`): the prediction is read as an envelope
    #: with a trajectory and scored with the agent metrics; None for any other case.
    agent: Any = None

    @property
    def golds(self) -> list[Any]:
        """Acceptable gold answers (a list in YAML means "best score wins")."""
        if isinstance(self.gold, list) and declares(self.kind, "gold_alternatives"):
            return list(self.gold)
        return [self.gold]

    def json_input(self) -> dict[str, Any]:
        """What a predictor receives (python/http/command): plain, JSON-safe data."""
        out: dict[str, Any] = {"id": self.id, "kind": self.kind, "question": self.question}
        for key in ("datasource", "difficulty", "tags"):
            out[key] = getattr(self, key)
        if "db_id" in self.options:
            out["db_id"] = self.options["db_id"]
        for key in ("evidence", "external_knowledge"):  # only when the case has them
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.agent is not None:
            out["agent"] = True
        if self.turn is not None:
            out["turn"] = self.turn
            out["history"] = [dict(m) for m in self.history or []]
        if declares(self.kind, "conversation"):
            out["conversation"] = [
                {"role": t.get("role"), "content": t.get("content")}
                for t in self.raw.get("conversation", [])
                if isinstance(t, dict)
            ]
        return out


@dataclass
class Scored:
    """What a kind evaluator returns for one case."""

    metrics: dict[str, float]
    #: Categorical labels (``hardness``) shown in reports.
    labels: dict[str, str] = field(default_factory=dict)
    #: Human-readable diff lines for the failure report (missing/extra rows, SQL components...).
    diff: list[str] = field(default_factory=list)
    #: JSON-safe extras for reports (SDMX per-dimension detail, column mapping, row counts).
    details: dict[str, Any] = field(default_factory=dict)
    #: Why the prediction could not be scored normally ("refused: ...", "timeout: ...",
    #: "query failed: ...", "invalid JSON: ..."). The metrics then hold the failure scores.
    reason: str | None = None
    #: What the prediction produced, comparable across repeats of one case (the consistency
    #: metric): a digest of the predicted result; None lets the engine use the query text.
    signature: str | None = None
    #: The result-table metrics under each near-miss relaxation (:mod:`.rules.nearmiss`), computed
    #: by the engine only when the case fails; None for kinds without result tables.
    #: ``relaxed(names=None)``: the table metrics (``names`` of them; None: all) under each
    #: near-miss relaxation (:func:`..nearmiss.relaxed_metrics`), computed when first asked.
    relaxed: Callable[..., dict[str, dict[str, float]]] | None = None
    #: What a judge is shown (:mod:`.judge`): the gold query that scored and both executed
    #: results, as ``(gold text, gold table, predicted text, predicted table)``; None when
    #: either query did not execute (nothing for a judge to compare).
    compared: tuple[str, ResultTable, str, ResultTable] | None = None
    #: The tables the engine counted as the prediction ran, where it counts them
    #: (PostgreSQL: :mod:`.sources.pgreads`), when it failed too: an agent case's
    #: ``forbidden_tables`` counts them (a routine's error carried a table's rows).
    read: tuple[str, ...] = ()


class Context(Protocol):
    """Session-wide resources a kind evaluator may use; shared by all cases of a session."""

    #: ``--queryeval-neighbours`` or its ini value (a :class:`~.neighbours.check.Settings`), or
    #: None: each suite's ``neighbours:`` decides whether SQL cases search for counterexamples.
    neighbours: Any
    #: What a suite's ``neighbours:`` starts from (the ini seconds and seed, the report dir).
    neighbour_base: Any
    #: True in the gold audit's context (:mod:`.audit`): a gold is scored against itself, so
    #: no counterexample is searched for it.
    auditing: bool

    def source(self, case: Case) -> DataSource:
        """The (lazily opened, session-shared) data source named by the case."""
        ...

    def cache_get(self, namespace: str, key: str) -> Any | None:
        """A JSON value cached across sessions (pytest cache dir), or None (also with no-cache)."""
        ...

    def cache_set(self, namespace: str, key: str, value: object) -> None: ...

    @property
    def cache_dir(self) -> Path | None:
        """A directory for file caches under pytest's cache dir; None with no-cache."""
        ...

    def shared(self, key: str, factory: Callable[[], T]) -> T:
        """A session-wide object built once by ``factory()`` (a loaded model, a parsed schema)."""
        ...

    @property
    def all_cases(self) -> list[Case]:
        """Every collected case of this session (for batching: encode all JSON strings once)."""
        ...


class Kind(Protocol):
    """One query language. Implementations live in :mod:`pytest_queryeval.kinds`.

    Optional: a class attribute ``default_thresholds`` (``{metric: bound}`` as in YAML) gates
    the cases that no threshold in effect judges; a kind without one makes them errors
    (:func:`~pytest_queryeval.rules.thresholds.apply_default`).
    """

    name: ClassVar[str]
    #: Case keys accepted by this kind beyond the common ones (see :mod:`pytest_queryeval.suite.cases`).
    option_keys: ClassVar[frozenset[str]]

    def is_metric(self, name: str) -> bool:
        """Whether ``name`` is a metric this kind can produce (validates ``thresholds``)."""
        ...

    def validate(self, case: Case) -> Iterable[tuple[str, str]]:
        """Kind-specific problems as ``(key path, message)`` pairs; empty when valid."""
        ...

    def difficulty(self, case: Case) -> str | None:
        """A default difficulty label when the case gives none (SQL: Spider hardness, else sql_hardness)."""
        ...

    def evaluate(self, case: Case, prediction: object, ctx: Context) -> Scored:
        """Score one prediction. Raise :class:`~pytest_queryeval.errors.QueryEvalError` for
        infrastructure errors (source unavailable, broken gold); model mistakes are scored."""
        ...


class AuditingKind(Kind, Protocol):
    """A kind that audits its own golds (``--queryeval-audit-golds``, :mod:`.audit`).

    ``audit`` is optional: a kind without it, a custom kind too, has each gold scored as its
    own prediction (:func:`.audit.self_check`); one with it adds what only it can check (the
    query kinds execute and lint their golds, SDMX checks its codelists).
    """

    def audit(self, case: Case, ctx: Context, result: AuditResult) -> None:
        """Add the case's findings to ``result``; raise
        :class:`~pytest_queryeval.errors.SourceUnavailable` when the source cannot be reached."""
        ...


#: A JSON value as a record holds it (what ``report.records._clean`` returns: YAML-given golds and
#: predictions, case options, report details read back from a file).
JSONValue = str | int | float | bool | None | list["JSONValue"] | dict[str, "JSONValue"]


class CaseRecord(TypedDict):
    """One case's record, from :func:`.report.records.case_record` (or ``error_record``) to every report
    writer, ``queryeval merge``, ``--queryeval-resume`` and the baseline.

    The keys every record maker writes are required; the others are ``NotRequired``.
    tests/reports/test_case_record.py checks the records of real runs against it.
    """

    #: The case id (the node id of a case file that could not be read).
    id: str
    #: pytest's node id: the record's key in the controller, and in a resumed run.
    nodeid: str
    #: The case file, rootdir-relative: what the reports group and sort on.
    file: str
    #: The case file, absolute: internal (gate scopes, the gold write-back), popped before
    #: the report is written; None for a case file that could not be read.
    path: NotRequired[str | None]
    #: The case's line in its file (0 when a crashed worker sent no case metadata).
    line: int
    #: The case's kind; ``invalid`` (unreadable file) or ``unknown`` (crash) for error records.
    kind: str
    #: The difficulty, :data:`NO_DIFFICULTY` when none (None from a crashed worker's case).
    difficulty: str | None
    #: The case's tags, in the order its file gives them.
    tags: list[str]
    #: ``severity:``: absent in the record of a case file that could not be read.
    severity: NotRequired[str | None]
    #: The question asked (capped); None for a case with none and for error records.
    question: str | None
    #: The datasource named; absent in the record of a case file that could not be read.
    datasource: NotRequired[str | None]
    #: The SQL dialect, only for a case that names one.
    dialect: NotRequired[str]
    #: The model, only for a case fanned out per model (``predictions:`` naming several).
    model: NotRequired[str]
    #: pytest's verdict in the report's vocabulary (:func:`.report.records.final_outcome`), None until pytest
    #: reports the case (set there); None again in a resumed run's carried record.
    outcome: NotRequired[str | None]
    #: The engine's verdict (passed | failed | error), None for a case not run.
    status: str | None
    #: The scores, by metric; None for a score that was not finite.
    metrics: dict[str, float | None]
    #: Categorical labels (``hardness``), by name.
    labels: dict[str, str]
    #: The thresholds in effect, by metric: ``{"min": ..., "max": ...}``.
    thresholds: dict[str, dict[str, float]]
    #: The metrics of ``thresholds`` that are the kind's default (no threshold judged them).
    default_thresholds: list[str]
    #: The metrics whose thresholds failed.
    failed_metrics: list[str]
    #: The prediction (a query, a JSON value, an SDMX turn's list), capped.
    predicted: JSONValue
    #: The gold that scored (the dialect's gold, the one SDMX target ...), capped.
    gold: JSONValue
    #: 16 hex digits of what the prediction produced (:func:`.report.records.result_digest`).
    signature: str | None
    #: Why the case is an error (infrastructure, an unreadable file, a crash).
    error: str | None
    #: Why the prediction could not be scored normally (refused, timeout, failed query).
    reason: str | None
    #: The failure report's lines (missing and extra rows, SQL components), capped.
    diff: list[str]
    #: The relaxations that would make a failing case pass (:func:`.rules.nearmiss.flips`), None
    #: when not attributed; absent in the record of a case file that could not be read.
    near_miss: NotRequired[list[str] | None]
    #: The kind's and the engine's extras, JSON-safe and capped: each kind, the judge
    #: (``judge``, :class:`.judge.run.JudgeRecord`), the counterexample search
    #: (``neighbours``, :class:`.neighbours.check.NeighboursDetail`) and the repeats write
    #: their own keys, read by the report writers of each.
    details: dict[str, Any]
    #: The case options that change scores (:data:`.report.records.SCORING_OPTIONS`), as the case gives them.
    settings: dict[str, JSONValue]
    #: --queryeval-gating: the case's state in the baseline (None without gating).
    baseline_status: str | None
    #: --queryeval-gating: the case's standing against the baseline (None without gating).
    standing: str | None
    #: What ``--queryeval-resume`` matches on (:func:`.plugin.resume.identity`); absent in an audit
    #: and in the records that no case scored.
    identity: NotRequired[str]
    #: ``--queryeval-resume``: the report the record was carried from.
    carried: NotRequired[str]
    #: The digest of a record read back from a JSON report (:mod:`.report.json_report`).
    digest: NotRequired[str]
    #: Seconds the case took: read by ``--queryeval-shard-durations`` where a report has it.
    duration_s: NotRequired[float | None]
    #: ``reviewed: false`` (a mined case nobody confirmed); absent for a reviewed case.
    reviewed: NotRequired[bool]
    #: A pinned case whose data changed (docs/mining.md): the pinned tables (or files) that
    #: changed; the case is skipped, not scored.
    drifted: NotRequired[list[str]]


#: A record as its readers take it: a :class:`CaseRecord`, or a record read back from a
#: JSON report (a shard's slim record in ``queryeval merge``, a carried or baseline record),
#: checked by :mod:`.report.shardcheck` but typed only as a mapping.
RecordLike = CaseRecord | Mapping[str, Any]
