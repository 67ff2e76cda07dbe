"""Whether a pinned case's data moved since it was pinned (issue 63 item 2).

Why: a case mined from production replays its gold on the datasource as it is now; when the
tables its queries read changed, a pass or a fail would be about the data, not the model.
Such a case is reported ``drifted`` (with the tables that changed) and not scored; a person
reviews the change and re-pins it (``queryeval mine --refresh``). Each table's checksum is
computed once per run and source, however many cases pin it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import QueryEvalError

if TYPE_CHECKING:
    from ..model import Case
    from . import Evaluator


def drifted(case: Case, evaluator: Evaluator) -> list[str]:
    """The pinned tables (or files) of ``case`` whose data changed; empty when none did or
    the case is not pinned. A source that cannot open is the case's own error, reported when
    it runs: nothing is said to have drifted then."""
    if not case.pin or case.source_spec is None:
        return []
    from ..sources.pins import changed

    try:
        source = evaluator.source(case)
    except QueryEvalError:
        return []
    sums = evaluator.pin_sums.setdefault(id(source), {})
    return changed(case.pin, source, case.source_spec, sums)


def drift_reason(tables: list[str]) -> str:
    """The reason a drifted case gives (pytest's skip reason, the record's ``reason``)."""
    return (f"drifted: the pinned data changed: {', '.join(tables)} (review the case, then "
            "re-pin it with queryeval mine --refresh)")
