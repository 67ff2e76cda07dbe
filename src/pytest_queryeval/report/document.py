"""The one report every report writer receives, after a run and after ``queryeval merge`` alike.

Why a type of its own: a merge keeps slim case records (:data:`.stream.HEAVY` left on disk) and
a writer had to know the ``iter_full`` idiom to get what a run's writer gets; a writer of
another package (``pytest_queryeval_report_formats``) silently wrote the slim ones. A
:class:`Report` is the report mapping as before (every top-level field, ``report["cases"]``)
with one accessor, :meth:`Report.records`, that yields the full records whatever made them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from ..model import CaseRecord, RecordLike


class Report(dict[str, Any]):
    """A report (``run``, ``aggregates``, ``cases``, ...) as the JSON report holds it."""

    @classmethod
    def of(cls, report: Mapping[str, Any]) -> Report:
        """``report`` as a :class:`Report` (itself when it is one already)."""
        return report if isinstance(report, Report) else cls(report)

    @property
    def run(self) -> dict[str, Any]:
        """The run's fields (``gating``, ``outcome``, the model label, ...)."""
        run = self.get("run")
        return run if isinstance(run, dict) else {}

    def __len__(self) -> int:  # the fields, as a dict: kept explicit for readers of the type
        return dict.__len__(self)

    def count(self) -> int:
        """How many case records it holds."""
        return len(self.get("cases") or ())

    def records(self) -> Iterator[CaseRecord]:
        """Every case record in full (``predicted``, ``gold``, ``question``, ``diff``, the
        details), in order: a merge's are read back from their shards one at a time."""
        return full_records(self.get("cases") or [])

    def record(self, index: int) -> CaseRecord:
        """Case record ``index`` in full."""
        return full_record(self.get("cases") or [], index)


def full_records(cases: Iterable[RecordLike]) -> Iterator[CaseRecord]:
    """The records of a report's ``cases`` in full, a run's list or a merge's slim records
    (:class:`.stream.StoredCases`, read back whole one at a time): the one way to them."""
    iter_full = getattr(cases, "iter_full", None)
    return cast("Iterator[CaseRecord]", iter(iter_full() if iter_full is not None else cases))


def full_record(cases: Sequence[RecordLike], index: int) -> CaseRecord:
    """Record ``index`` of a report's ``cases`` in full (see :func:`full_records`)."""
    full = getattr(cases, "full", None)
    return cast("CaseRecord", full(index) if full is not None else cases[index])
