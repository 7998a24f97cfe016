//! The journal of an MCP session (`toolhost mcp`), written through the journal's public
//! API with real sandboxed calls: `journal verify`, `journal show`, `report` and `journal
//! prune` read it like a run's, and `resume` / `replay` refuse it, saying why.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};
use toolhost_journal::writer::FileDigest;
use toolhost_journal::{CallEnd, CallRecord, Journal, Redactor, SessionStart};
use toolhost_runtime::{CallOutcome, Decision, Limits};

use super::journal;
use toolhost_tests::{call_with, cli, grant_dir, path};

fn digest(tool: &str) -> FileDigest {
    FileDigest::of(Path::new(path(tool))).unwrap()
}

/// Journals `out`, the outcome of call `id` (`tool.operation` with `args`).
fn record(j: &Journal, id: &str, (tool, operation): (&str, &str), args: &Value, out: &CallOutcome) {
    let kind;
    let message;
    let outcome = match &out.result {
        Ok(v) => CallEnd::Ok(v),
        Err(e) => {
            kind = e.kind().as_str();
            message = e.to_string();
            CallEnd::Failed {
                kind,
                message: &message,
            }
        }
    };
    j.call_finished(&CallRecord {
        id,
        tool,
        operation,
        args,
        outcome,
        fuel: out.report.fuel_consumed,
        started_us: 0,
        finished_us: u64::try_from(out.report.duration.as_micros()).unwrap(),
        events: &out.report.events,
    });
}

/// A session over stdio with a calc call, a file read the grant refuses, and a call the
/// client cancelled; returns the journal (ended) and its head.
fn session(state: &Path) -> (Journal, String) {
    let start = SessionStart {
        transport: "stdio".into(),
        policy: digest("calc"),
        tools: BTreeMap::from([
            ("calc".to_string(), digest("calc")),
            ("misbehave".to_string(), digest("misbehave")),
        ]),
    };
    let j =
        Journal::create_session(state, &start, Redactor::new(Vec::new(), &[]).unwrap()).unwrap();
    j.session_client("python-mcp 2.0.0", "2025-06-18");

    let args = json!({"expression": "6 * 7"});
    j.call_started("call-1", "calc", "eval", &args, false);
    let out = call_with(
        "calc",
        "eval",
        args.clone(),
        &Default::default(),
        &Limits::default(),
    );
    assert_eq!(out.result, Ok(json!(42)));
    record(&j, "call-1", ("calc", "eval"), &args, &out);

    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("inside")).unwrap();
    // Named after its owner: the path reaches the arguments and the denial, both redacted.
    std::fs::write(root.path().join("secret-of-bob@example.org"), "TOP-SECRET").unwrap();
    let caps = grant_dir(&root.path().join("inside"), false);
    let args = json!({"path": "/data/../secret-of-bob@example.org"});
    j.call_started("call-2", "misbehave", "read-file", &args, true);
    let out = call_with(
        "misbehave",
        "read-file",
        args.clone(),
        &caps,
        &Limits::default(),
    );
    assert!(
        out.report.events.iter().any(|e| matches!(
            e,
            toolhost_runtime::AuditEvent::File {
                decision: Decision::Denied,
                ..
            }
        )),
        "{:?}",
        out.report.events
    );
    record(&j, "call-2", ("misbehave", "read-file"), &args, &out);

    let args = json!({"expression": "1 + 1"});
    j.call_started("call-3", "calc", "eval", &args, false);
    j.call_finished(&CallRecord {
        id: "call-3",
        tool: "calc",
        operation: "eval",
        args: &args,
        outcome: CallEnd::Cancelled {
            message: "notifications/cancelled from the client",
        },
        fuel: 0,
        started_us: 10,
        finished_us: 20,
        events: &[],
    });
    j.session_ended(3, "the client closed stdin");
    let head = j.head();
    (j, head)
}

#[test]
fn a_session_journal_verifies_shows_and_reports_through_the_cli() {
    let state = tempfile::tempdir().unwrap();
    let (j, head) = session(state.path());
    let id = j.id().to_string();
    let text = std::fs::read_to_string(j.path()).unwrap();
    assert!(
        !text.contains("bob@example.org") && !text.contains("TOP-SECRET"),
        "{text}"
    );
    // The process that wrote it lets go, as `toolhost mcp` does when it exits.
    drop(j);

    let out = journal(state.path(), &["verify", &id, "--head", &head]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .starts_with("chain: valid, 9 records, head sha256:"),
        "{out:?}"
    );

    let out = journal(state.path(), &["show", &id]);
    assert_eq!(out.code, 0, "{out:?}");
    for want in [
        "start     MCP session over stdio (mcp)",
        "client    python-mcp 2.0.0 (protocol 2025-06-18)",
        "▶ call-1  calc.eval {\"expression\":\"6 * 7\"}",
        "✔ call-1  calc.eval ·",
        "→ 42",
        "✘ call-2  misbehave.read-file ·",
        "[denied]",
        "denied file open-read /data/../",
        "[redacted:email]",
        "✘ call-3  calc.eval · 0.0 ms · fuel 0 [cancelled] notifications/cancelled from the client",
        "stop      session_ended: the client closed stdin",
    ] {
        assert!(out.stdout.contains(want), "`{want}` not in\n{}", out.stdout);
    }

    let out = journal(state.path(), &["show", &id, "--json"]);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        (doc["valid"].as_bool(), doc["complete"].as_bool()),
        (Some(true), Some(true))
    );

    let html = state.path().join("session.html");
    let out = cli([
        "--state-dir",
        state.path().to_str().unwrap(),
        "report",
        &id,
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("toolhost MCP session report") && page.contains("<h2>Calls</h2>"));
    assert!(!page.contains("<h2>Plans</h2>") && !page.contains("<h2>Budgets</h2>"));

    let out = journal(state.path(), &["prune", "--older-than", "0m", "--dry-run"]);
    assert_eq!(
        out.stdout,
        format!("would delete {id}\nwould delete 1 run(s) older than 0m\n")
    );
}

#[test]
fn resume_and_replay_refuse_a_session_journal() {
    let state = tempfile::tempdir().unwrap();
    let (j, _) = session(state.path());
    let id = j.id().to_string();
    drop(j);
    for (cmd, doing) in [("resume", "resume"), ("replay", "replay")] {
        let out = cli(["--state-dir", state.path().to_str().unwrap(), cmd, &id]);
        assert_eq!(out.code, 2, "{out:?}");
        assert_eq!(
            out.stderr,
            format!("error: run {id} is an MCP session journal: there is no plan to {doing}\n")
        );
    }
    // Refused before anything was written.
    let out = journal(state.path(), &["verify", &id]);
    assert!(out.stdout.starts_with("chain: valid, 9 records"), "{out:?}");
}
