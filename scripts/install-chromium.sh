#!/bin/sh
# Install headless Chromium for the HTML report test (tests/reports/test_html.py).
# Debian/Ubuntu only; run as root (CI: `sudo scripts/install-chromium.sh`).
# The test skips itself when no chromium binary is on PATH, so this is optional locally.
set -eu
if command -v chromium >/dev/null 2>&1; then
    echo "chromium already installed: $(chromium --version 2>/dev/null || echo unknown version)"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install-chromium.sh: run as root (sudo $0)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends chromium fonts-dejavu-core
chromium --version
