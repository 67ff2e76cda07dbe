"""Which of a run's suite ids a merge's records account for (``run.suite_ids``: case ids, and
a Python case's test by its node id, plugin/pycases.py).

Why a module of its own: a Python case's test is one item but need not be one record named by
its node id, and :mod:`.merge` must not call the test missing for it: a case with its own
prediction in a run of several models is scored by one model's item (the others skip, with no
record), and a case on a list of datasources records each source as ``<node id>[<source>]``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..model import RecordLike


def accounted_for(records: Sequence[RecordLike]) -> set[str]:
    """The suite ids ``records`` stand for: their ids and node ids, the test of a record per
    source, and the skipped models' items of a case asked of no model."""
    have = {str(r.get("id")) for r in records} | {str(r.get("nodeid")) for r in records}
    have |= _stood_for(records, have)
    return have | {n.rpartition("[")[0] for n in have if n.endswith("]")}


def _stood_for(records: Sequence[RecordLike], have: set[str]) -> set[str]:
    """The node ids of the other models' items of a Python case with its own prediction: it
    is asked of no model, so the first model's item scores it (a record without ``model``)
    and the others skip with no record (plugin/pycases.py); in whichever shard they ran, they
    are that record, not missing cases. A sibling differs from the record's node id in the
    model's part of the parameter id only."""
    models = {str(r["model"]) for r in records if r.get("model")}
    out: set[str] = set()
    for record in records:
        nodeid = str(record.get("nodeid") or "")
        if record.get("model") or not nodeid.endswith("]") or "[" not in nodeid:
            continue
        head, _, params = nodeid[:-1].rpartition("[")
        parts = params.split("-")
        for model in models:
            width = model.count("-") + 1
            for start in range(len(parts) - width + 1):
                if "-".join(parts[start:start + width]) != model:
                    continue
                for other in models - {model}:
                    out.add(f"{head}[{'-'.join([*parts[:start], other, *parts[start + width:]])}]")
    return out - have
