"""The calls that spans given beside a trajectory add to it.

Why a module of its own: a call is the same call in both records only when it ran the same,
and what ran is compared as its arguments' JSON, not as text; the rule is the twelfth
re-probe's H11 (issue 58), kept apart from the case's counting (:mod:`.case`).
"""

from __future__ import annotations

from collections.abc import Sequence

from .trajectory import Step, call_key


def merged(steps: Sequence[Step], found: Sequence[Step]) -> tuple[Step, ...]:
    """``steps`` with the calls of ``found`` they do not hold: the same call (by name and
    arguments asked) is counted once only when it ran the same; one that records it ran
    something else (a TOOL span's ``input.value`` that was a ``DELETE``) gives the
    trajectory's call what ran, or, when that call records a different run of its own, is
    counted beside it (issue 58, the twelfth re-probe's H11)."""
    from collections import deque
    from dataclasses import replace

    held: dict[str, deque[int]] = {}  # a queue per call: 80,000 calls took 10 s as a scan
    for n, step in enumerate(steps):
        held.setdefault(call_key(step), deque()).append(n)
    out, extra = list(steps), []
    for step in found:
        slots = held.get(call_key(step))
        if not slots:
            extra.append(step)
            continue
        at = slots.popleft()
        mine = out[at]
        if step.executed is None or ran(step.executed) == ran(
                mine.executed if mine.executed is not None else mine.arguments_text):
            continue
        if mine.executed is None:
            out[at] = replace(mine, executed=step.executed)
        else:
            extra.append(step)
    return tuple(out + extra)


def ran(text: str) -> str:
    """A call's arguments text as compared for what ran: its JSON with its keys sorted, else
    its words."""
    import json

    from .._util.boundedio import BoundedReadError, loads_json

    try:
        return json.dumps(loads_json(text, 64), sort_keys=True, ensure_ascii=False)
    except (BoundedReadError, TypeError, ValueError):
        return " ".join(text.split())
