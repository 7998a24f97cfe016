//! Paths outside every grant, opened the ordinary way (`std::fs` through wasi-libc), as
//! any tool in any language would: the host preopens an empty `/` that wasi-libc resolves
//! them against, so each one reaches the gate, is refused with `access: outside every
//! grant` and recorded as a denial, with or without other grants. A tool error right
//! after such a refusal makes the call `denied`; one after the tool moved past it does not.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use toolhost_runtime::{
    AuditEvent, CallError, CallOutcome, Capabilities, Decision, ErrorKind, FileGrant, Limits,
};

use super::attack;
use super::files::{Tree, assert_file_denied, assert_no_secret, misbehave};

/// The reason the gate gives for a path outside every grant.
const OUTSIDE: &str = "access: outside every grant";

/// Asserts the call is `denied` because of the refusal of `action` on `path` outside every
/// grant, recorded as such, and that the secret appears nowhere.
#[track_caller]
fn assert_outside(out: &CallOutcome, action: &str, path: &str) {
    match &out.result {
        Err(CallError::Denied { reason }) => assert!(
            reason.starts_with(&format!(
                "the sandbox refused `{action}` of `{path}` ({OUTSIDE}); the tool then failed: "
            )),
            "{path}: {reason}"
        ),
        other => panic!("{path}: expected a denial, got {other:?}"),
    }
    assert_file_denied(out, action, path, OUTSIDE);
    assert_no_secret(out);
}

fn denials(out: &CallOutcome) -> usize {
    out.report.events.iter().filter(|e| e.is_denial()).count()
}

/// `toolhost tool call fs read-file` as a subprocess, with `grant` (`HOST:GUEST`) if any.
fn cli_read(path: &str, grant: Option<String>) -> std::process::Output {
    let args = json!({ "path": path }).to_string();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolhost-test-cli"));
    cmd.args([
        "--no-cache",
        "tool",
        "call",
        toolhost_tests::path("fs"),
        "read-file",
        "--args",
        &args,
    ]);
    if let Some(grant) = grant {
        cmd.args(["--allow-read", &grant]);
    }
    cmd.output().unwrap()
}

#[track_caller]
fn assert_exit_denied(cli: &std::process::Output) {
    let stderr = String::from_utf8_lossy(&cli.stderr);
    assert_eq!(cli.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains("[denied]"), "{stderr}");
}

/// The shipped `fs` tool with no file grant at all: there is no grant to resolve
/// `/etc/passwd` against, yet the host sees the attempt and calls it a denial (exit 5).
#[test]
fn fs_tool_with_no_grant_reading_etc_passwd_is_denied() {
    let none = Capabilities::none();
    let out = attack(
        "fs",
        "read-file",
        json!({"path": "/etc/passwd"}),
        &none,
        &Limits::default(),
    );
    assert_outside(&out, "open-read", "/etc/passwd");
    assert!(!format!("{out:?}").contains("root:"), "passwd leaked");
    for (path, seen) in [
        ("etc/passwd", "/etc/passwd"),
        ("../../etc/passwd", "/../../etc/passwd"),
    ] {
        let out = attack(
            "fs",
            "read-file",
            json!({ "path": path }),
            &none,
            &Limits::default(),
        );
        assert_outside(&out, "open-read", seen);
    }
    let out = attack(
        "fs",
        "list-dir",
        json!({"path": "/"}),
        &none,
        &Limits::default(),
    );
    assert_eq!(out.result.unwrap_err().kind(), ErrorKind::Denied);
    assert_exit_denied(&cli_read("/etc/passwd", None));
}

/// The shipped `fs` tool reading outside its one grant: denied, recorded under the path
/// the tool named; inside the grant it still reads.
#[test]
fn fs_tool_reading_outside_its_grant_is_denied() {
    let t = Tree::new();
    let secret = t.secret().display().to_string();
    let out = attack(
        "fs",
        "read-file",
        json!({ "path": secret }),
        &t.grant(false),
        &Limits::default(),
    );
    assert_outside(&out, "open-read", &secret);
    // Benign: inside the grant.
    let out = attack(
        "fs",
        "read-file",
        json!({"path": "/data/note.txt"}),
        &t.grant(false),
        &Limits::default(),
    );
    assert_eq!(out.result, Ok(json!("hello")));
    assert_eq!(denials(&out), 0, "{:#?}", out.report.events);
    let grant = format!("{}:/data", t.inside().display());
    assert_exit_denied(&cli_read(&secret, Some(grant)));
}

/// Counts the file denials recorded anywhere in the journal at `path`.
fn journal_file_denials(path: &Path) -> usize {
    fn count(v: &Value) -> usize {
        match v {
            Value::Object(m) => {
                let here = usize::from(
                    m.get("event") == Some(&json!("file"))
                        && m.get("decision") == Some(&json!("denied")),
                );
                here + m.values().map(count).sum::<usize>()
            }
            Value::Array(a) => a.iter().map(count).sum(),
            _ => 0,
        }
    }
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| count(&serde_json::from_str(l).unwrap()))
        .sum()
}

/// In a run (the real binary), the denied read is the step's `denied` failure and counts
/// once in the journal and in the report's "capabilities denied", with no file grant and
/// with one.
#[test]
fn fs_tool_denial_counts_in_the_run_report() {
    for (files, path) in [
        ("", "/etc/passwd"),
        (
            r#"files = [{ host = "inside", guest = "/data", access = "read" }]"#,
            "/secret.txt",
        ),
    ] {
        let t = Tree::new();
        let dir = t.root.path();
        std::fs::write(
            dir.join("policy.toml"),
            format!("version = 1\n[tools.fs]\noperations = [\"read-file\"]\n{files}\n"),
        )
        .unwrap();
        std::fs::write(
            dir.join("task.toml"),
            format!(
                r#"goal = "read outside the grant"
policy = "policy.toml"
tools = ["fs"]

[planner.plan]
goal = "read outside the grant"
steps = [
  {{ id = "peek", tool = "fs", operation = "read-file", args = {{ path = "{path}" }} }},
]
[budgets]
max_replans = 0
"#
            ),
        )
        .unwrap();
        let state = dir.join("state");
        let toolhost = |args: &[&str]| {
            Command::new(env!("CARGO_BIN_EXE_toolhost-test-cli"))
                .args(["--state-dir", state.to_str().unwrap(), "--no-cache"])
                .args(args)
                .output()
                .unwrap()
        };
        let tools = toolhost_tests::tools_dir();
        let run = toolhost(&[
            "run",
            dir.join("task.toml").to_str().unwrap(),
            "--tools-dir",
            &tools,
            "--json",
        ]);
        let doc: Value = serde_json::from_slice(&run.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&run.stderr)));
        let step = &doc["steps"][0];
        assert_eq!(step["error"]["kind"], "denied", "{path}: {step}");
        let journal = doc["journal"]["path"].as_str().expect("a journal path");
        assert_eq!(journal_file_denials(Path::new(journal)), 1, "{path}");
        let html = dir.join("report.html");
        let report = toolhost(&["report", journal, "--html", html.to_str().unwrap()]);
        assert_eq!(report.status.code(), Some(0), "{report:?}");
        let page = std::fs::read_to_string(&html).unwrap();
        assert!(
            page.contains(r#"<div class="k">capabilities denied</div><div class="v">1</div>"#),
            "{path}: the report does not count the denial"
        );
        assert!(page.contains(r#"<span class="badge denied">1 denied</span>"#));
    }
}

/// A hostile guest with no grants at all: every path it names, absolute or relative, is
/// refused by the host and recorded; raw `wasi:filesystem` calls reach the same empty `/`.
#[test]
fn a_guest_with_no_grants_is_refused_everywhere_and_audited() {
    let none = Capabilities::none();
    for (path, seen) in [
        ("/etc/passwd", "/etc/passwd"),
        ("/proc/self/environ", "/proc/self/environ"),
        ("etc/passwd", "/etc/passwd"),
        ("../etc/passwd", "/../etc/passwd"),
    ] {
        assert_outside(
            &misbehave("read-file", json!({ "path": path }), &none),
            "open-read",
            seen,
        );
    }
    for path in [".", "/"] {
        let out = misbehave("read-file", json!({ "path": path }), &none);
        assert_eq!(
            out.result.as_ref().unwrap_err().kind(),
            ErrorKind::Denied,
            "{path}"
        );
        assert_denied_outside(&out);
    }
    let out = misbehave(
        "write-file",
        json!({"path": "/tmp/x", "content": "x"}),
        &none,
    );
    assert_eq!(out.result.as_ref().unwrap_err().kind(), ErrorKind::Denied);
    assert_denied_outside(&out);
    // The raw probes take the first preopen: with nothing granted, the empty `/`.
    let out = misbehave("raw-read", json!({"path": "etc/passwd"}), &none);
    assert_outside(&out, "open-read", "/etc/passwd");
    let out = misbehave("raw-list", json!({"path": "."}), &none);
    assert_file_denied(&out, "read-dir", "/", OUTSIDE);
    let out = misbehave("dir-metadata", json!({}), &none);
    for action in ["stat", "is-same-object"] {
        assert_file_denied(&out, action, "/", OUTSIDE);
    }
}

#[track_caller]
fn assert_denied_outside(out: &CallOutcome) {
    super::assert_event(
        out,
        |e| matches!(e, AuditEvent::File { decision: Decision::Denied, reason: Some(r), .. } if r == OUTSIDE),
    );
}

/// A guest with one directory grant: paths beside it (absolute, relative, a sibling whose
/// name starts like the grant's) are refused on the empty `/`, while wasi-libc's
/// longest-prefix match still sends the grant's own paths to the grant.
#[test]
fn a_guest_with_one_grant_is_refused_beside_it_and_reads_inside_it() {
    let t = Tree::new();
    let caps = t.grant(false);
    let secret = t.secret().display().to_string();
    for (path, seen) in [
        (secret.as_str(), secret.as_str()),
        ("secret.txt", "/secret.txt"),
        ("../secret.txt", "/../secret.txt"),
        ("/database/note.txt", "/database/note.txt"),
        ("/etc/passwd", "/etc/passwd"),
    ] {
        assert_outside(
            &misbehave("read-file", json!({ "path": path }), &caps),
            "open-read",
            seen,
        );
    }
    // Benign: the grant still gets its own paths, and a missing file inside it is the
    // tool's own error (not found), not a denial.
    let out = misbehave("read-file", json!({"path": "/data/note.txt"}), &caps);
    assert_eq!(out.result, Ok(json!("hello")));
    assert_eq!(denials(&out), 0, "{:#?}", out.report.events);
    let out = misbehave("read-file", json!({"path": "/data/sub/../note.txt"}), &caps);
    assert_eq!(out.result, Ok(json!("hello")));
    let out = misbehave("read-file", json!({"path": "/data/missing.txt"}), &caps);
    assert_eq!(
        out.result.as_ref().unwrap_err().kind(),
        ErrorKind::ToolError
    );
    assert_eq!(denials(&out), 0, "{:#?}", out.report.events);
}

/// The refusal carries the outcome only when the tool failed right after it: a tool that
/// moved past a refusal and then failed on its own terms has a tool error (the refusal
/// still recorded), and one that read fine after it succeeds.
#[test]
fn only_the_refusal_a_tool_failed_on_makes_the_call_denied() {
    let t = Tree::new();
    let caps = t.grant(false);
    let read_then = |first: &str, second: &str| {
        misbehave(
            "read-then",
            json!({"first": first, "second": second}),
            &caps,
        )
    };

    let out = read_then("/etc/passwd", "/data/missing.txt");
    match &out.result {
        Err(CallError::ToolError { value }) => {
            assert!(
                value.as_str().unwrap().starts_with("/data/missing.txt: "),
                "{value}"
            )
        }
        other => panic!("expected the tool's own error, got {other:?}"),
    }
    assert_file_denied(&out, "open-read", "/etc/passwd", OUTSIDE);

    let out = read_then("/etc/passwd", "/data/note.txt");
    assert_eq!(out.result, Ok(json!("hello")));
    assert_file_denied(&out, "open-read", "/etc/passwd", OUTSIDE);

    let out = read_then("/data/note.txt", "/etc/passwd");
    assert_outside(&out, "open-read", "/etc/passwd");
}

/// A directory granted at guest `/` covers everything: no empty `/` is added, paths
/// resolve in the grant, and a missing one is not found rather than denied.
#[test]
fn a_directory_granted_at_the_root_keeps_working() {
    let t = Tree::new();
    let caps = Capabilities::none().files(vec![FileGrant::dir(t.inside(), "/", false)]);
    for path in ["/note.txt", "note.txt", "/sub/../note.txt"] {
        let out = misbehave("read-file", json!({ "path": path }), &caps);
        assert_eq!(out.result, Ok(json!("hello")), "{path}");
    }
    let out = misbehave("read-file", json!({"path": "/etc/passwd"}), &caps);
    assert_eq!(
        out.result.as_ref().unwrap_err().kind(),
        ErrorKind::ToolError
    );
    assert_eq!(denials(&out), 0, "{:#?}", out.report.events);
    // `..` above the root grant is still wasmtime-wasi's refusal.
    let out = misbehave("read-file", json!({"path": "/../secret.txt"}), &caps);
    assert_eq!(out.result.unwrap_err().kind(), ErrorKind::Denied);
}

/// File grants at guest `/` already gate `/` name by name: every other name is refused as
/// not granted, and the granted file reads.
#[test]
fn file_grants_at_the_root_refuse_the_rest_themselves() {
    let t = Tree::new();
    let host = t.inside().join("note.txt");
    let caps = Capabilities::none().files(vec![
        toolhost_runtime::policy::file_grant(&host, "/note.txt", false).unwrap(),
    ]);
    let out = misbehave("read-file", json!({"path": "/note.txt"}), &caps);
    assert_eq!(out.result, Ok(json!("hello")));
    let out = misbehave("read-file", json!({"path": "/etc/passwd"}), &caps);
    assert_eq!(out.result.as_ref().unwrap_err().kind(), ErrorKind::Denied);
    assert_file_denied(
        &out,
        "open-read",
        "/etc/passwd",
        "access: not a granted file",
    );
}

/// A tool that imports no `wasi:filesystem` is untouched: it runs and records nothing.
#[test]
fn a_tool_without_a_filesystem_is_unaffected() {
    let out = attack(
        "calc",
        "eval",
        json!({"expression": "1 + 2"}),
        &Capabilities::none(),
        &Limits::default(),
    );
    assert_eq!(out.result, Ok(json!(3)));
    assert!(out.report.events.is_empty(), "{:#?}", out.report.events);
}
