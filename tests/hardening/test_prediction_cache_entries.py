"""Issue 44 item 3: the prediction cache's directory is untrusted input.

Each entry of the corpus below replaces a good entry of a real :class:`PredictionCache` (on a
real directory): truncated, not JSON, another format, a key that is not its name, an entry
copied from another request, fields of the wrong type, a symbolic link, a FIFO, a directory,
a file over the cap. Each is ignored with a warning naming why, the answer is requested again,
and the entry is rewritten whole, so the next call is a hit. A concurrent writer never leaves
half an entry.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_queryeval.errors import QueryEvalWarning
from pytest_queryeval.predict.base import Prediction
from pytest_queryeval.predict.cache import PredictionCache, entry_digest, read_entry
from tests.support import make_case

CASE = make_case(question="how many?", datasource="db")
REQUEST = {"messages": [{"role": "user", "content": "how many?"}]}


class Model:
    def __init__(self) -> None:
        self.asked = 0

    def __call__(self) -> Prediction:
        self.asked += 1
        return Prediction("SELECT count(*) FROM t", 0.5, {"attempts": 1},
                          {"prompt_tokens": 10.0, "completion_tokens": 4.0}, "m")


def _good(tmp_path: Path) -> tuple[PredictionCache, Model, Path]:
    cache = PredictionCache(tmp_path, {"source": "openai", "model": "m"})
    model = Model()
    cache.answer(CASE, REQUEST, model)
    key, _ = cache.key(CASE, REQUEST)
    return cache, model, cache.path(key)


def _json_edit(change: Callable[[dict], object]) -> Callable[[Path], None]:
    """An edit whose digest is computed again (as whoever edits can): the checks after the
    digest must hold on their own."""
    def apply(path: Path) -> None:
        entry = json.loads(path.read_text())
        new = change(entry)
        new = entry if new is None else new
        if isinstance(new, dict):
            new["digest"] = entry_digest(new)
        path.write_text(json.dumps(new))
    return apply


def _symlink(path: Path) -> None:
    target = path.with_name("elsewhere.json")
    target.write_text(path.read_text())
    path.unlink()
    path.symlink_to(target)


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


def _huge(path: Path) -> None:
    with path.open("r+b") as fh:
        fh.truncate(300 * 1024 * 1024)  # sparse: over the 256 MiB cap, no disk used


def _other_request(path: Path) -> None:
    entry = json.loads(path.read_text())
    entry["request"]["request"]["messages"][0]["content"] = "DROP everything"
    entry["digest"] = entry_digest(entry)
    path.write_text(json.dumps(entry))


HOSTILE: dict[str, tuple[Callable[[Path], None], str]] = {
    "truncated": (lambda p: p.write_bytes(p.read_bytes()[:40]), "not JSON"),
    "empty": (lambda p: p.write_bytes(b""), "not JSON"),
    "binary": (lambda p: p.write_bytes(b"\xff\xfe\x00garbage"), "unreadable"),
    "a list": (lambda p: p.write_text("[1, 2]"), "not an entry of this format"),
    "another format": (_json_edit(lambda e: e.update(format="v0")), "not an entry"),
    "key not its name": (_json_edit(lambda e: e.update(key="0" * 64)), "key is not its name"),
    "another request": (_other_request, "answers another request"),
    "null value": (_json_edit(lambda e: e["answer"].update(value=None)), "answer.value"),
    "number value": (_json_edit(lambda e: e["answer"].update(value=3)), "answer.value"),
    "negative seconds": (_json_edit(lambda e: e["answer"].update(seconds=-1)),
                         "answer.seconds"),
    "seconds as text": (_json_edit(lambda e: e["answer"].update(seconds="1")),
                        "answer.seconds"),
    "usage as text": (_json_edit(lambda e: e["answer"].update(usage={"prompt_tokens": "9"})),
                      "answer.usage"),
    "an unknown usage key": (_json_edit(lambda e: e["answer"]["usage"].update(evil=1)),
                             "answer.usage"),
    "details a list": (_json_edit(lambda e: e["answer"].update(details=[1])), "details"),
    "model a number": (_json_edit(lambda e: e["answer"].update(model=1)), "answer.model"),
    "no answer": (_json_edit(lambda e: e.pop("answer") and None), "answer: not a mapping"),
    "symbolic link": (_symlink, "symbolic link"),
    "fifo": (_fifo, "not a regular file"),
    "directory": (_directory, "not a regular file"),
    "over the cap": (_huge, "over the"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_entry_is_ignored_requested_again_and_rewritten(tmp_path, name):
    cache, model, path = _good(tmp_path)
    spoil, why = HOSTILE[name]
    spoil(path)
    with pytest.warns(QueryEvalWarning, match="ignored") as caught:
        got = cache.answer(CASE, REQUEST, model)
    assert why in str(caught[0].message)
    assert model.asked == 2
    assert got.value == "SELECT count(*) FROM t"
    if name != "directory":  # a directory in its place cannot be replaced by a file
        assert got.details["cache"] == "stored"
        assert why in got.details["cache_ignored"]
        again = cache.answer(CASE, REQUEST, model)
        assert model.asked == 2 and again.details["cache"] == "hit"
    else:
        assert got.details["cache"].startswith("not stored")


def test_a_good_entry_answers_with_what_was_recorded(tmp_path):
    cache, model, path = _good(tmp_path)
    got = cache.answer(CASE, REQUEST, model)
    assert model.asked == 1
    assert (got.value, got.seconds, got.usage, got.model) == (
        "SELECT count(*) FROM t", 0.5, {"prompt_tokens": 10.0, "completion_tokens": 4.0}, "m")
    assert got.details == {"attempts": 1, "cache": "hit"}
    key, text = cache.key(CASE, REQUEST)
    assert path.name == f"{key}.json" and read_entry(path, key, text)[1] is None


def test_secrets_are_in_neither_the_key_nor_the_entry(tmp_path):
    secret = "sk-live-abcdefghijklmnop"
    case = make_case(question=f"use {secret}", secrets=frozenset({secret}))
    cache = PredictionCache(tmp_path, {"source": "http", "api_key": secret,
                                       "headers": {"Authorization": f"Bearer {secret}"}},
                            secrets=[secret])
    model = Model()
    cache.answer(case, {"url": f"http://127.0.0.1:1/?token={secret}", "body": secret}, model)
    text = next(tmp_path.rglob("*.json")).read_text()
    assert secret not in text
    other = PredictionCache(tmp_path, {"source": "http", "api_key": "another-key-value",
                                       "headers": {"Authorization": f"Bearer {secret}"}},
                            secrets=[secret])
    # api_key is no parameter of the answer: the same entry
    assert other.key(case, {"url": "x"})[0] == cache.key(case, {"url": "x"})[0]


def test_writers_of_one_entry_at_once_leave_it_whole(tmp_path):
    """Eight threads store the same entry while eight read it: every read is a whole entry or
    none (atomic renames), never a warning."""
    cache = PredictionCache(tmp_path, {"source": "command"})
    key, text = cache.key(CASE, REQUEST)
    path = cache.path(key)
    problems: list[str] = []

    def write() -> None:
        for _ in range(30):
            PredictionCache(tmp_path, {"source": "command"}, refresh=True).answer(
                CASE, REQUEST, Model())

    def read() -> None:
        for _ in range(200):
            _, problem = read_entry(path, key, text)
            if problem:
                problems.append(problem)

    threads = [threading.Thread(target=f) for f in [write] * 8 + [read] * 8]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert problems == []
    assert read_entry(path, key, text)[0] is not None
    assert not list(tmp_path.rglob("*.tmp"))
