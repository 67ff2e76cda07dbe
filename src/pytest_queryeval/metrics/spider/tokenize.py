"""Tokenisation exactly as the official Spider evaluator sees a query.

The Spider parser (taoyds/spider ``process_sql.tokenize``, Apache-2.0) masks quoted strings,
then runs nltk's ``word_tokenize`` and lower-cases. Its quirks decide which predictions parse
(``a=b`` stays one token, ``<>`` becomes two, ``1,2`` is one token...), so agreement with the
published numbers needs the same token stream. The regular expressions below are the ones of
nltk's ``NLTKWordTokenizer`` (nltk 3.9/3.10, Apache-2.0) that can fire once quotes are masked;
nltk itself is not a dependency (it also needs the punkt model, which is not shipped).
"""

from __future__ import annotations

import re


class TokenizeError(ValueError):
    """The query cannot be tokenised the Spider way (an odd number of quotes)."""


_FINAL_TAIL = "]})>\"'»”’ "


def _ends_with_period(text: str) -> bool:
    """Whether nltk's final-period rules can match (a '.' followed only by closers/spaces)."""
    while True:
        stripped = text.rstrip(_FINAL_TAIL).rstrip()
        if stripped == text:
            return text.endswith(".")
        text = stripped

# (trigger, pattern, replacement): a rule runs only when its trigger can match, which is exact
# because the substitutions only insert spaces (they never create a trigger that was absent).
_SUBS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    # STARTING_QUOTES (the one that can match without quote characters)
    ("«“‘„`", re.compile("([«“‘„]|[`]+)"), r" \1 "),
    ("``", re.compile(r"(``)"), r" \1 "),
    # PUNCTUATION
    ("$.", re.compile(r'([^\.])(\.)([\]\)}>"\'' "»”’ " r"]*)\s*$"), r"\1 \2 \3 "),
    (":,", re.compile(r"([:,])([^\d])"), r" \1 \2"),
    (":,", re.compile(r"([:,])$"), r" \1 "),
    ("..", re.compile(r"\.{2,}"), r" \g<0> "),
    (";@#$%&", re.compile(r"[;@#$%&]"), r" \g<0> "),
    ("$.", re.compile(r'([^\.])(\.)([\]\)}>"\']*)\s*$'), r"\1 \2\3 "),
    ("?!", re.compile(r"[?!]"), r" \g<0> "),
    ("'", re.compile(r"([^'])' "), r"\1 ' "),
    ("*", re.compile(r"[*]"), r" \g<0> "),
    # PARENS_BRACKETS, DOUBLE_DASHES
    ("[](){}<>", re.compile(r"[\]\[\(\)\{\}\<\>]"), r" \g<0> "),
    ("--", re.compile(r"--"), r" -- "),
    # ENDING_QUOTES (after padding the text with spaces)
    ("pad", re.compile(""), ""),
    ("»”’", re.compile("([»”’])"), r" \1 "),
    ("''", re.compile(r"''"), " '' "),
    ('"', re.compile(r'"'), " '' "),
)
_CONTRACTIONS = tuple(
    re.compile(p)
    for p in (
        r"(?i)\b(can)(?#X)(not)\b",
        r"(?i)\b(d)(?#X)('ye)\b",
        r"(?i)\b(gim)(?#X)(me)\b",
        r"(?i)\b(gon)(?#X)(na)\b",
        r"(?i)\b(got)(?#X)(ta)\b",
        r"(?i)\b(lem)(?#X)(me)\b",
        r"(?i)\b(more)(?#X)('n)\b",
        r"(?i)\b(wan)(?#X)(na)(?=\s)",
    )
)
_CONTRACTION_HINT = re.compile(r"cannot|d'ye|gimme|gonna|gotta|lemme|more'n|wanna", re.IGNORECASE)
_PREFIX = ("!", ">", "<")


def word_tokenize(text: str) -> list[str]:
    """nltk ``NLTKWordTokenizer.tokenize`` on a single sentence (quote-free text)."""
    chars = set(text)  # substitutions only add spaces: the character set stays valid
    for trigger, regexp, sub in _SUBS:
        if trigger == "pad":  # nltk pads the text before its ENDING_QUOTES rules
            text = " " + text + " "
            continue
        if trigger == "$.":
            if not _ends_with_period(text):
                continue
        elif len(trigger) == 2 and trigger[0] == trigger[1]:
            if trigger not in text:
                continue
        elif chars.isdisjoint(trigger):
            continue
        text = regexp.sub(sub, text)
    if _CONTRACTION_HINT.search(text):
        for regexp in _CONTRACTIONS:
            text = regexp.sub(r" \1 \2 ", text)
    return text.split()


def tokenize(query: str) -> list[str]:
    """Spider's token list: quoted values kept whole (``'`` turned into ``"``), rest lower-cased,
    ``! =`` / ``> =`` / ``< =`` merged."""
    string = str(query).replace("'", '"')
    quote_idxs = [i for i, ch in enumerate(string) if ch == '"']
    if len(quote_idxs) % 2:
        raise TokenizeError("Unexpected quote (odd number of quotes)")
    vals: dict[str, str] = {}
    for i in range(len(quote_idxs) - 1, -1, -2):
        q1, q2 = quote_idxs[i - 1], quote_idxs[i]
        key = f"__val_{q1}_{q2}__"
        vals[key] = string[q1:q2 + 1]
        string = string[:q1] + key + string[q2 + 1:]
    toks = [w.lower() for w in word_tokenize(string)]
    if vals:
        toks = [vals.get(t, t) for t in toks]
    if "=" in toks:
        for eq_idx in reversed([i for i, t in enumerate(toks) if t == "="]):
            pre = toks[eq_idx - 1]
            if pre in _PREFIX:
                toks = [*toks[:eq_idx - 1], pre + "=", *toks[eq_idx + 1:]]
    return toks
