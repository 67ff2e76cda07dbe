"""Property tests: no text in a case can add markup to the HTML page or the Markdown summary."""

from __future__ import annotations

import copy
import re
from html.parser import HTMLParser
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support import read_report

from pytest_queryeval.report.html import render_html
from pytest_queryeval.report.markdown import render_markdown

BASE = read_report(Path(__file__).parent / "current.json")

hostile = st.text(
    alphabet=st.sampled_from([*"<>&\"'`|*_[]()!#\\/=:-~ \n\tabscriptimgonerror", "\x00"]),
    min_size=1, max_size=60)


class Tags(HTMLParser):
    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.tags = []
        self.data = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.data.append(data)


def _report(text):
    report = copy.deepcopy(BASE)
    case = report["cases"][2]  # a failed sql case: appears in every section
    case["id"] = "id" + text
    case["question"] = text
    case["predicted"] = text
    case["diff"] = [text]
    case["error"] = text
    case["tags"] = [text]
    return report


CLEAN = _report("x")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile)
def test_html_markup_is_fixed(text):
    assert Tags(render_html(_report(text))).tags == Tags(render_html(CLEAN)).tags


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile)
def test_markdown_adds_no_html(text):
    page = render_markdown(_report(text))
    prose = re.sub(r"(?ms)^(`{3,})$.*?^\1$", "", page)  # fenced blocks show text literally
    prose = re.sub(r"(?ms)^(`{3,}).*?^\1$", "", prose)
    tags = set(re.findall(r"<(/?[A-Za-z][A-Za-z0-9]*)", prose))
    assert tags <= {"details", "/details", "summary", "/summary", "sub", "/sub"}
