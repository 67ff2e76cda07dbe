"""Headless Chromium for the viewer's tests, as ``tests/reports/test_html.py`` drives it.

Chromium comes from ``scripts/install-chromium.sh`` (Debian package ``chromium``). Without it
the browser tests skip, unless QUERYEVAL_REQUIRE_CHROMIUM is set (CI), where they fail;
QUERYEVAL_CHROMIUM selects another binary.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest


def chromium() -> str:
    for name in (os.environ.get("QUERYEVAL_CHROMIUM"), "chromium", "chromium-browser",
                 "google-chrome"):
        if name and shutil.which(name):
            return str(shutil.which(name))
    if os.environ.get("QUERYEVAL_REQUIRE_CHROMIUM"):
        pytest.fail("chromium not found: run scripts/install-chromium.sh")
    pytest.skip("chromium not installed (scripts/install-chromium.sh)")
    raise AssertionError("unreachable")


def chromium_command(exe, profile, url, *extra):
    """The headless command line: no network services, a profile of its own."""
    return [exe, "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
            "--hide-scrollbars", *extra, url]


@pytest.fixture
def browser(tmp_path):
    """``browser(url, *flags)``: Chromium's standard output (the DOM with ``--dump-dom``)."""
    exe = chromium()

    def run(url, *extra):
        proc = subprocess.run(chromium_command(exe, tmp_path / "profile", url, *extra),
                              capture_output=True, text=True, timeout=180, check=False)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout

    return run
