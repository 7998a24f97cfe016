//! The official MCP Python SDK (`mcp`, pinned in tests/mcp/requirements.txt) against
//! `toolhost mcp`: tests/mcp/client_cases.py runs every case (listing, results, each kind of
//! failure, cancellation, progress, concurrency, protocol errors) for one transport and one
//! connection mode of `mcp.Client`, and stops at the first failure.
//!
//! The SDK's venv comes from `scripts/guest-langs.sh`, like the guest toolchains of
//! `langs`: without it these tests fail naming the script, unless the guest toolchains
//! were skipped on purpose (`TOOLHOST_SKIP_GUEST_LANGS=1` at build time).

use std::path::PathBuf;
use std::process::Command;

use toolhost_tests::{guest_langs, path, root};

use super::{BIN, Fixture, cache};

/// `rel` under the guest toolchains directory; `None`, after saying why, when the guest
/// toolchains were skipped on purpose; a panic naming the install script when missing.
pub(super) fn toolchain(rel: &str) -> Option<PathBuf> {
    let found = guest_langs().join(rel);
    if found.exists() {
        return Some(found);
    }
    if toolhost_lang_tools::SKIP_REQUESTED {
        eprintln!(
            "note: skipping an MCP client test: {} is missing and TOOLHOST_SKIP_GUEST_LANGS was set",
            found.display()
        );
        return None;
    }
    panic!(
        "{} is missing: run scripts/guest-langs.sh to install the MCP test clients",
        found.display()
    )
}

fn run_cases(transport: &str, mode: &str) {
    let Some(python) = toolchain("mcp-venv/bin/python") else {
        return;
    };
    let fixture = Fixture::new();
    let tools = ["calc", "misbehave", "fs", "http"].map(path).join(",");
    let out = Command::new(python)
        .arg(root().join("tests/mcp/client_cases.py"))
        .args(["--bin", BIN, "--cache-dir"])
        .arg(cache())
        .arg("--state-dir")
        .arg(fixture.state())
        .arg("--policy")
        .arg(&fixture.policy)
        .args([
            "--tools",
            tools.as_str(),
            "--transport",
            transport,
            "--mode",
            mode,
        ])
        .env_remove("TOOLHOST_LOG")
        .output()
        .expect("run tests/mcp/client_cases.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the Python SDK cases failed ({transport}, {mode}, {}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        stdout.contains("\"passed\""),
        "no summary line:\n{stdout}\n{stderr}"
    );
}

#[test]
fn python_sdk_over_stdio_with_the_initialize_handshake() {
    run_cases("stdio", "legacy");
}

#[test]
fn python_sdk_over_stdio_at_2026_07_28() {
    run_cases("stdio", "2026-07-28");
}

#[test]
fn python_sdk_over_http_with_the_initialize_handshake() {
    run_cases("http", "legacy");
}

#[test]
fn python_sdk_over_http_at_2026_07_28() {
    run_cases("http", "2026-07-28");
}
