//! What the binary prints for a person, said once and only what was asked for (issue 42,
//! item 5): a call refused as a whole is one error line, not that line and an audit
//! warning saying it again; `TOOLHOST_LOG=debug` shows toolhost's own log, not wasmtime's and Cranelift's
//! internals; a reader that closes the pipe early (`| grep -q`) is no error.

use std::process::{Command, Stdio};

use toolhost_tests::path;

const BIN: &str = env!("CARGO_BIN_EXE_toolhost-test-cli");

/// `toolhost ARGS…` with `TOOLHOST_LOG` as given (`None`: unset): exit code and stderr.
fn toolhost(args: &[&str], log: Option<&str>) -> (Option<i32>, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env_remove("TOOLHOST_LOG")
        .stdin(Stdio::null());
    if let Some(level) = log {
        cmd.env("TOOLHOST_LOG", level);
    }
    let out = cmd.output().expect("run toolhost");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_refused_call_is_reported_once() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().display().to_string();
    for (args, said) in [
        (
            vec!["tool", "call", path("calc"), "evaluate"],
            "unknown operation `evaluate`",
        ),
        (
            vec![
                "tool",
                "call",
                path("calc"),
                "eval",
                "--args",
                r#"{"expression": 5}"#,
            ],
            "expected a string, got 5",
        ),
    ] {
        let all: Vec<&str> = ["--cache-dir", &cache].into_iter().chain(args).collect();
        let (code, err) = toolhost(&all, None);
        assert_ne!(code, Some(0), "{err}");
        let lines: Vec<&str> = err.lines().filter(|l| l.contains(said)).collect();
        assert_eq!(lines.len(), 1, "said once: {err}");
        assert!(lines[0].starts_with("error: "), "{err}");
        assert!(!err.contains("toolhost::audit"), "{err}");
    }
    // Asked for, the audit log still says it. (A denial inside the sandbox, which a tool
    // may swallow, stays a warning: `hostile::audit::denials_are_logged_at_the_default_level`.)
    let (_, err) = toolhost(
        &[
            "--cache-dir",
            &cache,
            "tool",
            "call",
            path("calc"),
            "evaluate",
        ],
        Some("info"),
    );
    assert!(err.contains("toolhost::audit"), "{err}");
}

#[test]
fn debug_logging_is_toolhost_s_own() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().display().to_string();
    // A first load compiles: the busiest time for wasmtime's and Cranelift's own logs.
    let (code, err) = toolhost(
        &["--cache-dir", &cache, "tool", "inspect", path("calc")],
        Some("debug"),
    );
    assert_eq!(code, Some(0), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("DEBUG")).collect();
    assert!(!lines.is_empty(), "toolhost's debug lines are shown: {err}");
    let foreign: Vec<&&str> = lines
        .iter()
        .filter(|l| {
            !l.split_whitespace()
                .nth(2)
                .is_some_and(|t| t.starts_with("toolhost"))
        })
        .collect();
    assert!(
        foreign.is_empty(),
        "only toolhost's own targets: {foreign:?}"
    );
}

#[test]
fn inspect_into_a_pipe_closed_early_is_no_error() {
    let mut child = Command::new(BIN)
        .args(["tool", "inspect", path("calc")])
        .env_remove("TOOLHOST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes away before the tool is even loaded, as `grep -q` does after a match.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.is_empty(), "nothing to say: {err}");
}
