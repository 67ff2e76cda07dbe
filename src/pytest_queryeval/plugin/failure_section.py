"""pytest's FAILURES section at benchmark scale (issue 43): linear in the cases, and readable.

pytest's terminal summary looks up each failure's teardown output by scanning every setup and
teardown report of the session (``TerminalReporter._handle_teardown_sections`` ->
``_get_teardown_reports`` -> ``getreports("")``, pytest 8 and 9): ``failures x 2 x items``
attribute look-ups, 36 % of a 5,000-case run with 1,500 failures and 20x the time of a 5,000-case
run at 20,000 cases, where plain pytest pays the same scan. Two things keep a suite linear:

- :func:`prune_passed_phases` drops from the terminal's ``stats[""]`` the setup and teardown
  reports of the plugin's own case items that have nothing to show there (pytest prints a
  teardown report only for its captured ``teardown`` sections; ``stats[""]`` is read for
  nothing else, and the ``-rfE`` short summary, the counts line and ``--lf`` read other lists
  or hooks). Other items' reports are left alone.
- :func:`compact_failures`: past ini ``queryeval_max_failure_details`` failing cases, each
  further case's failure text is replaced by one line (case, file:line, why it failed), so
  the section still names every failing case; the full text of each is in the JSON report's
  records and in a run of that case alone (``pytest 'file.yaml::id'``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..baseline.verdicts import _why
from ..model import RecordLike


def parse_max_details(value: object) -> int:
    """ini ``queryeval_max_failure_details``: a whole number >= 0, 0 meaning no limit."""
    text = str(value).strip()
    try:
        number = int(text)
    except ValueError:
        number = -1
    if number < 0:
        raise ValueError(f"ini queryeval_max_failure_details: {text!r} is not a whole number "
                         f">= 0 (the failing cases shown in full; 0: every one)")
    return number


def prune_passed_phases(stats: dict[str, list[Any]], is_case: Callable[[str], bool]) -> int:
    """Drop from ``stats[""]`` the setup and teardown reports of case items (``is_case`` on
    the node id) that pytest's summary would print nothing of; returns how many."""
    reports = stats.get("")
    if not reports:
        return 0
    kept = [rep for rep in reports if not is_case(getattr(rep, "nodeid", "")) or (
        getattr(rep, "when", None) == "teardown"
        and any("teardown" in name for name, _ in getattr(rep, "sections", ())))]
    dropped = len(reports) - len(kept)
    if dropped:
        reports[:] = kept
    return dropped


def compact_line(record: RecordLike) -> str:
    """One failing case in one line: what, where, why."""
    where = f"{record.get('file')}:{record.get('line')}"
    error = record.get("error")
    why = ("error: " + " ".join(str(error).split())[:160]) if error else _why(record)
    regression = "REGRESSION (passed in the baseline): " if record.get(
        "standing") == "regression" else ""
    return f"{record.get('kind')} case {record.get('id')!r} ({where}): {regression}{why}"


def compact_failures(reports: Iterable[Any], limit: int) -> int:
    """Past the first ``limit`` failing case reports (those carrying a record), each
    report's failure text becomes its :func:`compact_line`; returns how many were shortened.
    ``limit`` 0: none is."""
    if limit <= 0:
        return 0
    shown = shortened = 0
    for rep in reports:
        record = getattr(rep, "queryeval", None)
        if record is None:
            continue
        shown += 1
        if shown <= limit:
            continue
        line = compact_line(record)
        if not shortened:  # after the line: the first line is what -rf shows of a failure
            line += (f"\n(failing cases after the first {limit} in one line each: ini "
                     "queryeval_max_failure_details; each case's full text is in its JSON "
                     "report record, or run it alone)")
        rep.longrepr = line
        shortened += 1
    return shortened
