"""Malformed suites, fuzzed with hypothesis: whatever a case file or ``queryeval.yaml`` holds —
random text, random bytes, random structures of valid and invalid keys, mutations of a valid
suite, alias bombs — loading and validating it never raises anything but a located
:class:`ConfigError`, every message starts with ``file:line:``, and running the loaded cases
never produces an internal error. One pytester run proves the same through the plugin."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_queryeval import kinds as kind_registry
from pytest_queryeval.engine import Evaluator, run_case
from pytest_queryeval.errors import ConfigError
from pytest_queryeval.metricnames import TIMING_METRICS
from pytest_queryeval.model import Case
from pytest_queryeval.suite.cases import CASE_KEYS, FILE_KEYS, load_cases
from pytest_queryeval.suite.checks import MetricCatalog, check_suite
from pytest_queryeval.suite.config import ConfigFinder, SuiteConfig

from .conftest import by_id, dump, no_traceback, run_suite

#: One xdist worker runs the whole module: its module-scoped runs are made once, not
#: once per worker (``tests/together.py``).
pytestmark = pytest.mark.xdist_group("tests.hardening.test_fuzz_suites")

NAME = "test_fuzz.yaml"
LOCATED = re.compile(r"^(?P<file>[^\n:]+\.yaml):(?P<line>[1-9]\d*): \S")
FUZZ = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])


def is_metric(kind: str, name: str) -> bool:
    if name in TIMING_METRICS:
        return True
    try:
        return bool(kind_registry.get_kind(kind).is_metric(name))
    except (KeyError, ImportError):
        return False


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@pytest.fixture(scope="module")
def session() -> Iterator[Evaluator]:
    s = Evaluator()
    yield s
    s.close()


def _located(message: str, file: str = NAME) -> None:
    m = LOCATED.match(message)
    assert m is not None, f"not located: {message!r}"
    assert m["file"] == file, message


def load(directory: Path, content: str | bytes, suite: SuiteConfig | None = None,
         ) -> list[Case] | None:
    """Load one case file; assert the error contract; None when the file itself is refused."""
    path = directory / NAME
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8", errors="surrogatepass")
    try:
        cases = load_cases(path, NAME, suite or SuiteConfig(), is_metric, {}, None)
    except ConfigError as exc:
        _located(exc.located())
        return None
    for case in cases:
        for err in case.errors:
            _located(err)
    return cases


def run_all(cases: list[Case] | None, session: Evaluator) -> None:
    """Running a loaded case ends in a verdict, never an internal error. JSON cases are only
    validated (their semantic metric loads a model: that is the JSON kind's own test)."""
    for case in cases or []:
        if case.kind == "json" and not case.errors:
            continue
        outcome = run_case(case, session)
        assert outcome.status in ("passed", "failed", "error")
        assert not (outcome.error or "").startswith("internal error"), outcome.error


# -- strategies ---------------------------------------------------------------------------

TOKENS = ["-", ":", " ", "  ", "\n", "\t", "[", "]", "{", "}", ",", "#", "&a", "*a", "!", "!!str",
          "|", ">", "'", '"', "%", "@", "`", "?", "<<", "id", "kind", "sql", "cases", "gold",
          "predicted", "thresholds", "execution_accuracy", "1.5", "-1", ".nan", "null", "~",
          "yes", "\u2028", "\x85", "\ufeff", "é", "\x00", "\x1b", "---", "...", "%YAML 1.1"]
yaml_like = st.lists(st.sampled_from(TOKENS), max_size=60).map("".join)

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
                    st.sampled_from(["sql", "sparql", "json", "sdmx", "cypher", "SELECT 1",
                                     "SELECT ?s WHERE { ?s ?p ?o }", "chinook", "easy"]))
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(st.one_of(st.text(max_size=8), st.sampled_from(sorted(CASE_KEYS))), inner,
                    max_size=4)), max_leaves=20)
OPTION_KEYS = ["compare", "efficiency", "db_id", "structure", "arity_from", "keep_distinct",
               "test_suite_rewrite",
               "match_on", "case_insensitive_names", "alpha", "beta", "model", "keys"]
METRICS = ["execution_accuracy", "soft_f1", "macro_f1", "json_similarity", "nope", "gold_seconds"]
thresholds = st.dictionaries(st.sampled_from(METRICS), st.one_of(
    scalars, st.dictionaries(st.sampled_from(["min", "max", "mean", "x"]), scalars, max_size=2)),
    max_size=3)
recorded = st.one_of(json_values, st.fixed_dictionaries({
    "columns": st.lists(st.text(max_size=3), max_size=3),
    "rows": st.lists(st.lists(scalars, max_size=3), max_size=4)}))


@st.composite
def case_dicts(draw: Any) -> dict[str, Any]:
    keys = draw(st.lists(st.sampled_from(sorted(CASE_KEYS | set(OPTION_KEYS) | {"junk"})),
                         max_size=8, unique=True))
    case: dict[str, Any] = {}
    for key in keys:
        if key == "thresholds":
            case[key] = draw(thresholds)
        elif key in ("gold_result", "predicted_result"):
            case[key] = draw(recorded)
        elif key == "kind":
            case[key] = draw(st.sampled_from(["sql", "sparql", "json", "sdmx", "cypher", 3]))
        else:
            case[key] = draw(json_values)
    if draw(st.booleans()):
        case["id"] = draw(st.one_of(st.text(max_size=10), st.integers(), st.just("dup")))
    return case


@st.composite
def case_files(draw: Any) -> Any:
    shape = draw(st.sampled_from(["one", "list", "cases", "scalar"]))
    if shape == "one":
        return draw(case_dicts())
    if shape == "list":
        return draw(st.lists(case_dicts(), max_size=4))
    if shape == "scalar":
        return draw(json_values)
    header = draw(st.dictionaries(st.sampled_from([*sorted(FILE_KEYS - {"cases"}), "junk"]),
                                  json_values, max_size=3))
    return {**header, "cases": draw(st.one_of(st.lists(case_dicts(), max_size=4), json_values))}


VALID = """\
kind: sql
datasource: db
thresholds: {execution_accuracy: 1.0}
cases:
  - id: one
    question: How many genres?
    gold: SELECT count(*) FROM genre
    predicted: SELECT count(*) FROM genre
    tags: [smoke]
  - id: two
    gold_result: {columns: [n], rows: [[1], [2]]}
    predicted_result: {columns: [n], rows: [[2], [1]]}
    thresholds: {soft_f1: {min: 0.5}}
"""


@st.composite
def mutations(draw: Any) -> str:
    text = VALID
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["delete", "insert", "dup-line", "indent", "swap"]))
        i = draw(st.integers(0, len(text)))
        if op == "delete":
            text = text[:i] + text[i + draw(st.integers(1, 20)):]
        elif op == "insert":
            text = text[:i] + draw(yaml_like) + text[i:]
        else:
            lines = text.split("\n")
            k = draw(st.integers(0, len(lines) - 1))
            if op == "dup-line":
                lines.insert(k, lines[k])
            elif op == "indent":
                lines[k] = draw(st.sampled_from([" ", "\t", "    "])) + lines[k]
            else:
                j = draw(st.integers(0, len(lines) - 1))
                lines[k], lines[j] = lines[j], lines[k]
            text = "\n".join(lines)
    return text


# -- properties ----------------------------------------------------------------------------

@FUZZ
@given(text=st.one_of(yaml_like, st.text(max_size=200)))
def test_random_text(fuzz_dir: Path, session: Evaluator, text: str) -> None:
    run_all(load(fuzz_dir, text), session)


@FUZZ
@given(data=st.binary(max_size=300))
def test_random_bytes(fuzz_dir: Path, data: bytes) -> None:
    load(fuzz_dir, data)


@FUZZ
@given(data=case_files())
def test_random_structures(fuzz_dir: Path, session: Evaluator, data: Any) -> None:
    suite = SuiteConfig()
    run_all(load(fuzz_dir, yaml.safe_dump(data, allow_unicode=True), suite), session)


@FUZZ
@given(text=mutations())
def test_mutated_valid_suite(fuzz_dir: Path, session: Evaluator, text: str) -> None:
    run_all(load(fuzz_dir, text), session)


config_dicts = st.dictionaries(
    st.sampled_from(["datasources", "predictions", "thresholds", "gates", "defaults", "junk"]),
    st.one_of(json_values, thresholds,
              st.dictionaries(st.text(max_size=5), st.dictionaries(
                  st.sampled_from(["type", "path", "url", "endpoint", "source", "mean", "kind",
                                   "tags", "timeout"]),
                  st.one_of(scalars, st.sampled_from(["sqlite", "sparql", "file", "http",
                                                      "${NOPE_NOT_SET}", "${HOME}"]))),
                  max_size=3)),
    max_size=5)


@FUZZ
@given(config=st.one_of(config_dicts, json_values), raw=st.one_of(st.none(), yaml_like))
def test_random_suite_config(fuzz_dir: Path, session: Evaluator, config: Any, raw: str | None,
                             ) -> None:
    directory = fuzz_dir / "cfg"
    directory.mkdir(exist_ok=True)
    text = raw if raw is not None else yaml.safe_dump(config, allow_unicode=True)
    (directory / "queryeval.yaml").write_text(text, encoding="utf-8", errors="surrogatepass")
    finder = ConfigFinder(fuzz_dir)
    suite = finder.for_directory(directory)
    for err in suite.errors:
        _located(err, "cfg/queryeval.yaml")
    catalog = MetricCatalog(kind_registry.known_kinds(), is_metric)
    for err in check_suite(finder, catalog):  # the usage errors raised before any case runs
        _located(err, "cfg/queryeval.yaml")
    for ds in suite.datasources.values():
        for err in ds.errors:
            _located(err, "cfg/queryeval.yaml")
    for err in suite.predictions_errors:
        _located(err, "cfg/queryeval.yaml")
    path = directory / NAME
    path.write_text(VALID, encoding="utf-8")
    cases = load_cases(path, NAME, suite, is_metric, {}, None)
    for case in cases:
        for err in case.errors:
            m = LOCATED.match(err)
            assert m is not None and m["file"] in (NAME, "cfg/queryeval.yaml"), err
    run_all(cases, session)


# -- crafted documents, and the plugin end to end ----------------------------------------------

BOMB = "\n".join(["kind: sql", 'a0: &a0 ["lol", "lol"]',
                  *(f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}]" for i in range(1, 30)),
                  "cases: [{id: x, gold: SELECT 1, predicted: *a29}]"]) + "\n"
NASTY: dict[str, bytes] = {
    "test_bomb.yaml": BOMB.encode(),
    "test_deep.yaml": b"cases: " + b"[" * 3000 + b"]" * 3000 + b"\n",
    "test_recursive.yaml": b"kind: sql\ncases: &c [*c]\n",
    "test_latin1.yaml": "kind: sql\ncases:\n  - id: caf\xe9\n".encode("latin-1"),
    "test_binary.yaml": bytes(range(256)),
    "test_tabs.yaml": b"kind: sql\ncases:\n\t- id: x\n",
    "test_empty.yaml": b"",
    "test_comments.yaml": b"# nothing here\n",
    "test_scalars.yaml": b"- 1\n- two\n",
    "test_dupkeys.yaml": b"kind: sql\nkind: json\ncases: []\n",
    "test_two_docs.yaml": b"kind: sql\n---\nkind: json\n",
    "test_python_tag.yaml": b"!!python/object/apply:os.system ['echo pwned']\n",
    # one value takes nothing else down: a 5,000-digit integer, NaN/inf limits, a path Python
    # cannot encode, an unterminated quote (issues 24 and 25)
    "test_bigint.yaml": b"kind: sql\ncases:\n  - id: x\n    timeout: " + b"9" * 5000 + b"\n",
    "test_limits.yaml": b"kind: sql\ncases:\n  - {id: a, gold: SELECT 1, timeout: .nan}\n"
                        b"  - {id: b, gold: SELECT 1, max_rows: -.inf}\n"
                        b"  - {id: c, gold: SELECT 1, timeout: 1.0e+999}\n",
    "test_result_paths.yaml": b'kind: sql\ncases:\n  - {id: a, gold: SELECT 1, '
                              b'predicted_result: "\\ud800.csv"}\n',
    "test_open_quote.yaml": b'kind: sql\ncases:\n  - id: a\n    gold: "SELECT 1\n'
                            b"    predicted: x\n",
}


@pytest.mark.parametrize("name", sorted(NASTY))
def test_crafted_documents_are_located_errors(fuzz_dir: Path, name: str) -> None:
    cases = load(fuzz_dir, NASTY[name])
    assert cases is None or all(c.errors for c in cases) or cases == []


def test_nasty_files_through_the_plugin(suite: pytest.Pytester) -> None:
    for name, content in NASTY.items():
        (suite.path / name).write_bytes(content)
    suite.makefile(".yaml", test_good=dump({
        "kind": "sql", "cases": [{"id": "good", "gold_result": {"columns": ["n"], "rows": [[1]]},
                                  "predicted_result": {"columns": ["n"], "rows": [[1]]},
                                  "thresholds": {"execution_accuracy": 1.0}}]}))
    result, report = run_suite(suite, "-rf")
    no_traceback(result)
    assert by_id(report)["good"]["outcome"] == "passed"
    files = {c["file"] for c in report["cases"] if c["outcome"] == "error"}
    assert files == set(NASTY), set(NASTY) ^ files
    for rec in report["cases"]:
        if rec["outcome"] == "error":
            for line in rec["error"].splitlines():
                _located(line, rec["file"])
    result.assert_outcomes(passed=1, failed=len(report["cases"]) - 1)
    assert not (suite.path / "pwned").exists()


def test_suite_config_bomb_is_a_located_error_and_governed_cases_error(suite: pytest.Pytester,
                                                                       ) -> None:
    """The alias bomb in ``queryeval.yaml``: its cases fail with the located reason, fast."""
    sub = suite.path / "bombed"
    sub.mkdir()
    (sub / "queryeval.yaml").write_text(BOMB.replace("cases: [{id: x, gold: SELECT 1, "
                                                     "predicted: *a29}]", "defaults: {}"))
    (sub / "test_under_bomb.yaml").write_text(dump({
        "kind": "sql", "cases": [{"id": "governed", "gold_result": {"columns": ["n"], "rows": [[1]]},
                                  "predicted_result": {"columns": ["n"], "rows": [[1]]}}]}))
    suite.makefile(".yaml", test_elsewhere=dump({
        "kind": "sql", "cases": [{"id": "elsewhere", "gold_result": {"columns": ["n"], "rows": [[1]]},
                                  "predicted_result": {"columns": ["n"], "rows": [[1]]}}]}))
    result, report = run_suite(suite)
    no_traceback(result)
    recs = by_id(report)
    assert recs["elsewhere"]["outcome"] == "passed"
    assert recs["governed"]["outcome"] == "error"
    assert "bombed/queryeval.yaml:1: YAML error: aliases expand to more than" in recs["governed"]["error"]


@FUZZ
@given(text=st.one_of(yaml_like, mutations(), st.lists(st.sampled_from(
    ["*a", "&a ", "- ", "[", "]", "{", "}", ", ", ": ", "\n", " ", "k", "x*", "(*)", "\t"]),
    max_size=30).map("".join)))
def test_alias_precheck_never_misses_an_alias(text: str) -> None:
    """The loader skips the alias-expansion walk when its pattern finds no alias syntax: any
    document in which the YAML parser sees an alias must match that pattern."""
    from pytest_queryeval.suite.yamlload import _MAYBE_ALIAS

    try:
        events = list(yaml.parse(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError:
        return
    if any(isinstance(e, yaml.AliasEvent) for e in events):
        assert _MAYBE_ALIAS.search(text), text
