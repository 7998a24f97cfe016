#!/usr/bin/env bash
# Installs `wkg` (wasm-pkg-tools, the Bytecode Alliance's CLI for Wasm packages, whose
# `wkg oci push`/`pull` are the reference client of the Wasm OCI layout) inside the checkout
# under target/wkg (never system-wide), built from crates.io with its own lock file, and
# prints the binary's path. The OCI interoperability tests (tests/all/oci/interop.rs) push
# and pull with it. Idempotent: a stamp records the version and the compiler, and a rerun
# that finds them does nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${TOOLHOST_WKG_DIR:-$PWD/target/wkg}"
version="0.16.1"
bin="$dir/bin/wkg"
want="wkg $version $(rustc --version)"
if [[ -f "$dir/stamp" && -x "$bin" && "$(cat "$dir/stamp")" == "$want" ]]; then
    echo "$bin"
    exit 0
fi
rm -rf "$dir"
mkdir -p "$dir"
# Its own target directory, kept out of the workspace's; nothing of it is needed after.
echo "wkg: building $version from crates.io into $dir (a few minutes, once)" >&2
cargo install --quiet --locked --version "$version" --root "$dir" \
    --target-dir "$dir/build" wkg >&2
rm -rf "$dir/build"
"$bin" --version >&2
echo "$want" >"$dir/stamp"
echo "$bin"
