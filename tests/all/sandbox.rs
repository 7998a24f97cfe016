//! Default-closed capabilities and the directory/env grants.

use serde_json::json;
use toolhost::{Capabilities, ErrorKind, Limits};
use toolhost_tests::{call, call_with, cli, path};

#[test]
fn no_env_no_args_no_files_by_default() {
    assert_eq!(
        call("misbehave", "env-vars", json!({})).result,
        Ok(json!([]))
    );
    assert_eq!(call("misbehave", "args", json!({})).result, Ok(json!([])));
    for p in ["/etc/passwd", "/proc/self/environ", "."] {
        let err = call("misbehave", "read-file", json!({ "path": p }))
            .result
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ToolError, "{p}: {err}");
    }
}

#[test]
fn read_grant_reads_inside_and_nothing_outside() {
    let root = tempfile::tempdir().unwrap();
    let inside = root.path().join("inside");
    std::fs::create_dir(&inside).unwrap();
    std::fs::write(inside.join("note.txt"), "hello").unwrap();
    std::fs::write(root.path().join("secret.txt"), "TOP-SECRET").unwrap();
    let caps = toolhost_tests::grant_dir(&inside, false);
    let l = Limits::default();
    let read =
        |p: &str| call_with("misbehave", "read-file", json!({ "path": p }), &caps, &l).result;
    assert_eq!(read("/data/note.txt"), Ok(json!("hello")));
    for escape in [
        "/data/../secret.txt",
        "../secret.txt",
        &root.path().join("secret.txt").display().to_string(),
    ] {
        let err = read(escape).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ToolError, "{escape}");
        assert!(!err.to_string().contains("TOP-SECRET"));
    }
    let err = call_with(
        "misbehave",
        "write-file",
        json!({"path": "/data/new.txt", "content": "x"}),
        &caps,
        &l,
    )
    .result
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ToolError, "{err}");
    assert!(!inside.join("new.txt").exists());
}

#[test]
fn write_grant_allows_writing() {
    let dir = tempfile::tempdir().unwrap();
    let caps = toolhost_tests::grant_dir(dir.path(), true);
    let out = call_with(
        "misbehave",
        "write-file",
        json!({"path": "/data/out.txt", "content": "written"}),
        &caps,
        &Limits::default(),
    );
    assert_eq!(out.result, Ok(json!(null)));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.txt")).unwrap(),
        "written"
    );
}

#[test]
fn cli_read_outside_the_grant_fails_without_leaking() {
    let root = tempfile::tempdir().unwrap();
    let inside = root.path().join("inside");
    std::fs::create_dir(&inside).unwrap();
    std::fs::write(root.path().join("secret"), "TOP-SECRET").unwrap();
    let allow = format!("--allow-read={}:/data", inside.display());
    let out = cli([
        "tool",
        "call",
        path("misbehave"),
        "read-file",
        "--args",
        r#"{"path":"/data/../secret"}"#,
        &allow,
    ]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(!out.stdout.contains("TOP-SECRET") && !out.stderr.contains("TOP-SECRET"));
}

#[test]
fn env_grants_pass_only_what_is_named() {
    let caps = Capabilities {
        env: vec![("GREETING".into(), "hi".into())],
        ..Capabilities::none()
    };
    let out = call_with(
        "misbehave",
        "env-vars",
        json!({}),
        &caps,
        &Limits::default(),
    );
    assert_eq!(out.result, Ok(json!(["GREETING=hi"])));
    let out = cli([
        "tool",
        "call",
        path("misbehave"),
        "env-vars",
        "--allow-env=A=1",
    ]);
    assert_eq!(out.stdout, "[\n  \"A=1\"\n]\n");
}
