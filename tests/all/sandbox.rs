//! Default-closed capabilities, the directory, file and env grants, and the events
//! recorded when they are used.

use serde_json::json;
use toolhost_runtime::{AuditEvent, Capabilities, Decision, ErrorKind, Limits};
use toolhost_tests::{call, call_with, cli, path};

#[test]
fn no_env_no_args_no_files_by_default() {
    assert_eq!(
        call("misbehave", "env-vars", json!({})).result,
        Ok(json!([]))
    );
    assert_eq!(call("misbehave", "args", json!({})).result, Ok(json!([])));
    // Nothing is granted, yet each path reaches the host (through the empty `/` it
    // preopens), which refuses it: a denial.
    for p in ["/etc/passwd", "/proc/self/environ", "."] {
        let err = call("misbehave", "read-file", json!({ "path": p }))
            .result
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Denied, "{p}: {err}");
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
        // `/data/..` is refused by the grant, the other two by the empty `/` the host
        // preopens for everything outside the grants: all denials.
        assert_eq!(err.kind(), ErrorKind::Denied, "{escape}");
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
    // The read-only grant refused the create: a denial.
    assert_eq!(err.kind(), ErrorKind::Denied, "{err}");
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
    assert_eq!(out.code, 5, "denied: {out:?}");
    assert!(!out.stdout.contains("TOP-SECRET") && !out.stderr.contains("TOP-SECRET"));
}

#[test]
fn env_grants_pass_only_what_is_named() {
    let caps = Capabilities::none().env(vec![("GREETING".into(), "hi".into())]);
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

#[test]
fn env_reads_are_recorded_by_name_only() {
    let caps = Capabilities::none().env(vec![("TOKEN".into(), "value-never-recorded".into())]);
    let out = call_with(
        "misbehave",
        "read-env",
        json!({"name": "TOKEN"}),
        &caps,
        &Limits::default(),
    );
    assert_eq!(out.result, Ok(json!("value-never-recorded")));
    assert!(
        out.report.events.contains(&AuditEvent::EnvRead {
            names: vec!["TOKEN".into()]
        }),
        "{:?}",
        out.report.events
    );
    let events = format!("{:?}", out.report.events);
    assert!(!events.contains("value-never-recorded"), "{events}");
}

#[test]
fn allowed_file_actions_are_recorded_with_guest_paths() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("note.txt"), "hello").unwrap();
    let caps = toolhost_tests::grant_dir(dir.path(), true);
    let l = Limits::default();
    let out = call_with(
        "misbehave",
        "read-file",
        json!({"path": "/data/note.txt"}),
        &caps,
        &l,
    );
    assert_eq!(out.result, Ok(json!("hello")));
    let allowed = |action: &str, path: &str| AuditEvent::File {
        action: action.into(),
        path: path.into(),
        decision: Decision::Allowed,
        reason: None,
    };
    assert!(
        out.report
            .events
            .contains(&allowed("open-read", "/data/note.txt")),
        "{:?}",
        out.report.events
    );
    let out = call_with("misbehave", "raw-mkdir", json!({"path": "sub"}), &caps, &l);
    assert_eq!(out.result, Ok(json!(null)));
    let args = json!({"path": "sub/new.txt", "content": "x"});
    let out = call_with("misbehave", "raw-write", args, &caps, &l);
    assert_eq!(out.result, Ok(json!(null)));
    let out = call_with("misbehave", "raw-list", json!({"path": "sub"}), &caps, &l);
    assert_eq!(out.result, Ok(json!(["new.txt"])));
    assert_eq!(
        out.report.events,
        [
            allowed("open-read", "/data/sub"),
            allowed("read-dir", "/data/sub")
        ]
    );
    // A failure the sandbox did not cause is recorded as allowed, with its error code.
    let out = call_with(
        "misbehave",
        "raw-read",
        json!({"path": "missing"}),
        &caps,
        &l,
    );
    assert!(
        out.report.events.contains(&AuditEvent::File {
            action: "open-read".into(),
            path: "/data/missing".into(),
            decision: Decision::Allowed,
            reason: Some("no-entry".into()),
        }),
        "{:?}",
        out.report.events
    );
}

/// `a/one.conf` and `b/two.conf` (holding their names), granted under other names as
/// `/config/first.conf` and `/config/second.conf`.
fn two_file_grants(root: &std::path::Path) -> Capabilities {
    let mut files = Vec::new();
    for (dir, name, guest) in [("a", "one.conf", "first"), ("b", "two.conf", "second")] {
        std::fs::create_dir(root.join(dir)).unwrap();
        let host = root.join(dir).join(name);
        std::fs::write(&host, name).unwrap();
        let guest = format!("/config/{guest}.conf");
        files.push(toolhost_runtime::policy::file_grant(&host, &guest, false).unwrap());
    }
    Capabilities::none().files(files)
}

#[test]
fn file_grants_from_two_host_directories_share_a_guest_directory() {
    let root = tempfile::tempdir().unwrap();
    let caps = two_file_grants(root.path());
    let l = Limits::default();
    for (guest, content) in [("first", "one.conf"), ("second", "two.conf")] {
        let path = format!("/config/{guest}.conf");
        let out = call_with("misbehave", "read-file", json!({ "path": path }), &caps, &l);
        assert_eq!(out.result, Ok(json!(content)));
    }
    // The host names are not visible under the guest directory.
    let out = call_with(
        "misbehave",
        "raw-read",
        json!({"path": "one.conf"}),
        &caps,
        &l,
    );
    assert_eq!(out.result.unwrap_err().kind(), ErrorKind::Denied);
}

#[test]
fn a_guest_directory_cannot_be_a_file_grant_and_a_directory_grant() {
    let root = tempfile::tempdir().unwrap();
    let mut caps = two_file_grants(root.path());
    caps.files.push(toolhost_runtime::FileGrant::dir(
        root.path(),
        "/config",
        false,
    ));
    let err = call_with("misbehave", "args", json!({}), &caps, &Limits::default())
        .result
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Denied, "{err}");
    assert!(err.to_string().contains("also granted as a whole"), "{err}");
}

#[test]
fn cli_grants_a_single_file() {
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("app.conf");
    std::fs::write(&file, "from the cli").unwrap();
    std::fs::write(root.path().join("other"), "TOP-SECRET").unwrap();
    let allow = format!("--allow-read={}:/config/app.conf", file.display());
    let read = |p: &str| {
        let args = serde_json::to_string(&json!({ "path": p })).unwrap();
        cli([
            "tool",
            "call",
            path("misbehave"),
            "read-file",
            "--args",
            &args,
            &allow,
        ])
    };
    let out = read("/config/app.conf");
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "\"from the cli\"\n"),
        "{out:?}"
    );
    let out = read("/config/other");
    assert_eq!(out.code, 5, "denied: {out:?}");
    assert!(!out.stdout.contains("TOP-SECRET") && !out.stderr.contains("TOP-SECRET"));
}
