#!/usr/bin/env bash
# Install headless Chromium and its driver from Debian packages for tests/e2e/test_ui_browser.py.
# Idempotent: nothing is done when both are present. Never a browser download: apt only.
# Fails when they cannot be installed, because .ci/run requires the browser tests to run.
set -euo pipefail

if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
    echo "chromium and chromedriver already installed: $(/usr/bin/chromium --version 2>/dev/null || true)"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "apt-get not found: install chromium and chromium-driver with your package manager" >&2
    exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends chromium chromium-driver
echo "installed: $(/usr/bin/chromium --version 2>/dev/null || true)"
