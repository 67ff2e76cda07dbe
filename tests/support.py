"""The three helpers every test shares: a suite builder, a report reader and a case factory.

Why one module: each test directory had grown its own copy of each (a ``suite`` fixture in six
files, a dozen ``_run``/``_report`` helpers re-reading the JSON report, about nine ``Case``
factories), with small differences nobody meant. New tests import from here; the pytester-facing
``suite`` fixture in ``tests/conftest.py`` is :func:`write_suite` on pytester's directory.

API (plain functions, importable without a pytest run):

- :func:`write_suite` lays out a suite: the ini that makes ``test_*.yaml`` case files, a
  ``queryeval.yaml`` (always, ``{}`` when no config is given, so the directory is governed by a
  suite config), and any case or data files.
- :func:`read_report` parses a JSON report into a :class:`Report`: the plain mapping, plus
  ``by_id`` and ``outcomes``. :func:`run_report` runs pytester with ``--queryeval-json`` and
  returns the run's result with that report.
- :func:`make_case` builds a resolved :class:`~pytest_queryeval.model.Case` for kind- and
  engine-level tests that need no YAML: neutral defaults, any field overridden by keyword.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.model import Case

#: The ini every suite gets: case files are the ``test_*.yaml`` files.
SUITE_INI = "[pytest]\nqueryeval_files = test_*.yaml\n"


def dump(data: Any) -> str:
    """YAML is a superset of JSON: JSON text keeps tests independent of a YAML emitter."""
    return json.dumps(data, indent=2)


def write_suite(root: Path, config: Mapping[str, Any] | str | None = None,
                files: Mapping[str, Any] | None = None, *, ini: str = SUITE_INI) -> Path:
    """Write a suite under ``root`` and return ``root``.

    The ini goes to ``tox.ini``, the file ``pytester.makeini`` writes, so a test that calls
    ``makeini`` later replaces it rather than being shadowed by it. ``config`` (a mapping, or
    YAML text as written) becomes ``queryeval.yaml``; ``files`` maps a path relative to
    ``root`` to a mapping or list (written as JSON, which YAML reads) or to text.
    """
    root.mkdir(parents=True, exist_ok=True)
    (root / "tox.ini").write_text(ini, encoding="utf-8")
    text = config if isinstance(config, str) else dump(dict(config or {}))
    (root / "queryeval.yaml").write_text(text, encoding="utf-8")
    for name, content in (files or {}).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else dump(content), encoding="utf-8")
    return root


class Report(dict[str, Any]):
    """A parsed JSON report: the mapping as written, plus the look-ups tests keep needing."""

    @property
    def by_id(self) -> dict[str, dict[str, Any]]:
        """Each case record by its id."""
        return {c["id"]: c for c in self["cases"]}

    @property
    def outcomes(self) -> dict[str, str]:
        """Each case's outcome by its id."""
        return {c["id"]: c["outcome"] for c in self["cases"]}


def read_report(path: Path) -> Report:
    """The JSON report at ``path``."""
    return Report(json.loads(path.read_text(encoding="utf-8")))


def run_report(pytester: pytest.Pytester, *args: str, name: str = "r.json",
               subprocess: bool = False, fresh: bool = False,
               ) -> tuple[pytest.RunResult, Report]:
    """Run pytester with ``--queryeval-json=<name>``; the result and the report it wrote.

    ``fresh`` removes a report an earlier run left, so a run that writes none cannot pass on
    the old one.
    """
    path = pytester.path / name
    if fresh:
        path.unlink(missing_ok=True)
    run = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    result = run(f"--queryeval-json={name}", *args)
    assert path.is_file(), result.stdout.str()[-3000:]
    return result, read_report(path)


def make_case(kind: str = "sql", **fields: Any) -> Case:
    """A resolved case of ``kind``: id ``c`` at line 1 of ``test_x.yaml`` unless overridden."""
    fields.setdefault("id", "c")
    fields.setdefault("file", Path("test_x.yaml"))
    fields.setdefault("line", 1)
    return Case(kind=kind, **fields)


def kind_source(cls: str, name: str, metric: str, evaluate: str, doc: str = "") -> str:
    """The source of a custom kind class for a conftest or a plugin module, written as a
    third-party package writes one: the contract's members only, one metric, ``evaluate`` the
    body of its method (indented by eight spaces). A class body may follow (more members)."""
    docline = f'    """{doc}"""\n' if doc else ""
    return (f"class {cls}:\n{docline}"
            f"    name = {json.dumps(name)}\n"
            "    option_keys = frozenset()\n\n"
            "    def is_metric(self, name):\n"
            f"        return name == {json.dumps(metric)}\n\n"
            "    def validate(self, case):\n"
            "        return []\n\n"
            "    def difficulty(self, case):\n"
            "        return None\n\n"
            "    def evaluate(self, case, prediction, ctx):\n"
            f"{evaluate}\n")


def strings_in(node: object) -> Iterator[str]:
    """Every string value of a parsed JSON or YAML document (mapping keys left out): the
    corpus tests look for the queries among them."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from strings_in(value)
    elif isinstance(node, list):
        for value in node:
            yield from strings_in(value)
