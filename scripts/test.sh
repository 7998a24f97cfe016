#!/usr/bin/env bash
# The whole test suite: formatting, lints, then every unit, property, integration and
# golden test. The README's test command runs this after `rustup target add wasm32-wasip2`.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2; then
    echo "error: the wasm32-wasip2 target is missing: run \`rustup target add wasm32-wasip2\`" >&2
    exit 1
fi

# componentize-py and componentize-js, pinned, under target/guest-langs: the Python and
# JavaScript tools (tools/py, tools/js) and the `toolhost new` tests build with them.
echo "== guest-language toolchains"
./scripts/guest-langs.sh

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets --release -- -D warnings

echo "== cargo test"
PROPTEST_CASES="${PROPTEST_CASES:-256}" cargo test --workspace --release

# The benchmark's quick mode: every figure against its baseline measured in the same run;
# fails when a ratio falls below half its target (ratios, not absolute times: they hold on
# a loaded machine). About a minute.
echo "== bench --quick"
cargo run --release -p toolhost-examples --bin bench -- --quick
