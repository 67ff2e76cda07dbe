"""What a regular expression in a query sent to a server may cost: FalkorDB (4.16) matches
``string.matchRegEx`` and ``string.replaceRegEx`` with oniguruma, a backtracking engine whose
retry limit is per start position only, and checks no timeout inside one expression. ``'(a+)+b'``
against 40 runs of 21 ``a``\\ s took about 2 s a call; twenty calls in a list comprehension kept
the server busy about 90 s past the plugin's 3 s timeout, and later golds timed out (the
twenty-sixth re-probe's H1, issue 58). :func:`check_regexes` refuses, before anything is sent,
a pattern the guard cannot read (not one string literal), one that backtracks exponentially
(a repeated group holding a quantifier or an alternation, a quantifier on a quantifier, a
backreference, a subroutine call, the extended-mode flag ``x``, an escape the engine may read
past its next character), one of more than :data:`MAX_DEGREE` repeated parts, a subject that
is neither a literal nor a property of a node or relationship a ``MATCH`` pattern binds (and
nothing else binds under any spelling), a call inside an iteration, and calls whose work
(the starts and ways their subject's length gives their pattern, times its choices and its
atoms) passes :data:`MAX_REGEX_WORK` together. A long pattern needs no cap of its own: its
atoms weigh. A pattern is read as FalkorDB hands it
to its engine (:func:`_unescaped`), a literal weighed as FalkorDB keeps it.

That weighing is for golds (and what a rehearsal measures after it). For an untrusted query
no rehearsal measures (``rehearse: false``, a Bolt server not FalkorDB) the pattern must be
of the linear class (:func:`linear`) instead: six re-probes each found a form the weighing
under-counted by orders of magnitude, and an estimate of a backtracking engine's work is no
proof against the next; a pattern of no quantifier is (measured: ``bench/bench_regex_linear.py``).

Why a module of its own: the bounds (:mod:`.bounds`) count values built and walked; this one
reads the pattern a call is given, a small language of its own. It reads the bounds' tokens
and helpers; the guard calls it.

Why one module of this size: the weighing of a pattern (golds, rehearsed predictions) and
the linear class (unrehearsed predictions) read the same small language with the same escape
and class readers; apart, the two would read a pattern differently (the twenty-eighth
re-probe's H2 was such a difference).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import QueryRefused
from .bounds import MAX_LITERAL_CHARS, REGEX_CALLS, Token, _arguments, _function, _kept_length, _scopes, where

#: The most repeated parts (``*``, ``+``, ``{n,}``, ``{n,m}`` past 16) a pattern may hold: a
#: backtracking engine may try every way of sharing the subject among them, so a failed match
#: costs about the subject's length to their number plus one (``'x.*x.*y'`` against 1,000
#: ``x``\\ s: 0.75 s; ``'\\w+x\\w+y'``: 1.6 s; three parts would be minutes). A leading greedy
#: ``.*`` is not counted where :data:`_HEAD` says: oniguruma tries it at line starts only
#: (``'.*a.*b'``: 0.06 s).
MAX_DEGREE = 2
#: The most work the regular expressions of one query may cost together, each the starts
#: and ways of sharing its subject's length (a literal's, else
#: :data:`.bounds.MAX_LITERAL_CHARS`) among its repeated parts, times its ways
#: (:data:`_CHOICE_COST`) and its atoms (:func:`weigh`): a failed match tests the atoms
#: after the first choice again on each way, a class about 6 ns a test (``'a?' * 16 +
#: '\\w{16}' * 25 + '[^a]'`` against 976 ``a``\ s, 2.7e10 tests: 168 s; the thirty-first
#: re-probe's H1). Measured at the bound against 976 characters (server CPU a call):
#: ``'a?' * 8 + '\\w{16}' * 25 + '[^a]'`` 0.75 s, ``'a?' * 13 + '[^a!]'`` 0.05 s, two
#: repeated parts and a class after them (``'[a!]*[a!]*\\w[^a]'``) 1.7 s, the slowest.
MAX_REGEX_WORK = MAX_LITERAL_CHARS**3 // 2
#: What a way of a pattern's bounded choices (:func:`read`) weighs, against a way of
#: sharing the subject among repeated parts (the ways of sharing a subject among ``d``
#: repeated parts at every start are about ``length ** (d + 1) / (d + 1)!``). Measured (the
#: thirtieth re-probe, 976 characters): a way of choices costs about what a way of sharing
#: costs (``'a?' * 20 + '[^a!]'``: 5.8 s; ``'x.*x.*y'``: 0.75 s for a sixth of 1,000
#: cubed); four, not two, since the thirty-first re-probe's L1 (``'(?:a|\\w)' * 15 +
#: '\\w{0,14}' + '[^a!]'``, 491,520 ways: 4.1 s, passed at two).
_CHOICE_COST = 4
#: A group opening whose prefix the reading below knows: non-capturing, lookaround, atomic,
#: named, flags scoped to the group. Another ``(?`` (a conditional, a subroutine, an absent
#: operator) is refused, and so is the ``x`` flag anywhere: in extended mode oniguruma skips
#: spaces and ``#`` comments, so ``'(?x)(a{1,16}) {1,16}b'`` repeats the group, a nested
#: quantifier this reading would take for a repeated space (the 27th re-probe's H3).
_GROUP_PREFIX = re.compile(r"\(\?(?:[:=!>]|<[=!]|P?<[A-Za-z_]\w*>|'[A-Za-z_]\w*'|[ims-]+:)")
_FLAGS = re.compile(r"\(\?[ims-]+\)")
_EXTENDED = re.compile(r"\(\?[imsx-]*x")
_COUNT = re.compile(r"\{(\d*)(,?)(\d*)\}")


@dataclass
class _Group:
    risky: bool = False  # holds a repeated part or an alternation
    ways: int = 1  # the product of the bounded choices read in it so far
    alternatives: int = 1
    atoms: int = 0  # the character positions one attempt may test in its alternative so far
    widest: int = 0  # the most atoms of its alternatives read before the last


def degree(pattern: str) -> int:
    """The repeated parts of ``pattern`` (a leading greedy ``.*`` not counted where
    :data:`_HEAD` says); ValueError with the reason when it backtracks exponentially or
    cannot be read."""
    return read(pattern)[0]


def read(pattern: str) -> tuple[int, int]:
    """The repeated parts of ``pattern`` (:func:`degree`) and the ways its bounded choices
    give one start position (:func:`weigh`)."""
    parts, ways, _ = weigh(pattern)
    return parts, ways


def weigh(pattern: str) -> tuple[int, int, int]:
    """The repeated parts of ``pattern`` (:func:`degree`; a greedy ``.*`` ending it outside
    groups not counted: a match reaching it has succeeded), the ways its bounded choices
    give one start (:func:`_choices`, capped at :data:`_WAYS_CAP`), and its atoms from its
    first choice or part on, tested again on every way (:data:`MAX_REGEX_WORK`)."""
    groups, last, count, i, closed, size, tail = [_Group()], "", 0, 0, 1, 1, False
    head = bool(_HEAD.match(pattern) and "|" not in pattern)
    before = 0 if "|" in pattern else None  # the atoms read before the first choice or part
    while i < len(pattern):
        c = pattern[i]
        if c in "\\[":
            last, size = "atom", 1
            i = _escape(pattern, i) if c == "\\" else _class_end(pattern, i)
            groups[-1].atoms += 1
        elif c == "(" and (flags := _FLAGS.match(pattern, i)):
            i = flags.end()
        elif c == "(":
            groups.append(_Group())
            last, i = "", _group_start(pattern, i)
        elif c == ")" and len(groups) > 1:
            inner = groups.pop()
            groups[-1].risky |= inner.risky
            closed = min(_WAYS_CAP, inner.ways * inner.alternatives)
            if before is None and closed > 1:
                before = groups[0].atoms
            groups[-1].ways = min(_WAYS_CAP, groups[-1].ways * closed)
            size = max(inner.widest, inner.atoms)
            groups[-1].atoms = min(_WAYS_CAP, groups[-1].atoms + size)
            last, i = ("risky group" if inner.risky else "group"), i + 1
        elif c == "|":
            groups[-1].risky, last, i = True, "", i + 1
            groups[-1].widest = max(groups[-1].widest, groups[-1].atoms)
            groups[-1].atoms = 0 if len(groups) > 1 else groups[-1].atoms
            groups[-1].alternatives = min(_WAYS_CAP, groups[-1].alternatives + 1)
        elif c in "*+?{" and last and (repeat := _repeat(pattern, i)) is not None:
            end, repeated, unbounded, low, high = repeat
            if last == "repeat":
                raise ValueError(f"a quantifier on a quantifier at character {i + 1} (the "
                                 "server nests the repeats, which backtrack exponentially)")
            if repeated and last == "risky group":
                raise ValueError("a repeated group holds a repeated part or an alternation "
                                 "(nested quantifiers backtrack exponentially)")
            groups[-1].risky |= repeated
            count += unbounded
            once = closed if last in ("group", "risky group") else 1
            ways = _choices(low, high, once, i)
            if before is None and (ways > 1 or (unbounded and count > head)):
                before = groups[0].atoms
            groups[-1].ways = min(_WAYS_CAP, groups[-1].ways * ways)
            times = high if high is not None and high <= 16 else max(1, low)
            groups[-1].atoms = min(_WAYS_CAP, groups[-1].atoms + size * (times - 1))
            tail = c == "*" and last == "dot" and len(groups) == 1
            last, i = "repeat", end + (pattern[end:end + 1] in ("?", "+"))
        else:
            last, i, size = ("dot" if c == "." else "atom"), i + 1, 1
            groups[-1].atoms += 1
    ways = min(_WAYS_CAP, groups[0].ways * groups[0].alternatives)
    atoms = groups[0].atoms - (groups[0].atoms if before is None else before)  # errs high
    atoms -= pattern.endswith("$") and not pattern.endswith("\\$")  # tested at most as often
    return max(0, count - head - (last == "repeat" and tail)), ways, max(1, atoms)


def _group_start(pattern: str, i: int) -> int:
    """Where the contents of the group opened at ``pattern[i]`` start; ValueError for a
    group the reading does not know (:data:`_GROUP_PREFIX`) and for the ``x`` flag."""
    prefix = _GROUP_PREFIX.match(pattern, i)
    if _EXTENDED.match(pattern, i):
        raise ValueError(f"the extended-mode flag x at character {i + 1} (its spaces "
                         "and comments are not read as the server reads them)")
    if pattern.startswith("(?", i) and prefix is None:
        raise ValueError(f"the group at character {i + 1} is not one the guard reads")
    return prefix.end() if prefix else i + 1


#: Where the count of a pattern's ways stops: past it a call is refused whatever its subject
#: (a subject has a character at least), so no product is carried further (a hostile pattern
#: of many choices costs the reading a multiplication a character, of numbers this small).
_WAYS_CAP: int = MAX_REGEX_WORK * math.factorial(MAX_DEGREE + 1) + 1


def _choices(low: int, high: int | None, inner: int, at: int) -> int:
    """The ways a quantifier of ``{low,high}`` (``high`` None: unbounded) adds to what it
    repeats, whose own ways are ``inner`` (a group's, already counted once): one of
    ``high - low + 1`` counts (2 for ``?``), and the group's ways again at each further
    repeat. Unbounded repeats are counted as repeated parts instead; an unbounded repeat of
    a group holding a choice is refused (``'(?:a?a)*'`` is ``(a|aa)*``: exponential). A
    possessive or lazy quantifier is counted as greedy: that errs high."""
    if high is None or high > 16:
        if inner > 1:
            raise ValueError(f"a group holding a bounded choice repeated without bound at "
                             f"character {at + 1} (its choices backtrack exponentially)")
        return 1
    again: int = inner ** max(0, high - 1)
    return min(_WAYS_CAP, max(1, high - low + 1) * again)


#: A pattern whose first atom is a greedy ``.*`` (after ``^`` anchors and flags only), the
#: one repeated part oniguruma tries at line starts only (it anchors a pattern whose head is
#: a greedy ``.*``: ``'.*x.*x.*y'`` against 300 ``x``\\ s at once, where ``'..*x.*x.*y'``
#: took 1.6 s). Not a lazy ``.*?`` or possessive ``.*+``, nor ``.+`` or ``.{0,}`` (the
#: engine anchors the greedy ones too, but the reading need not know), and not in a pattern
#: with a ``|`` anywhere: an alternative that does not open with ``.*`` takes the anchor
#: away, and ``'.*?x.*x.*y'`` and ``'.*x.*x.*y|z'`` against 500 ``x``\\ s took 9.7 s and
#: more a call (the twenty-ninth re-probe's H2).
_HEAD = re.compile(r"(?:\^|\(\?[ims-]+\))*\.\*(?![?+])")


def _class_end(pattern: str, i: int) -> int:
    """Where the character class opened at ``pattern[i]`` ends (past its ``]``)."""
    k = i + 1 + (pattern[i + 1:i + 2] == "^")
    k += pattern[k:k + 1] == "]"
    depth = 1
    while k < len(pattern) and depth:
        c = pattern[k]
        if c == "\\":
            _escape(pattern, k)
            k += 1
        elif c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        k += 1
    return k


def _escape(pattern: str, i: int) -> int:
    """Where the escape at ``pattern[i]`` ends, checked to be one character to the engine,
    as the reading takes it: ValueError for a backreference or subroutine call, and for any escape not of
    :data:`_ONE_ATOM`. Oniguruma (FalkorDB's syntax is Perl-like) reads more than two
    characters at some: ``\\c)`` is one control character that takes the ``)``,
    ``\\Q)\\E`` a literal ``)``, so ``'(\\c)?a+)+b'`` is the nested quantifier
    ``(\\t?a+)+b`` to the server and two plain repeats to a reading of two characters (the
    twenty-eighth re-probe's H3). Fails closed: a letter, digit or non-ASCII character not
    known is refused; ASCII punctuation escaped is itself in every engine."""
    c = pattern[i + 1:i + 2]
    if c and c in "123456789kg":
        raise ValueError("a backreference or a subroutine call (exponential to match)")
    if not c or c in _ONE_ATOM or (c.isascii() and not c.isalnum()):
        return i + 2
    raise ValueError(f"the escape \\{c} at character {i + 1}, not one the guard reads (the "
                     "server's engine may read it past its next character)")


#: The escaped letters every engine reads as one character or one position: classes,
#: boundaries, anchors and control characters. ``\\c``, ``\\C``, ``\\M``, ``\\Q``...``\\E``,
#: ``\\x``, ``\\p``, ``\\o``, ``\\N``, ``\\R``, ``\\X``, ``\\K`` and ``\\0`` are not among them.
_ONE_ATOM = frozenset("dDwWsShHbBAzZntrfv")


def _repeat(pattern: str, i: int) -> tuple[int, bool, bool, int, int | None] | None:
    """The quantifier at ``pattern[i]``: where it ends, whether it repeats (more than once),
    whether it counts as unbounded (no upper bound, or one past 16), its lower and upper
    bound (None: none); None for a ``{`` that is
    no quantifier (a literal brace). ``{,n}`` is literal text to oniguruma's Perl syntax
    (``matchRegEx('aaa', 'a{,2}')`` finds nothing) and an error to Java's: read as text, so
    a ``+`` after it repeats its ``}`` as on the server (the twenty-ninth re-probe's L4)."""
    c = pattern[i]
    if c in "*+":
        return i + 1, True, True, int(c == "+"), None
    if c == "?":
        return i + 1, False, False, 0, 1
    count = _COUNT.match(pattern, i)
    if count is None or not count.group(1):
        return None
    low = int(count.group(1))
    high = int(count.group(3)) if count.group(3) else (None if count.group(2) else low)
    return count.end(), high is None or high > 1, high is None or high > 16, low, high


def check_regexes(code: Sequence[Token], *, linear_only: bool = False) -> None:
    """Refuse what the module docstring says, for every call of :data:`REGEX_CALLS` and
    every ``=~``. With ``linear_only`` (an untrusted query no rehearsal measures) a pattern
    outside the linear class (:func:`linear`) is refused instead of weighed: six rounds of
    weighing each found a form it under-counted by orders of magnitude, and no estimate of
    a backtracking engine's work is proof against the next."""
    scopes = _scopes(code)
    matched = _matched(code, scopes)
    work = 0
    for i, tok in enumerate(code):
        if tok.kind in ("word", "quoted") and i + 1 < len(code) and code[i + 1].text == "(" \
                and _function(code, i) in REGEX_CALLS:
            args = _arguments(code, scopes, i + 1)
            subject = args[0] if args else (i + 2, i + 2)
            pattern = args[1] if len(args) > 1 else (i + 2, i + 2)
            name = f"{_function(code, i)}()"
        elif tok.text == "~" and i and code[i - 1].text == "=":
            start = i - 2
            while start >= 2 and code[start - 1].text == "." and code[start - 2].kind in (
                    "word", "quoted"):
                start -= 2
            subject, pattern, name = (start, i - 1), (i + 1, i + 2), "=~"
            if i + 2 < len(code) and code[i + 2].text in ("+", "[", "."):
                pattern = (i + 1, i + 3)  # 'a' + t: not one literal
            if start and code[start - 1].text == "+":
                subject = (start - 1, i - 1)  # Neo4j matches 'aa' + 'ab' whole (29th's L1)
        else:
            continue
        if any(_iterates(code, scopes, b, i) for b in scopes[i]):
            raise QueryRefused(f"{name} at {where(tok)} is inside an iteration: a regular "
                               "expression is matched once a value, which the server does "
                               "without checking its timeout")
        if linear_only:
            steps = _linear(code, pattern, name, tok)
            work += _length(code, scopes, matched, subject, name, tok) * steps
            if work > MAX_REGEX_WORK:
                raise QueryRefused(f"{name} at {where(tok)}: the query's regular expressions "
                                   f"may test more than {MAX_REGEX_WORK:,} positions, which "
                                   "the server does without checking its timeout")
            continue
        parts, ways, atoms = _degree(code, pattern, name, tok)
        work += _length(code, scopes, matched, subject, name, tok) ** (parts + 1) \
            * (_CHOICE_COST * ways if ways > 1 else 1) * atoms // math.factorial(parts + 1)
        if work > MAX_REGEX_WORK:
            raise QueryRefused(f"{name} at {where(tok)}: the query's regular expressions may "
                               f"backtrack more than {MAX_REGEX_WORK:,} steps, which the "
                               "server does without checking its timeout")


def _iterates(code: Sequence[Token], scopes: list[tuple[int, ...]], bracket: int,
              at: int) -> bool:
    """Whether the bracket ``code[bracket]`` iterates (an ``IN`` at its own level before
    ``code[at]``: a comprehension, ``any()``..., ``reduce()``), or is a pattern
    comprehension, its path named or not (``[(a)--(b) ...``, ``[p = (a)--(b) ...``: the
    twenty-ninth re-probe found the named one read as no iteration). A list of one
    comparison, ``[x = (1)]``, is taken for one too: that errs high."""
    k = bracket + 1
    if k + 1 < len(code) and code[k].kind in ("word", "quoted") and code[k + 1].text == "=":
        k += 2
    return any(code[j].kind == "word" and code[j].text.upper() == "IN"
               and scopes[j] and scopes[j][-1] == bracket for j in range(bracket + 1, at)) \
        or (code[bracket].text == "[" and k < len(code) and code[k].text == "(")


def _pattern_text(code: Sequence[Token], span: tuple[int, int], name: str, tok: Token) -> str:
    """The pattern at ``code[span]``, which must be one string literal (else nothing bounds
    what the server backtracks on it), as FalkorDB hands it to its engine (:func:`_unescaped`,
    whose ValueError is the caller's refusal to word)."""
    start, end = span
    if end - start != 1 or end > len(code) or code[start].kind != "string":
        raise QueryRefused(f"{name} at {where(tok)} has a pattern that is not one string "
                           "literal: the guard cannot bound how long the server backtracks "
                           "on it")
    return _unescaped(code[start].text[1:-1])


def _linear(code: Sequence[Token], span: tuple[int, int], name: str, tok: Token) -> int:
    """The positions a start of the pattern at ``code[span]`` tests (:func:`linear`): one
    string literal of the linear class, a leading ``.*`` only where the engine is
    oniguruma's or the match is whole (``string.*``, ``=~``: APOC's calls search with a
    Java engine, which tries a leading ``.*`` at every start; not measured, so refused)."""
    try:
        text = _pattern_text(code, span, name, tok)
        if name.startswith("apoc.") and _LEADING_DOT_STAR.match(text):
            raise ValueError("a leading .* in an APOC call (its engine tries it at every "
                             "start)")
        return linear(text)
    except ValueError as why:
        raise QueryRefused(
            f"{name} at {where(tok)}: its pattern is outside the linear class a prediction "
            f"not rehearsed may send ({why}). Without a rehearsal nothing bounds how long the "
            "server backtracks on a regular expression, so only a pattern of no quantifier "
            "(a .* heading or ending it aside), at most one group of plain alternatives and "
            "no top-level | is sent; set 'rehearse: true' on a FalkorDB "
            "server, or write it with CONTAINS, STARTS WITH, ENDS WITH and toLower()"
        ) from None


#: A pattern that opens with a ``.*`` after flags only (after a ``^`` it is tried once).
_LEADING_DOT_STAR = re.compile(r"(?:\(\?[is]+\))?\.\*")


def _degree(code: Sequence[Token], span: tuple[int, int], name: str,
            tok: Token) -> tuple[int, int, int]:
    """The repeated parts, ways and atoms (:func:`weigh`) of the pattern at ``code[span]``,
    which must be one string literal that does not backtrack exponentially, of at most
    :data:`MAX_DEGREE` parts."""
    try:
        text = _pattern_text(code, span, name, tok)
        parts, ways, atoms = weigh(text)
    except ValueError as why:
        raise QueryRefused(f"{name} at {where(tok)}: its pattern holds {why}, which the "
                           "server matches without checking its timeout") from None
    if parts > MAX_DEGREE:
        raise QueryRefused(f"{name} at {where(tok)}: its pattern has {parts} repeated parts, "
                           f"more than {MAX_DEGREE}: a failed match may try every way of "
                           "sharing the text among them, which the server does without "
                           "checking its timeout")
    return parts, ways, atoms


def _length(code: Sequence[Token], scopes: list[tuple[int, ...]], matched: frozenset[str],
            span: tuple[int, int], name: str, tok: Token) -> int:
    """The characters of the subject at ``code[span]``: a string literal's, or
    :data:`.bounds.MAX_LITERAL_CHARS` for a property of a node or relationship the query
    matched (the graph's own value: its name one of ``matched``, :func:`_matched`), also
    under :data:`_KEEPING` calls; anything else is refused (a string the query built may be
    far longer)."""
    start, end = span
    if end - start == 1 and code[start].kind == "string":
        return max(1, _kept_length(code[start]))
    if end - start == 3 and code[start + 1].text == "." \
            and code[start].text.strip("`").lower() in matched:
        return MAX_LITERAL_CHARS
    if end - start > 3 and code[start].text.lower() in _KEEPING and code[start].kind == "word" \
            and code[start + 1].text == "(" and code[end - 1].text == ")" \
            and all(start + 1 in scopes[k] for k in range(start + 2, end - 1)):
        return _length(code, scopes, matched, (start + 2, end - 1), name, tok)
    raise QueryRefused(f"{name} at {where(tok)} matches a regular expression against a value "
                       "that is neither a string literal nor a property of a matched node or "
                       "relationship: the guard cannot bound its length")


#: Calls that keep a subject's length (a character maps to one character) or shorten it:
#: ``toLower(m.title)`` weighs what ``m.title`` weighs.
_KEEPING = frozenset({"tolower", "toupper", "trim", "ltrim", "rtrim"})


def _matched(code: Sequence[Token], scopes: list[tuple[int, ...]]) -> frozenset[str]:
    """The names (backquotes stripped, lower-cased) a ``MATCH`` pattern binds to a node or
    relationship (``MATCH (name:Label``, ``-[name]-``...) and nothing binds otherwise
    (``AS name``, ``name IN``, ``name =``, a ``YIELD`` list) under any spelling: the 27th
    re-probe's H4 bound ``AS `m``` and took a list literal ``[m]`` for a pattern. Fails
    closed: a pattern this reading does not take for one binds nothing. One pass: a bracket
    is a pattern's when the last word read at its level (a path's ``p =`` passed over) is
    ``MATCH``; a walk back from each bracket would be quadratic in a long query."""
    pattern: set[str] = set()
    bound: set[str] = set()
    after_match: dict[tuple[int, ...], bool] = {}
    yielding = False
    for k, tok in enumerate(code):
        named = tok.kind in ("word", "quoted")
        word = tok.text.upper() if tok.kind == "word" else ""
        after = code[k + 1].text if k + 1 < len(code) else ""
        if word == "YIELD" and after == "*":
            return frozenset()  # YIELD * binds names the text does not show
        yielding = word == "YIELD" or (yielding and (tok.text == "," or named)
                                       and word not in _CLAUSES)
        if named and k and word != "YIELD":
            name = tok.text.strip("`").lower()
            if yielding or code[k - 1].text.upper() == "AS" or after.upper() == "IN" \
                    or after == "=":
                bound.add(name)
            elif code[k - 1].text in ("(", "[") and after in (":", ")", "]", "{") \
                    and after_match.get(scopes[k - 1], False):
                pattern.add(name)
        if named and after != "=":
            after_match[scopes[k]] = word == "MATCH"
    return frozenset(pattern - bound)


#: Words that end a ``YIELD`` list: another clause starts there.
_CLAUSES = frozenset({"RETURN", "WITH", "WHERE", "MATCH", "UNWIND", "CALL", "ORDER", "SKIP",
                      "LIMIT", "OPTIONAL", "UNION"})


def _unescaped(text: str) -> str:
    """A pattern literal's text as FalkorDB (4.16) hands it to the regular-expression engine:
    it decodes the escapes of :data:`_CYPHER_ESCAPES` and keeps any other backslash with the
    character after it, so ``'(\\?x)'`` is the ``x`` flag there (the twenty-eighth re-probe's
    H2: read as two atoms, it passed a nested quantifier). ValueError for ``\\u`` and
    ``\\U``, which Neo4j decodes to the character they name and FalkorDB keeps: the servers
    would read two patterns (``'\\u0028a+)+b'`` is ``(a+)+b`` to Neo4j)."""
    def decoded(escape: re.Match[str]) -> str:
        c = escape.group(1)
        if c in "uU":
            raise ValueError(f"the string escape \\{c}, which Neo4j decodes to a character "
                             "and FalkorDB keeps as written (write the character itself)")
        return _CYPHER_ESCAPES.get(c, escape.group(0))
    return re.sub(r"\\(.)", decoded, text, flags=re.DOTALL)


#: The Cypher string escapes FalkorDB 4.16 decodes, to what (its other escapes are kept).
_CYPHER_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
                   "v": "\v", '"': '"', "'": "'", "\\": "\\", "?": "?"}


# -- the linear class: what an untrusted query no rehearsal measures may send ---------------

#: The longest body (:func:`linear`) a pattern of the linear class may have, in characters as
#: the engine reads them.
MAX_LINEAR_BODY = 256
#: The most positions one start of a linear pattern may test (:func:`linear`): its atoms
#: before and in its group, and the atoms after the group once for each of its alternatives.
MAX_LINEAR_STEPS = 512
#: The leading flags the class takes (alone, at the very start).
_LINEAR_FLAGS = ("(?i)", "(?s)", "(?is)", "(?si)")


def linear(pattern: str) -> int:
    """The positions one start of ``pattern`` may test (at most :data:`MAX_LINEAR_STEPS`), a
    pattern of the class whose cost is linear in its subject; ValueError naming the rule it
    breaks for any other. The class: an optional leading ``(?i)``, an optional ``^``, an
    optional greedy ``.*``, a body, an optional ``.*``, an optional ``$`` (not after that
    ``.*``). The body has no quantifier, no ``|`` outside its one group at most (a plain or
    ``(?:`` group of quantifier-free, group-free alternatives), no class but a simple one,
    only the escapes :func:`_escape` reads, and at most :data:`MAX_LINEAR_BODY` characters.
    Without a quantifier every start tests each position of the body once and each
    alternative of its group once, so a failed match costs the subject's length times that;
    a leading ``.*`` is tried at line starts only (oniguruma anchors it), each such try the
    line's length times the body."""
    i, end, caret, head = _linear_frame(pattern)
    steps, alternatives, inside, after, group, k = 0, 0, 0, 0, False, i
    while k < end:
        c = pattern[k]
        if c == "\\":
            nxt = _escape(pattern, k)
        elif c == "[":
            nxt = _simple_class_end(pattern, k, end)
        elif c == "(":
            if group:
                raise ValueError(f"a second group at character {k + 1} (the class holds one)")
            if pattern.startswith("(?", k) and not pattern.startswith("(?:", k):
                raise ValueError(f"the group at character {k + 1} is not a plain or (?: "
                                 "group")
            group = True
            k, alternatives, inside = _linear_group(pattern, k, end)
            steps += inside
            continue
        elif c in "*+?{}|)^$":
            raise ValueError(f"{_LINEAR_WHAT.get(c, 'a quantifier')} at character {k + 1}")
        else:
            nxt = k + 1
        k = nxt
        if group:
            after += 1
        else:
            steps += 1
    if head and not caret and i < end and not _literal_head(pattern, i, end):
        raise ValueError(f"a .* heading the pattern before what is not a literal character "
                         f"at character {i + 1} (oniguruma then tries the .* at every start: "
                         "quadratic; begin the body with a literal character, or anchor it "
                         "with ^)")
    if end - i > MAX_LINEAR_BODY:
        raise ValueError(f"a body of {end - i} characters, more than {MAX_LINEAR_BODY}")
    steps += max(1, alternatives) * after
    if steps > MAX_LINEAR_STEPS:
        raise ValueError(f"{steps} positions a start may test (the atoms after its group once "
                         f"for each of its {alternatives} alternatives), more than "
                         f"{MAX_LINEAR_STEPS}")
    return max(1, steps)


def _linear_frame(pattern: str) -> tuple[int, int, bool, bool]:
    """Where the body of a pattern of the linear class (:func:`linear`) starts and ends, past
    its leading flags, ``^`` and ``.*`` and before its ending ``.*`` and ``$``; whether it has
    the ``^`` and the leading ``.*``."""
    i = 0
    for flags in _LINEAR_FLAGS:
        if pattern.startswith(flags):
            i = len(flags)
            break
    caret = pattern.startswith("^", i)
    i += caret
    head = pattern.startswith(".*", i) and not pattern.startswith((".*?", ".*+"), i)
    i += 2 * head
    end = len(pattern)
    dollar = pattern.endswith("$") and not _escaped(pattern, end - 1) and end - 1 >= i
    end -= dollar
    if end - 2 >= i and pattern.startswith(".*", end - 2) and not _escaped(pattern, end - 2):
        if dollar:
            raise ValueError("a .* before a closing $ (a failed $ takes the .* back one "
                             "character at a time, the rest of the line each start)")
        end -= 2
    return i, end, caret, head


def _linear_group(pattern: str, k: int, end: int) -> tuple[int, int, int]:
    """The one group of a linear body, opening at ``pattern[k]``: where it ends (past its
    ``)``), its alternatives and the positions they hold together (each tried once a
    start); ValueError for a quantifier, a group or an anchor in it, or no ``)``."""
    alternatives, inside, size = 1, 0, 0
    k += 3 if pattern.startswith("(?:", k) else 1
    while k < end and pattern[k] != ")":
        c = pattern[k]
        if c == "|":
            alternatives, k = alternatives + 1, k + 1
            inside, size = inside + size, 0
            continue
        if c in "(*+?{}^$":
            raise ValueError(f"{_LINEAR_WHAT.get(c, 'a quantifier')} at character "
                             f"{k + 1}, in the group")
        k = _escape(pattern, k) if c == "\\" else (
            _simple_class_end(pattern, k, end) if c == "[" else k + 1)
        size += 1
    if k >= end:
        raise ValueError("a group that does not close")
    return k + 1, alternatives, inside + size


_LINEAR_WHAT = {"|": "a | outside a group (it takes away the anchoring of a leading .*)",
                ")": "an unopened )", "^": "a ^ not at the start", "$": "a $ not at the end",
                "(": "a group in the group"}


def _literal_head(pattern: str, i: int, end: int) -> bool:
    """Whether the body at ``pattern[i:end]`` starts with a literal character (an escaped
    ASCII punctuation character too), or with a group each of whose alternatives does:
    what the engine can search for, so that it tries a leading ``.*`` once a line. Before
    a ``.``, a class or an escaped class (``\\w``) it tried the ``.*`` at every start:
    ``'.*[^a!]'`` against 8,000 characters took 0.32 s, four times what 4,000 took."""
    def literal(k: int) -> bool:
        c = pattern[k:k + 1]
        if c == "\\":
            n = pattern[k + 1:k + 2]
            return bool(n) and n.isascii() and not n.isalnum()
        return bool(c) and c not in "\\[().|*+?{}^$"
    if pattern[i] != "(":
        return literal(i)
    k = i + (3 if pattern.startswith("(?:", i) else 1)
    if not literal(k):
        return False
    while k < end and pattern[k] != ")":
        if pattern[k] == "|" and not literal(k + 1):
            return False
        k = k + 2 if pattern[k] == "\\" else (
            _simple_class_end(pattern, k, end) if pattern[k] == "[" else k + 1)
    return True


def _escaped(pattern: str, at: int) -> bool:
    """Whether ``pattern[at]`` is escaped (an odd run of backslashes before it)."""
    run = 0
    while at - run - 1 >= 0 and pattern[at - run - 1] == "\\":
        run += 1
    return run % 2 == 1


def _simple_class_end(pattern: str, i: int, end: int) -> int:
    """Where the class opened at ``pattern[i]`` ends (past its ``]``); ValueError for one
    that is not simple: a class or POSIX bracket inside it, an ``&&`` intersection, an escape
    :func:`_escape` refuses, no ``]`` before ``end``."""
    k = i + 1 + (pattern[i + 1:i + 2] == "^")
    k += pattern[k:k + 1] == "]"
    while k < end:
        c = pattern[k]
        if c == "]":
            return k + 1
        if c == "[" or pattern.startswith("&&", k):
            raise ValueError(f"a class that is not simple at character {i + 1} (a class "
                             "inside it, or &&)")
        k = _escape(pattern, k) if c == "\\" else k + 1
    raise ValueError(f"a class at character {i + 1} that does not close")
