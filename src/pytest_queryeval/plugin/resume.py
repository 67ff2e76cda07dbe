"""``--queryeval-resume REPORT``: a retried shard does not ask the model again for what its
previous attempt already scored.

A scheduler retries a shard that was preempted or timed out; without this the retry asks the
model (and pays) again for every case. A case is carried from the previous attempt's JSON
report when that report holds a *complete* record of it (passed, failed, xfailed or xpassed;
not an error, not skipped, not a prediction that could not be obtained) with the same
:func:`identity`: the same case as written, scored against the same prediction source. The
carried record counts in the aggregates, the gates and the exit status as if it had run.

The report is trusted only as far as each record carries the digest of its own text
(``digest``, written by the plugin and by ``queryeval merge``): a report with a record edited
after the run, or written before records carried digests, is refused with the record named. The
digest is no signature: whoever can write the report can recompute it; it keeps a hand edit or
a damaged file from being carried as a result.

Importable without pytest.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..report.shardcheck import COMPLETE_OUTCOMES
from ..suite.cases import encode as encode  # the text a case's identity digests

if TYPE_CHECKING:
    from ..model import Case, CaseRecord, RecordLike

#: Outcomes of a record a later attempt may carry instead of running the case again.
COMPLETE = COMPLETE_OUTCOMES


def identity(case: Case, predictions: str | None) -> str:
    """What a case was scored as: a digest of the case mapping as written (question, gold,
    inline prediction), its kind, datasource name, options and thresholds in force (file, suite,
    ini and command line), the suite's ``predictions:`` source and ``model:`` label, and
    ``--queryeval-predictions``. Two attempts with the same identity ask the same question of
    the same source and judge the answer the same way.

    Not part of it: the content of files the case names (databases, result CSVs, a predictions
    file): resume from a fresh report when those change.
    """
    data = {
        "id": case.id, "kind": case.kind, "datasource": case.datasource,
        "options": case.options,
        "thresholds": {m: t.to_json() for m, t in sorted(case.thresholds.items())},
        "prediction_source": case.prediction_source, "predictions": predictions,
        "model": case.model_label,
    }
    if not case.raw_encoded:
        text = encode({"case": case.raw, **data})
    else:  # "case" sorts first: the text json.dumps writes for the mapping as written
        rest = encode(data)
        text = f'{{"case": {encode_raw(case.raw, case.raw_encoded)}, {rest[1:]}'
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def encode_raw(raw: Mapping[str, Any], encoded: tuple[tuple[str, str], ...]) -> str:
    """:func:`encode` of the case mapping as written, of which ``raw`` holds some keys and
    ``encoded`` the others as text (:attr:`..model.Case.raw_encoded`; every key a string)."""
    texts = dict(encoded)
    for key, value in raw.items():
        texts[key] = encode(value)
    return "{" + ", ".join(f"{encode(k)}: {texts[k]}" for k in sorted(texts)) + "}"


def carriable(record: RecordLike) -> bool:
    """A record a retry may keep: complete, with an identity, and not a prediction that
    failed (a source that failed once is asked again)."""
    if record.get("outcome") not in COMPLETE or not isinstance(record.get("identity"), str):
        return False
    reason = record.get("reason")
    return not (isinstance(reason, str) and reason.startswith("prediction error"))


def edited(records: list[Any]) -> list[str]:
    """The records that do not carry the digest of their own content, each named by its place
    and case id: a carried record is reported as if it had run, so one changed by hand (an
    outcome turned to ``passed``, a metric raised) must not be carried."""
    from ..report.json_report import digest_problem

    out = []
    for index, rec in enumerate(records):
        problem = digest_problem(rec)
        if problem:
            out.append(f"cases[{index}] (case {str(rec.get('id'))!r}): {problem}; run the "
                       "shard again without --queryeval-resume")
    return out


@dataclass
class Resume:
    """The carriable records of a previous attempt, by case id, and the live answers it
    received (:mod:`.journal`)."""

    report: str
    records: dict[str, CaseRecord] = field(default_factory=dict)
    #: Where each record was read, by case id, when not the report (its journal).
    sources: dict[str, str] = field(default_factory=dict)
    #: Live answers the earlier attempts' journals hold (:func:`.journal.answer_key`).
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: What the terminal says of the files read: nothing to carry yet, a journal line
    #: dropped.
    notes: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path, name: str) -> Resume:
        """The records of the JSON report at ``path``, and of its journal (:mod:`.journal`);
        ValueError says why they cannot be used (unreadable, not a report, a damaged field, an
        edited record). Neither file is there on a first attempt: then nothing is carried
        (a note, not an error), so a retry is the same command as the first attempt."""
        from .._util.boundedio import load_report_file
        from ..report.shardcheck import check_report, summary
        from .journal import journal_files, read

        out = cls(name)
        journals = journal_files(path)
        if not path.exists() and not journals:
            out.notes.append(f"queryeval: --queryeval-resume {name}: no report or journal of an "
                             "earlier attempt yet: nothing to carry, every case runs")
            return out
        if path.exists():
            data = load_report_file(path, "--queryeval-resume", name)
            problems = check_report(data)
            if not problems:
                problems = edited(data["cases"])
            if problems:
                raise ValueError("--queryeval-resume: " + summary(name, problems))
            for rec in data["cases"]:
                if isinstance(rec, dict) and carriable(rec):
                    out.records[str(rec.get("id"))] = cast("CaseRecord", rec)  # a later record of one id wins
        if journals:
            got = read(journals, name)
            if got.errors:
                raise ValueError("--queryeval-resume: " + "; ".join(got.errors)
                                 + "; run again without --queryeval-resume")
            out.notes.extend(f"queryeval: --queryeval-resume: {w}" for w in got.warnings)
            for cid, rec in got.records.items():
                if carriable(rec):
                    out.records[cid] = cast("CaseRecord", rec)
                    out.sources[cid] = f"{name}.journal"
            out.answers = got.answers
        return out

    def carried(self, case: Case, ident: str, nodeid: str) -> CaseRecord | None:
        """The record to report for ``case`` instead of running it, or None to run it."""
        rec = self.records.get(case.id)
        if rec is None or rec.get("identity") != ident:
            return None
        out: CaseRecord = {**rec, "nodeid": nodeid,
                           "carried": self.sources.get(case.id, self.report)}
        # judged again against this run's baseline (None, as a case that ran has them, when
        # no gating mode judges: a resumed report is the report of the run it resumes)
        out["baseline_status"] = None
        out["standing"] = None
        out["outcome"] = None
        return out
