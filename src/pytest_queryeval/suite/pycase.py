"""A case written in Python (``queryeval.check(kind=..., id=..., gold=...)``) read by exactly
the reader of a YAML case.

Why the YAML reader and not a second constructor: a case in a test function must mean what
the same mapping means in a case file (defaults of the governing ``queryeval.yaml``, the
datasource's dialect, thresholds from every level, the kind's validation), and its mistakes
must read the same (``test_shop.py:12: gold: ...``, the line of the ``check`` call). The
mapping is wrapped as the YAML loader's located dict, every key on the call's line.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from .._yaml.yamlload import MAX_NESTING_DEPTH, LocDict, LocList
from ..errors import ConfigError
from ..model import Case, Threshold
from .cases import CaseReader, MetricCheck
from .config import SuiteConfig


def _nesting_problem(value: object) -> str | None:
    """Why a field's value cannot be read as a YAML value: nested deeper than the YAML
    loader allows, or holding itself (a Python list appended to itself), else None. A case
    file cannot be either; a test function's arguments can, and the reader below (and every
    reader after it) would end in a RecursionError (issue 50 item 7)."""
    heights: dict[int, int] = {}
    on_path: set[int] = set()

    def height(item: object) -> int:  # recursion bounded by MAX_NESTING_DEPTH
        if not isinstance(item, Mapping | list | tuple):
            return 0
        key = id(item)
        if key in on_path:
            raise ValueError("contains itself (a list or mapping that holds itself is no "
                             "YAML value)")
        if key in heights:
            return heights[key]
        if len(on_path) >= MAX_NESTING_DEPTH:
            raise ValueError(f"nested deeper than {MAX_NESTING_DEPTH} levels (the limit of a "
                             "case file's YAML)")
        on_path.add(key)
        children = item.values() if isinstance(item, Mapping) else item
        found = 1 + max((height(c) for c in children), default=0)
        on_path.discard(key)
        heights[key] = found
        return found

    try:
        height(value)
    except ValueError as exc:
        return str(exc)
    return None


def _located(value: object, line: int) -> object:
    """``value`` as the YAML loader builds it (dicts and lists that know their line)."""
    if isinstance(value, Mapping):
        out = LocDict((k, _located(v, line)) for k, v in value.items())
        out.line, out.key_lines = line, dict.fromkeys(out, line)
        return out
    if isinstance(value, list | tuple):
        items = LocList(_located(v, line) for v in value)
        items.line, items.item_lines = line, [line] * len(items)
        return items
    return value


def case_from_fields(fields: Mapping[str, object], *, path: Path, display: str, line: int,
                     suite: SuiteConfig, is_metric: MetricCheck | None = None,
                     ini_thresholds: dict[str, Threshold] | None = None,
                     extra_names: Callable[[str], Iterable[str]] | None = None,
                     cli_thresholds: dict[str, Threshold] | None = None,
                     model: str | None = None) -> Case:
    """The case ``fields`` describe, as if they were a one-case file at ``path``, ``line``;
    its problems are in ``case.errors`` as a case file's are. ``model``: the model of the
    suite's ``predictions:`` this test's item was fanned out for (:func:`fans_out` says
    whether the case is asked of it), the case then being that model's (``<id>[<model>]``)
    exactly as a case file's. A ``datasource`` list (the fan-out of a case file) is refused:
    a test function is one case, and ``parametrize`` makes one test per source."""
    if not isinstance(fields.get("id"), str) or not fields.get("id"):
        raise ConfigError("a case written in Python needs an id (a non-empty string)",
                          display, line, "id")
    if isinstance(fields.get("datasource"), list | tuple):
        raise ConfigError("one name per case written in Python (parametrize the "
                          "test over the names for one case per source)", display, line,
                          "datasource")
    return cases_from_fields(fields, path=path, display=display, line=line, suite=suite,
                             is_metric=is_metric, ini_thresholds=ini_thresholds,
                             extra_names=extra_names, cli_thresholds=cli_thresholds,
                             model=model)[0]


def cases_from_fields(fields: Mapping[str, object], *, path: Path, display: str, line: int,
                      suite: SuiteConfig, is_metric: MetricCheck | None = None,
                      ini_thresholds: dict[str, Threshold] | None = None,
                      extra_names: Callable[[str], Iterable[str]] | None = None,
                      cli_thresholds: dict[str, Threshold] | None = None,
                      model: str | None = None) -> list[Case]:
    """The cases ``fields`` describe (:func:`case_from_fields`): one, or one per source when
    ``datasource`` is a list, read by the case file's fan-out (``<id>[<source>]``, each on its
    own source, then ``[<model>]``), so that their ids and records are the YAML case's."""
    if not isinstance(fields.get("id"), str) or not fields.get("id"):
        raise ConfigError("a case written in Python needs an id (a non-empty string)",
                          display, line, "id")
    for key, value in fields.items():
        problem = _nesting_problem(value)
        if problem:
            raise ConfigError(problem, display, line, str(key))
    entry = _located({k: v for k, v in fields.items() if v is not None}, line)
    assert isinstance(entry, LocDict)
    header = LocDict()
    header.line, header.key_lines = line, {}
    reader = CaseReader(path, display, header, suite, is_metric, ini_thresholds or {},
                        extra_names, cli_thresholds or {})
    cases = reader.fanned_sources(0, entry)
    if model is not None and fans_out(fields):
        from .models import assign

        for case in cases:
            assign(case, model, suite.models, suite.model_errors)
    return cases


def fans_out(fields: Mapping[str, object]) -> bool:
    """Whether a case written in Python is asked of the suite's models, as a case file's
    entry is: unless it writes its own prediction."""
    from .cases import inline

    return not inline({k: v for k, v in fields.items() if v is not None})


#: The expression nodes a ``check`` call's arguments may be made of to be read before the test
#: runs: values, names, containers, subscripts, f-strings and arithmetic, nothing that calls
#: (no call, no attribute: reading them cannot run code of the suite's).
_PURE = (ast.Constant, ast.Name, ast.Load, ast.List, ast.Tuple, ast.Dict, ast.Set,
         ast.Subscript, ast.Slice, ast.JoinedStr, ast.FormattedValue, ast.BinOp, ast.UnaryOp,
         ast.operator, ast.unaryop)


def fields_ahead(func: Callable[..., object], known: Mapping[str, object],
                 fixture: str = "queryeval") -> dict[str, object] | None:
    """The fields ``func``'s ``<fixture>.check(...)`` will be given, read without running the
    test, so its prediction can be requested ahead as a YAML case's is; None when they cannot
    be known before it runs.

    Why so narrow: a test's body is code, and the run may not execute it early (its fixtures,
    its side effects). The fields are read only when the call is one of the function's own
    statements (not under an ``if`` or a loop), its arguments are keywords made of literals,
    the test's direct ``parametrize`` arguments (``known``) and the module's globals, combined
    without a call or an attribute, and none of those names is touched by a statement before
    the call. A test that then gives other fields (a global changed meanwhile) is asked again
    when it runs (the caller compares)."""
    found = _check_call(func, fixture)
    if found is None:
        return None
    call, before = found
    names = {n.id for kw in call.keywords for n in ast.walk(kw.value) if isinstance(n, ast.Name)}
    touched = {n.id for stmt in before for n in ast.walk(stmt) if isinstance(n, ast.Name)}
    code = getattr(func, "__code__", None)
    params = set(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]) if code else set()
    scope: dict[str, object] = {}
    for name in names:
        if name in touched or (name in params and name not in known):
            return None  # changed before the call, or another fixture's value
        if name in known:
            scope[name] = known[name]
        elif name in getattr(func, "__globals__", {}) and code is not None \
                and name not in code.co_varnames and name not in code.co_cellvars \
                and name not in code.co_freevars:
            scope[name] = func.__globals__[name]
        else:
            return None
    fields: dict[str, object] = {}
    for kw in call.keywords:
        value = eval(compile(ast.Expression(kw.value), "<queryeval check>", "eval"),
                     {"__builtins__": {}}, dict(scope))
        if kw.arg is not None:
            fields[kw.arg] = value
        elif isinstance(value, Mapping):
            fields.update((str(k), v) for k, v in value.items())
        else:
            return None
    return fields


def _check_call(func: Callable[..., object], fixture: str,
                ) -> tuple[ast.Call, list[ast.stmt]] | None:
    """The function's one ``<fixture>.check(...)`` call, a statement of its own body with
    keyword arguments of :data:`_PURE` nodes only, and the statements before it."""
    tree = _function_tree(func)
    if tree is None:
        return None
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Attribute) and n.func.attr == "check"
             and isinstance(n.func.value, ast.Name) and n.func.value.id == fixture]
    if len(calls) != 1 or any(isinstance(n, ast.Global | ast.Nonlocal) for n in ast.walk(tree)):
        return None
    call = calls[0]
    for index, stmt in enumerate(tree.body):
        value = getattr(stmt, "value", None)
        if value is call and isinstance(stmt, ast.Expr | ast.Assign | ast.AnnAssign | ast.Return):
            if call.args or not all(isinstance(n, _PURE) for kw in call.keywords
                                    for n in ast.walk(kw.value)):
                return None
            return call, tree.body[:index]
    return None


_TREES: dict[object, ast.FunctionDef | None] = {}


def _function_tree(func: Callable[..., object]) -> ast.FunctionDef | None:
    """The syntax tree of a plain (not wrapped, not async) function, parsed once."""
    code = getattr(func, "__code__", None)
    if code is None or hasattr(func, "__wrapped__"):
        return None
    if code not in _TREES:
        import inspect
        import textwrap

        try:
            body = ast.parse(textwrap.dedent(inspect.getsource(func))).body
        except (OSError, TypeError, SyntaxError, ValueError):
            body = []
        tree = body[0] if len(body) == 1 else None
        _TREES[code] = tree if isinstance(tree, ast.FunctionDef) else None
    return _TREES[code]
