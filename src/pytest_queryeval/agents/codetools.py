"""The tools that run code (a code interpreter, a shell, a notebook, a database's command-line
client), known by their name or by an argument that holds code.

Why a rule of its own, and by name rather than by what the code holds: what code ran on the
datasource cannot be read from its text. The twelfth re-probe of issue 58 (H1) ran a
``DELETE`` written the way code ordinarily writes SQL (over two lines, ``f"DELETE FROM {t}"``,
``"DELETE FROM %s" % t``, concatenated, base64, a heredoc, ``sqlite3 db .dump``) past every
search for a statement inside code. So a call of such a tool leaves a count-gated case's
counts not established, whatever its argument holds (:mod:`.case`).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Mapping

from .toolnames import named_tool

#: Words that make a tool a code runner wherever they stand among its name's word parts
#: (``run_python``, ``python_exec``, ``PythonREPL``, ``jupyter.execute``, ``mcp__shell__run``,
#: ``duckdb_cli``); a part is a word split on ``.``, ``/``, ``:``, ``_``, ``-``, blanks and
#: case changes, so ``encode_text`` and ``shellfish_lookup`` hold none. A version after the
#: word is read as the word (``python3``, ``node18``); ``sqlite3`` (the shell, which runs
#: ``.read``, ``.dump`` and ``.shell``) is its own word, a ``sqlite`` query tool is not one.
CODE_WORDS = frozenset({
    "python", "py", "ipython", "jupyter", "repl", "interpreter", "bash", "sh", "zsh", "ksh",
    "csh", "shell", "powershell", "pwsh", "cmd", "terminal", "subprocess", "ssh",
    "sandbox", "javascript", "js", "nodejs", "deno", "typescript", "ruby", "perl", "php",
    "lua", "rscript", "julia", "sqlite3", "psql", "mongosh", "sqlcmd", "cli"})
#: Words that make a tool a code runner beside a verb of running (:data:`RUN_WORDS`:
#: ``run_code``, ``execute_script``, ``exec_command``, ``notebook_run``) or alone as its
#: name's last part (``code``, ``tools.script``); ``zip_code_lookup``, ``search_notebook``
#: and ``get_node`` are not.
RUN_OBJECTS = frozenset({"code", "script", "scripts", "command", "commands", "node", "notebook",
                         "cell", "program", "r", "kernel", "console", "snippet"})
#: The verbs of running; ``exec`` and ``eval`` alone are a code runner's name too.
RUN_WORDS = frozenset({"run", "runner", "execute", "exec", "execution", "executor", "eval",
                       "evaluate", "interpret", "invoke"})
#: Argument names (their whole name, any case, ``-`` or a case change read as ``_``) that
#: hold code: a call with one of them at the top of its arguments runs code, whatever its
#: tool's name.
CODE_ARGUMENTS = frozenset({"code", "source_code", "python_code", "command", "commands", "cmd",
                            "script", "cell", "program", "shell", "python", "bash", "sh",
                            "javascript", "js"})
#: Letters of other scripts drawn like Latin ones (a Cyrillic ``е`` in ``pythоn``): read as
#: the Latin letter, so that a name does not leave the rule by its spelling.
_CONFUSABLE = str.maketrans("аеорсухіјѕһԁοαν", "aeopcyxijshdoav")


def _parts(name: str) -> list[str]:
    """The word parts of a name: compatibility forms (full-width letters) and look-alike
    letters read as Latin, format characters (a zero-width space) left out, split on every
    separator and at case changes (``PythonREPL``: ``python``, ``repl``)."""
    plain = unicodedata.normalize("NFKC", name).translate(_CONFUSABLE)
    plain = "".join(c for c in plain if unicodedata.category(c) != "Cf")
    plain = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", plain)
    return [p for p in re.split(r"[^a-z0-9]+", plain.lower()) if p]


def _word(part: str) -> str:
    """A part with its version left out (``python3``: ``python``), ``sqlite3`` kept."""
    if part in CODE_WORDS:
        return part
    return re.sub(r"\d+$", "", part) or part


def name_words(name: str) -> list[str]:
    """The words of a tool name as this rule reads them (look-alike letters read as Latin,
    split at separators and case changes, a version left out), for the other rules on tool
    names (:mod:`.unrun`)."""
    return [_word(p) for p in _parts(name)]


@functools.lru_cache(maxsize=4096)
def code_tool(name: str) -> str | None:
    """The word of ``name`` that makes it a tool running code, or None (a tool the plugin
    serves, in any spelling, never is: its calls are replayed)."""
    if named_tool(name) is not None:
        return None
    parts = [_word(p) for p in _parts(name)]
    strong = next((p for p in parts if p in CODE_WORDS), None)
    if strong is not None:
        return strong
    last = [_word(p) for p in _parts(re.split(r"\.|/|:|__", name.strip())[-1])]
    obj = next((p for p in parts if p in RUN_OBJECTS), None)
    if obj is not None and (any(p in RUN_WORDS for p in parts) or last == [obj]):
        return obj
    return last[0] if last in (["exec"], ["eval"]) else None


def code_argument(arguments: object) -> str | None:
    """The key at the top of a call's ``arguments`` (an object, or JSON text of one) that holds
    code (:data:`CODE_ARGUMENTS`), with a text or a list as its value, or None."""
    from .._util.boundedio import BoundedReadError, loads_json

    for _ in range(3):  # JSON in JSON text, as the statement readers read it
        if not isinstance(arguments, str) or arguments.lstrip()[:1] not in ("{", '"'):
            break
        try:
            arguments = loads_json(arguments, 128)
        except BoundedReadError:
            return None
    if not isinstance(arguments, Mapping):
        return None
    for key, value in arguments.items():
        if isinstance(value, str | list) and value and \
                "_".join(_parts(str(key))) in CODE_ARGUMENTS:
            return str(key)
    return None


def runs_code(name: str, arguments: object, executed: object = None) -> str | None:
    """Why a call runs code (``its name holds 'python'``, ``its argument 'command' holds
    code``), or None."""
    word = code_tool(name)
    if word is not None:
        return f"its name holds {word!r}"
    key = code_argument(arguments) or code_argument(executed)
    return None if key is None else f"its argument {key[:80]!r} holds code"
