//! What `toolhost mcp` serves beyond JSON results, with the official Python SDK against the
//! conformance fixture (tests/mcp/feature_cases.py): content blocks (image, audio, embedded
//! resources), logging at the level the client asked for and none without one, and
//! `subscriptions/listen` hearing a `--watch` reload (2026-07-28), a tool's questions put to
//! the client's user and a `sensitive` call's approval; over stdio and HTTP, in both
//! connection modes. A tool without the `ask` grant cannot ask. And `--tool-names operation`, refused when two sections export
//! the same operation.

use std::process::Command;

use toolhost_tests::{path, root};

use super::python::toolchain;
use super::{BIN, Fixture};

fn run_cases(transport: &str, mode: &str) {
    let Some(python) = toolchain("mcp-venv/bin/python") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new(python)
        .args(["-W", "ignore::DeprecationWarning"])
        .arg(root().join("tests/mcp/feature_cases.py"))
        .args(["--bin", BIN, "--tool", path("conformance"), "--dir"])
        .arg(dir.path())
        .args(["--transport", transport, "--mode", mode])
        .env_remove("TOOLHOST_LOG")
        .output()
        .expect("run tests/mcp/feature_cases.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("\"passed\""),
        "the feature cases failed ({transport}, {mode}, {}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn content_logging_asking_and_approval_over_stdio_with_the_initialize_handshake() {
    run_cases("stdio", "legacy");
}

#[test]
fn content_logging_listen_asking_and_approval_over_stdio_at_2026_07_28() {
    run_cases("stdio", "2026-07-28");
}

#[test]
fn content_logging_asking_and_approval_over_http_with_the_initialize_handshake() {
    run_cases("http", "legacy");
}

#[test]
fn content_logging_listen_asking_and_approval_over_http_at_2026_07_28() {
    run_cases("http", "2026-07-28");
}

/// `toolhost:host/ask` is denied by default: the fixture's `test-elicitation` asks, and
/// without `ask = true` its call ends `denied` naming the grant, before anyone is asked.
/// With the grant and nobody to answer (`tool call`), the tool hears so as an error value.
#[test]
fn a_tool_without_the_ask_grant_cannot_ask() {
    let dir = tempfile::tempdir().expect("temp dir");
    let call = |policy: &str| {
        let file = dir.path().join("policy.toml");
        std::fs::write(&file, policy).unwrap();
        let out = Command::new(BIN)
            .arg("--cache-dir")
            .arg(super::cache())
            .args([
                "tool",
                "call",
                path("conformance"),
                "test-elicitation",
                "--json",
            ])
            .arg("--policy")
            .arg(&file)
            .args(["--args", r#"{"message": "Who are you?"}"#])
            .env_remove("TOOLHOST_LOG")
            .output()
            .expect("run toolhost tool call");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {out:?}"));
        v["error"].clone()
    };
    let denied = call("version = 1\n[tools.conformance]\n");
    assert_eq!(denied["kind"], "denied", "{denied}");
    assert!(
        denied["message"]
            .as_str()
            .unwrap()
            .contains("does not grant `ask`"),
        "{denied}"
    );
    let unanswered = call("version = 1\n[tools.conformance]\nask = true\n");
    assert_eq!(unanswered["kind"], "tool_error", "{unanswered}");
    assert!(
        unanswered["message"]
            .as_str()
            .unwrap()
            .contains("nobody can answer"),
        "{unanswered}"
    );
}

#[test]
fn operation_names_that_two_sections_share_are_refused() {
    let fixture = Fixture::new();
    let out = fixture
        .command(&["--tool-names", "operation"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run toolhost mcp");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr
            .contains("MCP tool name `read_file` is offered twice (sections `misbehave` and `fs`)"),
        "{stderr}"
    );
}

/// A policy section with no component in `--tools-dir` is an error naming it, not a tool
/// quietly left out; `--allow-missing` serves the rest and names it on stderr.
#[test]
fn a_section_with_no_component_in_the_tools_dir_is_refused_unless_allowed() {
    let fixture = Fixture::new();
    let tools = fixture.dir.path().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    // misbehave, fs and http have sections but no component here.
    std::os::unix::fs::symlink(path("calc"), tools.join("calc.wasm")).unwrap();
    let tools_dir = tools.display().to_string();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "--state-dir".to_string(),
            fixture.state().display().to_string(),
            "mcp".into(),
            "--policy".into(),
            fixture.policy.display().to_string(),
            "--tools-dir".into(),
            tools_dir.clone(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        Command::new(BIN)
            .args(args)
            .env_remove("TOOLHOST_LOG")
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run toolhost mcp")
    };
    let refused = run(&[]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("sections with no component in --tools-dir"),
        "{stderr}"
    );
    for name in ["fs", "http", "misbehave"] {
        assert!(
            stderr.contains(&format!("`{name}` ({name}.wasm)")),
            "{stderr}"
        );
    }
    assert!(!stderr.contains("`calc`"), "{stderr}");
    // stdin is closed, so the stdio server ends at once after starting.
    let allowed = run(&["--allow-missing"]);
    let stderr = String::from_utf8_lossy(&allowed.stderr);
    assert!(
        stderr.contains("not serving policy sections with no component")
            && stderr.contains("serving 1 tools over stdio"),
        "{stderr}"
    );
}
