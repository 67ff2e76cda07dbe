"""Issue 50 item 1: a forged answer in the prediction cache does not make a wrong model pass.

Each forgery of the issue on a real :class:`PredictionCache` directory: a stored answer's
``value`` edited to the right SQL; a well-formed entry (its digest computed again) owned by
another user in a world-writable folder; a shard folder replaced by a symbolic link to a
folder of forged entries. Each is ignored with a warning naming it, the model is asked, and its
(wrong) answer is what the case gets. Before: the forged answer, as a cache hit, no warning.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest

from pytest_queryeval.errors import QueryEvalWarning
from pytest_queryeval.predict import cache as cache_module
from pytest_queryeval.predict.base import Prediction
from pytest_queryeval.predict.cache import PredictionCache
from tests.support import dump, make_case, run_report

CASE = make_case(question="how many artists?", datasource="db")
REQUEST = {"messages": [{"role": "user", "content": "how many artists?"}]}
WRONG, RIGHT = "SELECT 1", "SELECT count(*) FROM Artist"


class Model:
    def __init__(self) -> None:
        self.asked = 0

    def __call__(self) -> Prediction:
        self.asked += 1
        return Prediction(WRONG, 0.5, {}, {}, "m")


def _stored(tmp_path: Path) -> tuple[PredictionCache, Model, Path]:
    cache = PredictionCache(tmp_path / "predictions", {"source": "openai", "model": "m"})
    model = Model()
    cache.answer(CASE, REQUEST, model)
    key, _ = cache.key(CASE, REQUEST)
    return cache, model, cache.path(key)


def _forge(path: Path, *, digest: bool) -> None:
    entry = json.loads(path.read_text())
    entry["answer"]["value"] = RIGHT
    if digest:
        entry["digest"] = cache_module.entry_digest(entry)
    path.write_text(json.dumps(entry))


def _ask(cache: PredictionCache, model: Model) -> tuple[Prediction, list[str]]:
    """The next run's answer (a cache of the same source, as a new session builds)."""
    cache = PredictionCache(cache.directory, {"source": "openai", "model": "m"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = cache.answer(CASE, REQUEST, model)
    return got, [str(w.message) for w in caught if issubclass(w.category, QueryEvalWarning)]


def test_an_edited_answer_is_not_used(tmp_path):
    cache, model, path = _stored(tmp_path)
    _forge(path, digest=False)
    got, warned = _ask(cache, model)
    assert (got.value, model.asked, got.details["cache"]) == (WRONG, 2, "stored")
    assert warned == [f"queryeval: prediction cache entry {path.stem[:16]}... of case 'c' "
                      "ignored (its content does not match its digest (edited or damaged)); "
                      "the answer is requested again"]
    assert json.loads(path.read_text())["answer"]["value"] == WRONG  # rewritten


@pytest.mark.skipif(os.geteuid() != 0, reason="making a file another user's needs root")
def test_another_users_entry_in_a_world_writable_folder_is_not_used(tmp_path):
    cache, model, path = _stored(tmp_path)
    _forge(path, digest=True)  # well formed: whoever plants it can compute the digest
    os.chown(path, 65534, 65534)
    for folder in (cache.directory, path.parent):
        folder.chmod(0o777)
    got, warned = _ask(cache, model)
    assert (got.value, model.asked) == (WRONG, 2)
    shard = path.parent.name
    assert warned == [
        "queryeval: the prediction cache directory 'predictions' is writable by group and "
        "others (mode 777): whoever can write there can plant an answer that makes a wrong "
        "model pass; only entries written by this user, not writable by others, with a "
        "matching digest are used (chmod go-w, or a directory of your own)",
        f"queryeval: the prediction cache directory 'predictions/{shard}' is writable by group "
        "and others (mode 777): whoever can write there can plant an answer that makes a wrong "
        "model pass; only entries written by this user, not writable by others, with a "
        "matching digest are used (chmod go-w, or a directory of your own)",
        f"queryeval: prediction cache entry {path.stem[:16]}... of case 'c' ignored (it is "
        "owned by another user (uid 65534)); the answer is requested again"]
    assert os.stat(path).st_uid == os.geteuid()  # rewritten by this user


def test_an_entry_of_mine_writable_by_others_is_not_used(tmp_path):
    cache, model, path = _stored(tmp_path)
    _forge(path, digest=True)
    path.chmod(0o666)
    got, warned = _ask(cache, model)
    assert (got.value, model.asked) == (WRONG, 2)
    assert warned == [f"queryeval: prediction cache entry {path.stem[:16]}... of case 'c' "
                      "ignored (it is writable by group and others (mode 666)); the answer is "
                      "requested again"]
    assert path.stat().st_mode & 0o022 == 0


def test_a_shard_folder_linked_to_forged_entries_is_not_followed(tmp_path):
    cache, model, path = _stored(tmp_path)
    forged = tmp_path / "forged"
    forged.mkdir()
    planted = forged / path.name
    planted.write_text(path.read_text())
    _forge(planted, digest=True)
    shard = path.parent
    for f in shard.iterdir():
        f.unlink()
    shard.rmdir()
    shard.symlink_to(forged, target_is_directory=True)
    got, warned = _ask(cache, model)
    assert (got.value, model.asked) == (WRONG, 2)
    assert got.details["cache"].startswith("not stored")  # never written through the link
    assert warned == [
        f"queryeval: the prediction cache directory 'predictions/{shard.name}' is a symbolic "
        "link (not followed): whoever can write there can plant an answer that makes a wrong "
        "model pass; only entries written by this user, not writable by others, with a "
        "matching digest are used (chmod go-w, or a directory of your own)",
        f"queryeval: prediction cache entry {path.stem[:16]}... of case 'c' ignored (its "
        f"folder {shard.name!r} is a symbolic link (not followed)); the answer is requested "
        "again"]
    assert json.loads(planted.read_text())["answer"]["value"] == RIGHT  # untouched


def test_an_entry_of_the_previous_format_is_asked_again_without_a_warning(tmp_path):
    cache, model, path = _stored(tmp_path)
    entry = json.loads(path.read_text())
    entry["format"] = "pytest-queryeval prediction cache 1"
    del entry["digest"]
    path.write_text(json.dumps(entry))
    got, warned = _ask(cache, model)
    assert (warned, model.asked, got.details["cache"]) == ([], 2, "stored")


def test_a_forged_answer_does_not_pass_a_run(suite, tmp_path):
    """End to end: a command source caches its answer; the answer is edited to the gold; the
    next run asks the model again and the case fails, with the entry ignored in the summary."""
    import sqlite3
    import sys

    db = suite.path / "music.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE Artist (id INTEGER)")
        conn.executemany("INSERT INTO Artist VALUES (?)", [(i,) for i in range(5)])
    conn.close()
    (suite.path / "model.py").write_text("import sys\nsys.stdin.read()\nprint('SELECT 1')\n")
    cache_dir = tmp_path / "cache"
    suite.makefile(".yaml", queryeval=dump({
        "datasources": {"db": {"type": "sqlite", "path": "music.db"}},
        "predictions": {"source": "command", "command": [sys.executable, "model.py"]}}))
    suite.makefile(".yaml", test_q=dump({"kind": "sql", "datasource": "db", "cases": [
        {"id": "n", "question": "how many artists?", "gold": RIGHT}]}))
    _, first = run_report(suite, "--queryeval-prediction-cache", str(cache_dir))
    assert first.outcomes == {"n": "failed"}
    entry = next(cache_dir.rglob("*.json"))
    _forge(entry, digest=False)
    result, second = run_report(suite, "--queryeval-prediction-cache", str(cache_dir),
                                "-W", "always::pytest_queryeval.errors.QueryEvalWarning")
    assert second.outcomes == {"n": "failed"}  # before: passed, from the forged entry
    assert second["prediction_cache"]["ignored"] == 1
    result.stdout.fnmatch_lines(["*prediction cache: 0 of 1 answers from the cache, 1 "
                                 "requested (1 unusable entries ignored)*"])
