"""The judge's pin file read like every other input file (issue 39 item 5): a regular file only,
bounded in size and nesting, its problems located.

On the original code ``pins:`` naming a FIFO hung the run with no report (``open`` waited for a
writer), ``/dev/zero`` was read until memory ran out, and a directory or a line of 100,000
``[`` was an internal error of every judged case. A name that can never be a file (FIFO,
device, directory, a symlink to one) is now a usage error of ``queryeval.yaml`` naming line and
key before any case runs; a file whose content cannot be read is the judge error of each case
that uses it, naming the file and line. Every run goes through a subprocess with a timeout, so
a regression hangs nothing. The judge model is the loopback stand-in
(tests/fixtures/openai_standin.py); the database a real SQLite file.
"""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

from pytest_queryeval.judge.pins import PinStore
from tests.fixtures.openai_standin import KEY, MODEL
from tests.support import dump, read_report

pytest.importorskip("openai")

GOLD = "SELECT count(*) FROM artists"
PRED = "SELECT count(*) + 1 FROM artists"  # wrong: the judge is consulted
ACCEPT = json.dumps({"category": "equivalent", "reason": "stand-in verdict"})


@pytest.fixture
def music(suite):
    conn = sqlite3.connect(suite.path / "music.sqlite")
    conn.execute("CREATE TABLE artists (id INTEGER PRIMARY KEY, name TEXT)")
    conn.executemany("INSERT INTO artists VALUES (?, ?)", [(1, "AC/DC"), (2, "Accept")])
    conn.commit()
    conn.close()
    suite.makefile(".yaml", test_music=dump({
        "kind": "sql", "datasource": "music",
        "thresholds": {"execution_accuracy": 0, "judge_ex": 1},
        "cases": [{"id": "one", "question": "How many artists?", "gold": GOLD,
                   "predicted": PRED}]}))
    return suite


def _config(suite, standin, pins: str | None) -> None:
    judge = {"model": MODEL, "base_url": standin.base_url, "api_key": KEY, "retries": 0,
             "timeout": 30}
    if pins is not None:
        judge["pins"] = pins
    (suite.path / "queryeval.yaml").write_text(
        "datasources:\n  music: {type: sqlite, path: music.sqlite}\njudge:\n"
        + "".join(f"  {k}: {json.dumps(v)}\n" for k, v in judge.items()))


def _run(suite, *, subprocess: bool = False) -> tuple[pytest.RunResult, str]:
    """The suite run; in a subprocess with a timeout where the original code hung or read
    without end (a FIFO, a device, a 5 GB file), so a regression fails instead of hanging.
    Its output, stdout and stderr together."""
    (suite.path / "r.json").unlink(missing_ok=True)
    args = ("-p", "no:cacheprovider", "--queryeval-json=r.json")
    result = suite.runpytest_subprocess(*args, timeout=60) if subprocess \
        else suite.runpytest(*args)
    out = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out, out[-3000:]
    assert "internal error" not in out, out[-3000:]
    return result, out


@pytest.mark.parametrize(("make", "message"), [
    ("fifo", "'fifo.jsonl': a FIFO (named pipe), not a regular file"),
    ("zero", "'zero.jsonl': a character device, not a regular file"),
    ("directory", "'dir.jsonl': a directory, not a regular file"),
    ("symlink", "'link.jsonl': a FIFO (named pipe), not a regular file"),
])
def test_a_pin_file_that_is_no_regular_file_is_a_located_usage_error(music, openai_standin,
                                                                      make, message):
    name = {"fifo": "fifo.jsonl", "zero": "zero.jsonl", "directory": "dir.jsonl",
            "symlink": "link.jsonl"}[make]
    path = music.path / name
    if make == "fifo":
        os.mkfifo(path)
    elif make == "zero":
        path.symlink_to("/dev/zero")
    elif make == "directory":
        path.mkdir()
    else:
        os.mkfifo(music.path / "pipe")
        path.symlink_to(music.path / "pipe")
    _config(music, openai_standin, name)
    done, out = _run(music, subprocess=True)
    assert done.ret == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    assert f"queryeval.yaml:9: judge.pins: {message}" in out
    assert openai_standin.requests == []


@pytest.mark.parametrize("make", ["fifo", "directory"])
def test_a_default_pin_file_that_is_no_regular_file_is_the_judged_cases_error(
        music, openai_standin, make):
    """No ``pins:`` written: the default ``queryeval-judge-pins.jsonl`` is only read when the
    first case is judged, through safefile: its error is the case's, the run ends."""
    path = music.path / "queryeval-judge-pins.jsonl"
    os.mkfifo(path) if make == "fifo" else path.mkdir()
    _config(music, openai_standin, None)
    _run(music, subprocess=True)
    case = read_report(music.path / "r.json").by_id["one"]
    assert case["outcome"] == "error"
    kind = "a FIFO (named pipe)" if make == "fifo" else "a directory"
    assert case["error"] == (f"judge error: judge.pins: queryeval-judge-pins.jsonl: {kind}, "
                             "not a regular file (a judge pins or labels file must be one)")
    assert "judge_ex" not in case["metrics"]
    assert openai_standin.requests == []


@pytest.mark.parametrize(("content", "message"), [
    ("[" * 100_000 + "\n", "queryeval-judge-pins.jsonl:1: not a pinned verdict: not JSON: "
     "nested deeper than 4 levels"),
    ('{"key": "k", "category": "wrong", "reason": "x"}\n'
     '{"key": [[[["deep"]]]], "category": "wrong"}\n',
     "queryeval-judge-pins.jsonl:2: not a pinned verdict: not JSON: nested deeper than 4 "
     "levels"),
    ('{"key": "k", "category": "wrong", "reason": "x"}\n\n{"key": "k2", "category": \n',
     "queryeval-judge-pins.jsonl:3: not a pinned verdict: not JSON: Expecting value"),
    ('["key", "category"]\n', "queryeval-judge-pins.jsonl:1: not a pinned verdict "
     '({"key", "category", "reason"})'),
    (b'{"key": "k", "category": "wrong", "reason": "\xff"}\n',
     "queryeval-judge-pins.jsonl:1: not UTF-8 text (invalid start byte)"),
])
def test_a_damaged_pin_file_is_a_located_error_of_the_judged_case(music, openai_standin,
                                                                  content, message):
    path = music.path / "queryeval-judge-pins.jsonl"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    before = path.read_bytes()
    _config(music, openai_standin, None)
    _run(music)
    case = read_report(music.path / "r.json").by_id["one"]
    assert case["outcome"] == "error"
    assert case["error"].startswith(f"judge error: judge.pins: {message}"), case["error"]
    assert openai_standin.requests == []
    assert path.read_bytes() == before  # a file that could not be read is never rewritten


def test_a_huge_pin_file_is_refused_before_it_is_read(music, openai_standin):
    with open(music.path / "queryeval-judge-pins.jsonl", "wb") as fh:  # sparse: no blocks
        fh.truncate(5 * 1024 ** 3)
    _config(music, openai_standin, None)
    _run(music, subprocess=True)
    case = read_report(music.path / "r.json").by_id["one"]
    assert case["error"] == (
        "judge error: judge.pins: queryeval-judge-pins.jsonl: 5,368,709,120 bytes, over the "
        "64 MiB limit for a judge pins or labels file")


def test_a_readable_pin_file_still_pins(music, openai_standin):
    """The control: a regular pin file is read and written as before."""
    openai_standin.containing = {PRED: ACCEPT}
    _config(music, openai_standin, None)
    _run(music)
    case = read_report(music.path / "r.json").by_id["one"]
    assert (case["outcome"], case["metrics"]["judge_ex"]) == ("passed", 1.0)
    store = PinStore.load(music.path / "queryeval-judge-pins.jsonl")
    assert [v.category for v in store.pins.values()] == ["equivalent"]
    _run(music)
    again = read_report(music.path / "r.json").by_id["one"]
    assert again["details"]["judge"]["pinned"] is True
    assert len(openai_standin.requests) == 1


def test_a_labels_file_that_is_a_fifo_is_refused_not_waited_on(music):
    os.mkfifo(music.path / "labels.jsonl")
    result = music.runpytest_subprocess("-p", "no:cacheprovider",
                                        "--queryeval-audit-judge=labels.jsonl", timeout=60)
    assert "--queryeval-audit-judge: labels.jsonl: cannot read the labels: a FIFO (named " \
           "pipe), not a regular file" in result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
