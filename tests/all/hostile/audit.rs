//! Attacks on the audit: a flood of harmless calls before the ones that matter, a flood of
//! denials, values too long to keep, a tool that exits or overflows its shadow stack.
//! Every decision that changes or refuses something must reach `report.events` and the run
//! journal whatever came before it; once the audit budget is spent the call fails closed.

use std::path::Path;

use serde_json::{Value, json};
use toolhost_runtime::{AuditEvent, CallError, Capabilities, Decision, ErrorKind, Limits};
use toolhost_tests::server::Server;

use super::{assert_event, attack};

/// Harmless stats before the calls that matter: more than the old log's 1,024 events.
const FLOOD: u32 = 1_100;
const TOKEN: &str = "audit-token-value";

/// A read-write `/data` grant, the env var `TOKEN`, and HTTP to `server`.
fn flood_caps(dir: &Path, server: &Server) -> Capabilities {
    let mut caps = toolhost_tests::grant_dir(dir, true);
    caps.env = vec![("TOKEN".into(), TOKEN.into())];
    caps.network.http = vec![server.origin().parse().expect("origin")];
    caps
}

fn flood_args(server: &Server) -> Value {
    json!({
        "stats": FLOOD,
        "then": ["after.txt", "../secret.txt", server.url("/echo"), "TOKEN"],
    })
}

/// The four decisions after the flood, and the flood itself counted.
#[track_caller]
fn assert_flood_then_decisions(events: &[AuditEvent]) {
    let is = |want: &AuditEvent| events.iter().any(|e| e == want);
    let kept_stats = events
        .iter()
        .filter(|e| matches!(e, AuditEvent::File { action, .. } if action == "stat"))
        .count();
    let collapsed = events.iter().find_map(|e| match e {
        AuditEvent::Repeated { action, count } if action == "stat" => Some(*count),
        _ => None,
    });
    assert_eq!(
        kept_stats as u64 + collapsed.expect("the flood counted"),
        u64::from(FLOOD),
        "every stat kept or counted"
    );
    assert!(is(&AuditEvent::File {
        action: "create".into(),
        path: "/data/after.txt".into(),
        decision: Decision::Allowed,
        reason: None,
    }));
    assert!(is(&AuditEvent::File {
        action: "open-read".into(),
        path: "/data/../secret.txt".into(),
        decision: Decision::Denied,
        reason: Some("not-permitted".into()),
    }));
    assert!(
        events.iter().any(
            |e| matches!(e, AuditEvent::Http { method, decision: Decision::Allowed, url, .. }
            if method == "POST" && url.ends_with("/echo"))
        ),
        "{events:#?}"
    );
    assert!(is(&AuditEvent::EnvRead {
        names: vec!["TOKEN".into()]
    }));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AuditEvent::Written { bytes } if *bytes > 0))
    );
}

#[test]
fn a_flood_of_stats_cannot_push_later_decisions_out_of_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start();
    let out = attack(
        "misbehave",
        "flood-then-act",
        flood_args(&server),
        &flood_caps(dir.path(), &server),
        &Limits::default(),
    );
    assert_eq!(
        out.result,
        Ok(json!([
            "written",
            "open-at ../secret.txt: not-permitted",
            "status 200",
            "env read"
        ]))
    );
    assert_flood_then_decisions(&out.report.events);
    // The flood takes a bounded number of events, not one per stat.
    assert!(out.report.events.len() < 300, "{}", out.report.events.len());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("after.txt")).unwrap(),
        "written after the flood"
    );
    let posted = server.received();
    assert_eq!(posted.len(), 1);
    assert_eq!(posted[0].method, "POST");
    assert_eq!(posted[0].body, b"posted after the flood");
}

#[test]
fn a_flood_of_stats_cannot_push_later_decisions_out_of_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    std::fs::write(
        dir.path().join("policy.toml"),
        format!(
            r#"version = 1
[tools.misbehave]
operations = ["flood-then-act"]
files = [{{ host = "data", guest = "/data", access = "read-write" }}]
network = {{ http = ["{origin}"] }}
env = {{ TOKEN = "{TOKEN}" }}
"#,
            origin = server.origin()
        ),
    )
    .unwrap();
    let args = serde_json::to_string(&flood_args(&server)).unwrap();
    let args = args.replace("\":", "\" =");
    std::fs::write(
        dir.path().join("task.toml"),
        format!(
            r#"goal = "flood, then act"
policy = "policy.toml"
tools = ["misbehave"]

[planner.plan]
goal = "flood, then act"
steps = [
  {{ id = "flood", tool = "misbehave", operation = "flood-then-act", args = {args} }},
]
"#
        ),
    )
    .unwrap();
    let state = dir.path().join("state");
    let tools = toolhost_tests::tools_dir();
    let out = toolhost_tests::cli([
        "--state-dir",
        state.to_str().unwrap(),
        "run",
        dir.path().join("task.toml").to_str().unwrap(),
        "--tools-dir",
        &tools,
        "--json",
    ]);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    let journal = doc["journal"]["path"].as_str().expect("a journal path");
    let finished = std::fs::read_to_string(journal)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["kind"] == "step_finished" && r["data"]["id"] == "flood")
        .expect("the step finished");
    let events: Vec<AuditEvent> = finished["data"]["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(event_of)
        .collect();
    assert_flood_then_decisions(&events);
}

/// An event from its journal JSON (the fields the flood assertions look at).
fn event_of(v: &Value) -> AuditEvent {
    let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
    let decision = || match v["decision"].as_str() {
        Some("denied") => Decision::Denied,
        _ => Decision::Allowed,
    };
    match v["event"].as_str() {
        Some("file") => AuditEvent::File {
            action: s("action"),
            path: s("path"),
            decision: decision(),
            reason: v["reason"].as_str().map(String::from),
        },
        Some("http") => AuditEvent::Http {
            method: s("method"),
            url: s("url"),
            resolved: None,
            decision: decision(),
            reason: None,
        },
        Some("env_read") => AuditEvent::EnvRead {
            names: v["names"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_str().unwrap().to_string())
                .collect(),
        },
        Some("repeated") => AuditEvent::Repeated {
            action: s("action"),
            count: v["count"].as_u64().unwrap(),
        },
        Some("written") => AuditEvent::Written {
            bytes: v["bytes"].as_u64().unwrap(),
        },
        _ => AuditEvent::Limit {
            limit: "other".into(),
            detail: v.to_string(),
        },
    }
}

fn denied_opens(out: &toolhost_runtime::CallOutcome) -> usize {
    out.report
        .events
        .iter()
        .filter(|e| matches!(e, AuditEvent::File { decision: Decision::Denied, path, .. } if path.starts_with("/data/../probe-")))
        .count()
}

#[test]
fn denials_are_never_collapsed() {
    let dir = tempfile::tempdir().unwrap();
    let out = attack(
        "misbehave",
        "denied-flood",
        json!({"count": 3_000}),
        &toolhost_tests::grant_dir(dir.path(), false),
        &Limits::default(),
    );
    assert_eq!(out.result, Ok(json!(3_000)));
    assert_eq!(denied_opens(&out), 3_000);
}

#[test]
fn a_spent_audit_budget_ends_the_call_rather_than_go_on_unaudited() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits::default().max_audit_bytes(32 << 10);
    let out = attack(
        "misbehave",
        "denied-flood",
        json!({"count": 100_000}),
        &toolhost_tests::grant_dir(dir.path(), false),
        &limits,
    );
    assert_eq!(out.result, Err(CallError::AuditLimit { budget: 32 << 10 }));
    // Every decision taken was kept, the last one followed by the audit limit.
    let kept = denied_opens(&out);
    assert!((100..1_000).contains(&kept), "{kept}");
    let last = out.report.events.last().unwrap();
    assert!(
        matches!(last, AuditEvent::Limit { limit, detail } if limit == "audit" && detail.contains("32768 bytes")),
        "{last:?}"
    );
    assert!(matches!(
        &out.report.events[out.report.events.len() - 2],
        AuditEvent::File {
            decision: Decision::Denied,
            ..
        }
    ));
}

#[test]
fn long_names_are_cut_with_their_length_and_digest() {
    let name = format!("{}.example", "n".repeat(1 << 20));
    let out = attack(
        "misbehave",
        "dns-lookup",
        json!({ "name": name }),
        &Capabilities::none(),
        &Limits::default(),
    );
    assert!(out.result.is_err());
    let e = assert_event(&out, |e| matches!(e, AuditEvent::NameLookup { .. }));
    let AuditEvent::NameLookup {
        name: kept,
        decision,
    } = e
    else {
        unreachable!()
    };
    assert_eq!(decision, Decision::Denied);
    assert!(kept.len() < 1024, "{}", kept.len());
    assert!(kept.starts_with("nnnn"), "{kept}");
    assert!(
        kept.contains(&format!("{} bytes, sha256 ", name.len())),
        "{kept}"
    );
}

#[test]
fn arguments_over_the_cap_are_refused_before_the_tool_runs() {
    let limits = Limits::default().max_args_bytes(1 << 20);
    let big = "x".repeat(2 << 20);
    let out = attack(
        "misbehave",
        "read-env",
        json!({ "name": big }),
        &Capabilities::none(),
        &limits,
    );
    let err = out.result.as_ref().unwrap_err();
    assert_eq!(
        err,
        &CallError::ArgumentsTooLarge {
            size: big.len() + r#"{"name":""}"#.len(),
            limit: 1 << 20
        }
    );
    assert_eq!(err.kind(), ErrorKind::BadArguments);
    assert_eq!(
        err.to_string(),
        format!(
            "arguments too large: {} bytes of JSON, the limit is 1048576 bytes (`max_args_bytes`)",
            big.len() + 11
        )
    );
    assert_event(
        &out,
        |e| matches!(e, AuditEvent::Limit { limit, .. } if limit == "arguments"),
    );
    // Just under the cap runs.
    let fits = "x".repeat((1 << 20) - 11);
    let out = attack(
        "misbehave",
        "read-env",
        json!({ "name": fits }),
        &Capabilities::none(),
        &limits,
    );
    assert_eq!(out.result, Ok(Value::Null));
}

#[test]
fn exit_is_its_own_outcome_with_the_code() {
    for (code, reported) in [(0u8, 0u32), (3, 1)] {
        let out = attack(
            "misbehave",
            "call-exit",
            json!({ "code": code }),
            &Capabilities::none(),
            &Limits::default(),
        );
        // wasi-libc passes any non-zero code as `err`, which WASI 0.2 reports as 1.
        assert_eq!(out.result, Err(CallError::Exit { code: reported }));
        assert_eq!(out.result.as_ref().unwrap_err().kind().as_str(), "exit");
        assert_event(&out, |e| {
            matches!(e, AuditEvent::Trap { kind, detail }
            if kind == "exit" && detail.contains(&format!("code {reported}")))
        });
    }
}

#[test]
fn shadow_stack_overflow_reads_as_a_stack_overflow() {
    let out = attack(
        "misbehave",
        "recurse",
        json!({"depth": 100_000_000u64}),
        &Capabilities::none(),
        &Limits::default(),
    );
    assert_eq!(out.result, Err(CallError::StackOverflow));
    assert_event(
        &out,
        |e| matches!(e, AuditEvent::Trap { kind, .. } if kind == "stack_overflow"),
    );
    // A plain out-of-bounds access is still a trap: reading past a file grant is not
    // involved; a shallow recursion returns.
    let out = attack(
        "misbehave",
        "recurse",
        json!({"depth": 100}),
        &Capabilities::none(),
        &Limits::default(),
    );
    assert_eq!(out.result, Ok(json!(100)));
}

/// The real binary at its default log level prints a denial to stderr.
#[test]
fn denials_are_logged_at_the_default_level() {
    let dir = tempfile::tempdir().unwrap();
    let grant = format!("{}:/data", dir.path().display());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolhost-test-cli"))
        .args([
            "--no-cache",
            "tool",
            "call",
            toolhost_tests::path("misbehave"),
            "raw-read",
            "--args",
            r#"{"path": "../secret.txt"}"#,
            "--allow-read",
            &grant,
        ])
        .env_remove("TOOLHOST_LOG")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(
        stderr.contains("WARN")
            && stderr.contains("toolhost::audit")
            && stderr.contains("../secret.txt"),
        "{stderr}"
    );
}

#[test]
fn policy_limits_set_the_write_argument_and_audit_caps() {
    let p = toolhost_runtime::Policy::parse(
        "p.toml",
        "version = 1\n[defaults.limits]\nmax_audit_bytes = 65536\n[tools.misbehave]\n\
         limits = { max_written_bytes = 1048576, max_file_bytes = 2048, max_args_bytes = 100 }\n",
        Path::new("."),
    )
    .unwrap();
    let l = &p.tools["misbehave"].limits;
    assert_eq!(
        (
            l.max_written_bytes,
            l.max_file_bytes,
            l.max_args_bytes,
            l.max_audit_bytes
        ),
        (1 << 20, 2048, 100, 65536)
    );
    let d = Limits::default();
    assert_eq!(
        (
            d.max_written_bytes,
            d.max_file_bytes,
            d.max_args_bytes,
            d.max_audit_bytes
        ),
        (64 << 20, 64 << 20, 4 << 20, 1 << 20)
    );
    // The step's argument cap, from the policy, names the size and the cap.
    let out = attack(
        "misbehave",
        "read-env",
        json!({"name": "x".repeat(200)}),
        &Capabilities::none(),
        l,
    );
    assert_eq!(
        out.result,
        Err(CallError::ArgumentsTooLarge {
            size: 211,
            limit: 100
        })
    );
}
