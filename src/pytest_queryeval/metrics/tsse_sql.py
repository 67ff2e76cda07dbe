"""SQL-text rewriting of the Spider test-suite evaluator (taoyds/test-suite-sql-eval).

``exec_eval.eval_exec_match`` does not execute the texts it is given: it fixes ``'> ='``,
removes DISTINCT with sqlparse, replaces ``YEAR(CURDATE())``, decides from the gold text whether
row order counts, and with ``--plug_value`` fills the prediction's literal slots with the gold's
values. This module reproduces those text steps without sqlparse (a port of the lexer rules and
statement splitter that decide its token boundaries); :mod:`.table` compares the resulting
tables. See ``docs/metrics-sql.md``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from itertools import product


def order_matters(gold_sql: str) -> bool:
    """TSSE: row order counts iff the (prepared) gold text contains ``order by`` literally."""
    return "order by" in gold_sql.lower()


# Port of the sqlparse lexer rules that decide token boundaries (sqlparse/keywords.py
# SQL_REGEX). Only the boundaries and a few token kinds matter here: TSSE drops every token
# whose text is "distinct" and keeps only the first statement (``sqlparse.parse(s)[0]``).
_W, _NL, _CS, _KW, _DDL, _PUNCT, _WORD, _OTHER, _STR = range(9)
_SQLPARSE_RULES: list[tuple[str, int]] = [
    (r"(--|# )\+.*?(\r\n|\r|\n|$)", _OTHER),
    (r"/\*\+[\s\S]*?\*/", _OTHER),
    (r"(--|# ).*?(\r\n|\r|\n|$)", _CS),
    (r"/\*[\s\S]*?\*/", _OTHER),
    (r"(\r\n|\r|\n)", _NL),
    (r"\s+?", _W),
    (r":=", _OTHER),
    (r"::", _PUNCT),
    (r"\*", _OTHER),
    (r"`(``|[^`])*`", _OTHER),
    (r"´(´´|[^´])*´", _OTHER),
    (r"((?<!\S)\$(?:[_A-ZÀ-Ü]\w*)?\$)[\s\S]*?\1", _OTHER),
    (r"\?", _OTHER),
    (r"%(\(\w+\))?s", _OTHER),
    (r"(?<!\w)[$:?]\w+", _OTHER),
    (r"\\\w+", _OTHER),
    (r"(NOT\s+)?(IN)\b", _OTHER),
    (r"(CASE|IN|VALUES|USING|FROM|AS)\b", _KW),
    (r"(@|##|#)[A-ZÀ-Ü]\w+", _OTHER),
    (r"[A-ZÀ-Ü]\w*(?=\s*\.)", _OTHER),
    (r"(?<=\.)[A-ZÀ-Ü]\w*", _OTHER),
    (r"[A-ZÀ-Ü]\w*(?=\()", _OTHER),
    (r"-?0x[\dA-F]+", _OTHER),
    (r"-?\d+(\.\d+)?E-?\d+", _OTHER),
    (r"(?![_A-ZÀ-Ü])-?(\d+(\.\d*)|\.\d+)(?![_A-ZÀ-Ü])", _OTHER),
    (r"(?![_A-ZÀ-Ü])-?\d+(?![_A-ZÀ-Ü])", _OTHER),
    (r"'(''|\\\\|\\'|[^'])*'", _STR),
    (r'"(""|\\\\|\\"|[^"])*"', _STR),
    (r'(""|".*?[^\\]")', _STR),
    (r"(?<![\w\])])(\[[^\]\[]+\])", _OTHER),
    (
        r"((LEFT\s+|RIGHT\s+|FULL\s+)?(INNER\s+|OUTER\s+|STRAIGHT\s+)?"
        r"|(CROSS\s+|NATURAL\s+)?)?JOIN\b",
        _KW,
    ),
    (r"END(\s+IF|\s+LOOP|\s+WHILE)?\b", _KW),
    (r"NOT\s+NULL\b", _KW),
    (r"NULLS\s+(FIRST|LAST)\b", _KW),
    (r"UNION\s+ALL\b", _KW),
    (r"CREATE(\s+OR\s+REPLACE)?\b", _DDL),
    (r"DOUBLE\s+PRECISION\b", _OTHER),
    (r"GROUP\s+BY\b", _KW),
    (r"ORDER\s+BY\b", _KW),
    (r"HANDLER\s+FOR\b", _KW),
    (r"(LATERAL\s+VIEW\s+)(EXPLODE|INLINE|PARSE_URL_TUPLE|POSEXPLODE|STACK)\b", _KW),
    (r"(AT|WITH')\s+TIME\s+ZONE\s+'[^']+'", _OTHER),
    (r"(NOT\s+)?(LIKE|ILIKE|RLIKE)\b", _OTHER),
    (r"(NOT\s+)?(REGEXP)\b", _OTHER),
    (r"[0-9_\w][_$#\w]*", _WORD),
    (r"[;:()\[\],\.]", _PUNCT),
    (r"[<>=~!]+", _OTHER),
    (r"[+/@#%^&|^-]+", _OTHER),
]
_SQLPARSE_MATCHERS: list[tuple[Callable[[str, int], re.Match[str] | None], int]] = [
    (re.compile(rx, re.IGNORECASE | re.UNICODE).match, kind) for rx, kind in _SQLPARSE_RULES
]
#: Words sqlparse classifies as keywords that move its statement-split level.
_SPLIT_KEYWORDS = frozenset({"BEGIN", "DECLARE", "IF", "FOR", "WHILE", "GO"})


def _sqlparse_tokens(sql: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    pos, n = 0, len(sql)
    while pos < n:
        for match, kind in _SQLPARSE_MATCHERS:
            m = match(sql, pos)
            if m is None:
                continue
            text = m.group()
            if not text:  # an empty match cannot advance; sqlparse would emit one char
                continue
            if kind == _WORD and text.upper() in _SPLIT_KEYWORDS:
                kind = _KW
            out.append((kind, text))
            pos += len(text)
            break
        else:
            out.append((_OTHER, sql[pos]))
            pos += 1
    return out


def _first_statement(tokens: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """sqlparse's StatementSplitter, stopped after the first statement."""
    level = 0
    is_create = False
    begin_depth = 0
    consume_ws = False
    stmt: list[tuple[int, str]] = []
    for kind, text in tokens:
        if consume_ws and kind not in (_W, _CS):
            return stmt
        unified = text.upper()
        if kind == _PUNCT and text == "(":
            level += 1
        elif kind == _PUNCT and text == ")":
            level -= 1
        elif kind == _DDL:
            is_create = True
        elif kind == _KW:
            if unified == "DECLARE" and is_create and begin_depth == 0:
                level += 1
            elif unified == "BEGIN":
                begin_depth += 1
                level += 1 if is_create else 0
            elif unified == "END":
                begin_depth = max(0, begin_depth - 1)
                level -= 1
            elif unified in ("IF", "FOR", "WHILE", "CASE") and is_create and begin_depth > 0:
                level += 1
            elif re.fullmatch(r"END\s+(IF|WHILE)", unified):
                level -= 1
        stmt.append((kind, text))
        if (level <= 0 and kind == _PUNCT and text == ";") or (kind == _KW and text.split()[0] == "GO"):
            consume_ws = True
    return stmt


def remove_distinct(sql: str) -> str:
    """TSSE ``remove_distinct``: drop every ``distinct`` token of the first statement.

    Reproduces ``''.join(t for t in sqlparse.parse(s)[0].flatten() if t.lower() != 'distinct')``
    without sqlparse: surrounding whitespace stays (``SELECT  name``), quoted text and comments
    are untouched, and anything after the first top-level ``;`` (plus trailing blanks) is
    dropped, as sqlparse's statement splitter does.
    """
    stmt = _first_statement(_sqlparse_tokens(sql))
    return "".join(text for _, text in stmt if text.lower() != "distinct")


_VALUE_SLOT = "VALUERARE"
_T_STARS = ("t1.*", "t2.*", "t3.*", "T1.*", "T2.*", "T3.*")


def _extract_query_values(sql: str) -> tuple[list[str], set[str]]:
    """TSSE ``parse.extract_query_values``: lower-cased tokens with value slots, and the values.

    Literals (quoted strings, then float and int tokens) become the slot ``valuerare``. Not
    reproduced: sqlparse's ``format(keyword_case='upper')`` pass, which only changes the case of
    keywords that are lower-cased again afterwards.
    """
    query = sql.strip().replace(";", "").replace("\t", "")
    query = " ".join(text for kind, text in _first_statement(_sqlparse_tokens(query)) if kind != _W)
    for star in _T_STARS:
        query = query.replace(star, "*")
    query = re.sub(r"(T\d+\.)\s", r"\1", query)
    values: list[str] = []
    strings = [t for k, t in _first_statement(_sqlparse_tokens(query)) if k == _STR]
    for val in strings:
        values.append(val)
        query = query.replace(val.strip(), _VALUE_SLOT)
    toks = query.split()
    floats = re.findall(r"[-+]?\d*\.\d+", query)
    values += [t for t in toks if t in floats]
    toks = [_VALUE_SLOT if t in floats else t for t in toks]
    query = " ".join(toks)
    ints = [i.strip() for i in re.findall(r"[^tT]\d+", query)]
    values += [t for t in toks if t in ints]
    toks = [_VALUE_SLOT if t in ints else t for t in toks]
    keywords: list[str] = []
    for tok in toks:
        if "." in tok and re.findall(r"[Tt]\d+\.", tok):
            keywords.extend(t.lower() for t in tok.replace(".", " . ").split() if t)
        elif tok:
            keywords.append(tok.lower())
    return keywords, set(values)


def tsse_plug_values(gold_sql: str, pred_sql: str) -> Iterator[str]:
    """TSSE ``--plug_value`` candidates: the prediction with gold literals in its value slots.

    Every way of filling the prediction's slots with the gold's values, lazily (there are
    ``len(values) ** slots``); TSSE tries the raw prediction first, then these, and scores 1
    if any matches. Pass the texts after :func:`tsse_prepare`.
    """
    _, gold_values = _extract_query_values(gold_sql)
    slotted, _ = _extract_query_values(pred_sql)
    slot = _VALUE_SLOT.lower()
    positions = [i for i, t in enumerate(slotted) if t == slot]
    pool = list(gold_values)
    for combo in product(pool, repeat=len(positions)):
        toks = slotted[:]
        for i, v in zip(positions, combo, strict=True):
            toks[i] = v
        yield " ".join(toks)


def tsse_prepare(sql: str, *, keep_distinct: bool = False) -> str:
    """The text TSSE executes: ``'> ='`` fixes, DISTINCT removal, ``YEAR(CURDATE())`` -> 2020."""
    sql = sql.replace("> =", ">=").replace("< =", "<=").replace("! =", "!=")
    if not keep_distinct:
        sql = remove_distinct(sql)
    return re.sub(r"YEAR\s*\(\s*CURDATE\s*\(\s*\)\s*\)\s*", "2020", sql, flags=re.IGNORECASE)


__all__ = ["order_matters", "remove_distinct", "tsse_plug_values", "tsse_prepare"]
