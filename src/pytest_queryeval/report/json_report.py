"""The JSON report: the one record every other report and the baseline are built from."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

from .._util.safefile import atomic_output, write_atomic
from .document import Report

VERSION = 1

#: A value JSON can hold, as the report is written.
JSONValue = str | int | float | bool | None | dict[str, "JSONValue"] | list["JSONValue"]


def _safe(value: object) -> JSONValue:
    """JSON-safe copy: NaN/inf become null, unknown objects their ``str``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_safe(v) for v in value]
    if value is None or isinstance(value, str | int | bool):
        return value
    return str(value)


_encode_str = json.encoder.encode_basestring  # the C version when available, as json uses


def _emit(value: object, out: list[str], nl: str) -> None:
    """Append the ``json.dumps(_safe(value), indent=2, ensure_ascii=False)`` text of ``value``.

    One walk instead of a JSON-safe copy plus the json module's pure-Python indenting
    encoder (``indent`` disables its C encoder); ``nl`` is the newline plus the indentation
    of the current level.
    """
    if isinstance(value, str):
        out.append(_encode_str(value))
    elif isinstance(value, float):
        out.append(float.__repr__(value) if math.isfinite(value) else "null")
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        if not all(type(k) is str for k in value):
            value = {str(k): v for k, v in value.items()}  # as _safe: later duplicates win
        inner = nl + "  "
        sep = "{" + inner
        for k, v in value.items():
            out.append(sep)
            out.append(_encode_str(k))
            out.append(": ")
            _emit(v, out, inner)
            sep = "," + inner
        out.append(nl + "}")
    elif isinstance(value, list | tuple | set | frozenset):
        if not value:
            out.append("[]")
            return
        inner = nl + "  "
        sep = "[" + inner
        for v in value:
            out.append(sep)
            _emit(v, out, inner)
            sep = "," + inner
        out.append(nl + "]")
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    else:
        out.append(_encode_str(str(value)))


_compact = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(", ", ": ")).encode


#: The key of a case record that holds the digest of the record's own text
#: (:func:`record_digest`): ``--queryeval-resume`` refuses a record edited after the run.
DIGEST = "digest"


def record_text(record: object) -> str:
    """One case on one line (the C encoder; the indenting walk for what it refuses), without
    its :data:`DIGEST`: the text the digest is taken of. A record read back from a report
    gives the text it was written as (keys in their order, floats as ``repr``)."""
    if isinstance(record, dict) and DIGEST in record:
        record = {k: v for k, v in record.items() if k != DIGEST}
    try:
        return _compact(record)
    except (TypeError, ValueError):  # NaN, or an object only _safe knows how to write
        return _compact(_safe(record))


def record_digest(text: str) -> str:
    """32 hex digits of SHA-256 of a record's :func:`record_text`."""
    import hashlib

    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def digest_problem(record: object) -> str | None:
    """Why a record read back from a report does not carry the digest of its own content
    (None: it does)."""
    if not isinstance(record, dict):
        return None
    given = record.get(DIGEST)
    if given is None:
        return f"no {DIGEST!r} (a record written before queryeval recorded one, or removed)"
    if given != record_digest(record_text(record)):
        return f"its {DIGEST!r} is not the digest of its content (edited after the run)"
    return None


def case_line(record: object) -> str:
    """:func:`record_text` with the digest of that text as the record's last key (a digest the
    record held, read from a shard or an earlier attempt, is taken again): a report's case
    line, and a line of the journal (:mod:`..plugin.journal`)."""
    text = record_text(record)
    if not isinstance(record, dict):
        return text
    mark = f'"{DIGEST}": "{record_digest(text)}"}}'
    return text[:-1] + mark if text == "{}" else text[:-1] + ", " + mark


def dumps(report: dict[str, Any]) -> str:
    """The report as ``json.dumps(_safe(report), indent=2, ensure_ascii=False)`` would write it,
    except that each record of ``cases`` is one line: a case is then one line of a diff or a
    ``grep``, and 10,000 cases encode in C rather than through the indenting walk."""
    cases = report.get("cases")
    if not isinstance(cases, list) or not cases:
        out: list[str] = []
        _emit(report, out, "\n")
        out.append("\n")
        return "".join(out)
    out = ["{"]
    sep = "\n  "
    for key, value in report.items():
        out.append(sep + _encode_str(str(key)) + ": ")
        if key == "cases":
            out.append("[\n    " + ",\n    ".join(map(case_line, cases)) + "\n  ]")
        else:
            _emit(value, out, "\n  ")
        sep = ",\n  "
    out.append("\n}\n")
    return "".join(out)


def write_report(report: Report, path: Path, comparison: object = None) -> None:
    """Write ``dumps(report)``, one case at a time: the text of 100,000 cases held at once, as
    a list of lines, joined, then encoded, was three copies of the report at the session's
    peak of memory. A merge's cases (:class:`.stream.StoredCases`) are each read back from
    their shard in turn. ``comparison``: unused, the report holds it already (``baseline``);
    taken as every writer of :data:`.formats.REPORT_WRITERS` takes it."""
    cases = report.get("cases")
    if not isinstance(cases, list) or not cases:
        write_atomic(path, dumps(report), special="stream")
        return
    records = Report.of(report).records()
    with atomic_output(Path(path), special="stream") as raw:
        fh = io.TextIOWrapper(raw, encoding="utf-8")
        sep = "{\n  "
        for key, value in report.items():
            fh.write(sep + _encode_str(str(key)) + ": ")
            if key == "cases":
                lead = "[\n    "
                for record in records:
                    fh.write(lead + case_line(record))
                    lead = ",\n    "
                fh.write("\n  ]")
            else:
                out: list[str] = []
                _emit(value, out, "\n  ")
                fh.write("".join(out))
            sep = ",\n  "
        fh.write("\n}\n")
        fh.flush()
        fh.detach()  # the file is atomic_output's to sync, rename and close
