"""``--queryeval-neighbours``: a passing SQL prediction searched for a counterexample database.

Why a module outside :mod:`.neighbours`: the settings are read and each case is asked whether
it wants the search in every run, but the search itself (sqlglot walks, candidate databases)
is imported only when a case does; a run without the option never imports the package (a
test checks ``sys.modules``).

What a case gets (:func:`check`, called by the SQL kind once the case is scored):

* ``neighbour_ex``: 1 when gold and prediction agree on the real database and on every
  candidate database tried, 0 when they differ on any (the real one included), so its mean is
  the run's test-suite accuracy. ``execution_accuracy`` is never changed. A case fails on it
  only when a threshold names it: teams gate on it when they want to. A prediction that runs
  out of its own seconds or raises on a candidate where the gold gives a result differs there
  (a loop or a blow-up on any other data is no pass). A search that checked no candidate
  records no ``neighbour_ex`` (``details.neighbours.unchecked`` says why): "nothing found"
  on nothing looked at is not a pass, and a threshold on the metric fails as on any missing
  metric.
* ``details.neighbours``: the budget spent (databases checked, seconds, how many came from the
  gold's suite built earlier in the session) and, when one was found, the counterexample: its
  SQL (the real DDL and a few INSERTs), both results, and the file it is saved in
  (``<report dir>/queryeval-neighbours/<case id>.sqlite``, beside the first report asked for).
* diff lines (shown when the case fails): ``passes on chinook.sqlite, but on this 3-row
  database the gold returns (2,) and the prediction (3,)``.

The search runs in the source's sandbox worker kind (a :func:`~.._isolation.sandbox.shared_sandbox` of its
own, with the source's ``max_memory``, and a hard deadline of the seconds budget plus the
shrink and proof grace), or in the pytest process for ``isolation: thread``. The worker lives
for the session, so the gold's suite of candidate databases it keeps
(:data:`.search._SUITES`) is built once per gold and reused by every prediction of
that gold (per xdist worker; a killed worker starts again empty).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict, cast

from .._util.wording import plural, shortlist

if TYPE_CHECKING:
    from ..metrics.table import CompareOptions
    from ..metrics.ties import Row
    from ..model import Case, RecordLike
    from ..results import ResultTable
    from .search import SearchResult, Tied

#: The metric this module records.
METRIC = "neighbour_ex"
#: Defaults of the budget (docs/neighbours.md says why).
DEFAULT_DATABASES = 200
DEFAULT_SECONDS = 10.0
DEFAULT_SEED = 0
#: The directory beside the reports that counterexample files are written to.
ARTIFACT_DIR = "queryeval-neighbours"
#: Seconds allowed beyond the budget for the shrink and the proof of a found database (the
#: worker is killed past it).
GRACE = 45.0
#: Result rows shown per side in the failure output.
ROWS_SHOWN = 5


class Counterexample(TypedDict):
    """``details.neighbours.counterexample``: the database on which gold and prediction differ."""

    #: Rows in the database, and per table (tables without rows left out).
    rows: int
    tables: dict[str, int]
    #: Its rows as INSERT statements (the real database's DDL is in the saved file).
    inserts: list[str]
    #: Which phase found it (a mutation of the gold, a random candidate ...).
    origin: str
    #: The engine it was built for (``sqlite``, ``duckdb``, ``postgres``).
    engine: str
    #: ``[columns, rows]`` of the gold's result on it, and of the prediction's (None: failed).
    gold: list[list[Any]]
    predicted: list[list[Any]] | None
    #: Why the prediction gave no result there.
    predicted_failure: NotRequired[str]
    #: The saved file's bytes, from the sandbox worker: popped before the record.
    file_bytes: NotRequired[bytes]
    #: Where the file was saved, relative to the rootdir or the report.
    file: NotRequired[str]


class NeighboursDetail(TypedDict, total=False):
    """``details.neighbours`` of a SQL case (the record's, read by :func:`summary` and the
    report writers): the budget spent and what was found, or why no search ran."""

    #: The database budget, how many candidates were checked, the seconds spent, how many
    #: candidates came from the gold's suite built earlier, the seed.
    databases: int
    checked: int
    seconds: float
    reused: int
    seed: int
    #: Why the search stopped before its budget (None: it used it all).
    stopped: str | None
    #: The counterexample found, None when none was.
    counterexample: Counterexample | None
    #: Candidates on which the gold gave no result.
    gold_failed: int
    #: Why no candidate was checked at all.
    unchecked: str
    #: Why no search ran (the prediction fails, the source is no SQLite or DuckDB file nor a
    #: PostgreSQL server ...).
    skipped: str
    #: The search broke (no metric then).
    error: str


@dataclass(frozen=True)
class Settings:
    """How hard each passing case is searched, and where counterexamples are saved."""

    databases: int = DEFAULT_DATABASES
    seconds: float = DEFAULT_SECONDS
    seed: int = DEFAULT_SEED
    #: The directory of the first report file asked for (None: no file is written).
    report_dir: Path | None = None
    #: Paths in messages are shown relative to this (no machine paths in reports).
    rootdir: Path | None = None


def parse_databases(value: object, where: str, off: bool = True) -> int | None:
    """A budget of databases from the option, the ini value or ``neighbours:`` (None: off,
    where ``off`` allows it); ValueError names ``where``."""
    text = str(value).strip().lower()
    if off and (value is None or value is False or text in ("", "false", "off", "no")):
        return None
    if value is True:
        return DEFAULT_DATABASES
    if text in ("default", "true", "on", "yes"):
        return DEFAULT_DATABASES
    try:
        n = int(text)
    except ValueError:
        n = -1
    if isinstance(value, float) or n < 1:
        raise ValueError(f"{where}: {value!r} is not a number of databases (a positive "
                         f"integer, default {DEFAULT_DATABASES})")
    return n


def parse_seconds(value: object, where: str) -> float:
    try:  # (float() of any other value raises TypeError)
        seconds = float(value) if isinstance(value, str | int | float) else float("nan")
    except (TypeError, ValueError):
        seconds = float("nan")
    if isinstance(value, bool) or not seconds > 0 or seconds == float("inf"):
        raise ValueError(f"{where}: {value!r} is not a number of seconds (positive, default "
                         f"{DEFAULT_SECONDS:g})")
    return seconds


def parse_seed(value: object, where: str) -> int:
    try:
        if isinstance(value, bool | float):
            raise ValueError
        return int(str(value).strip())
    except ValueError:
        raise ValueError(f"{where}: {value!r} is not an integer seed") from None


def parse_suite(value: object, where: str) -> tuple[dict[str, Any] | None, list[str]]:
    """``neighbours:`` of a ``queryeval.yaml``: true, false, a number of databases, or a
    mapping ``{databases: N, seconds: S, seed: K}``; (the settings as a dict, problems)."""
    problems: list[str] = []
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            try:
                if key == "databases":
                    out["databases"] = parse_databases(item, f"{where}.databases", off=False)
                elif key == "seconds":
                    out["seconds"] = parse_seconds(item, f"{where}.seconds")
                elif key == "seed":
                    out["seed"] = parse_seed(item, f"{where}.seed")
                else:
                    problems.append(f"{where}.{key}: unknown key (known: databases, seconds, "
                                    "seed)")
            except ValueError as exc:
                problems.append(str(exc))
        return out, problems
    try:
        n = parse_databases(value, where)
    except ValueError as exc:
        return None, [str(exc)]
    return ({"databases": n} if n is not None else None), problems


def settings_for(case: Case, run_settings: Settings | None,
                 base: Settings | None = None) -> Settings | None:
    """The search a case asks for: the option or ini value (``run_settings``), else its suite's
    ``neighbours:`` over ``base`` (the ini seconds and seed, the report dir), else ``base``
    when a threshold names ``neighbour_ex`` (a gate on it asks for it); None: no search."""
    if run_settings is not None:
        return run_settings
    suite = getattr(case, "neighbours", None)
    base = base or Settings()
    if isinstance(suite, dict):
        return replace(base, **suite)
    if METRIC in case.thresholds:
        return base
    return None


# -- the search, in the sandbox worker -------------------------------------------------------

def search_call(path: str, engine: str, gold: str, predicted: str, ordered: bool,
                compare: CompareOptions, tie_aware: bool, databases: int, seconds: float,
                seed: int, scope: str = "", allow_privileged: bool = False) -> NeighboursDetail:
    """The search for one pair (module level: it runs in a sandbox worker), as plain values;
    ``path`` is a file, or a server's URL for an engine that builds on a server."""
    import tempfile

    from ..metrics.table import compare_tables
    from . import Budget, search
    from .engines import Failed
    from .named import FILE_SUFFIX, engine_named

    eng = engine_named(engine, path, allow_privileged)

    def same(g: ResultTable, p: ResultTable) -> bool:
        return bool(compare_tables(g, p, order_matters=ordered, compare=compare).ex)

    tied = _tied(gold, eng.dialect, compare) if ordered and tie_aware else None
    result = search(Path(path), gold, predicted, same, seed=seed,
                    budget=Budget(databases=databases, seconds=seconds), engine=eng, tied=tied,
                    scope=scope)
    out: NeighboursDetail = {"databases": databases, "checked": result.checked,
                           "seconds": round(result.seconds, 3), "reused": result.reused,
                           "seed": seed, "stopped": result.stopped or None,
                           "counterexample": None}
    if result.gold_failures:
        out["gold_failed"] = result.gold_failures
    found = result.counterexample
    if found is None and result.checked == 0:
        out["unchecked"] = _unchecked(result, databases)
    if found is not None:
        with tempfile.TemporaryDirectory(prefix="queryeval-neighbour-") as tmp:
            file = Path(tmp) / f"counterexample.{FILE_SUFFIX[engine]}"
            found.write(file)
            data = file.read_bytes()
        example: Counterexample = {
            "rows": found.row_count,
            "tables": {t: len(r) for t, r in found.rows.items() if r},
            # the real database's DDL is not repeated: the saved file has it, and it is long
            "inserts": [line for line in found.to_sql().splitlines()
                        if line.startswith("INSERT INTO ")],
            "origin": found.origin, "engine": found.engine,
            "gold": [list(found.gold.columns), [list(r) for r in found.gold.rows]],
            "predicted": None if isinstance(found.predicted, Failed) else [
                list(found.predicted.columns), [list(r) for r in found.predicted.rows]],
            "file_bytes": data,
        }
        out["counterexample"] = example
        if isinstance(found.predicted, Failed):
            example["predicted_failure"] = found.predicted.describe()
    return out


def _unchecked(result: SearchResult, databases: int) -> str:
    """Why a search compared the two queries on no candidate at all."""
    head = "no counterexample database was checked"
    tried = result.gold_failures
    if tried:
        what = f"the gold gave no result on {plural(tried, 'candidate')} tried " \
               f"({result.gold_failure})"
        return f"{head}: {what}" + (f"; {result.stopped}" if result.stopped else "")
    if result.stopped:
        return f"{head}: {result.stopped} before the first of {databases}"
    return f"{head} (none of the {databases} could be built)"


def _tied(gold: str, dialect: str, compare: CompareOptions) -> Tied | None:
    """The tie-aware rule of the case (:mod:`..metrics.ties`) on a candidate: a prediction that orders
    or picks tied rows differently is not a difference (no false alarm from ties)."""
    from ..metrics import ties

    query = ties.keyed_query(gold, dialect)
    if isinstance(query, str):
        return None
    norm = compare.normalise

    def tied(g: ResultTable, p: ResultTable, run: Callable[[str], ResultTable | None]) -> bool:
        assert not isinstance(query, str)

        def rows(sql: str) -> list[Row] | None:
            table = run(sql)
            return None if table is None else table.rows

        keyed = ties.probed_rows(query, rows)  # as the case's own tie analysis reads them
        if keyed is None:
            keyed = rows(query.sql)
        if keyed is None:
            return False
        analysis = ties.analyse(query, keyed, g.rows, norm)
        if isinstance(analysis, str) or not analysis.tied:
            return False
        return ties.tie_match(analysis, p.rows, norm) is not None

    return tied


# -- the case's side ---------------------------------------------------------------------------

def check(case: Case, settings: Settings, src: object, gold: str | None, predicted: str | None,
          execution_accuracy: float | None, ordered: bool, compare: CompareOptions,
          tie_aware: bool, scope: str = "",
          ) -> tuple[dict[str, float], NeighboursDetail, list[str]]:
    """(metrics, ``details.neighbours``, diff lines) of one scored SQL case; ``scope`` names
    the session, whose golds' suites the sandbox worker keeps apart from another session's
    (a process may run several, as pytester's in-process runs do)."""
    if execution_accuracy is None:
        return {}, {"skipped": "no execution result to compare"}, []
    if execution_accuracy != 1.0:
        return {METRIC: 0.0}, {"skipped": "the prediction does not pass on the real database"}, []
    from ..sources import source_type  # the types whose files the search can read

    engine = source_type(getattr(src, "type", None)).neighbours
    path = getattr(src, "path", None)
    spec = case.source_spec or {}
    # a server's source (no file) is searched through its URL when its dialect is the engine's
    url = spec.get("url") if path is None and getattr(src, "dialect", None) == engine else None
    if engine is None or (path is None and not isinstance(url, str)):
        return {}, {"skipped": "counterexample databases are built for SQLite and DuckDB "
                               "files and PostgreSQL servers only"}, []
    if gold is None or predicted is None:
        return {}, {"skipped": "a recorded result has no query to run on other databases"}, []
    target = str(Path(path).resolve()) if path is not None else str(url)
    args = (target, engine, gold, predicted, ordered, compare, tie_aware,
            settings.databases, settings.seconds, settings.seed, scope,
            spec.get("allow_privileged") is True)
    info = _run(src, args, settings)
    if "error" in info:
        scrub = getattr(src, "scrub", None)  # a server's message may carry its URL
        if callable(scrub):
            info["error"] = str(scrub(info["error"]))
        return {}, info, []
    found = info.get("counterexample")
    if found is None and (info.get("unchecked") or not info.get("checked")):
        info.setdefault("unchecked", "no counterexample database was checked")
        return {}, info, []
    if found is None:
        return {METRIC: 1.0}, info, []
    data = found.pop("file_bytes", None)
    opened = None
    if data is not None and settings.report_dir is not None:
        from .named import FILE_SUFFIX

        saved = settings.report_dir / ARTIFACT_DIR / \
            f"{_safe_name(case.id)}.{FILE_SUFFIX.get(engine, engine)}"
        _write(saved, data)
        found["file"] = _shown(saved, settings.rootdir, settings.report_dir)
        opened = openable(saved)
    real = Path(path).name if path is not None else f"the {getattr(src, 'name', 'PostgreSQL')} " \
        "database"
    return {METRIC: 0.0}, info, counterexample_lines(real, found, opened)


def _run(src: object, args: tuple[Any, ...], settings: Settings) -> NeighboursDetail:
    """The search in the source's kind of place: a sandbox worker (``isolation: process``)
    or the pytest process (``isolation: thread``). A search that breaks leaves no metric."""
    from ..errors import QueryEvalError

    try:
        if getattr(src, "isolation", "process") == "thread":
            return search_call(*args)
        from .._isolation.sandbox import shared_sandbox

        box = shared_sandbox("neighbours", max_memory=int(getattr(src, "max_memory", 1 << 30)),
                             preload=("pytest_queryeval.neighbours.search",))
        result: NeighboursDetail = box.call(search_call, *args,
                                          timeout=settings.seconds * 2 + GRACE)
        return result
    except QueryEvalError as exc:
        return {"error": f"the counterexample search stopped: {exc.reason()}"}
    except Exception as exc:  # an explanation must never fail the case
        return {"error": f"the counterexample search failed: {type(exc).__name__}: {exc}"}


def counterexample_lines(real: str, found: Counterexample, where: str | None = None,
                         ) -> list[str]:
    """The failure output: the two results on the counterexample, where it is (``where``, a
    path the user can open, else the record's ``file``), its SQL."""
    rows = int(found["rows"])
    size = f"{rows}-row" if rows != 1 else "1-row"
    failure = found.get("predicted_failure")
    theirs = f"the prediction {failure}" if failure else \
        f"and the prediction {_result(cast('list[list[Any]]', found['predicted'])[1])}"
    lines = [f"{METRIC}: 0: passes on {real}, but on this {size} database the gold returns "
             f"{_result(found['gold'][1])}{',' if failure else ''} {theirs}"]
    where = where or found.get("file")
    lines.append(f"  counterexample ({found['origin']})" + (f": {where}" if where else ""))
    lines.extend("    " + line for line in found["inserts"])
    return lines


def _result(rows: list[list[Any]]) -> str:
    if not rows:
        return "no rows"
    shown = ", ".join(repr(tuple(r)) for r in rows[:ROWS_SHOWN])
    more = f" and {len(rows) - ROWS_SHOWN} more rows" if len(rows) > ROWS_SHOWN else ""
    return (shown if len(rows) == 1 else f"[{shown}]") + more


def _safe_name(case_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", case_id)[:120] or "case"


def _write(target: Path, data: bytes) -> None:
    """Write ``data`` atomically (another xdist worker may write a sibling at once)."""
    from .._util.safefile import write_atomic

    write_atomic(target, data)


def openable(path: Path) -> str:
    """``path`` as the user can open it from where pytest ran: relative to the current
    directory when it lies under it, else absolute. The record's ``file`` stays relative to
    the rootdir or the report (no machine path in a shared report); the printed line named it
    from a report directory outside the rootdir, a path that opened nothing."""
    resolved = path.resolve()
    try:
        return resolved.relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return str(resolved)


def _shown(path: Path, *bases: Path | None) -> str:
    """``path`` relative to the rootdir, else to the report dir (no machine paths)."""
    for base in bases:
        if base is not None:
            try:
                return path.relative_to(base.resolve()).as_posix()
            except ValueError:
                continue
    return path.name


# -- the run's summary ------------------------------------------------------------------------

def summary(records: Sequence[RecordLike]) -> dict[str, Any] | None:
    """The budget spent over the run (the JSON report's ``neighbours``); None: no search."""
    infos: list[tuple[RecordLike, NeighboursDetail]] = []
    for r in records:
        info = (r.get("details") or {}).get("neighbours")
        if isinstance(info, dict):
            infos.append((r, cast(NeighboursDetail, info)))  # as search_call wrote it
    if not infos:
        return None
    ran = [(r, i) for r, i in infos if "checked" in i]
    # a search that compared the two queries on no candidate checked no pass
    searched = [(r, i) for r, i in ran if not i.get("unchecked")]
    found = [str(r.get("id")) for r, i in searched if i.get("counterexample")]
    return {
        "passes_checked": len(searched),
        "counterexamples": len(found),
        "coincidental_passes": found,
        "databases_checked": sum(int(i["checked"]) for _, i in ran),
        "databases_reused": sum(int(i.get("reused") or 0) for _, i in ran),
        "seconds": round(sum(float(i.get("seconds") or 0.0) for _, i in ran), 3),
        "time_budget_reached": sum(1 for _, i in ran if i.get("stopped")),
        "unchecked": [str(r.get("id")) for r, i in ran if i.get("unchecked")],
        "not_searched": len(infos) - len(ran),
    }


def summary_line(agg: dict[str, Any] | None) -> list[str]:
    """One terminal line: how many passes were checked and what it cost."""
    if not agg:
        return []
    n = agg["passes_checked"]
    line = (f"neighbours: {plural(n, 'pass', 'passes')} checked on "
            f"{agg['databases_checked']:,} databases in {agg['seconds']:.1f} s "
            f"({agg['databases_reused']:,} reused from the golds' suites)")
    found = agg["coincidental_passes"]
    if found:
        line += f"; {plural(len(found), 'coincidental pass', 'coincidental passes')}: " \
            + shortlist(found, 5)
    else:
        line += "; no coincidental pass found"
    if agg.get("time_budget_reached"):
        line += f" ({agg['time_budget_reached']} stopped by the seconds budget)"
    unchecked = agg.get("unchecked") or []
    if unchecked:
        line += f"; {plural(len(unchecked), 'case')} with no database checked (no " \
            f"{METRIC}): " + shortlist(unchecked, 5)
    return [line]
