"""What the gold audit finds: the catalogue of finding codes, one finding, one case's result.

Why a module of its own, importing nothing of the package: the kinds' contract
(:class:`~pytest_queryeval.model.AuditingKind`) names :class:`AuditResult`, and the audit's
orchestration imports the contract; with the types here, neither imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ERROR = "error"
WARNING = "warning"
#: ``--queryeval-audit-golds`` (fail on error findings) and ``=warn`` (report only).
MODES = ("error", "warn")

#: Every finding code: its severity and what it means (docs/auditing.md has the fixes).
CATALOG: dict[str, tuple[str, str]] = {
    "invalid-case": (ERROR, "the case does not validate (it is never scored)"),
    "source-unavailable": (ERROR, "the datasource cannot be reached: the gold was not checked"),
    "gold-error": (ERROR, "the gold fails to execute or to parse (its own outcome)"),
    "gold-timeout": (ERROR, "the gold exceeds its timeout"),
    "gold-below-threshold": (ERROR, "scored as its own prediction, the gold is not 1 on a "
                                    "metric its thresholds name"),
    "gold-drift": (ERROR, "the recorded gold_result no longer matches live execution"),
    "transpile-mismatch": (ERROR, "a gold transpiled to this dialect returns another result "
                                  "than the gold it was transpiled from"),
    "code-not-in-codelist": (ERROR, "an SDMX target code is not in its codelist"),
    "invalid-json": (ERROR, "a JSON gold is not valid JSON"),
    "readings-not-distinct": (ERROR, "two readings of an interpretations case return the same "
                                     "result (Ambrosia's DublicatesError)"),
    "abstain-answerable": (ERROR, "an expect: abstain case's probe query answers it from the "
                                  "data"),
    "empty-result": (WARNING, "the gold returns no rows (or one row of NULLs)"),
    "clock-dependent": (WARNING, "the gold reads the clock (CURRENT_DATE, now(), NOW()...)"),
    "nondeterministic": (WARNING, "the gold calls a random function (RANDOM(), RAND()...)"),
    "ties-at-limit": (WARNING, "ORDER BY ... LIMIT cuts through tied rows: another answer is "
                               "equally correct"),
    "limit-without-order": (WARNING, "LIMIT without ORDER BY keeps rows in the engine's scan "
                                     "order: other rows are as likely an answer"),
    "text-sorted-numbers": (WARNING, "ORDER BY sorts text that holds numbers ('9.5' above '10')"),
    "unordered-aggregate": (WARNING, "group_concat, string_agg, array_agg, listagg or "
                                     "json_group_array joins values in the engine's order"),
    "text-min-max": (WARNING, "MIN/MAX compares text that holds numbers"),
    "text-date-compare": (WARNING, "a date stored as text in a format that does not sort is "
                                   "compared as text"),
    "slow-gold": (WARNING, "the gold takes over half its timeout"),
    "redundant-alternative": (WARNING, "two gold alternatives return identical results"),
    "codelist-name-mismatch": (WARNING, "an SDMX target names a code differently from its "
                                        "codelist"),
    "transpile-unchecked": (WARNING, "a transpiled gold has no source of its original dialect "
                                     "to be compared with"),
    "duplicate-json-key": (WARNING, "a JSON gold repeats a key (the last one wins)"),
    "weak-gold": (WARNING, "the gold returns the same result as an obviously different query "
                           "one edit away (> for >=, a condition left out): the data cannot "
                           "tell them apart (with --queryeval-neighbours)"),
}

@dataclass(frozen=True)
class Finding:
    """One problem of one case's gold; ``gold`` is the alternative's index when there are
    several, else None."""

    code: str
    message: str
    gold: int | None = None

    @property
    def severity(self) -> str:
        return CATALOG[self.code][0]

    def text(self) -> str:
        where = f"gold[{self.gold}]: " if self.gold is not None else ""
        return f"{self.severity} {self.code}: {where}{self.message}"

    def to_json(self) -> dict[str, object]:
        return {"code": self.code, "severity": self.severity, "gold": self.gold,
                "message": self.message}


@dataclass
class AuditResult:
    """The findings of one case, and the self-scores of its first gold (for the reports)."""

    findings: list[Finding] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    #: A transpiled gold's check (:mod:`.transpiled`): the case as written, the dialect, the
    #: entry it came from, the text run and ``checked`` (``matched``, ``mismatch``,
    #: ``unchecked``); what ``--queryeval-write-transpiled`` writes back (:mod:`...audit.writeback`).
    transpiled: dict[str, Any] | None = None

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == ERROR]

    def add(self, code: str, message: str, gold: int | None = None) -> None:
        finding = Finding(code, message, gold)
        if finding not in self.findings:
            self.findings.append(finding)
