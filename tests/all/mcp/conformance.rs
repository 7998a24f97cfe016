//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
//! tests/mcp/conformance) against `toolhost mcp --http`. Scenarios the server fails by
//! design (features it does not offer, tools only the reference server has) are listed in
//! tests/mcp/conformance-baseline.yml; the suite fails on any other failure, and on a
//! listed scenario that starts to pass (a stale baseline).

use std::process::Command;

use toolhost_tests::root;

use super::python::toolchain;
use super::{Fixture, HttpServer};

#[test]
fn the_conformance_suite_passes_but_for_the_baseline() {
    let Some(suite) = toolchain("conformance/node_modules/.bin/conformance") else {
        return;
    };
    let fixture = Fixture::new();
    let server = HttpServer::start(&fixture, &[]);
    let results = tempfile::tempdir().expect("temp dir");
    let out = Command::new("node")
        .arg(suite)
        .args([
            "server",
            "--url",
            server.url.as_str(),
            "--expected-failures",
        ])
        .arg(root().join("tests/mcp/conformance-baseline.yml"))
        .arg("--output-dir")
        .arg(results.path())
        .output()
        .expect("run node (the conformance suite needs Node 20+)");
    assert!(
        out.status.success(),
        "the conformance suite failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
