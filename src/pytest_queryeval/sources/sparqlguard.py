"""Read-only guard for SPARQL: classify a request before any engine or endpoint sees it.

The request is parsed with a real SPARQL 1.1 grammar (rdflib's parser, the one the ``rdflib``
engine runs), not scanned: a hand-written scanner and the engines disagreed on comments,
escapes (``\\u0053ELECT``), long strings and prefixed names with escapes (``ex:a\\'``), and every
disagreement was a way past it. What the guard decides comes from the parse tree:

* only a query passes, and of the query forms only SELECT and ASK (CONSTRUCT and DESCRIBE
  return graphs, not tables); a request that parses as SPARQL Update is refused naming its
  operations, anything else is refused as a syntax error;
* ``SERVICE`` (an IRI or a variable, anywhere: sub-queries, EXISTS, OPTIONAL) and the
  ``FROM`` / ``FROM NAMED`` IRIs are read, with prefixes and BASE resolved, for the local
  sources to refuse (:func:`check_query`'s ``allow_service`` and ``graphs``);
* ``ORDER BY`` of the outer query and ``SELECT *`` are read for scoring.

rdflib's parser is pure Python and slow on some inputs (quadratic on ``1+1+...``, deep
recursion on nesting), so the parse is an untrusted step: it runs in a sandbox worker process
(:mod:`pytest_queryeval._isolation.sandbox`) under a hard deadline and a memory ceiling, on a request of
at most :data:`MAX_QUERY_CHARS` characters; a parse that does not finish refuses the request.
Verdicts are cached per text, so gold queries and repeated predictions are parsed once.

The guard is the first layer. The second is in the sources: an endpoint only ever gets the
query protocol (``query=``); the in-process engines are only asked to *query* and never load
graphs (docs/sparql-sources.md, threat model).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import re
import threading
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import QueryRefused, QuerySyntaxError

if TYPE_CHECKING:
    from pyparsing import ParseException

SCORED_FORMS = frozenset({"SELECT", "ASK"})
#: Longest request the guard parses (characters); a longer one is refused unparsed.
MAX_QUERY_CHARS = 100_000
#: Deadline of one parse (seconds) when the caller has no query timeout to give.
DEFAULT_PARSE_TIMEOUT = 30.0
#: Address space the parser may add to its worker (bytes).
PARSE_MEMORY = 1024 * 1024 * 1024
_PARSE_STACK = 64 * 1024 * 1024
_CACHE_SIZE = 4096

# Order matters: long strings before short ones, IRIs before the "<" operator. Only lists the
# prefix labels a query uses (the BuildingQA importer); never decides what is safe.
_TOKEN_PATTERN = (
    r"""
    (?P<ws>\s+)
  | (?P<comment>\#[^\n\r]*)
  | (?P<string>'''(?:[^'\\]|\\.|'(?!''))*'''|\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"
              |'(?:[^'\\\n\r]|\\.)*'|"(?:[^"\\\n\r]|\\.)*")
  | (?P<iri><[^<>"{}|^`\\\x00-\x20]*>)
  | (?P<lang>@[A-Za-z]+(?:-[A-Za-z0-9]+)*)
  | (?P<var>[?$][A-Za-z0-9_\u00B7-\uFFFF]+)
  | (?P<word>[A-Za-z_\u00C0-\uFFFF][A-Za-z0-9_\-.\u00B7-\uFFFF]*(?::[^\s{}()\[\];,<>"'/*+?|^!=&]*)?
            |:[^\s{}()\[\];,<>"'/*+?|^!=&]*)
  | (?P<other>.)
    """
)


@functools.cache
def _token_re() -> re.Pattern[str]:
    """Compiled on first use (the Unicode classes make it the costliest part of the import)."""
    return re.compile(_TOKEN_PATTERN, re.VERBOSE | re.DOTALL)


@dataclass(frozen=True, slots=True)
class Classified:
    """What the guard learned about one request (from its parse tree)."""

    form: str  # SELECT | ASK | CONSTRUCT | DESCRIBE | UPDATE | UNKNOWN
    #: ORDER BY on the outermost query (a sub-select's ORDER BY orders nothing outside it).
    has_order_by: bool = False
    has_service: bool = False
    #: ``SELECT *``: engines order such columns differently (rdflib: set order).
    select_star: bool = False
    #: SERVICE targets: absolute IRIs, or ``?name`` for a variable.
    services: tuple[str, ...] = ()
    #: ``FROM`` and ``FROM NAMED`` IRIs (absolute).
    from_graphs: tuple[str, ...] = ()
    from_named: tuple[str, ...] = ()
    #: Why it is not a query: the update operations found, or the parser's message.
    problem: str = ""


def used_prefixes(query: str) -> list[str]:
    """Prefix labels of the prefixed names ``query`` uses (``brick`` for ``brick:VAV``), in
    order of first use; names inside strings, IRIs and comments do not count."""
    out: list[str] = []
    for m in _token_re().finditer(query):
        text = m.group()
        if m.lastgroup == "word" and ":" in text and not text.startswith("_:"):
            label = text.split(":", 1)[0]
            if label not in out:
                out.append(label)
    return out


def declared_prefixes(query: str) -> set[str]:
    """Prefix labels declared by ``PREFIX`` lines of ``query``."""
    toks = [m for m in _token_re().finditer(query) if m.lastgroup not in ("ws", "comment")]
    return {b.group()[:-1] for a, b in itertools.pairwise(toks)
            if a.lastgroup == "word" and a.group().upper() == "PREFIX" and b.group().endswith(":")}



#: rdflib's names of the SPARQL 1.1 Update operations, as the keywords users know.
_UPDATE_OPS = {"InsertData": "INSERT DATA", "DeleteData": "DELETE DATA",
               "DeleteWhere": "DELETE WHERE", "Modify": "DELETE/INSERT", "Load": "LOAD",
               "Clear": "CLEAR", "Drop": "DROP", "Create": "CREATE", "Add": "ADD",
               "Move": "MOVE", "Copy": "COPY"}


def _walk(node: object) -> Iterator[Any]:
    """Every CompValue under ``node`` (parse trees nest CompValues, ParseResults and lists)."""
    from pyparsing import ParseResults
    from rdflib.plugins.sparql.parserutils import CompValue

    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, CompValue):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list | tuple | ParseResults):
            stack.extend(item)


def _update_names(text: str) -> str | None:
    """The update operations of ``text`` when it parses as SPARQL Update, else None."""
    from rdflib.plugins.sparql.parser import parseUpdate

    try:
        tree = parseUpdate(text)
    except Exception:
        return None
    ops = tree["request"] if "request" in tree else None  # noqa: SIM401 (no default arg)
    names = [_UPDATE_OPS.get(op.name, op.name.upper()) for op in ops or []]
    return ", ".join(dict.fromkeys(names)) or None


_FORM_WORD = re.compile(r"(?i)(?<![\w:?$])(SELECT|ASK|CONSTRUCT|DESCRIBE)(?![\w:])")


def _syntax_problem(query: str, exc: ParseException) -> str:
    """``syntax error at line L, column C: expected ..., found 'word'`` from pyparsing's
    error, in the words of the SPARQL grammar's users."""
    msg = str(exc.msg)
    if _FORM_WORD.search(query):  # a query that goes wrong inside: the parser's own words
        return f"syntax error at line {exc.lineno}, column {exc.column}: the query does not " \
               f"parse with the SPARQL 1.1 grammar ({msg[:1].lower() + msg[1:]})"
    if "SelectQuery" in msg or "AskQuery" in msg:
        msg = "expected SELECT or ASK after the prologue"
    else:
        msg = msg[:1].lower() + msg[1:]
    rest = query[exc.loc:].strip()
    if not rest:
        return f"syntax error at the end: {msg}"
    found = rest.split(None, 1)[0]
    found = found if len(found) <= 40 else found[:37] + "..."
    return f"syntax error at line {exc.lineno}, column {exc.column}: {msg}, found {found!r}"


def _analyse_here(query: str) -> Classified:
    from pyparsing import ParseException
    from rdflib.plugins.sparql.algebra import translatePrologue
    from rdflib.plugins.sparql.parser import parseQuery
    from rdflib.term import Variable

    try:
        tree = parseQuery(query)
    except ParseException as exc:
        ops = _update_names(query)
        if ops is None:  # a query, then an update: "SELECT ... ; DROP ALL"
            rest = re.sub(r"^[\s;]+", "", query[exc.loc:])
            ops = _update_names(rest) if rest.strip() else None
        if ops is not None:
            return Classified("UPDATE", problem=ops)
        engine_read = _read_by_the_engine(query)
        if engine_read is not None:
            return engine_read
        return Classified("UNKNOWN", problem=_syntax_problem(query, exc))
    prologue = translatePrologue(tree[0], None)
    q = tree[1]
    form = str(q.name).removesuffix("Query").upper()
    services: list[str] = []
    for node in _walk(q):
        if node.name == "ServiceGraphPattern":
            term = node["term"]
            services.append(f"?{term}" if isinstance(term, Variable)
                            else str(prologue.absolutize(term)))
    default: list[str] = []
    named: list[str] = []
    # not q.get(key, []): CompValue.get's second argument is not a default
    clauses = q["datasetClause"] if "datasetClause" in q else []  # noqa: SIM401
    for clause in clauses:
        if "default" in clause:
            default.append(str(prologue.absolutize(clause["default"])))
        if "named" in clause:
            named.append(str(prologue.absolutize(clause["named"])))
    return Classified(form, has_order_by="orderby" in q, has_service=bool(services),
                      select_star=form == "SELECT" and "projection" not in q,
                      services=tuple(services), from_graphs=tuple(default),
                      from_named=tuple(named))


def _read_by_the_engine(query: str) -> Classified | None:
    """A query that rdflib's grammar refuses but Oxigraph's parser reads (the default engine and
    the Oxigraph server): ``?a brick:feeds + ?b`` (a space before a path's ``+``), ``OFFSET
    5LIMIT 5``. The guard must never refuse what the engine runs (issue 30), so Oxigraph's own
    parser has the last word on syntax; its ``query()`` cannot parse an update, so a text read
    here is a query. The features rdflib's tree would give are read from the tokens instead,
    erring towards refusal: any ``SERVICE`` word keeps the rdflib verdict (Oxigraph evaluates an
    ASK at once, and would call out), and a ``FROM`` IRI whose prefix is unknown is kept as
    written, so it names no graph of a local file."""
    toks = [m for m in _token_re().finditer(query) if m.lastgroup not in ("ws", "comment")]
    words = [m.group().upper() if m.lastgroup == "word" else m.group() for m in toks]
    if "SERVICE" in words or any("\\" in w for w in words if not w.startswith(("'", '"'))):
        return None  # escapes (\u0053ERVICE) only rdflib's tree resolves
    try:
        import pyoxigraph
    except ImportError:
        return None
    try:
        result = pyoxigraph.Store().query(query)
    except Exception:
        return None
    if isinstance(result, pyoxigraph.QuerySolutions):
        form = "SELECT"
    elif isinstance(result, pyoxigraph.QueryBoolean):
        form = "ASK"
    else:
        form = "CONSTRUCT" if "CONSTRUCT" in words else "DESCRIBE"
    return _token_features(form, toks, words)


def _token_features(form: str, toks: list[re.Match[str]], words: list[str]) -> Classified:
    """ORDER BY and ``SELECT *`` of the outer query (brace depth 0), and the FROM IRIs with the
    query's PREFIX lines resolved, from a token list."""
    prefixes: dict[str, str] = {}
    default: list[str] = []
    named: list[str] = []
    depth = 0
    order = star = selected = False
    for i, (tok, word) in enumerate(zip(toks, words, strict=True)):
        nxt = words[i + 1] if i + 1 < len(words) else ""
        if word == "{":
            depth += 1
        elif word == "}":
            depth -= 1
        elif word == "PREFIX" and i + 2 < len(toks) and toks[i + 2].lastgroup == "iri":
            prefixes[toks[i + 1].group().rstrip(":")] = toks[i + 2].group()[1:-1]
        elif depth == 0 and word == "ORDER" and nxt == "BY":
            order = True
        elif depth == 0 and word == "SELECT" and not selected:
            selected = True
            rest = [w for w in words[i + 1:i + 3] if w not in ("DISTINCT", "REDUCED")]
            star = bool(rest) and rest[0] == "*"
        elif depth == 0 and word == "FROM" and tok.lastgroup == "word":
            is_named = nxt == "NAMED"
            target = toks[i + 2] if is_named and i + 2 < len(toks) else toks[i + 1]
            text = target.group()
            if target.lastgroup == "iri":
                iri = text[1:-1]
            else:
                label, _, local = text.partition(":")
                iri = prefixes[label] + local if label in prefixes else text
            (named if is_named else default).append(iri)
    return Classified(form, has_order_by=order, select_star=form == "SELECT" and star,
                      from_graphs=tuple(default), from_named=tuple(named))


def _analyse(query: str) -> Classified:
    """The parse, run in the guard's worker: in a thread with a large stack, so that deep
    nesting ends in a RecursionError (a refusal) rather than a crash."""
    import sys

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 50_000))
    out: dict[str, Classified] = {}

    def run() -> None:
        try:
            out["c"] = _analyse_here(query)
        except RecursionError:
            out["c"] = Classified("UNKNOWN", problem="nested too deeply for the guard's parser")
        except Exception as exc:  # the parser's own failure on odd input: still not a query
            out["c"] = Classified("UNKNOWN", problem=f"syntax error ({type(exc).__name__}: "
                                                     f"{str(exc)[:200]})")

    old = threading.stack_size(_PARSE_STACK)
    try:
        worker = threading.Thread(target=run, name="queryeval-sparql-parse")
        worker.start()
    finally:
        threading.stack_size(old)
    worker.join()
    return out["c"]


_CACHE: dict[bytes, Classified] = {}
_CACHE_LOCK = threading.Lock()


def classify(query: str, *, timeout: float | None = None) -> Classified:
    """Parse ``query`` in the guard's sandbox worker (within ``timeout`` seconds) and say what
    it is. A text that is not a query comes back with form ``UPDATE`` or ``UNKNOWN`` and the
    reason in ``problem``; raises :class:`QueryRefused` when the text is too long, or cannot
    be parsed in time or within the worker's memory."""
    from .._isolation.sandbox import SandboxTimeout, shared_sandbox

    if len(query) > MAX_QUERY_CHARS:
        raise QueryRefused(f"the request is {len(query):,} characters long, over the guard's "
                           f"limit of {MAX_QUERY_CHARS:,}")
    key = hashlib.sha256(query.encode("utf-8", "surrogatepass")).digest()
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
    if hit is not None:
        return hit
    timeout = DEFAULT_PARSE_TIMEOUT if timeout is None else timeout
    box = shared_sandbox("sparql-guard", max_memory=PARSE_MEMORY,
                         preload=("rdflib.plugins.sparql.parser",))
    try:
        c = box.call(_analyse, query, timeout=timeout, max_reply=1 << 20)
    except SandboxTimeout:
        raise QueryRefused(f"not parsed within {timeout:g} s by the guard's SPARQL parser "
                           "(the query was not run)") from None
    except QueryRefused:
        raise
    except Exception as exc:  # the parser crashed or ran out of memory in its worker
        raise QueryRefused(f"too complex for the guard's SPARQL parser ({exc})") from None
    with _CACHE_LOCK:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.clear()
        _CACHE[key] = c
    return c


def check_query(query: str, *, allow_service: bool = True,
                graphs: Collection[str] | None = None,
                timeout: float | None = None) -> Classified:
    """Refuse anything that is not a scorable read query; return its classification.

    Raises :class:`QueryRefused` for SPARQL Update (naming its operations), for
    CONSTRUCT/DESCRIBE, and, for a local source, for what
    would make an in-process engine reach outside its file: ``SERVICE`` unless
    ``allow_service``, and, when ``graphs`` (the named graphs of the loaded file) is given, a
    ``FROM`` / ``FROM NAMED`` IRI that is none of them, unless ``allow_service``. ``timeout``
    bounds the parse. A text that is neither a query nor an update raises
    :class:`QuerySyntaxError` (``cannot parse: syntax error at line L, column C: ...``).
    """
    if not isinstance(query, str) or not query.strip():
        raise QueryRefused("empty query")
    c = classify(query, timeout=timeout)
    if c.form == "UPDATE":
        raise QueryRefused(f"SPARQL Update is not allowed (read-only source): {c.problem}")
    if c.form in ("CONSTRUCT", "DESCRIBE"):
        raise QueryRefused(f"{c.form} returns a graph, not a result table; only SELECT and ASK "
                           "are scored")
    if c.form not in SCORED_FORMS:  # not run; named for what it is, not 'refused'
        raise QuerySyntaxError(c.problem or "syntax error: expected SELECT or ASK")
    if c.has_service and not allow_service:
        target = c.services[0]
        shown = target if target.startswith("?") else f"<{target}>"
        raise QueryRefused(f"SERVICE {shown} (federated query) is not allowed against a local "
                           "graph: an in-process engine never calls out (datasource option "
                           "allow_service: true allows it)")
    if graphs is not None and not allow_service:
        known = set(graphs)
        for word, iris in (("FROM", c.from_graphs), ("FROM NAMED", c.from_named)):
            for iri in iris:
                if iri not in known:
                    raise QueryRefused(f"{word} <{iri}> names no graph of the local file: an "
                                       "in-process engine never loads a graph (datasource "
                                       "option allow_service: true lets the query run, "
                                       "without it)")
    return c


#: The forms of a text that is a SPARQL request.
_REQUEST_FORMS = frozenset({"UPDATE", "SELECT", "ASK", "CONSTRUCT", "DESCRIBE"})
#: A word of a write: what an agent's unrun text no parser reads is judged on (as the agent
#: ledger judges any unrun text of a language that is not SQL).
_WRITE_WORD = re.compile(r"\b(?:create|merge|set|delete|remove|drop|alter|detach|insert|load|"
                         r"clear|copy|move|add|export|import|install|attach)\b", re.IGNORECASE)


def unrun_judge(spec: Mapping[str, object]) -> Callable[[str], str | None]:
    """The judge of an unrun text on the SPARQL datasource ``spec`` (the ledger's
    ``not_a_read``): why the datasource would refuse it (a SPARQL update; on a local graph
    without ``allow_service``, a ``SERVICE`` or a ``FROM`` graph), else None; a text the guard
    cannot parse is judged on its words, as the ledger judges any unrun text of a language
    that is not SQL."""
    local = spec.get("type") == "rdf" and spec.get("allow_service") is not True

    def judge(text: str) -> str | None:
        try:
            c = classify(text)
        except QueryRefused as exc:
            return f"not parsed by the SPARQL guard: {exc.reason()}"
        if c.form == "UPDATE":
            return f"SPARQL Update: {c.problem}"
        if c.form not in _REQUEST_FORMS:
            return "judged on its words" if _WRITE_WORD.search(text) else None
        if local and c.services:
            return f"SERVICE {c.services[0]} reaches outside the local graph"
        if local and (c.from_graphs or c.from_named):
            return f"FROM {(c.from_graphs + c.from_named)[0]} names a graph outside the file"
        return None

    return judge
