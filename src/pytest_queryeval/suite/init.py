"""``queryeval init``: a first suite for a database, in one command.

Why: a team starting a suite for a new database copied the README's example and adapted it by
hand, guessing table names. ``init`` opens the datasource the way a run will (the same
:func:`~pytest_queryeval.sources.open_source`), reads what it holds (SQL: the tables of
``ddl()``, their columns and a few values; RDF: the classes and properties, most used first) and
writes a suite that already runs: ``queryeval.yaml``, a case file with three example cases whose
golds were executed here (each carries its gold as ``predicted:`` so that ``pytest`` passes at
once, with a comment on replacing them with real ones) and an empty predictions file for the
model's answers. It never overwrites a file: any of the three that exists is named and nothing
is written.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import QueryEvalError

if TYPE_CHECKING:
    from ..sources.base import DataSource

#: Extensions of RDF files (``--kind`` guessed as sparql).
RDF_SUFFIXES = frozenset({".ttl", ".nt", ".nq", ".n3", ".rdf", ".owl", ".xml", ".trig",
                          ".jsonld"})
#: Values shown per column when they are picked for an example.
SAMPLE_ROWS = 5
#: Longest text value used in an example's filter.
VALUE_CHARS = 40
#: The files written, in the folder given.
CONFIG, CASES, PREDICTIONS = "queryeval.yaml", "test_examples.yaml", "predictions.jsonl"
#: Environment variable a URL's password is replaced with (never written to a file).
PASSWORD_VAR = "QUERYEVAL_DB_PASSWORD"


class InitError(Exception):
    """A reason ``init`` wrote nothing."""


@dataclass
class Example:
    id: str
    question: str
    gold: str


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="queryeval init",
        description="Write a first suite for a database: queryeval.yaml, test_examples.yaml "
                    "(three runnable example cases built from its schema) and an empty "
                    "predictions.jsonl. Existing files are never overwritten.")
    p.add_argument("--datasource", required=True, metavar="PATH_OR_URL",
                   help="a SQLite or DuckDB file, a SQLAlchemy URL, an RDF file or a SPARQL "
                        "endpoint URL (with --kind sparql)")
    p.add_argument("--kind", choices=("sql", "sparql"), default=None,
                   help="the query language (default: sparql for an RDF file, else sql)")
    p.add_argument("--dir", default=".", metavar="DIR",
                   help="the folder to write the suite in (default: the current one)")
    p.add_argument("--name", default=None, metavar="NAME",
                   help="the datasource's name in queryeval.yaml (default: from the file)")
    return p


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    try:
        written = init(args.datasource, kind=args.kind, directory=Path(args.dir),
                       name=args.name)
    except InitError as exc:
        print(f"queryeval init: {exc}", file=sys.stderr)
        return 4
    for path in written:
        print(f"wrote {path}")
    print(f"next: cd {args.dir} && pytest   (then replace the examples with your own cases)")
    return 0


def init(datasource: str, *, kind: str | None = None, directory: Path = Path("."),
         name: str | None = None) -> list[Path]:
    """Write the three files into ``directory``; their paths. InitError: nothing written."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise InitError(f"--dir {directory}: exists and is not a directory; nothing was "
                        "written") from None
    except OSError as exc:
        raise InitError(f"--dir {directory}: cannot be made: {exc.strerror or exc}; nothing "
                        "was written") from None
    targets = [directory / n for n in (CONFIG, CASES, PREDICTIONS)]
    existing = [str(p) for p in targets if os.path.lexists(p)]
    if existing:
        raise InitError(f"{', '.join(existing)} already exist(s): not overwritten (remove "
                        "it or choose another --dir); nothing was written")
    is_url = "://" in datasource
    if kind is None:
        kind = "sparql" if not is_url and Path(datasource).suffix.lower() in RDF_SUFFIXES \
            else "sql"
    source_name = name or _name(datasource, is_url)
    spec, written_spec, note = _spec(datasource, kind, directory, is_url)
    from ..sources import open_source

    try:
        source = open_source(source_name, spec)
        try:
            examples = _sql_examples(source) if kind == "sql" else _sparql_examples(source)
        finally:
            source.close()
    except QueryEvalError as exc:
        raise InitError(f"cannot read {datasource}: {exc.reason()}") from None
    if len(examples) < 3:
        raise InitError(f"{datasource} holds too little to build three examples "
                        f"({'no table with a row' if kind == 'sql' else 'no typed resource'})")
    texts = [_config_text(source_name, written_spec, kind, note),
             _cases_text(source_name, kind, examples[:3]), ""]
    for path, text in zip(targets, texts, strict=True):
        try:
            with open(path, "x", encoding="utf-8") as fh:  # never over a file made meanwhile
                fh.write(text)
        except FileExistsError:
            raise InitError(f"{path} appeared while init ran: not overwritten") from None
    return targets


def _name(datasource: str, is_url: bool) -> str:
    stem = urllib.parse.urlsplit(datasource).path.rsplit("/", 1)[-1] if is_url \
        else Path(datasource).stem
    cleaned = re.sub(r"[^A-Za-z0-9_]+", "_", stem.split(".")[0]).strip("_").lower()
    return cleaned or "db"


def _spec(datasource: str, kind: str, directory: Path, is_url: bool,
          ) -> tuple[dict[str, object], dict[str, object], str | None]:
    """(the spec opened here, the spec written to queryeval.yaml, a note for the user)."""
    if is_url:
        scheme = urllib.parse.urlsplit(datasource).scheme.lower()
        if kind == "sparql":
            if scheme not in ("http", "https"):
                raise InitError(f"--kind sparql needs an RDF file or an http(s) SPARQL "
                                f"endpoint, not a {scheme}: URL")
            spec: dict[str, object] = {"type": "sparql", "endpoint": datasource}
            return spec, spec, None
        parts = urllib.parse.urlsplit(datasource)
        if parts.password is None:
            spec = {"type": "sqlalchemy", "url": datasource}
            return spec, spec, None
        netloc = parts.netloc.replace(f":{parts.password}@", f":${{{PASSWORD_VAR}}}@", 1)
        return ({"type": "sqlalchemy", "url": datasource},
                {"type": "sqlalchemy", "url": urllib.parse.urlunsplit(parts._replace(
                    netloc=netloc))},
                f"the password is read from ${PASSWORD_VAR}: set it before running pytest")
    from .._util.safefile import unreadable

    problem = unreadable(datasource)  # a device or a FIFO is there, not "no such file"
    if problem:
        raise InitError(f"{datasource}: {problem} (a SQLite, DuckDB or RDF file, or a URL)")
    path = Path(datasource).resolve()
    if path.is_dir():
        raise InitError(f"{datasource}: a directory, not a regular file (a SQLite, DuckDB or "
                        "RDF file, or a URL)")
    if not path.is_file():
        raise InitError(f"{datasource}: no such file (a SQLite, DuckDB or RDF file, or a URL)")
    if kind == "sparql":
        source_type = "rdf"
    else:
        with path.open("rb") as fh:
            head = fh.read(16)
        if head.startswith(b"SQLite format 3\0"):
            source_type = "sqlite"
        elif head[8:12] == b"DUCK":
            source_type = "duckdb"
        else:
            raise InitError(f"{datasource}: neither a SQLite nor a DuckDB database file "
                            "(an RDF file? add --kind sparql)")
    try:  # relative to the suite, so the folder can move with its data
        shown = os.path.relpath(path, directory.resolve())
    except ValueError:  # another drive
        shown = str(path)
    return ({"type": source_type, "path": str(path)},
            {"type": source_type, "path": Path(shown).as_posix()}, None)


# ------------------------------------------------------------------------------- SQL


def _quote(name: str, dialect: str | None) -> str:
    if dialect in ("mysql", "bigquery", "databricks", "spark", "hive"):
        return "`" + name.replace("`", "``") + "`"
    return '"' + name.replace('"', '""') + '"'


def _literal(value: object) -> str | None:
    """``value`` as an SQL literal that compares exactly (whole numbers, short one-line text),
    else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value and len(value) <= VALUE_CHARS \
            and value.isprintable() and value == value.strip():
        return "'" + value.replace("'", "''") + "'"
    return None


def _sql_examples(source: DataSource) -> list[Example]:
    dialect = source.dialect
    tables: list[tuple[str, list[str], list[tuple[object, ...]]]] = []
    for table, _ddl in source.ddl():
        sample = _sample(source, table, dialect)
        if sample is not None:
            tables.append((table, *sample))
    out: list[Example] = []
    if not tables:
        return out
    first = tables[0]
    out.append(Example(f"count-{_slug(first[0])}", f"How many rows does {first[0]} hold?",
                       f"SELECT count(*) FROM {_quote(first[0], dialect)}"))
    # a filter on a value of the data, from the next table when there is one
    for table, columns, rows in tables[1:] + tables[:1]:
        picked = _value(columns, rows)
        if picked is not None:
            column, literal, shown = picked
            out.append(Example(
                f"{_slug(table)}-with-{_slug(column)}",
                f"How many {table} rows have {column} {shown}?",
                f"SELECT count(*) FROM {_quote(table, dialect)} WHERE "
                f"{_quote(column, dialect)} = {literal}"))
            break
    # the distinct values of a column, in order
    table, columns, rows = tables[2] if len(tables) > 2 else tables[-1]
    usable = [(c, any(isinstance(r[i], str) for r in rows)) for i, c in enumerate(columns)
              if any(_literal(r[i]) is not None for r in rows)]
    column = next((c for c, text in usable if text), usable[0][0] if usable else columns[0])
    qc = _quote(column, dialect)
    out.append(Example(f"{_slug(table)}-{_slug(column)}-values",
                       f"Which distinct {column} values does {table} hold?",
                       f"SELECT DISTINCT {qc} FROM {_quote(table, dialect)} ORDER BY {qc}"))
    if len(out) < 3:  # no usable value: the row count of another table
        last = tables[1] if len(tables) > 1 else tables[0]
        out.insert(1, Example(f"count-{_slug(last[0])}-again" if last is first
                              else f"count-{_slug(last[0])}",
                              f"What is the number of rows in {last[0]}?",
                              f"SELECT count(*) AS n FROM {_quote(last[0], dialect)}"))
    return out


def _sample(source: DataSource, table: str, dialect: str | None,
            ) -> tuple[list[str], list[tuple[object, ...]]] | None:
    """``(columns, rows)`` of a few rows of ``table``, or None when it has none to show. A
    table whose rows the source refuses whole (a 200 MB blob is over its ``max_bytes``) is
    sampled column by column, the refused columns left out: the examples come from the
    others, never a refusal of the whole datasource (issue 50 item 7)."""
    q = _quote(table, dialect)
    try:
        result = source.execute(f"SELECT * FROM {q} LIMIT {SAMPLE_ROWS}", trusted=True)
    except QueryEvalError:
        pass
    else:
        return (list(map(str, result.columns)), list(result.rows)) if result.rows else None
    try:
        names = [str(c) for c in source.execute(f"SELECT * FROM {q} WHERE 1 = 0",
                                                trusted=True).columns]
    except QueryEvalError:
        return None
    kept: list[str] = []
    values: list[list[object]] = []
    for name in names:
        try:
            column = source.execute(f"SELECT {_quote(name, dialect)} FROM {q} LIMIT "
                                    f"{SAMPLE_ROWS}", trusted=True)
        except QueryEvalError:
            continue
        kept.append(name)
        values.append([row[0] for row in column.rows])
    if not kept or not values[0]:
        return None
    return kept, list(zip(*values, strict=False))


def _value(columns: list[str], rows: list[tuple[object, ...]]) -> tuple[str, str, str] | None:
    """(column, SQL literal, as shown in the question) of a text value, else a whole number."""
    for want_text in (True, False):
        for i, column in enumerate(columns):
            for row in rows:
                value = row[i]
                literal = _literal(value)
                if literal is not None and isinstance(value, str) == want_text:
                    return column, literal, (f"'{value}'" if want_text else str(value))
    return None


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:30] or "x"


# ------------------------------------------------------------------------------- SPARQL

_CLASSES = ("SELECT ?class (COUNT(?s) AS ?n) WHERE { ?s a ?class } GROUP BY ?class "
            "ORDER BY DESC(?n) ?class LIMIT 5")
_PROPERTIES = ("SELECT ?property (COUNT(*) AS ?n) WHERE { ?s ?property ?o } "
               "GROUP BY ?property ORDER BY DESC(?n) ?property LIMIT 5")


RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"


def _iri(term: object) -> str | None:
    text = str(getattr(term, "value", term)).strip("<>")
    return text if re.fullmatch(r"[a-zA-Z][a-zA-Z0-9+.-]*:[^\s<>\"{}|^`\\]*", text) else None


def _local(iri: str) -> str:
    return re.split(r"[#/:]", iri.rstrip("/#"))[-1] or iri


def _sparql_examples(source: DataSource) -> list[Example]:
    classes = [c for c in (_iri(row[0]) for row in
                           source.execute(_CLASSES, trusted=True).rows) if c]
    props = [p for p in (_iri(row[0]) for row in
                         source.execute(_PROPERTIES, trusted=True).rows) if p]
    props = [p for p in props if p != RDF_TYPE] or props  # rdf:type says little
    out: list[Example] = []
    if classes:
        out.append(Example(f"count-{_slug(_local(classes[0]))}",
                           f"How many {_local(classes[0])} are there?",
                           f"SELECT (COUNT(?s) AS ?n) WHERE {{ ?s a <{classes[0]}> }}"))
    if props:
        out.append(Example(f"uses-of-{_slug(_local(props[0]))}",
                           f"How many times is {_local(props[0])} stated?",
                           f"SELECT (COUNT(*) AS ?n) WHERE {{ ?s <{props[0]}> ?o }}"))
    if len(classes) > 1:
        out.append(Example(f"all-{_slug(_local(classes[1]))}",
                           f"Which {_local(classes[1])} does the graph hold?",
                           f"SELECT ?s WHERE {{ ?s a <{classes[1]}> }}"))
    elif classes:
        out.append(Example("typed-subjects", "How many resources have a type?",
                           "SELECT (COUNT(DISTINCT ?s) AS ?n) WHERE { ?s a ?class }"))
    return out


# ------------------------------------------------------------------------------- files


def _config_text(name: str, spec: dict[str, object], kind: str, note: str | None) -> str:
    lines = ["# queryeval.yaml, written by queryeval init: where queries run, where your",
             "# model's answers are, what must hold.",
             *([f"# {note}"] if note else []),
             f"datasources: {{{json.dumps(name)}: {_flow(spec)}}}",
             "predictions: {source: file, path: predictions.jsonl}  # one line per case id: "
             '{"id": ..., "predicted": ...}']
    if kind == "sql":
        lines.append("thresholds: {execution_accuracy: 1.0}  # a case passes when its rows are "
                     "the gold's rows")
    lines.append("gates: {pass_rate: 0.9}  # the run fails below 90% passing cases")
    return "\n".join(lines) + "\n"


def _flow(spec: dict[str, object]) -> str:
    return "{" + ", ".join(f"{k}: {json.dumps(v, ensure_ascii=False)}"
                           for k, v in spec.items()) + "}"


def _cases_text(name: str, kind: str, examples: list[Example]) -> str:
    lines = ["# Example cases written by queryeval init from the datasource's schema: their",
             "# golds ran when they were written. Each carries its gold as predicted: so that",
             "# pytest passes at once; a real case has only a question and the gold you",
             "# accept, and your model's answer goes into predictions.jsonl under the case's",
             '# id ({"id": "...", "predicted": "..."}). Replace these with your own questions',
             "# and delete their predicted: lines.",
             f"kind: {kind}", f"datasource: {json.dumps(name)}", "cases:"]
    for ex in examples:
        gold = json.dumps(ex.gold, ensure_ascii=False)
        lines += [f"  - id: {json.dumps(ex.id)}",
                  f"    question: {json.dumps(ex.question, ensure_ascii=False)}",
                  f"    gold: {gold}",
                  f"    predicted: {gold}  # the gold itself: remove once your model answers"]
    return "\n".join(lines) + "\n"
