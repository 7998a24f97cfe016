#!/usr/bin/env bash
# Installs the console's browser suite (tests/console: npm `playwright-core`, which drives
# Debian's chromium, and `axe-core`), pinned by tests/console/package*.json, under
# target/console-browser/ (never system-wide). tests/all/browser.rs runs its script with
# the Node of scripts/node.sh. Idempotent (scripts/npm-pinned.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
exec ./scripts/npm-pinned.sh "console browser suite" tests/console \
    "${TOOLHOST_CONSOLE_BROWSER_DIR:-$PWD/target/console-browser}"
