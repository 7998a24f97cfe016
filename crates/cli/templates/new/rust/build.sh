#!/bin/sh
# Builds {{name}}.wasm. Needs Rust with `rustup target add wasm32-wasip2`.
set -eu
cd "$(dirname "$0")"
# Never incremental (CARGO_INCREMENTAL=0 overrides any profile or environment setting):
# wasm-component-ld cannot make a component of an incrementally built module ("module
# requires an import interface named `toolhost:host/log@0.1.0`").
CARGO_INCREMENTAL=0 cargo build --release --target wasm32-wasip2
cp "${CARGO_TARGET_DIR:-target}/wasm32-wasip2/release/{{crate}}.wasm" {{name}}.wasm
echo "built {{name}}.wasm"
