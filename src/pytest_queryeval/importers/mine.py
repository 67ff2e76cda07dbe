"""``queryeval mine``: production traces become regression cases (issue 63).

Why: teams already record what their text-to-query assistant or data agent does in production
(OpenInference / OpenTelemetry spans from Phoenix, Logfire, LangSmith) and ask for those traces
as a regression suite. The plugin already reads spans as a prediction
(:mod:`..agents.spans`); this reads them the other way round: each trace's question, the
queries its tools ran and their results, its final answer, and writes ordinary case files
whose gold is the query production ran, marked ``reviewed: false`` until a person confirms
it (a run reports such cases apart: :func:`..report.terminal.unreviewed_lines`).

What a trace becomes (docs/mining.md):

* the question: the root span's ``input.value`` (its ``question``/``input`` when JSON), else
  the last user message of its first LLM span;
* the gold: the last query a query tool (``run_query``, ``execute_sql``, ...) ran without an
  error; a trace that ran none, or ended in an error, is an abstention candidate
  (``expect: abstain``, tag ``mined-error``); one whose last tool asked the user back
  (``ask_user``, ...) is a clarification candidate (``expect: clarify``, tag
  ``mined-clarify``), and one whose last tool declined (``abstain``, ...) an abstention
  candidate (tag ``mined-refusal``);
* ``agent: {trajectory: [...]}`` with the tools it called, in order, with ``--trajectory``;
* tags from the spans' ``tag.tags``, and ``provenance: {trace, source, traces}``.

Traces whose normalised question and observed result are the same are one case (the ratio
is printed); ``--sample N`` keeps N cases stratified by tool pattern, error and latency.
Every string is masked (:func:`.._util.secrets.mask_tokens`) before it is written, and what
was masked is listed (by form, never the secret). Nothing is overwritten.

Why one module of this size: reading spans into traces, deciding what each trace becomes,
deduplicating, sampling and masking are the steps of one command over one in-memory list of
traces; the pins (:mod:`.pinning`) and the span grammar (:mod:`..agents.spans`) live apart.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._util.boundedio import MAX_JSON_DEPTH, depth_exceeds
from .._util.safefile import located_utf8, read_bytes
from .._util.secrets import mask_tokens
from ..agents.spans import TrajectoryError, span_attributes, span_list, span_start

#: Tool names whose ``query``/``sql`` argument is a query run on the datasource.
QUERY_TOOLS = frozenset({"run_query", "execute_sql", "sql_db_query", "query", "sql",
                         "run_sql", "execute_query"})
#: Tool names by which an agent asks the user back (a clarification candidate), or declines
#: (an abstention candidate), whatever it ran before.
ASK_TOOLS = frozenset({"ask_user", "ask_human", "clarify", "ask_clarification"})
DECLINE_TOOLS = frozenset({"abstain", "decline", "refuse"})
#: The case file ``queryeval mine`` writes in ``--out``.
CASE_FILE = "test_mined.yaml"
SUMMARY_FILE = "mined.json"
USAGE, OK = 2, 0


class MineError(ValueError):
    """A span file that cannot be read, located by file and line."""


@dataclass
class Trace:
    """What one trace recorded, read from its spans."""

    trace_id: str
    source: str
    question: str | None = None
    answer: str | None = None
    #: (query, result text, errored) of each query tool call, in order
    queries: list[tuple[str, str, bool]] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    errored: bool = False
    tags: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def observed(self) -> tuple[str, str] | None:
        """The last query that ran without an error, with its result text."""
        for query, result, errored in reversed(self.queries):
            if not errored:
                return query, result
        return None


# -- reading -------------------------------------------------------------------------------


def read_spans(path: Path) -> list[Mapping[str, Any]]:
    """The spans of one file: a JSON document (OTLP or a list of spans) or JSON lines (a span
    or an OTLP document per line). Raises :class:`MineError` naming the file and line."""
    try:  # bounded, a regular file only (a FIFO or a device would be read forever)
        text = located_utf8(read_bytes(path, "predictions"))
    except OSError as exc:
        raise MineError(f"{path}: cannot read: {exc}") from None
    except ValueError as exc:
        raise MineError(f"{path}:{exc}") from None
    try:
        return span_list(_json(text, f"{path}"))
    except ValueError:
        pass  # not one document: JSON lines
    spans: list[Mapping[str, Any]] = []
    for line_no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = _json(line, f"{path}:{line_no}")
        except MineError:
            raise
        except ValueError as exc:
            raise MineError(f"{path}:{line_no}: not JSON: {exc}") from None
        try:
            spans.extend(span_list(data) if isinstance(data, Mapping) and "resourceSpans"
                         in data else span_list([data]))
        except TrajectoryError as exc:
            raise MineError(f"{path}:{line_no}: {exc}") from None
    return spans


def _json(text: str, where: str) -> Any:
    """``text`` parsed, its nesting bounded as the predictions file bounds it (a hostile
    export nested deeper ends the decoder's stack, or every walk over it)."""
    try:
        data = json.loads(text)
    except RecursionError:
        data = None
    else:
        if not depth_exceeds(data, MAX_JSON_DEPTH):
            return data
    raise MineError(f"{where}: nested deeper than {MAX_JSON_DEPTH} levels")


def _trace_id(span: Mapping[str, Any]) -> str:
    context = span.get("context")
    found = span.get("traceId") or span.get("trace_id") or (
        context.get("trace_id") if isinstance(context, Mapping) else None)
    return str(found or "")


def _parent(span: Mapping[str, Any]) -> str:
    return str(span.get("parentSpanId") or span.get("parent_span_id") or span.get("parent_id")
               or "")


def _errored(span: Mapping[str, Any], attrs: Mapping[str, Any]) -> bool:
    status = span.get("status")
    code = status.get("code") if isinstance(status, Mapping) else span.get("status_code")
    return str(code).upper() in ("2", "STATUS_CODE_ERROR", "ERROR") or bool(
        attrs.get("exception.message"))


def group_traces(spans: Iterable[tuple[Mapping[str, Any], str]]) -> list[Trace]:
    """The spans (each with the file it came from) by trace, across files: an exporter may
    split one trace over several; each trace read into a :class:`Trace` (a span without a
    trace id is a trace of its own), its source the file of its first span."""
    by_trace: dict[str, tuple[str, list[Mapping[str, Any]]]] = {}
    for n, (span, source) in enumerate(spans):
        by_trace.setdefault(_trace_id(span) or f"span-{n}", (source, []))[1].append(span)
    return [read_trace(tid, group, source) for tid, (source, group) in by_trace.items()]


def read_trace(trace_id: str, spans: list[Mapping[str, Any]], source: str) -> Trace:
    trace = Trace(trace_id, source)
    spans = sorted(spans, key=span_start)
    starts = [span_start(s) for s in spans]
    ends = [_end(s) for s in spans]
    if any(starts) and any(ends):
        trace.seconds = max(0.0, (max(ends) - min(s for s in starts if s)) / 1e9)
    for n, span in enumerate(spans):
        attrs = span_attributes(span, n)
        kind = str(attrs.get("openinference.span.kind", "")).upper()
        trace.errored |= _errored(span, attrs)
        trace.tags.extend(t for t in _tags(attrs) if t not in trace.tags)
        if not _parent(span) and trace.question is None:
            trace.question = _text_of(attrs.get("input.value"), ("question", "input", "query"))
            trace.answer = _text_of(attrs.get("output.value"), ("answer", "output", "content"))
        if kind == "LLM" and trace.question is None:
            trace.question = _last_user_message(attrs)
        if kind == "TOOL":
            _tool_span(trace, span, attrs)
    return trace


def _end(span: Mapping[str, Any]) -> int:
    for key in ("endTimeUnixNano", "end_time_unix_nano", "end_time"):
        value = span.get(key)
        if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
            return int(value)
    return 0


def _tool_span(trace: Trace, span: Mapping[str, Any], attrs: Mapping[str, Any]) -> None:
    name = str(attrs.get("tool.name") or span.get("name") or "")
    trace.tools.append(name)
    if name not in QUERY_TOOLS:
        return
    arguments = attrs.get("tool.parameters", attrs.get("input.value"))
    query = _text_of(arguments, ("query", "sql", "statement"))
    if query:
        output = attrs.get("output.value", "")
        result = output if isinstance(output, str) else json.dumps(output, sort_keys=True)
        trace.queries.append((query, result, _errored(span, attrs) or _error_result(result)))


def _error_result(result: str) -> bool:
    try:
        data = json.loads(result)
    except ValueError:
        return result.lower().startswith("error")
    return isinstance(data, Mapping) and bool(data.get("error"))


def _text_of(value: object, keys: Sequence[str]) -> str | None:
    """A text value, or the first of ``keys`` of a JSON mapping written as text."""
    if isinstance(value, str):
        try:
            data = json.loads(value)
        except ValueError:
            return value.strip() or None
        value = data
    if isinstance(value, Mapping):
        for key in keys:
            if isinstance(value.get(key), str) and value[key].strip():
                return str(value[key]).strip()
        return None
    return value.strip() or None if isinstance(value, str) else None


_IN_ROLE = re.compile(r"llm\.input_messages\.(\d+)\.message\.role")


def _last_user_message(attrs: Mapping[str, Any]) -> str | None:
    users = sorted(int(m.group(1)) for key, value in attrs.items()
                   if (m := _IN_ROLE.fullmatch(key)) and value == "user")
    if not users:
        return None
    content = attrs.get(f"llm.input_messages.{users[-1]}.message.content")
    return content.strip() or None if isinstance(content, str) else None


def _tags(attrs: Mapping[str, Any]) -> list[str]:
    raw = attrs.get("tag.tags")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raw = [raw]
    tags = [str(t) for t in raw] if isinstance(raw, list) else []
    return [re.sub(r"[^A-Za-z0-9_.+-]", "-", t).strip("-") for t in tags if t.strip()]


# -- cases ---------------------------------------------------------------------------------


def _normal_question(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def deduplicate(traces: Sequence[Trace]) -> list[tuple[Trace, int]]:
    """One trace per normalised question and observed result (error traces per question and
    tool pattern), each with how many traces it stands for, in first-seen order."""
    kept: dict[tuple[str, str], list[Any]] = {}
    for trace in traces:
        if not trace.question:
            continue
        observed = trace.observed
        key = (_normal_question(trace.question),
               observed[1] if observed else "error:" + ",".join(trace.tools))
        if key in kept:
            kept[key][1] += 1
        else:
            kept[key] = [trace, 1]
    return [(t, n) for t, n in kept.values()]


def stratified(cases: list[tuple[Trace, int]], size: int, seed: int,
               ) -> list[tuple[Trace, int]]:
    """``size`` cases drawn round-robin over strata (tool pattern, error, latency above the
    median), shuffled with ``seed``: every kind of trace is represented before any twice."""
    if size >= len(cases):
        return cases
    seconds = sorted(t.seconds for t, _ in cases)
    median = seconds[len(seconds) // 2]
    strata: dict[tuple[Any, ...], list[tuple[Trace, int]]] = {}
    for item in cases:
        t = item[0]
        strata.setdefault((tuple(t.tools), t.observed is None, t.seconds > median), []).append(
            item)
    rng = random.Random(seed)
    groups = [strata[k] for k in sorted(strata, key=repr)]
    for group in groups:
        rng.shuffle(group)
    picked: list[tuple[Trace, int]] = []
    while len(picked) < size:
        for group in groups:
            if group and len(picked) < size:
                picked.append(group.pop())
    order = {id(item[0]): n for n, item in enumerate(cases)}
    return sorted(picked, key=lambda item: order[id(item[0])])


@dataclass
class Masked:
    """What was masked, by case and field (never the secret)."""

    found: list[str] = field(default_factory=list)
    literals: tuple[str, ...] = ()

    def text(self, value: str, where: str) -> str:
        out, forms = mask_tokens(value, self.literals)
        self.found.extend(f"{where}: {form}" for form in forms)
        return out


def case_of(trace: Trace, count: int, masked: Masked, *, trajectory: bool) -> dict[str, Any]:
    case_id = "mined-" + (re.sub(r"[^A-Za-z0-9]", "", trace.trace_id)[:16] or "trace")
    question = masked.text(trace.question or "", f"{case_id}.question")
    case: dict[str, Any] = {"id": case_id, "question": question}
    observed = trace.observed
    tags = list(trace.tags)
    last = trace.tools[-1] if trace.tools else ""
    if last in ASK_TOOLS:  # production asked the user back: a candidate only
        case["expect"] = "clarify"
        tags.append("mined-clarify")
    elif last in DECLINE_TOOLS:  # production declined: a candidate only
        case["expect"] = "abstain"
        tags.append("mined-refusal")
    elif observed is None or (trace.errored and not trace.answer):
        case["expect"] = "abstain"  # production ran no query that worked: a candidate only
        tags.append("mined-error")
    else:
        case["gold"] = masked.text(observed[0], f"{case_id}.gold")
    if tags:
        case["tags"] = tags
    if trajectory and trace.tools:
        case["agent"] = {"trajectory": list(trace.tools)}
    case["reviewed"] = False
    case["provenance"] = {"trace": masked.text(trace.trace_id, f"{case_id}.provenance"),
                          "source": trace.source, "traces": count}
    return case


# -- the command ---------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="queryeval mine", description="Turn recorded spans (OpenInference / OTLP JSON or "
        "JSON lines) into a case file of unreviewed cases.")
    ap.add_argument("spans", nargs="*", type=Path, help="span files (.json or .jsonl)")
    ap.add_argument("--datasource", help="the suite's datasource the traces ran on")
    ap.add_argument("--out", type=Path, help="the folder the case file goes to")
    ap.add_argument("--config", type=Path, default=None,
                    help="the queryeval.yaml defining --datasource, for the pins (default: "
                    "the one in --out or above it)")
    ap.add_argument("--no-pin", action="store_true",
                    help="write no pin: (the cases replay on the data as it is then)")
    ap.add_argument("--refresh", type=Path, default=None, metavar="DIR",
                    help="re-pin the mined cases in DIR on their datasource's data now "
                    "(after a reviewed change); rewrites only each pin: line")
    ap.add_argument("--kind", default="sql", help="the kind of the queries (default sql)")
    ap.add_argument("--trajectory", action="store_true",
                    help="write each trace's tool sequence as the gold agent.trajectory")
    ap.add_argument("--sample", type=int, default=None,
                    help="keep N cases, stratified by tool pattern, error and latency")
    ap.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    ap.add_argument("--mask", action="append", default=[],
                    help="a literal value to mask wherever it appears (repeatable)")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.refresh is not None:
        if args.spans or args.out:
            parser.error("--refresh DIR takes no span files and no --out")
        return refresh(args.refresh, args.config)
    if not args.spans or not args.datasource or not args.out:
        parser.error("give span files, --datasource and --out (or --refresh DIR)")
    out: Path = args.out
    targets = [out / CASE_FILE, out / SUMMARY_FILE]
    existing = [str(p) for p in targets if p.exists() or p.is_symlink()]
    if existing:
        print(f"queryeval mine: {', '.join(existing)} exists: nothing written (mine never "
              "overwrites a file; choose another --out)", file=sys.stderr)
        return USAGE
    spans: list[tuple[Mapping[str, Any], str]] = []
    try:
        for path in args.spans:
            spans.extend((span, path.name) for span in read_spans(path))
    except MineError as exc:
        print(f"queryeval mine: {exc}", file=sys.stderr)
        return USAGE
    return _write(args, group_traces(spans), targets)


def _write(args: argparse.Namespace, traces: list[Trace], targets: list[Path]) -> int:
    kept = deduplicate(traces)
    questions = sum(1 for t in traces if t.question)
    if args.sample is not None:
        kept = stratified(kept, max(0, args.sample), args.seed)
    masked = Masked(literals=tuple(v for v in args.mask if v))
    cases = [case_of(t, n, masked, trajectory=args.trajectory) for t, n in kept]
    pinned = [] if args.no_pin else pin_cases(cases, args)
    header = (f"# Mined by queryeval mine from {len(traces)} traces: unreviewed cases whose gold\n"
              "# is the query production ran. Review each (set reviewed: true), or remove it.\n")
    body = case_yaml({"kind": args.kind, "datasource": args.datasource, "cases": cases})
    args.out.mkdir(parents=True, exist_ok=True)
    targets[0].write_text(header + body, encoding="utf-8")
    summary = {"traces": len(traces), "with_question": questions, "cases": len(cases),
               "deduplication_ratio": round(questions / len(kept), 4) if kept else None,
               "masked": masked.found}
    targets[1].write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(f"queryeval mine: {len(traces)} traces, {questions} with a question, "
          f"{len(cases)} cases written to {targets[0]} (deduplication "
          f"{summary['deduplication_ratio']}x)")
    print(f"masked: {len(masked.found)} strings" + "".join(f"\n  {m}" for m in masked.found))
    for line in pinned:
        print(line)
    return OK


# -- pins ----------------------------------------------------------------------------------


def pin_cases(cases: list[dict[str, Any]], args: argparse.Namespace) -> list[str]:
    """Each case with a gold pinned to the data its gold reads now (``pin:``), and the lines
    that say what was pinned (or why nothing was)."""
    from ..errors import QueryEvalError
    from ..sources.pins import PinError
    from .pinning import Pinner, find_datasource

    spec, said = find_datasource(args.datasource, args.out, args.config)
    if spec is None:
        return [f"pins: none ({said}); the cases replay on the data as it is then"]
    pinner = Pinner(args.datasource, spec)
    notes: list[str] = []
    count = 0
    try:
        for case in cases:
            if "gold" not in case:
                continue  # an abstention candidate reads no data
            try:
                pin = pinner.pin(case["gold"])
            except (PinError, QueryEvalError) as exc:
                notes.append(f"  {case['id']}: not pinned: {exc}")
                continue
            if pin is not None:
                case["pin"] = OneLine(pin)
                count += 1
    finally:
        pinner.close()
    tables = sorted(k for k in pinner.sums if k != "\0file")
    what = f"{len(tables)} tables: {', '.join(tables)}" if tables else "its files"
    return [f"pins: {count} cases pinned to datasource {args.datasource!r} ({said}), "
            f"{what}", *notes]


class OneLine(dict):  # type: ignore[type-arg]
    """A mapping written on one line (a case's ``pin:``, which ``--refresh`` rewrites)."""


def case_yaml(data: Mapping[str, Any]) -> str:
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def one_line(dumper: yaml.SafeDumper, value: OneLine) -> yaml.Node:
        return dumper.represent_mapping("tag:yaml.org,2002:map", dict(value), flow_style=True)

    Dumper.add_representer(OneLine, one_line)
    return str(yaml.dump(data, Dumper=Dumper, sort_keys=False, allow_unicode=True,
                         width=1 << 30))


def refresh(directory: Path, config: Path | None) -> int:
    """``--refresh DIR``: every case file in DIR re-pinned; a file any of whose pins is wrong
    is left as it is, the error located."""
    from .._util.safefile import write_atomic
    from .pinning import Pinner, refresh_file

    if not directory.is_dir():
        print(f"queryeval mine: --refresh {directory}: not a folder", file=sys.stderr)
        return USAGE
    pinners: dict[str, Pinner | str] = {}
    failed = False
    try:
        for path in sorted(p for p in directory.iterdir()
                           if p.suffix in (".yaml", ".yml") and p.name != "queryeval.yaml"):
            text, done = refresh_file(path, str(path), pinners, directory, config)
            for error in done.errors:
                print(f"queryeval mine: {error}", file=sys.stderr)
            failed |= bool(done.errors)
            if text is not None:
                write_atomic(path, text.encode("utf-8"))
            if done.errors:
                print(f"{path}: not written (its pins have errors)")
                continue
            print(f"{path}: {len(done.changed)} re-pinned, {done.same} unchanged"
                  + "".join(f"\n  {c}" for c in done.changed))
    finally:
        for pinner in pinners.values():
            if not isinstance(pinner, str):
                pinner.close()
    return USAGE if failed else OK
