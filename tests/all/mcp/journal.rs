//! Every MCP call is journaled with its capability decisions: `toolhost journal verify`
//! and `show` work on a session.

use std::process::Command;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;

use super::{BIN, Fixture};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_journal_verifies_and_shows_each_call_with_its_decisions() {
    let fixture = Fixture::new();
    let cmd = tokio::process::Command::from(fixture.command(&[]));
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let client = ().serve(transport).await.unwrap();
    let call = |name: &'static str, args: serde_json::Value| {
        client.call_tool(
            CallToolRequestParams::new(name).with_arguments(args.as_object().unwrap().clone()),
        )
    };
    call("calc.eval", json!({"expression": "2+3"}))
        .await
        .unwrap();
    let denied = call(
        "misbehave.write-file",
        json!({"path": "/data/x", "content": "y"}),
    )
    .await
    .unwrap();
    assert_eq!(denied.is_error, Some(true));
    client.cancel().await.unwrap();

    let journals = fixture.journals();
    assert_eq!(journals.len(), 1, "{journals:?}");
    let state = fixture.state();
    let run = journals[0]
        .file_stem()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let cli = |args: &[&str]| {
        Command::new(BIN)
            .arg("--state-dir")
            .arg(&state)
            .args(args)
            .output()
            .unwrap()
    };
    let verify = cli(&["journal", "verify", &run]);
    assert!(verify.status.success(), "{verify:?}");
    let show = cli(&["journal", "show", &run]);
    assert!(show.status.success(), "{show:?}");
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(text.contains("calc") && text.contains("eval"), "{text}");
    assert!(text.contains("write-file"), "{text}");
    assert!(text.contains("denied"), "{text}");
    let raw = std::fs::read_to_string(&journals[0]).unwrap();
    assert!(raw.contains("\"mode\":\"mcp\""), "{raw}");
    assert!(raw.contains("/data/x"), "the denial names the path: {raw}");
}
