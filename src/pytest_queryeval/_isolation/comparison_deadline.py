"""The case's deadline on comparison work (column alignment and column assignment searches).

Why: the searches stop at deterministic work budgets, but a budget is counted in units whose
cost grows with the shape of the tables (a unit of a 30,000-column alignment reads far more
than one of a 6-column one): a prediction under every size limit still ran 107 s against
``timeout: 10``. The deadline is the case's ``timeout`` again, counted from the start of the
comparison, so a case costs at most its query timeouts plus one more. The work budgets stay the
first bound (deterministic: on a quiet machine the deadline never decides an outcome).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ..errors import ComparisonTimeout

#: (monotonic time the comparison must stop by, the case's timeout in seconds), or None.
_DEADLINE: ContextVar[tuple[float, float] | None] = ContextVar("queryeval_compare_deadline",
                                                               default=None)


@contextmanager
def comparison_deadline(seconds: float) -> Iterator[None]:
    """Comparisons run in this block stop with :class:`ComparisonTimeout` after ``seconds``."""
    token = _DEADLINE.set((time.monotonic() + seconds, seconds))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def check_deadline(what: Callable[[], str]) -> None:
    """Raise :class:`ComparisonTimeout` once the deadline has passed; ``what`` says which work
    stopped (called only then)."""
    bound = _DEADLINE.get()
    if bound is not None and time.monotonic() > bound[0]:
        raise ComparisonTimeout(f"comparing the results took longer than the case's timeout "
                                f"({bound[1]:g} s): {what()} stopped")
