"""Keep Python's cyclic garbage collector off objects that live as long as the session.

pytest keeps every item, report and case alive until the process ends, so in a large session
each full collection re-scans a heap that only grows: at 10,000 cases that was 2 s of GC during
the run and another 2 s of collections in Python's shutdown. Nothing here changes what is
collected in the end; it changes when.
"""

from __future__ import annotations

import atexit
import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: From this many collected cases on, what collection built (parsed YAML, cases, items) and
#: what the run keeps (records, reports) are frozen (``gc.freeze``) until the session ends.
FREEZE_MIN_CASES = 1000

_EXIT_FREEZE: list[bool] = []


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic GC in the block: for work that allocates many objects and no garbage cycles."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _freeze_at_exit() -> None:
    """Once per process: freeze everything at interpreter exit, where the finalizer's full
    collections would re-scan the session's objects just before they die with the process.
    In-process runs (pytester, IDEs) are unaffected until their own exit."""
    if not _EXIT_FREEZE:
        _EXIT_FREEZE.append(True)
        atexit.register(gc.freeze)


class FreezePolicy:
    """Freeze after each case file and every FREEZE_MIN_CASES cases run, once the session
    holds that many cases; unfreeze last, so pytest's final collection (which reports
    unraisable exceptions) still sees every object."""

    def __init__(self) -> None:
        self.frozen = False
        self.cases_run = 0

    def after_collection(self, cases: int) -> None:
        if cases >= FREEZE_MIN_CASES:
            gc.freeze()
            self.frozen = True

    def after_case(self) -> None:
        self.cases_run += 1
        if self.frozen and self.cases_run % FREEZE_MIN_CASES == 0:
            gc.freeze()

    def before_finish(self) -> None:
        """The last cases' records and reports, before the reports are built."""
        if self.frozen:
            gc.freeze()

    def release(self) -> None:
        if self.frozen:
            self.frozen = False
            gc.unfreeze()
            _freeze_at_exit()
