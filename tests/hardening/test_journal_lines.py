"""A journal read back by ``--queryeval-resume`` (issue 54 item 1) is untrusted input: a
truncated last line (the run was killed while writing it), a forged line whose digest is not
that of its content, a case journaled twice, garbage and a file that is no journal are each a
located note or usage error, never a traceback; nothing the journal does not vouch for is
carried."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_queryeval.plugin.journal import Journal, journal_path
from pytest_queryeval.plugin.resume import Resume
from tests.sdmx_cases import GDP, MEX, dump, sdmx_case, selection
from tests.support import read_report

from .conftest import no_traceback

IDS = ["a", "b", "c"]


def _journal(pytester: pytest.Pytester) -> list[str]:
    """A finished run's records, journaled as a killed run leaves them (no report): the
    journal's lines."""
    pytester.makefile(".yaml", test_cases=dump({"kind": "sdmx", "cases": [
        sdmx_case(cid, selection(GDP), selection(MEX if cid == "b" else GDP)) for cid in IDS]}))
    result = pytester.runpytest("--queryeval-json=r.json")
    result.assert_outcomes(passed=2, failed=1)
    report = pytester.path / "r.json"
    journal = Journal.start(journal_path(report), read_report(report)["cases"])
    journal.close()
    report.unlink()
    return journal_path(report).read_text().splitlines(keepends=True)


def _write(pytester: pytest.Pytester, lines: list[str]) -> Path:
    path = pytester.path / "r.json.journal"
    path.write_text("".join(lines))
    return path


def _load(pytester: pytest.Pytester) -> Resume:
    return Resume.load(pytester.path / "r.json", "r.json")


def test_a_whole_journal_is_carried(suite: pytest.Pytester) -> None:
    lines = _journal(suite)
    assert json.loads(lines[0]) == {"journal": "pytest-queryeval", "version": 1}
    assert len(lines) == 1 + len(IDS)
    resume = _load(suite)
    assert sorted(resume.records) == IDS and resume.notes == []
    assert resume.sources == dict.fromkeys(IDS, "r.json.journal")


def test_a_truncated_last_line_is_dropped_with_a_note(suite: pytest.Pytester) -> None:
    lines = _journal(suite)
    _write(suite, [*lines[:-1], lines[-1][: len(lines[-1]) // 2]])
    resume = _load(suite)
    assert sorted(resume.records) == IDS[:-1]
    assert resume.notes == ["queryeval: --queryeval-resume: r.json.journal:4: a truncated last "
                            "line (the run was stopped while writing it) is dropped"]
    result = suite.runpytest("--queryeval-json=r.json", "--queryeval-resume=r.json")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*r.json.journal:4: a truncated last line*is dropped",
                                 "*carried: 2 cases scored by an earlier attempt*"])
    no_traceback(result)


def test_a_forged_line_is_refused_naming_its_line(suite: pytest.Pytester) -> None:
    lines = _journal(suite)
    forged = lines[2].replace('"outcome": "failed"', '"outcome": "passed"')
    assert forged != lines[2]
    _write(suite, [lines[0], lines[1], forged, lines[3]])
    with pytest.raises(ValueError, match=r"r\.json\.journal:3: its 'digest' is not the digest "
                                         r"of its content \(edited after the run\)"):
        _load(suite)
    result = suite.runpytest("--queryeval-json=r.json", "--queryeval-resume=r.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--queryeval-resume: r.json.journal:3: its 'digest' is not "
                                 "the digest of its content (edited after the run); run again "
                                 "without --queryeval-resume*"])
    no_traceback(result)


def test_a_case_journaled_twice_keeps_the_later_line(suite: pytest.Pytester) -> None:
    lines = _journal(suite)
    _write(suite, [*lines, lines[1]])
    resume = _load(suite)
    assert sorted(resume.records) == IDS
    assert resume.notes == ["queryeval: --queryeval-resume: r.json.journal:5: case 'a' again "
                            "(first at line 2): the later record is kept"]


def test_garbage_is_skipped_with_its_line(suite: pytest.Pytester) -> None:
    lines = _journal(suite)
    _write(suite, [lines[0], "\x00\x00garbage{\n", lines[1], '{"record": 3}\n', '[1, 2]\n',
                   lines[2], lines[3]])
    resume = _load(suite)
    assert sorted(resume.records) == IDS
    assert resume.notes == [
        "queryeval: --queryeval-resume: r.json.journal:2: not a JSON line (damaged): skipped",
        "queryeval: --queryeval-resume: r.json.journal:4: not a record or an answer of a "
        "queryeval journal: skipped",
        "queryeval: --queryeval-resume: r.json.journal:5: not a record or an answer of a "
        "queryeval journal: skipped"]


def test_a_record_of_the_wrong_shape_is_refused(suite: pytest.Pytester) -> None:
    lines = _journal(suite)
    from pytest_queryeval.report.json_report import case_line

    record = json.loads(lines[1])["record"]
    record["line"] = "abc"  # its digest recomputed: only the shape check can tell
    _write(suite, [lines[0], '{"record": ' + case_line(record) + "}\n"])
    with pytest.raises(ValueError, match=r"r\.json\.journal:2\.line: expected an integer"):
        _load(suite)


def test_a_file_that_is_no_journal_is_refused(suite: pytest.Pytester) -> None:
    _write(suite, ['{"cases": []}\n'])
    with pytest.raises(ValueError, match=r"r\.json\.journal:1: not a queryeval journal"):
        _load(suite)
    _write(suite, ["\x7fELF\x02\x01\n", *_journal(suite)[1:]])
    with pytest.raises(ValueError, match=r"r\.json\.journal:1: not a queryeval journal \(its "
                                         r"first line is not JSON\)"):
        _load(suite)
    _write(suite, [""])  # empty (killed before its first line): nothing in it
    assert _load(suite).records == {}
    (suite.path / "r.json.journal").unlink()
    os.mkfifo(suite.path / "r.json.journal")  # not a regular file: not a journal, never read
    assert _load(suite).notes == ["queryeval: --queryeval-resume r.json: no report or journal "
                                  "of an earlier attempt yet: nothing to carry, every case runs"]


def test_workers_files_are_read_and_carried_into_the_next_journal(tmp_path: Path) -> None:
    """Each xdist worker's answers are a file of its own (``.journal.gw0``), read with the
    controller's; the next attempt's journal carries them whole and removes the workers'
    files, whatever the report's name holds (``[`` is a glob pattern)."""
    from pytest_queryeval.plugin.journal import answer_key, journal_files

    report = tmp_path / "r[1].json"
    main = journal_path(report)
    Journal.start(main).close()
    worker = Journal.worker(main.with_name(main.name + ".gw0"))
    answer = {"value": "SELECT 1", "seconds": 0.5, "details": {}, "usage": {}, "model": None,
              "hint": None}
    worker.answer(answer_key("abc", 0), answer)
    worker.close()
    assert [p.name for p in journal_files(report)] == ["r[1].json.journal",
                                                        "r[1].json.journal.gw0"]
    resume = Resume.load(report, "r[1].json")
    assert resume.answers == {"abc#0": answer} and resume.notes == []
    Journal.start(main, resume.records.values(), resume.answers).close()
    assert [p.name for p in journal_files(report)] == ["r[1].json.journal"]
    assert Resume.load(report, "r[1].json").answers == {"abc#0": answer}
