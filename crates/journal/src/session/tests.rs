use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

use super::*;
use crate::{ChainProblem, Redactor, ResumeError, checkpoint, replay, show, verify};
use toolhost_runtime::Decision;

fn digest(path: &str, fill: char) -> FileDigest {
    FileDigest {
        path: path.into(),
        sha256: fill.to_string().repeat(64),
        signer: None,
    }
}

fn start() -> SessionStart {
    SessionStart {
        transport: "stdio".into(),
        policy: digest("/etc/toolhost/policy.toml", 'a'),
        tools: BTreeMap::from([
            ("calc".to_string(), digest("calc.wasm", 'c')),
            ("files".to_string(), digest("files.wasm", 'f')),
        ]),
    }
}

fn open(state: &Path) -> Journal {
    Journal::create_session(state, &start(), Redactor::new(Vec::new(), &[]).unwrap()).unwrap()
}

/// A session with one succeeded, one denied and one cancelled call, ended.
fn three_calls(state: &Path) -> Journal {
    let j = open(state);
    j.session_client("inspector 0.9.1", "2025-06-18");
    let (a, b, c) = (
        json!({"expr": "6 * 7"}),
        json!({"path": "/etc/passwd"}),
        json!({"expr": "loop"}),
    );
    let denied = [AuditEvent::File {
        action: "open-read".into(),
        path: "/etc/passwd".into(),
        decision: Decision::Denied,
        reason: Some("not-permitted".into()),
    }];
    let calls = [
        (
            "call-1",
            "calc",
            "eval",
            &a,
            CallEnd::Ok(&json!(42)),
            &[][..],
        ),
        (
            "call-2",
            "files",
            "read",
            &b,
            CallEnd::Failed {
                kind: "denied",
                message: "the policy does not let `files` read `/etc/passwd`",
            },
            &denied[..],
        ),
        (
            "call-3",
            "calc",
            "eval",
            &c,
            CallEnd::Cancelled {
                message: "the client cancelled the call",
            },
            &[][..],
        ),
    ];
    for (n, (id, tool, operation, args, outcome, events)) in calls.into_iter().enumerate() {
        j.call_started(id, tool, operation, args, true);
        let at = n as u64 * 1000;
        j.call_finished(&CallRecord {
            id,
            tool,
            operation,
            args,
            outcome,
            fuel: 1234,
            started_us: at,
            finished_us: at + 500,
            events,
        });
    }
    j.session_ended(3, "the client closed stdin");
    j
}

#[test]
fn a_session_verifies_and_shows_every_call() {
    let dir = tempfile::tempdir().unwrap();
    let j = three_calls(dir.path());
    let v = verify(j.path(), Some(&j.head())).unwrap();
    assert_eq!(v.problem, None);
    assert_eq!(v.records[0].data["mode"], "mcp");
    assert_eq!(v.records[0].data["transport"], "stdio");
    let finished: Vec<&Value> = v
        .records
        .iter()
        .filter(|r| r.kind == Kind::StepFinished)
        .map(|r| &r.data)
        .collect();
    let statuses: Vec<&Value> = finished.iter().map(|d| &d["status"]).collect();
    assert_eq!(statuses, ["succeeded", "failed", "failed"]);
    assert_eq!(finished[2]["error"]["kind"], "cancelled");
    assert_eq!(finished[1]["duration_us"], 500);
    let stop = v.stop().expect("a stop record");
    assert_eq!(stop.data["reason"], ENDED);

    let text = show::timeline(&v);
    for want in [
        "start     MCP session over stdio (mcp)",
        "client    inspector 0.9.1 (protocol 2025-06-18)",
        "▶ call-1  calc.eval",
        "✔ call-1  calc.eval · 0.5 ms · fuel 1234 → 42",
        "✘ call-2  files.read · 0.5 ms · fuel 1234 [denied] the policy does not let",
        "denied file open-read /etc/passwd (not-permitted)",
        "✘ call-3  calc.eval · 0.5 ms · fuel 1234 [cancelled] the client cancelled the call",
        "stop      session_ended: the client closed stdin",
        "chain: valid, 9 records, head",
    ] {
        assert!(text.contains(want), "no `{want}` in:\n{text}");
    }
}

#[test]
fn the_report_shows_calls_and_no_plan() {
    let dir = tempfile::tempdir().unwrap();
    let j = three_calls(dir.path());
    let r = crate::report::load(j.path()).unwrap();
    assert!(r.is_session());
    let html = r.html();
    for want in [
        "toolhost MCP session report",
        "<h2>Calls</h2>",
        "<h2>Clients</h2>",
        "inspector 0.9.1",
        r#"data-step="call-2""#,
        "1 denied",
        "the MCP session ended",
    ] {
        assert!(html.contains(want), "no `{want}` in the page");
    }
    for absent in [
        "<h2>Plans</h2>",
        "<h2>Budgets</h2>",
        "Planner calls",
        " · r0",
    ] {
        assert!(!html.contains(absent), "`{absent}` in the page");
    }
}

#[test]
fn resume_and_replay_refuse_a_session() {
    let dir = tempfile::tempdir().unwrap();
    let j = three_calls(dir.path());
    let v = verify(j.path(), None).unwrap();
    let refused = |doing| ResumeError::Session {
        run: j.id().to_string(),
        doing,
    };
    let e = checkpoint(&v.records, "", &Default::default()).unwrap_err();
    assert_eq!(e, refused("resume"));
    assert_eq!(
        e.to_string(),
        format!(
            "run {} is an MCP session journal: there is no plan to resume",
            j.id()
        )
    );
    assert_eq!(replay::recorded(&v.records).unwrap_err(), refused("replay"));
}

#[test]
fn nothing_is_appended_after_the_session_ended() {
    let dir = tempfile::tempdir().unwrap();
    let j = three_calls(dir.path());
    j.call_started("call-4", "calc", "eval", &json!({}), false);
    let v = verify(j.path(), None).unwrap();
    assert!(
        matches!(&v.problem, Some(ChainProblem::AfterEnd { reason, .. }) if reason == ENDED),
        "{:?}",
        v.problem
    );
}

#[test]
fn call_content_is_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let j = open(dir.path());
    let args = json!({"to": "alice@example.com", "n": 7});
    j.call_started("call-1", "mail", "send", &args, true);
    j.call_finished(&CallRecord {
        id: "call-1",
        tool: "mail",
        operation: "send",
        args: &args,
        outcome: CallEnd::Failed {
            kind: "tool_error",
            message: "no mailbox alice@example.com",
        },
        fuel: 9,
        started_us: 0,
        finished_us: 10,
        events: &[],
    });
    j.session_ended(1, "done");
    let text = std::fs::read_to_string(j.path()).unwrap();
    assert!(!text.contains("alice@example.com"), "{text}");
    let v = verify(j.path(), None).unwrap();
    let finished = &v.records[2].data;
    assert_eq!(finished["args"], json!({"to": "[redacted:email]", "n": 7}));
    assert_eq!(finished["error"]["message"], "no mailbox [redacted:email]");
    assert_eq!(finished["fuel"], 9);
}
