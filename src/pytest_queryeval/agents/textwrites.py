"""The floor's write half (:func:`~.textfloor.floor_finding`, the text-call rule's rule 5): a
write statement anywhere in the model's text, whatever its format.

Why apart from the floor's read half (:mod:`.textfloor`): the writes grow with each engine's
statements (SQLite's, DuckDB's, PostgreSQL's, a graph language's), the forbidden reads with
each dialect's ``FROM`` forms; each is read on its own.

Why three readings, not a list of forms: a list of write shapes missed each statement it did
not name (issue 58, the seventeenth re-probe's H2-H4: a quoted name glued to its keyword,
``DROP TABLE"Genre"``; DuckDB's ``INSTALL``, ``SET``, ``EXPORT DATABASE``, ``COPY (...) TO``;
a graph's ``MATCH (n) DELETE n``, ``LOAD FROM``, ``CALL threads = 1``). So (1) a statement
shaped so that no sentence is (a quoted name glued to its keyword, ``COPY (SELECT``, ``LOAD
FROM '``, ``SET n += {``) is read anywhere (:data:`_WRITE`); (2) in code (a query fence or an
untagged one, an inline code span, a ``SQLQuery:`` or ``Action Input:`` payload, a statement
after another's ``;``) every statement whose first word is a statement's and not a read's is a
write (in an untagged fence, a word that is also English only in its statement's shape,
:data:`_SHAPES`: ``Update complete`` is a status line there), and a graph write clause
anywhere in a statement that began with ``MATCH``, ``WITH`` or ``UNWIND`` is one
(:func:`_code_write`); (3) in prose, a statement's word at a statement's place (a line's
head, after ``;`` or ``:``) with an object after it (:data:`_AT_HEAD`), and a graph write
clause after a graph pattern (:func:`_graph_write`): ``Use the Genre table``, ``Set up
done.``, ``Copy that.`` are prose. Every pattern here is linear in the text.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right

from .language import HEADS, READ_PRAGMAS, pragma_sets
from .lead import GRAPH_CLAUSE
from .textmarkup import ALONE, element_spans, inline_spans

#: An article where a statement names its object (``delete from the cache``): prose.
_ARTICLE = (r"(?!(?:the|a|an|this|that|these|those|my|your|our|their|its|his|her|some|all|"
            r"any|each|every|it|them)\b)")
_OBJECT = r"[\w\"`\['$][\w.\"`\[\]$']*"
#: A quoted name (in any of the engines' quotes; DuckDB's ``$$...$$``), which may follow its
#: keyword at once (``TABLE"t"``, ``ATTACH'a.db'``): each read once.
_QUOTED = (r"(?:\"[^\"\n]{0,256}+\"|`[^`\n]{0,256}+`|\[[^\]\n]{0,256}+\]|'[^'\n]{0,256}+'|"
           r"\$\$[^$\n]{0,256}+\$\$)")
_NAME = rf"(?:[\w$]++|{_QUOTED})"
#: A name as prose's statement names its object: a word, or a quoted one without blanks (a
#: quoted text with blanks after ``Use`` is prose's: ``Use `SELECT ...`; it gives 25.``).
_PNAME = (r"(?:[\w$]++|\"[^\"\s]{1,256}+\"|`[^`\s]{1,256}+`|\[[^\]\s]{1,256}+\]|'[^'\s]{1,256}+')"
          r"(?:\.(?:[\w$]++|\"[^\"\s]{1,256}+\"|`[^`\s]{1,256}+`)){0,2}+")
#: A graph variable or property (``n``, `` `born` ``).
_GNAME = r"(?:\w++|`[^`\n]{1,256}+`)"
#: The object a write names after its words: after a blank (not an article), or a quoted name
#: right after them (``DELETE FROM"Genre"``, ``TABLE"t"``, which SQLite runs).
_NAMED = rf"(?:\s+{_ARTICLE}|\s*(?=[\"`\['$])){_OBJECT}"
_KIND = (r"(?:or\s+replace\s+)?(?:(?:temp\w*|unique|materialized|node|rel|persistent|transient|"
         r"unlogged|foreign|recursive|global|local)\s+){0,3}"
         r"(?:(?:virtual\s+)?table|view|index|database|schema|trigger|function|procedure|sequence|"
         rf"macro|secret|graph|type|domain|extension){_NAMED}")
#: The procedures a ``CALL`` builds or removes something with (as the recorded-call judge
#: names them: docs/agent-metrics.md, ``write_attempts``), and DuckDB's checkpoints.
_BUILDS = (r"(?:create|drop|alter|delete|remove|set|load|install|uninstall|import|attach|detach|"
           r"clear|build|rebuild|force_checkpoint|checkpoint)")
#: A write statement anywhere in a text (lower case), SQL's, SPARQL's or a graph language's,
#: in a shape no sentence has: what no honest final answer needs to write (the floor: found
#: wherever it is, whatever the format). Each branch starts with its word.
_WRITE = re.compile(
    rf"delete(?<![\w]delete)(?:\s+from{_NAMED}|\s+{_OBJECT}\s+where\b|"
    r"\s+data\s*\{|\s+where\s*\{)|"
    rf"insert(?<![\w]insert)(?:\s+(?:or\s+\w+\s+|(?:ignore|low_priority|delayed|high_priority)"
    rf"\s+){{0,2}}into{_NAMED}|\s+data\s*\{{)|"
    rf"update(?<![\w]update)(?:\s+(?:or\s+(?:rollback|abort|replace|fail|ignore)|only|ignore|"
    rf"low_priority)){{0,3}}{_NAMED}(?:\s+(?:as\s+)?\w+)?"
    rf"(?:\s+(?:not\s+indexed|indexed\s+by\s+{_OBJECT}))?(?:\s+|(?<=[\"`\]']))set(?![\w$])|"
    rf"replace(?<![\w]replace)\s+into{_NAMED}|"
    rf"merge(?<![\w]merge)(?:\s+into\s+{_ARTICLE}{_OBJECT}|\s*\(\s*(?:\w*+|{_GNAME})\s*[:{{])|"
    rf"upsert(?<![\w]upsert)\s+into\s+{_ARTICLE}{_OBJECT}|"
    rf"create(?<![\w]create)(?:\s+{_KIND}|\s*\(\s*(?:\w*+|{_GNAME})\s*[:{{])|"
    rf"drop(?<![\w]drop)(?:\s+{_KIND}|\s+(?:silent\s+)?(?:graph\s*<|default\b|named\b|all\b))|"
    rf"alter(?<![\w]alter)\s+{_KIND}|"
    rf"truncate(?<![\w]truncate)(?:\s+{_KIND}|\s+(?:table\s+)?{_OBJECT}\s*;|"
    rf"(?:\s+table)?\s*(?={_QUOTED}))|"
    r"attach(?<![\w]attach)(?:\s+or\s+replace)?(?:\s+database)?(?:\s+if\s+not\s+exists)?"
    r"(?:\s*['\"]|\s*\$\$|\s+e'|\s*\(\s*(?:select|values|with|['\"])|"
    r"\s+[\w.]++(?:\s*\([^()\n]{0,256}+\))?\s+as\s)|"
    r"detach(?<![\w]detach)\s+(?:database\b|delete\b)|"
    rf"vacuum(?<![\w]vacuum)(?:\s+\w++|\s*{_QUOTED})?(?:\s+|(?<=[\"`\]']))into\b|"
    r"copy(?<![\w]copy)(?:\s*\(\s*(?:select|from|with|match|optional|unwind|values|table|call|"
    rf"return|pivot|\()|(?:\s+[\w$.]++|\s*{_QUOTED}(?:\.{_QUOTED})?)(?:\s*\([^()\n]{{0,1024}}+\))?"
    r"(?:\s+|(?<=[\"`\]')]))(?:from|to)\s*(?:['\"$]|e'))|"
    r"export(?<![\w]export)\s+database\s*(?:['\"$]|e')|"
    r"import(?<![\w]import)\s+database\s*(?:['\"$]|e')|"
    r"load(?<![\w]load)(?:\s+csv)?(?:\s+with\s+headers(?:\s*\([^()\n]{0,1024}+\))?)?\s+from"
    r"\s*(?:['\"$\[]|e')|"
    rf"call(?<![\w]call)\s+(?:{_GNAME}\s*=(?!=)\s*[^\s=]|(?:[\w`]++\.)*+`?{_BUILDS}\w*+`?\s*\()|"
    # DuckDB's checkpoints and the sequences' state functions, which a ``SELECT`` runs, their
    # names quoted too (``"checkpoint"()``: the twenty-sixth re-probe's F2)
    r"checkpoint(?<![\w]checkpoint)[\"`]?\s*\(\s*(?:'[^'\n]{0,256}+'\s*)?\)|"
    r"force_checkpoint(?<![\w]force_checkpoint)[\"`]?\s*\(|"
    r"(?:next|set)val(?<![\w]nextval)(?<![\w]setval)[\"`]?\s*\(|"
    # the state of the shared connection a query's function leaves: the seed of ``random()``,
    # DuckDB's log and profiler (the guard's FORBIDDEN_FUNCTIONS; the thirty-fourth
    # re-probe's L3: ``SELECT setseed(0.5)`` in a fence was no write to the floor)
    r"(?<![\w$])(?:setseed|write_log|truncate_duckdb_logs|(?:en|dis)able_(?:logging|profiling))"
    r"[\"`]?\s*\(|"
    r"clear(?<![\w]clear)\s+(?:silent\s+)?(?:graph\s*<|default\b|named\b|all\b)|"
    rf"set(?<![\w]set)\s+{_GNAME}\s*(?:\.\s*{_GNAME}\s*=|:\s*\w+|\+=|=\s*[{{$])|"
    rf"remove(?<![\w]remove)\s+{_GNAME}\s*[.:]\s*{_GNAME}|"
    # a file DuckDB reads for a table (``FROM 'x.csv'``: its replacement scan), and a statement
    # built by code (``FROM query(concat(...))``, ``query_table(...)``), which no search judges
    r"from(?<![\w]from)\s*+'[^'\n./\\:*]{0,1024}+[./\\:*]|"
    r"join(?<![\w]join)\s*+'[^'\n./\\:*]{0,1024}+[./\\:*]|"
    r"(?:from|join)\s*+(?:lateral\s+)?(?:[\w\"]++\s*\.\s*)?\"?query(?:_table)?\"?\s*\(|"
    r",\s*+(?:lateral\s+)?query(?:_table)?\(")

#: A pragma given a value (``= v``, or SQLite's call form ``user_version(7)``), anywhere: a
#: write unless it is a read pragma's call form (``table_info(Genre)``, which an agent quotes
#: from its schema look-up: the eighteenth re-probe's M2), by :func:`~.language.pragma_sets`.
_PRAGMA_GIVEN = re.compile(
    rf"pragma(?<![\w]pragma)(?:\s+[\w$]++|\s*{_QUOTED})(?:\s*\.\s*{_NAME})?\s*[=(]")


#: A maintenance statement (``ANALYZE``, ``REINDEX x;``, ``VACUUM``, ``VACUUM ANALYZE x``,
#: DuckDB's ``CHECKPOINT``, which the plugin's judge counts writes) alone at a statement's head
#: (a line's, after ``;``, a fence or a quote, after blanks of any number: the sixteenth
#: re-probe's H3), the name of one object at most after it: not a word of a sentence
#: (``Analyze the data.``).
_MAINTENANCE = re.compile(
    r"(?:^|[;`'\"])[ \t]*+(?:analy[sz]e|reindex|"
    r"vacuum(?:[ \t]+(?:full|freeze|verbose|analy[sz]e)(?![\w$]))*+|(?:force[ \t]+)?checkpoint)"
    r"(?:[ \t]+[\w\"`\['][\w\"`\]']*(?:\.[\w\"`\['][\w\"`\]']*)?)?[ \t]*(?:;|$)",
    re.MULTILINE)

#: A statement whose word is also English (``SET``, ``USE``, ``LOAD``, ``INSTALL``...) at a
#: statement's place in prose (a line's head, after a list's or a quote's mark, after ``;`` or
#: ``:``), with the object its statement names and nothing after it but the statement's own
#: end: ``USE memory``, ``SET threads = 1``; not ``Use the Genre table to count.``, ``Set up
#: done.``
_AT_HEAD = re.compile(
    r"(?:^|[;:])[ \t>*#+-]*+(?:\d{1,3}[.)][ \t]*+)?(?:"
    rf"set(?:[ \t]+(?:global|session|local|persist|variable))?[ \t]+{_ARTICLE}{_PNAME}"
    r"[ \t]*+(?:=|to\b)|"
    rf"reset[ \t]+(?:all|{_ARTICLE}{_PNAME})[ \t]*+(?:;|$)|"
    rf"use[ \t]+{_ARTICLE}{_PNAME}[ \t]*+(?:;|$)|"
    rf"(?:force[ \t]+)?(?:un)?install[ \t]+{_ARTICLE}{_PNAME}(?:[ \t]+from[ \t]+[^\s;]{{1,256}}+)?"
    r"[ \t]*+(?:;|$)|"
    rf"load[ \t]+(?:extension[ \t]+)?{_ARTICLE}{_PNAME}[ \t]*+(?:;|$)|"
    rf"detach[ \t]+(?:database[ \t]+)?(?:if[ \t]+exists[ \t]+)?{_ARTICLE}{_PNAME}[ \t]*+(?:;|$)|"
    rf"truncate[ \t]+(?:table[ \t]+)?{_ARTICLE}{_PNAME}[ \t]*+(?:;|$)|"
    r"update[ \t]+extensions(?:[ \t]*+\([^()\n]{0,1024}+\))?[ \t]*+(?:;|$)|"
    rf"comment[ \t]+on[ \t]+\w++[ \t]+{_PNAME}[ \t]+is\b|"
    rf"call[ \t]+{_PNAME}\(|"
    r"(?:begin|start)[ \t]+transaction\b|"
    rf"pragma[ \t]+(?!(?:{'|'.join(sorted(READ_PRAGMAS))})\b){_PNAME}[ \t]*+(?:;|$))",
    re.MULTILINE)

#: The words a statement that may be a read starts with (``EXPLAIN`` and ``PROFILE`` are read
#: through: what runs is the statement after them).
_READS = frozenset({"select", "with", "values", "table", "from", "explain", "show", "describe",
                    "desc", "summarize", "pivot", "unpivot", "match", "optional", "unwind",
                    "return", "profile"})
#: The first words of a statement that writes, changes a setting or reaches a file or an
#: extension: every statement's first word of SQLite, DuckDB, PostgreSQL and the graph
#: languages (:data:`~.language.HEADS`) that is not a read's.
_WRITE_HEADS = HEADS - _READS
#: The first words of a graph statement whose write clause may come later (``MATCH (n)
#: DELETE n``).
_GRAPH_HEADS = frozenset({"match", "optional", "with", "unwind"})
#: A statement's first word, after blanks, brackets and quotes (an ``Action Input:``'s), read
#: through ``EXPLAIN [ANALYZE ...]`` and ``PROFILE``.
_HEAD_AT = re.compile(
    r"[\s(\"']*+(?:(?:explain|profile)(?![\w$])(?:\s+(?:analy[sz]e|verbose|query\s+plan)(?![\w$])"
    r"|\s*\([^()]{0,256}+\))*+\s*+)?([a-z_]++)(?![\w$])")
#: A graph write clause inside a statement (its strings and quoted names blanked): not a
#: property (``n.set``), a label (``:Delete``), a parameter or a map's key (``{set: 1}``).
_GRAPH_WRITE = re.compile(r"(?<![\w.$:`])(?:detach|delete|set|remove|create|merge|foreach|"
                          r"load|copy)(?![\w$])(?!\s*:)")

#: What follows a statement's word that is also English (``Update complete``, ``Load time: 3
#: ms``, ``Start: Rock``, ``Commit abc123 has the data``) for some engine to run it: in an
#: untagged fence, which holds results and status lines as often as statements, a statement
#: of these words is one only in its shape (the eighteenth re-probe's M1); any other word of
#: :data:`_WRITE_HEADS` is a statement whatever follows it, and a fence tagged as a query's
#: holds statements only. Each shape is matched from the word to the statement's end (a
#: ``;``, the fence's), over-reading rather than under-reading what an engine takes.
_SNAME = r"(?:[\w$]++|\"[^\"]*+\"|`[^`]*+`|\[[^\]]*+\]|'[^']*+'|\$\$[^$]*+\$\$)"
_QN = rf"{_SNAME}(?:\s*+\.\s*+{_SNAME}){{0,2}}+"
_LIST = rf"{_QN}(?:\s*+\([^)]*+\))?(?:\s*+,\s*+{_QN}(?:\s*+\([^)]*+\))?)*+"
_EOL = r"[ \t]*+(?:\n|$)"
_NEXT_HEAD = "|".join(sorted(HEADS))
_SHAPES = {word: re.compile(shape) for words, shape in (
    (("update",), r"update(?![\w$])[\s\S]*?(?<![\w$.])set(?![\w$])|update\s++extensions\b"),
    (("set",), rf"set(?![\w$])[^;]*?(?:=|(?<![\w$])to(?![\w$]))|set\s*+{_QN}\s*+:|"
               r"set\s++(?:(?:session|local)\s++)?(?:role|time\s++zone|names|schema|session|"
               r"constraints|transaction|xml\s++option)(?![\w$])"),
    (("copy",), r"copy(?![\w$])[^;]*?(?<![\w$])(?:from|to)(?![\w$])"),
    (("call",), rf"call\s*+(?:[{{(]|{_QN}\s*+(?:[(=]|yield(?![\w$])|$|\n))"),
    (("load",), rf"load\s*+(?:(?:csv\s++)?(?:with\s++headers|from)(?![\w$])|"
                rf"(?:extension\s++)?{_QN}{_EOL})"),
    (("start",), r"start\s++(?:transaction(?![\w$])|\w++\s*+=)"),
    (("commit", "end"), rf"(?:commit|end)(?:\s++(?:transaction|work|prepared|and\s++(?:no\s++)?"
                        rf"chain)(?![\w$]))?(?:\s*+{_SNAME})?{_EOL}"),
    (("begin",), rf"begin(?:\s++(?:deferred|immediate|exclusive|transaction|work)(?![\w$]))*+"
                 rf"(?:(?:\s*+{_SNAME})?{_EOL}|\s++(?:isolation|read|not|deferrable)(?![\w$]))"),
    (("use",), rf"use\s*+{_ARTICLE}{_QN}(?:{_EOL}|\s++(?:{_NEXT_HEAD})(?![\w$]))"),
    (("do",), r"do\s*+(?:language\s++[\w$\"]++\s*+)?(?:\$|'|e')"),
    (("reset",), rf"reset\s*+(?:(?:global|session|local)\s++)?(?:all|{_QN}){_EOL}"),
    (("comment",), r"comment\s++on(?![\w$])"),
    (("prepare",), rf"prepare\s*+(?:transaction(?![\w$])|{_SNAME}\s*+(?:\([^)]*+\)\s*+)?"
                   r"as(?![\w$]))"),
    (("execute",), rf"execute\s*+(?:immediate(?![\w$])|{_SNAME}\s*+(?:\(|{_EOL}))"),
    (("release",), rf"release\s*+(?:savepoint\s++)?{_SNAME}{_EOL}"),
    (("lock",), rf"lock\s*+(?:table(?![\w$])|{_QN}\s*+(?:[,*]|in(?![\w$])|nowait(?![\w$])|"
                rf"{_EOL}))"),
    (("import", "export"), r"(?:im|ex)port\s++database(?![\w$])"),
    (("analyze", "analyse"), rf"analy[sz]e(?:\s++verbose(?![\w$])|\s*+\([^)]*+\))?"
                             rf"(?:\s*+{_LIST})?{_EOL}"),
    (("rename",), r"rename\s++(?:table|user|column|to)(?![\w$])"),
    (("replace",), r"replace\s*+into(?![\w$])")) for word in words}

#: Where code is in a text: a fence's mark, an inline code span (one line), a chain's or a
#: ReAct harness's payload (``SQLQuery: ...``, ``Action Input: ...``), which it runs.
_FENCE = re.compile(r"`{3,}+")
_PAYLOAD = re.compile(r"(?<![\w])(?:sqlquery|action[ \t]*+input)[ \t]*+:([^\n]{1,65536}+)")
#: A fence's tag that says what it holds, and the tags of what is no query (code of a
#: language that is not the datasource's, data, a terminal, prose): any other fence, and one
#: with no tag, holds statements.
_TAG = re.compile(r"[ \t]*+([\w+#.-]{0,32}+)[ \t]*+\n")
_NOT_QUERY = frozenset({
    "python", "py", "python3", "ipython", "pycon", "json", "jsonl", "json5", "yaml", "yml",
    "toml", "ini", "text", "txt", "plaintext", "plain", "markdown", "md", "csv", "tsv", "bash",
    "sh", "shell", "zsh", "console", "terminal", "html", "xml", "css", "javascript", "js",
    "typescript", "ts", "jsx", "tsx", "java", "kotlin", "scala", "go", "rust", "c", "cpp",
    "c++", "csharp", "cs", "ruby", "rb", "php", "perl", "r", "julia", "swift", "lua", "output",
    "log", "diff", "tex", "latex", "mermaid", "dot", "tool_code", "tool_call", "tool_calls",
    "tool_use", "function_call", "function_calls"})
#: A quote's or an escape's mark, for blanking strings (:func:`_masked`).
_QUOTE_MARK = re.compile(r"['\"`]|\$\$")
_ESCAPED_QUOTE_MARK = re.compile(r"\\.|['\"`]|\$\$", re.DOTALL)
#: What a finding shows of the statement at its place.
_SHOWN = re.compile(r"[^\n;]{1,80}")


def write_finding(plain: str) -> re.Match[str] | None:
    """Where ``plain`` (a reading of the model's text in lower case) writes, or None: a write
    in a shape no sentence has, a maintenance statement alone, a statement at a statement's
    place in prose, a statement in code, a graph write clause after a graph pattern, a
    statement after another's ``;`` (the module's docstring gives the rule)."""
    found = _WRITE.search(plain) or _pragma_given(plain) or _MAINTENANCE.search(plain) or \
        _AT_HEAD.search(plain)
    if found is not None:
        return found
    at = _code_write(plain)
    if at is None:
        at = _graph_write(plain)
    if at is None:
        at = _chained_write(plain)
    return None if at is None else _SHOWN.match(plain, at)


def _pragma_given(plain: str) -> re.Match[str] | None:
    """The first pragma of ``plain`` given a value that sets it (:data:`_PRAGMA_GIVEN`)."""
    return next((m for m in _PRAGMA_GIVEN.finditer(plain)
                 if m.group().endswith("=") or pragma_sets(m.group())), None)


def _code_write(plain: str) -> int | None:
    """Where a statement in code writes (:func:`_statement_write`): in a fence that holds
    statements, an inline code span, a ``SQLQuery:``/``Action Input:`` payload."""
    for start, end, inline, untagged in _code_spans(plain):
        at = _statement_write(plain, start, end, inline, untagged)
        if at is not None:
            return at
    return None


def _code_spans(plain: str) -> list[tuple[int, int, bool, bool]]:
    """The code of ``plain`` as ``(start, end, inline, untagged)``: each fence (marks paired in
    order, an unclosed one running to the end) whose tag is none or a query language's, after
    its tag's line; each inline code span and payload (``inline``: a word alone there is a
    name; ``untagged``: a fence with no tag, whose English words are read by their shapes)."""
    spans: list[tuple[int, int, bool, bool]] = []
    marks = list(_FENCE.finditer(plain))
    for opened, closed in zip(marks[::2], [*marks[1::2], None], strict=False):
        start, end = opened.end(), closed.start() if closed is not None else len(plain)
        tag = _TAG.match(plain, start, end)
        if tag is not None:
            if tag.group(1) in _NOT_QUERY:
                continue
            start = tag.end()
        spans.append((start, end, False, tag is not None and not tag.group(1)))
    # tags' and backticks' code
    spans += [(s, e, inline, False) for s, e, inline in element_spans(plain) + inline_spans(plain)]
    spans += [(m.start(1), m.end(1), False, False) for m in _PAYLOAD.finditer(plain)]
    return spans


def _statement_write(plain: str, start: int, end: int, inline: bool,
                     untagged: bool = False) -> int | None:
    """Where a statement of the code ``plain[start:end]`` (split at each ``;``) writes: its
    first word a statement's and no read's (a read pragma aside; in an ``inline`` span, with
    something after it; in an ``untagged`` fence, an English word in its statement's shape:
    :data:`_SHAPES`), or a graph write clause in a statement that began as a graph read."""
    pos = start
    while pos <= end:
        semi = plain.find(";", pos, end)
        stop = end if semi < 0 else semi
        head = _HEAD_AT.match(plain, pos, stop)
        if head is not None:
            word, rest = head.group(1), plain[head.end():stop]
            shape = _SHAPES.get(word) if untagged else None
            if word in _WRITE_HEADS and (rest.strip() or not inline or word in ALONE) and not (
                    word == "pragma" and "=" not in rest and
                    not pragma_sets(plain[head.start(1):stop])) and (
                    shape is None or shape.match(plain, head.start(1), stop)):
                return head.start(1)
            if word in _GRAPH_HEADS:
                for escapes in (False, True):
                    clause = _GRAPH_WRITE.search(_masked(rest, escapes))
                    if clause is not None:
                        return head.end() + clause.start()
        if semi < 0:
            break
        pos = semi + 1
    return None


def _masked(text: str, escapes: bool) -> str:
    """``text`` with the inside of its strings and quoted names blanked (``'...'``,
    ``"..."``, `` `...` ``, ``$$...$$``; an unclosed one runs to the end), in its places: read
    both without escapes (SQL's) and with a backslash's (a graph language's ``'it\\'s'``), so
    that neither reading hides a clause the other shows. One linear scan of the marks."""
    out: list[str] = []
    kept, quote = 0, ""
    for mark in (_ESCAPED_QUOTE_MARK if escapes else _QUOTE_MARK).finditer(text):
        token = mark.group()
        if token.startswith("\\"):
            continue
        if not quote:
            out.append(text[kept:mark.end()])
            kept, quote = mark.end(), token
        elif token == quote:
            out.append(" " * (mark.start() - kept))
            kept, quote = mark.start(), ""
    out.append(" " * (len(text) - kept) if quote else text[kept:])
    return "".join(out)


#: A graph pattern's clause anywhere (:data:`~.lead.GRAPH_CLAUSE`), and where the statement it
#: begins ends in prose: a ``;``, a fence, a blank line, 2,000 characters.
_GRAPH_START = re.compile(GRAPH_CLAUSE)
_STATEMENT_END = re.compile(r";|```|\n[ \t\r]*\n")
#: Words after ``DELETE`` that make it a sentence's (``delete nothing``), not a clause's.
_NOT_VARIABLE = (r"(?!(?:the|a|an|this|that|these|those|my|your|our|their|its|it|them|some|all|"
                 r"any|each|every|or|and|nothing|anything|everything|something|none|no|not|"
                 r"rows?|data|records?|from|them|him|her|me|us|you)\b)")
#: A graph write clause with its object, as prose holds one after a graph pattern (``First I
#: ran MATCH (n:Person) DELETE n and then counted.``).
_PROSE_GRAPH_WRITE = re.compile(
    rf"(?<![\w.$:`])(?:delete\s+{_NOT_VARIABLE}{_GNAME}|set\s+{_NOT_VARIABLE}{_GNAME}\s*"
    rf"(?:[.:]|\+?=)|remove\s+{_NOT_VARIABLE}{_GNAME}\s*[.:]|(?:create|merge|foreach)\s*\(|"
    r"load\s+(?:csv\s+)?(?:with\s+headers|from)\b|copy\s*\(|call\s*\{)")


def _graph_write(plain: str) -> int | None:
    """Where a graph statement in ``plain`` writes: a graph pattern's clause that is a write
    (``CREATE (``, ``MERGE (``, ``DETACH DELETE``, ``FOREACH``), or a write clause with its
    object after a ``MATCH (...)`` in the same statement (no end between, within 2,000
    characters)."""
    starts = []
    for clause in _GRAPH_START.finditer(plain):
        if not plain.startswith(("match", "optional"), clause.start()):
            return clause.start()
        starts.append(clause.start())
    if not starts:
        return None
    ends = [m.start() for m in _STATEMENT_END.finditer(plain)]
    for write in _PROSE_GRAPH_WRITE.finditer(plain, starts[0]):
        at = write.start()
        start = starts[bisect_right(starts, at) - 1]
        end = bisect_left(ends, at)
        if at - start <= 2000 and (not end or ends[end - 1] < start):
            return at
    return None


#: Where a text's statements are cut: a ``;``, a line's end; and the first word after a cut,
#: on its line (a skip across lines would read the rest of the text again at each cut).
_CUT = re.compile(r"[;\n]")
_HEAD_ON_LINE = re.compile(r"[ \t\r\f\v(\"']*+([a-z_]++)(?![\w$])")


def _chained_write(plain: str) -> int | None:
    """Where a statement after another's ``;`` writes (``SELECT 1; INSTALL httpfs``): the
    part before the ``;`` starts with a statement's word, the part after with a write's."""
    head = _HEAD_AT.match(plain)
    statement = head is not None and head.group(1) in HEADS
    for cut in _CUT.finditer(plain):
        head = _HEAD_ON_LINE.match(plain, cut.end())
        word = head.group(1) if head is not None else None
        if statement and cut.group() == ";" and word in _WRITE_HEADS and head is not None:
            return head.start(1)
        statement = word in HEADS
    return None
