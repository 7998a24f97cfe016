#!/usr/bin/env bash
# Installs the pinned Python and JavaScript component toolchains inside the checkout, under
# target/guest-langs/ (never system-wide), for the tools in tools/py and tools/js, for
# `toolhost new --lang python|js` tests, and the MCP clients the `toolhost mcp` tests run:
#   target/guest-langs/venv         a Python venv with componentize-py (tools/py/requirements.txt)
#   target/guest-langs/bfcl-py      the Python packages the BFCL tools bundle (tools/bfcl/requirements.txt)
#   target/guest-langs/node         an npm project with componentize-js (tools/js/package*.json)
#   target/guest-langs/mcp-venv     a separate Python venv with the official MCP Python SDK
#                                   (tests/mcp/requirements.txt, every dependency pinned)
#   target/guest-langs/conformance  an npm project with the official MCP conformance suite
#                                   (tests/mcp/conformance/package*.json)
# Idempotent: a stamp records what was installed, and a rerun with the same pins, Python
# and Node does nothing. Needs python3 (3.10+) with venv and pip; Node.js (24, which the
# conformance suite needs: 22+) and npm come from scripts/node.sh, under target/node.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
PATH="$(./scripts/node.sh):$PATH"
export PATH
dir="${TOOLHOST_GUEST_LANGS_DIR:-$root/target/guest-langs}"

need() {
    if ! command -v "$1" >/dev/null 2>&1; then
        echo "error: \`$1\` is not installed; it is needed to build the $2 tools (tools/$3)" >&2
        exit 1
    fi
}
need python3 Python py
need node JavaScript js
need npm JavaScript js

stamp_of() {
    {
        python3 --version
        node --version
        cat tools/py/requirements.txt tools/bfcl/requirements.txt
        cat tools/js/package.json tools/js/package-lock.json
        cat tests/mcp/requirements.txt tests/mcp/conformance/package.json \
            tests/mcp/conformance/package-lock.json
    } | sha256sum | cut -d' ' -f1
}
want=$(stamp_of)
if [[ -f "$dir/stamp" && "$(cat "$dir/stamp")" == "$want" ]]; then
    echo "guest-langs: toolchains up to date in $dir"
    exit 0
fi

mkdir -p "$dir"
rm -f "$dir/stamp"
# venv_install NAME REQUIREMENTS: a fresh venv at $dir/NAME with the pinned requirements.
venv_install() {
    rm -rf "$dir/$1"
    python3 -m venv "$dir/$1"
    "$dir/$1/bin/python" -m pip install --quiet --disable-pip-version-check -r "$2"
}

# npm_install NAME FROM: a fresh npm project at $dir/NAME from FROM's package.json and lock.
npm_install() {
    rm -rf "${dir:?}/$1"
    mkdir -p "$dir/$1"
    cp "$2/package.json" "$2/package-lock.json" "$dir/$1/"
    # `npm ci` rejects these lock files (npm leaves other platforms' optional binaries out of
    # them), so install with `npm install`, which keeps the locked versions.
    (cd "$dir/$1" && npm install --no-audit --no-fund --loglevel=error)
}

echo "guest-langs: installing componentize-py into $dir/venv"
venv_install venv tools/py/requirements.txt

echo "guest-langs: installing the BFCL tools' Python packages into $dir/bfcl-py"
rm -rf "$dir/bfcl-py"
"$dir/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
    --target "$dir/bfcl-py" -r tools/bfcl/requirements.txt

echo "guest-langs: installing componentize-js into $dir/node"
npm_install node tools/js

echo "guest-langs: installing the MCP Python SDK into $dir/mcp-venv"
venv_install mcp-venv tests/mcp/requirements.txt
# The names the MCP tests use; a pin that drops one fails here rather than in every test.
"$dir/mcp-venv/bin/python" -c 'from mcp import Client, StdioServerParameters; import mcp.client.streamable_http'

echo "guest-langs: installing the MCP conformance suite into $dir/conformance"
npm_install conformance tests/mcp/conformance
# A release that needs a newer Node than this one fails here, at install time.
"$dir/conformance/node_modules/.bin/conformance" --help >/dev/null

echo "$want" >"$dir/stamp"
echo "guest-langs: done"
