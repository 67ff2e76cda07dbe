"""The event builder (fast path of case-file loading) against the node path it replaces.

The node path (PyYAML's pure-Python SafeLoader with located containers) is the reference: for
every document the event builder accepts it must give the same values, container types, lines
and key lines; everything else it must decline, so that the node path's errors stay the ones
users see.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_queryeval.errors import ConfigError
from pytest_queryeval.suite import yamlload
from pytest_queryeval.suite.yamlload import LocDict, LocList, load_text

ROOT = Path(__file__).resolve().parents[2]


def reference(text: str) -> Any:
    return yamlload._parse(text, "f.yaml", yamlload._Loader)


def fast(text: str) -> Any:
    return yamlload._build_from_events(text, yamlload._FAST)


def same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, LocDict):
        return (a.line == b.line and a.key_lines == b.key_lines and list(a) == list(b)
                and all(same(a[k], b[k]) for k in a))
    if isinstance(a, LocList):
        return (a.line == b.line and a.item_lines == b.item_lines and len(a) == len(b)
                and all(same(x, y) for x, y in zip(a, b, strict=True)))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


# strings that YAML 1.1 resolves to other types when plain, and some that it does not
TRICKY = ["1", "1.0", "1e3", "1.5e+3", "yes", "No", "on", "~", "null", "", "0x1F", "0o17",
          "2020-01-01", "2020-01-01 10:00:00", ".nan", "-.inf", "1_000", "<<", "=", "a: b",
          "- x", "#", "'q'", "SELECT * FROM t WHERE a = 'x'", "é\u00e8", "multi\nline"]
scalars = st.one_of(
    st.sampled_from(TRICKY), st.text(max_size=12), st.integers(-10**20, 10**20),
    st.floats(allow_nan=False), st.booleans(), st.none(),
)
keys = st.one_of(st.sampled_from(TRICKY[:12]), st.text(min_size=1, max_size=8),
                 st.integers(-5, 5))
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(doc=documents, style=st.sampled_from([None, True, False, "json"]))
def test_event_builder_equals_node_path(doc: Any, style: Any) -> None:
    if style == "json":
        try:
            text = json.dumps(doc)
        except (TypeError, ValueError):
            return
    else:
        text = yaml.safe_dump(doc, default_flow_style=style, allow_unicode=True)
    try:
        ref = reference(text)
    except yaml.YAMLError:  # e.g. json.dumps of {"1": .., 1: ..}: a duplicate key
        with pytest.raises(ConfigError):
            load_text(text, "f.yaml")
        with pytest.raises((yamlload._Decline, yaml.YAMLError)):
            fast(text)
        return
    assert same(load_text(text, "f.yaml"), ref), text
    try:
        got = fast(text)
    except (yamlload._Decline, yaml.YAMLError):  # libyaml refuses a few escapes PyYAML takes
        return
    assert same(got, ref), text


def test_event_builder_accepts_the_example_suite() -> None:
    files = sorted((ROOT / "example_suite").rglob("*.yaml"))
    assert len(files) > 5
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert same(fast(text), reference(text)), path


@pytest.mark.parametrize("text", [
    "a: &x 1\nb: *x\n",           # anchors and aliases
    "a: !!str 1\n",                # explicit tags
    "a: !custom 1\n",
    "base: &b {x: 1}\nc:\n  <<: *b\n",  # merge keys
    "<<: {a: 1}\n",
    "a: 1\na: 2\n",                # duplicate keys
    "? [1, 2]\n: x\n",             # a non-scalar key
    "--- 1\n--- 2\n",              # two documents
    "[" * 150 + "]" * 150,         # deeper than the builder goes
])
def test_event_builder_declines_what_only_the_node_path_handles(text: str) -> None:
    with pytest.raises(yamlload._Decline):
        fast(text)


@pytest.mark.parametrize(("text", "message"), [
    ("a: 1\na: 2\n", "f.yaml:2: YAML syntax error, column 1: duplicate key 'a'"),
    ("--- 1\n--- 2\n", "f.yaml:2: YAML syntax error, column 1: but found another document"),
    ("a: [1, 2\n", "f.yaml:2: YAML syntax error"),
])
def test_load_text_errors_still_come_from_the_node_path(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_text(text, "f.yaml")
    assert str(info.value).startswith(message), str(info.value)


def test_load_text_values_and_lines() -> None:
    text = "kind: sql\ncases:\n  - id: a\n    n: 0x10\n    when: 2020-01-02\n  - id: 'b'\n"
    doc = load_text(text, "f.yaml")
    assert same(doc, reference(text))
    assert doc["cases"][0]["n"] == 16
    assert doc.line_of("cases") == 2
    assert doc["cases"].line_of(1) == 6
    assert doc["cases"][0].line_of("when") == 5


def test_the_depth_check_ends_at_a_stream_already_read() -> None:
    """A parser past its stream's end gives None from then on; the depth check waited for a
    StreamEndEvent forever (a collection spun at full CPU: the thirty-fourth re-probe of
    issue 58). Bounded here: a get that fails the test past 1,000 calls instead of hanging."""
    import yaml

    from pytest_queryeval._yaml.yamlload import _check_depth

    loader = yaml.SafeLoader("a: [1, 2]\n")
    while loader.get_event() is not None:
        pass
    calls = 0

    def get() -> object:
        nonlocal calls
        calls += 1
        assert calls < 1000, "the depth check kept reading past the stream's end"
        return loader.get_event()

    _check_depth(get, 0, "queryeval.yaml")
    assert calls == 1
