"""One bad value or one bad file named by a suite fails only what it touches.

Each test runs a real pytester session: a suite with one poisoned file or value beside good
cases. The poisoned part is one error naming file, line and key; every good case still runs
and passes; the JSON report is written. Before: a 5,000-digit integer, a surrogate in a
datasource path or ``defaults: {tags: 5}`` ended the session at collection, a FIFO hung it,
``/dev/zero`` or a 5 GB sparse file ran it out of memory, and ``timeout: .nan`` was an internal
error while ``.inf`` was accepted.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval._util import safefile
from tests.sdmx_cases import GDP, dump, outcomes_by_id, sdmx_case, selection
from tests.support import run_report

from ..conftest import ROOT

CHINOOK = ROOT / "example_suite" / "data" / "chinook.sqlite"

GOLD_CSV = "a,b\n1,x\n2,y\n"


def _good_sdmx(suite: pytest.Pytester, name: str = "test_good", ids: tuple[str, ...] = ("g1", "g2")) -> None:
    suite.makefile(".yaml", **{name: dump({"kind": "sdmx", "cases": [
        sdmx_case(i, selection(GDP), selection(GDP)) for i in ids]})})


def _run(suite: pytest.Pytester, *args: str) -> tuple[Any, dict[str, Any], str]:
    result, report = run_report(suite, "-rf", *args)
    return result, report, result.stdout.str()


def _line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def test_a_5000_digit_integer_is_an_error_of_its_file_and_every_other_case_runs(suite):
    _good_sdmx(suite)
    suite.makefile(".yaml", test_big="kind: sdmx\ncases:\n  - id: big\n    timeout: "
                   + "9" * 5000 + "\n")
    result, report, out = _run(suite)
    result.assert_outcomes(passed=2, failed=1)
    assert "test_big.yaml:4: YAML syntax error, column 14: an integer longer than 4,300 digits" \
        in out
    assert "Interrupted" not in out
    assert outcomes_by_id(report)["g1"] == outcomes_by_id(report)["g2"] == "passed"


@pytest.mark.parametrize(("literal", "shown"), [
    (".nan", "nan"), ("-.inf", "-inf"), (".inf", "inf"), ("1.0e+999", "inf"),
    ("100000", "100000"), ("'10'", "'10'"),
])
def test_a_timeout_that_is_not_a_finite_positive_number_of_seconds_is_located(suite, literal,
                                                                               shown):
    _good_sdmx(suite)
    turns = json.dumps(sdmx_case("t", selection(GDP), selection(GDP))["conversation"])
    suite.makefile(".yaml", test_t=f"kind: sdmx\ncases:\n  - id: t\n    conversation: {turns}\n"
                                   f"    timeout: {literal}\n")
    result, report, out = _run(suite)
    result.assert_outcomes(passed=2, failed=1)
    assert (f"test_t.yaml:5: cases[0].timeout: must be a positive number (at most 86,400), "
            f"not {shown}") in out
    assert "internal error" not in out
    assert outcomes_by_id(report) == {"g1": "passed", "g2": "passed", "t": "error"}


def test_an_unterminated_quote_is_reported_where_it_opens(suite):
    _good_sdmx(suite)
    suite.makefile(".yaml", test_q='kind: sdmx\ncases:\n  - id: a\n    question: q\n'
                   '    evidence: "SELECT 1\n    predicted: x\n    timeout: 3\n    max_rows: 4\n')
    result, _, out = _run(suite)
    result.assert_outcomes(passed=2, failed=1)
    # 8 lines (pytester drops the final newline): the stream ends on line 8, the quote opened on 5
    assert ("test_q.yaml:5: YAML syntax error, column 15: scanning a quoted scalar that never "
            "ends (found unexpected end of stream at line 8)") in out


def _csv_suite(suite: pytest.Pytester, poisoned: dict[str, str]) -> None:
    """Good CSV-scored sql cases (no datasource needed) and one case per poisoned name."""
    (suite.path / "gold.csv").write_text(GOLD_CSV)
    (suite.path / "pred.csv").write_text(GOLD_CSV)
    cases = [{"id": "good", "question": "q", "gold_result": "gold.csv",
              "predicted_result": "pred.csv"}]
    cases += [{"id": case_id, "question": "q", "gold_result": "gold.csv",
               "predicted_result": name} for case_id, name in poisoned.items()]
    suite.makefile(".yaml", test_csv=dump({"kind": "sql", "cases": cases}))


def test_a_predicted_result_naming_a_fifo_a_device_or_a_huge_file_fails_only_that_case(suite):
    os.mkfifo(suite.path / "fifo.csv")
    (suite.path / "zero.csv").symlink_to("/dev/zero")
    with open(suite.path / "sparse.csv", "wb") as fh:  # 5 GB, no blocks on disk
        fh.truncate(5 * 1024 ** 3)
    (suite.path / "big.csv").write_bytes(b"a\n" + b"1\n" * (33 * 1024 * 1024))  # 66 MiB
    _csv_suite(suite, {"fifo": "fifo.csv", "zero": "zero.csv", "sparse": "sparse.csv",
                       "big": "big.csv", "surrogate": "\ud800.csv", "nul": "a\0.csv"})
    _good_sdmx(suite)
    result, report, out = _run(suite)
    result.assert_outcomes(passed=3, failed=6)
    assert outcomes_by_id(report)["good"] == "passed"
    file = suite.path / "test_csv.yaml"
    lines = [i for i, line in enumerate(file.read_text().splitlines(), 1)
             if '"predicted_result"' in line][1:]
    expected = [
        "'fifo.csv': cannot be read as CSV: a FIFO (named pipe), not a regular file "
        "(a result CSV file must be one)",
        "'zero.csv': cannot be read as CSV: a character device, not a regular file",
        "'sparse.csv': cannot be read as CSV: 5,368,709,120 bytes, over the 64 MiB limit for "
        "a result CSV file",
        "'big.csv': cannot be read as CSV: 69,206,018 bytes, over the 64 MiB limit",
        "'\\ud800.csv': cannot be read as CSV: a path cannot contain the lone surrogate '\\ud800'",
        "'a\\x00.csv': cannot be read as CSV: a path cannot contain a NUL character",
    ]
    for n, (line, message) in enumerate(zip(lines, expected, strict=True), start=1):
        assert f"error: test_csv.yaml:{line}: cases[{n}].predicted_result: {message}" in out


def test_bad_datasource_paths_and_defaults_fail_only_the_cases_that_use_them(suite):
    os.mkfifo(suite.path / "fifo.sqlite")
    suite.makefile(".yaml", queryeval=(
        "datasources:\n"
        "  surrogate: {type: sqlite, path: \"\\ud800.sqlite\"}\n"
        "  zero: {type: sqlite, path: /dev/zero}\n"
        "  fifo:\n"
        "    type: sdmx-structure\n"
        "    paths: [structures, fifo.sqlite]\n"))
    (suite.path / "structures").mkdir()
    (suite.path / "sub").mkdir()
    (suite.path / "sub" / "queryeval.yaml").write_text("defaults: {tags: 5, timeout: .nan}\n")
    (suite.path / "sub" / "test_sub.yaml").write_text(dump({"kind": "sdmx", "cases": [
        sdmx_case("governed", selection(GDP), selection(GDP))]}))
    suite.makefile(".yaml", test_ds=dump({"kind": "sql", "cases": [
        {"id": name, "question": "q", "gold": "SELECT 1", "predicted": "SELECT 1",
         "datasource": name} for name in ("surrogate", "zero")]}))
    suite.makefile(".yaml", test_sd=dump({"kind": "sdmx", "cases": [
        sdmx_case("fifo", selection(GDP), selection(GDP), datasource="fifo")]}))
    _good_sdmx(suite)
    result, report, out = _run(suite)
    result.assert_outcomes(passed=2, failed=4)
    assert {k: v for k, v in outcomes_by_id(report).items() if v == "passed"} == \
        {"g1": "passed", "g2": "passed"}
    for message in [
        "queryeval.yaml:2: datasources.surrogate.path: '\\ud800.sqlite': a path cannot contain "
        "the lone surrogate '\\ud800' (at character 1)",
        "queryeval.yaml:3: datasources.zero.path: '/dev/zero': a character device, not a "
        "regular file",
        "queryeval.yaml:6: datasources.fifo.paths[1]: 'fifo.sqlite': a FIFO (named pipe), not "
        "a regular file",
        "sub/queryeval.yaml:1: defaults.tags: must be a list of tag names, not 5",
        "sub/queryeval.yaml:1: defaults.timeout: must be a positive number (at most 86,400), "
        "not nan",
    ]:
        assert message in out, message  # the first of a case's errors follows "error: "
    assert "Traceback" not in out and "Interrupted" not in out


def test_a_predictions_file_that_is_a_fifo_fails_the_cases_and_the_session_ends(suite):
    os.mkfifo(suite.path / "preds.jsonl")
    suite.makefile(".yaml", queryeval=dump({"predictions": {"source": "file",
                                                            "path": "preds.jsonl"}}))
    suite.makefile(".yaml", test_p=dump({"kind": "sdmx", "cases": [
        sdmx_case("p", selection(GDP))]}))
    result, report, out = _run(suite)
    result.assert_outcomes(failed=1)
    assert "a FIFO (named pipe), not a regular file (a predictions file must be one)" in out
    assert outcomes_by_id(report) == {"p": "error"}


# -- safefile on its own -------------------------------------------------------------------


def _in_thread(fn: Any) -> Any:
    """Run ``fn`` where a blocking open could not hang the test run: a FIFO opened without
    O_NONBLOCK waits for a writer forever."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as exc:
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "opening the file blocked"
    return out[0]


@pytest.mark.parametrize("purpose", sorted(safefile.LIMITS))
def test_safefile_refuses_a_fifo_without_waiting_for_a_writer(tmp_path, purpose):
    os.mkfifo(tmp_path / "p")
    exc = _in_thread(lambda: safefile.read_bytes(tmp_path / "p", purpose))
    assert isinstance(exc, safefile.UnsafeFile)
    assert str(exc).startswith("a FIFO (named pipe), not a regular file")


def test_safefile_reads_a_regular_file_and_caps_it_by_purpose(tmp_path, monkeypatch):
    path = tmp_path / "f.csv"
    path.write_bytes(b"a,b\n1,2\n")
    assert safefile.read_text(path, "csv") == "a,b\n1,2\n"
    assert safefile.sha256([path, path], "database") == \
        hashlib.sha256(b"a,b\n1,2\n" * 2).hexdigest()
    monkeypatch.setitem(safefile.LIMITS, "csv", 7)
    with pytest.raises(safefile.UnsafeFile,
                       match=r"^8 bytes, over the 7 bytes limit for a result CSV file$"):
        safefile.read_bytes(path, "csv")
    with pytest.raises(safefile.UnsafeFile, match="a directory, not a regular file"):
        safefile.read_bytes(tmp_path, "yaml")
    with pytest.raises(FileNotFoundError):
        safefile.read_bytes(tmp_path / "absent", "yaml")


def test_a_datasource_mistake_found_when_it_opens_names_file_line_and_a_near_miss(suite):
    shutil.copyfile(CHINOOK, suite.path / "db.sqlite")
    (suite.path / "queryeval.yaml").write_text(
        "datasources:\n"
        "  db: {type: sqlite, path: db.sqlite}\n"
        "  local:\n"
        "    type: sqlit\n"
        "    path: db.sqlite\n"
        "  typo:\n"
        "    type: sqlite\n"
        "    path: db.sqlite\n"
        "    timeuot: 3\n"
        "  nan:\n"
        "    type: sqlite\n"
        "    path: db.sqlite\n"
        "    timeout: .nan\n")
    suite.makefile(".yaml", test_ds=dump({"kind": "sql", "cases": [
        {"id": name, "question": "q", "gold": "SELECT 1", "predicted": "SELECT 1",
         "datasource": name} for name in ("db", "local", "typo", "nan")]}))
    result, report, out = _run(suite)
    result.assert_outcomes(passed=1, failed=3)
    assert outcomes_by_id(report)["db"] == "passed"
    for message in [
        "queryeval.yaml:4: datasources.local.type: unknown datasource type 'sqlit' "
        "(did you mean 'sqlite'?)",
        "queryeval.yaml:9: datasources.typo.timeuot: unknown key(s) timeuot for type sqlite "
        "(did you mean 'timeout'?)",
        "queryeval.yaml:13: datasources.nan.timeout: must be a positive number "
        "(at most 86,400), not nan",
    ]:
        assert f"error: {message}" in out, message
    assert "<unknown>" not in out and "internal error" not in out


@pytest.mark.parametrize("target", ["/dev/zero", "fifo"])
def test_a_database_or_wal_that_is_not_a_regular_file_is_never_hashed(tmp_path, target):
    """The fingerprint hashed ``/dev/zero`` forever and blocked opening a FIFO named as the
    write-ahead log; both are refused before a byte is read."""
    from pytest_queryeval.errors import SourceUnavailable
    from pytest_queryeval.sources import open_source

    db = tmp_path / "db.sqlite"
    if target == "fifo":
        shutil.copyfile(CHINOOK, db)
        os.mkfifo(tmp_path / "db.sqlite-wal")
        expected = "a FIFO (named pipe), not a regular file (a database file must be one)"
    else:
        db.symlink_to(target)
        expected = "a character device, not a regular file (a database file must be one)"
    src = open_source("d", {"type": "sqlite", "path": str(db)})
    exc = _in_thread(src.fingerprint)
    assert isinstance(exc, SourceUnavailable)
    assert str(exc) == f"datasource 'd': {expected}"


def test_an_integer_beyond_a_float_is_a_located_error_of_a_threshold_or_a_gate(suite):
    """400 digits are under Python's conversion limit but over a float's range:
    ``math.isfinite`` raised OverflowError, which ended the session at collection."""
    huge = "1" + "0" * 400
    _good_sdmx(suite)
    turns = json.dumps(sdmx_case("t", selection(GDP), selection(GDP))["conversation"])
    suite.makefile(".yaml", test_th=f"kind: sdmx\ncases:\n  - id: t\n    conversation: {turns}\n"
                                    f"    thresholds: {{macro_f1: {huge}}}\n")
    result, report, out = _run(suite)
    result.assert_outcomes(passed=2, failed=1)
    assert "test_th.yaml:5: cases[0].thresholds.macro_f1: threshold min for macro_f1 must be a " \
           "finite number, not an integer of 1,329 bits" in out
    assert outcomes_by_id(report) == {"g1": "passed", "g2": "passed", "t": "error"}
    (suite.path / "queryeval.yaml").write_text(f"gates:\n  macro_f1: {{mean: {huge}}}\n")
    result = suite.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*queryeval.yaml:2: gates.macro_f1.mean: must be a finite "
                                 "number, not an integer of 1,329 bits*"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_a_queryeval_yaml_that_is_a_fifo_fails_the_cases_it_governs(suite):
    """Skipped silently before: the suite ran without its configuration."""
    _good_sdmx(suite)
    (suite.path / "sub").mkdir()
    os.mkfifo(suite.path / "sub" / "queryeval.yaml")
    (suite.path / "sub" / "test_sub.yaml").write_text(dump({"kind": "sdmx", "cases": [
        sdmx_case("governed", selection(GDP), selection(GDP))]}))
    result, report, out = _run(suite)
    result.assert_outcomes(passed=2, failed=1)
    assert ("sub/queryeval.yaml:1: cannot read file: a FIFO (named pipe), not a regular file "
            "(a YAML file must be one)") in out
    assert outcomes_by_id(report) == {"g1": "passed", "g2": "passed", "governed": "error"}
