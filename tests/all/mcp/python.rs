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

/// The book's stdio `mcpServers` entry (docs/mcp.md), as written (only its example paths replaced),
/// with the Python SDK: `toolhost` is found on PATH, the policy and tools directory are
/// the entry's arguments.
#[test]
fn the_books_client_configuration_works_as_written() {
    let Some(python) = toolchain("mcp-venv/bin/python") else {
        return;
    };
    let fixture = Fixture::new();
    let bin = fixture.dir.path().join("bin");
    let tools = fixture.dir.path().join("tools");
    for dir in [&bin, &tools] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::os::unix::fs::symlink(BIN, bin.join("toolhost")).unwrap();
    for tool in ["calc", "misbehave", "fs", "http"] {
        std::os::unix::fs::symlink(path(tool), tools.join(format!("{tool}.wasm"))).unwrap();
    }
    // The client starts the server with its own small environment (HOME and PATH among
    // it): the server's state and cache go under this HOME.
    let home = fixture.dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let path_var = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(python)
        .arg(root().join("tests/mcp/book_config.py"))
        .arg("--page")
        .arg(root().join("docs/mcp.md"))
        .arg("--replace")
        .arg(format!(
            "/etc/toolhost/policy.toml={}",
            fixture.policy.display()
        ))
        .arg("--replace")
        .arg(format!("/opt/toolhost/tools={}", tools.display()))
        .env("PATH", path_var)
        .env("HOME", &home)
        // The journal goes where the book's configuration puts it: under HOME.
        .env_remove("TOOLHOST_STATE_DIR")
        .env_remove("XDG_STATE_HOME")
        .env_remove("TOOLHOST_LOG")
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let runs = home.join(".local/state/toolhost/runs");
    let journals = std::fs::read_dir(&runs).map_or(0, |d| d.count());
    assert!(journals > 0, "no session journal in {}", runs.display());
}
