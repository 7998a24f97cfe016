#!/bin/sh
# Tests the built {{name}}.wasm through toolhost: its schema, a call, an error value, and a
# call under policy.toml. Run ./build.sh first. TOOLHOST names the toolhost binary.
set -eu
cd "$(dirname "$0")"
toolhost=${TOOLHOST:-toolhost}

fail() { echo "FAIL: $*" >&2; exit 1; }

command -v "$toolhost" >/dev/null 2>&1 ||
    fail "\`$toolhost\` not found: put toolhost on PATH (cargo install --path crates/cli in the toolhost checkout) or set TOOLHOST=/path/to/toolhost"
[ -f {{name}}.wasm ] || fail "{{name}}.wasm not found: run ./build.sh first"

"$toolhost" tool inspect {{name}}.wasm | grep -q "Greets someone by name" ||
    fail "inspect does not show the WIT docs of greet"

got=$("$toolhost" tool call {{name}}.wasm greet --args '{"name":"Ada","times":2}')
[ "$got" = '"Hello, Ada! Hello, Ada!"' ] || fail "greet returned $got"

if "$toolhost" tool call {{name}}.wasm greet --args '{"name":"","times":1}' 2>/dev/null; then
    fail "greet accepted an empty name"
fi

got=$("$toolhost" tool call {{name}}.wasm greet --policy policy.toml --args '{"name":"Bo","times":1}')
[ "$got" = '"Hello, Bo!"' ] || fail "greet under policy.toml returned $got"

echo "{{name}}: 4 passed, 0 failed"
