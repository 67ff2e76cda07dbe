"""A case's ``pin:``: a fingerprint of the data its queries read (issue 63 item 2).

Why: a case mined from production (``queryeval mine``) has as its gold what production ran on
the data production saw. Replayed on data that has moved since, it would fail (or pass) for
the data, not for the model. The pin records, when the case is mined, a checksum of each table
its queries read (SQL sources) or the digest of the files a file source reads (RDF, a graph
directory); a run compares them first and reports a case whose data changed as ``drifted``
instead of scoring it (:mod:`..engine.drift`).

A table's checksum is :meth:`ResultTable.signature` of ``SELECT * FROM table``: the row count
and a digest of the rows as a multiset, so it does not depend on the order the engine returns
them in, and reads each row once. A pin is read back from a case file, so it is untrusted:
:func:`pin_problems` checks every field before anything is run with it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .base import DataSource

#: ``rows:<count>:<32 hex>``, as :meth:`ResultTable.signature` writes it.
TABLE_SUM = re.compile(r"rows:[0-9]{1,15}:[0-9a-f]{32}")
#: ``sha256:<64 hex>``: the files of a file source, in name order, with their names.
FILE_SUM = re.compile(r"sha256:[0-9a-f]{64}")
#: A table name a pin may hold: an identifier, optionally schema-qualified. Anything else is
#: refused before it reaches a query.
TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]{0,127}(\.[A-Za-z_][A-Za-z0-9_$]{0,127})?")
#: More tables than any query reads: a bound on what a hostile pin makes a run compute.
MAX_TABLES = 256
#: Rows a pinned table may have (a bigger one is refused at mining, not cut silently).
MAX_PIN_ROWS = 5_000_000
PIN_KEYS = ("tables", "file")


class PinError(ValueError):
    """A pin that cannot be computed (a table that is not there, a table too big)."""


# -- reading a pin back ----------------------------------------------------------------------


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def pin_problems(pin: object) -> list[tuple[Any, Any, str, str]]:
    """What is wrong with a ``pin:`` value read from a case file: ``(container, key, field
    path under pin, message)`` each, the container and key for the error's line."""
    if not isinstance(pin, Mapping):
        return [(None, None, "", "must be a mapping (queryeval mine writes {tables: {...}} "
                 "or {file: sha256:...})")]
    out: list[tuple[Any, Any, str, str]] = []
    unknown = [k for k in pin if k not in PIN_KEYS]
    for key in unknown:
        out.append((pin, key, f".{_shown(key)}", "unknown key (pin takes tables: or file:)"))
    if not unknown and not any(k in pin for k in PIN_KEYS):
        out.append((None, None, "", "is empty: give tables: or file:"))
    if "file" in pin and not (isinstance(pin["file"], str) and FILE_SUM.fullmatch(pin["file"])):
        out.append((pin, "file", ".file", f"must be sha256:<64 hex digits>, not "
                    f"{_shown(pin['file'])}"))
    if "tables" in pin:
        out.extend(_table_problems(pin, pin["tables"]))
    return out


def _table_problems(pin: Mapping[Any, Any], tables: object) -> list[tuple[Any, Any, str, str]]:
    if not isinstance(tables, Mapping) or not tables:
        return [(pin, "tables", ".tables", "must be a mapping of table names to checksums, "
                 f"not {_shown(tables)}")]
    if len(tables) > MAX_TABLES:
        return [(pin, "tables", ".tables", f"has {len(tables)} tables; at most {MAX_TABLES}")]
    out: list[tuple[Any, Any, str, str]] = []
    for name, value in tables.items():
        if not isinstance(name, str) or not TABLE_NAME.fullmatch(name):
            out.append((tables, name, f".tables.{_shown(name)}",
                        "not a table name (letters, digits, _ and $, optionally schema.table)"))
        elif not isinstance(value, str) or not TABLE_SUM.fullmatch(value):
            out.append((tables, name, f".tables.{name}",
                        f"must be rows:<count>:<32 hex digits>, not {_shown(value)}"))
    return out


# -- computing one ---------------------------------------------------------------------------


def quoted(table: str) -> str:
    """``table`` (a checked :data:`TABLE_NAME`) as a double-quoted SQL identifier."""
    return ".".join('"' + part.replace('"', '""') + '"' for part in table.split("."))


def table_sum(source: DataSource, table: str) -> str:
    """The checksum of ``table``'s rows (raises :class:`PinError` when it cannot be read)."""
    if not TABLE_NAME.fullmatch(table):
        raise PinError(f"{table!r} is not a table name")
    try:
        result = source.execute(f"SELECT * FROM {quoted(table)}", max_rows=MAX_PIN_ROWS,
                                trusted=True)
    except Exception as exc:  # the source's own error, said: the table is gone or unreadable
        raise PinError(f"{table}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                       ) from None
    if result.truncated:
        raise PinError(f"{table}: more rows than a pin reads ({MAX_PIN_ROWS})")
    return result.signature()


def real_names(source: DataSource, names: Iterable[str]) -> list[str]:
    """The tables of ``names`` (lower-cased, as the SQL table extraction gives them) as the
    source spells them, those it has: PostgreSQL tells ``"Album"`` from ``album``. A name the
    source does not have (a CTE, a view sqlglot could not tell) is left out."""
    wanted = {n.lower() for n in names}
    found: list[str] = []
    for name, _ in source.ddl():
        table = str(name)  # (SQLAlchemy gives a str subclass, which YAML cannot write)
        short = table.rsplit(".", 1)[-1].lower()
        if (table.lower() in wanted or short in wanted) and TABLE_NAME.fullmatch(table) \
                and table not in found:
            found.append(table)
    return sorted(found)


def source_files(spec: Mapping[str, Any]) -> list[Path]:
    """The files a file source reads (``path:``, a file or a directory, or a list of them),
    in name order."""
    raw = spec.get("path")
    paths = raw if isinstance(raw, list) else [raw] if raw else []
    files: list[Path] = []
    for entry in paths:
        path = Path(str(entry))
        files.extend(sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir()
                     else [path])
    return files


def file_sum(spec: Mapping[str, Any]) -> str:
    """The digest of the files a file source reads, their names included (a file renamed
    or added is a change)."""
    files = source_files(spec)
    if not files:
        raise PinError("the datasource names no file (path:)")
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode("utf-8", "surrogatepass") + b"\0")
        try:
            with path.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
        except OSError as exc:
            raise PinError(f"{path.name}: cannot read: {exc.strerror or exc}") from None
    return "sha256:" + digest.hexdigest()


def changed(pin: Mapping[str, Any], source: DataSource, spec: Mapping[str, Any],
            sums: dict[str, str]) -> list[str]:
    """The pinned tables (or ``file``) whose data is not what was pinned, each as
    ``name`` or ``name (why)`` when it could not be read. ``sums`` caches what was
    computed for this source (a run computes each table once)."""
    out: list[str] = []
    for table, want in sorted((pin.get("tables") or {}).items()):
        now = sums.get(table)
        if now is None:
            try:
                now = sums[table] = table_sum(source, table)
            except PinError as exc:
                now = sums[table] = f"error: {exc}"
        if now != want:
            out.append(table if not now.startswith("error: ") else f"{table} ({now[7:]})")
    if "file" in pin:
        now = sums.get("\0file")
        if now is None:
            try:
                now = sums["\0file"] = file_sum(spec)
            except PinError as exc:
                now = sums["\0file"] = f"error: {exc}"
        if now != pin["file"]:
            names = ", ".join(p.name for p in source_files(spec)) or "file"
            out.append(names if not now.startswith("error: ") else f"{names} ({now[7:]})")
    return out
