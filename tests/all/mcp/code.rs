//! `toolhost mcp --code` with the official Rust SDK's client (`rmcp`) over stdio: the
//! `run_program` tool carries the served tools' typed Python API; a program over several
//! tools answers through it, each call checked and journaled as a step of a run whose
//! journal verifies; a refused call is the program's to catch; bad arguments, a program
//! that raises, one program too many, and `--code` with `--watch` are each refused with
//! their reason.

use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Value, json};

use super::Fixture;

fn params(program: &str) -> CallToolRequestParams {
    CallToolRequestParams::new("run_program")
        .with_arguments(json!({ "program": program }).as_object().unwrap().clone())
}

fn content(r: &CallToolResult) -> &Value {
    r.structured_content.as_ref().expect("structured content")
}

/// Connects an rmcp client to `toolhost mcp --code EXTRA…` over stdio.
async fn client(
    fixture: &Fixture,
    extra: &[&str],
) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    use rmcp::ServiceExt;
    let mut args = vec!["--code"];
    args.extend_from_slice(extra);
    let cmd = tokio::process::Command::from(fixture.command(&args));
    let transport = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start toolhost mcp --code")
        .0;
    ().serve(transport).await.expect("MCP handshake")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_runs_over_the_served_tools_each_call_a_journaled_step() {
    let fixture = Fixture::new();
    let client = client(&fixture, &[]).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let run = tools
        .iter()
        .find(|t| t.name == "run_program")
        .expect("run_program is listed");
    let description = run.description.as_deref().unwrap_or_default();
    for want in [
        "class _Calc:",
        "def eval_(self, *, expression: str)",
        "class _Fs:",
        "parallel(",
    ] {
        assert!(description.contains(want), "{want} not in {description}");
    }
    // The served tools are still there, as without --code.
    assert!(tools.iter().any(|t| t.name == "calc.eval"));
    let program = r#"squares = [calc.eval_(expression=str(n) + " ^ 2") for n in range(1, 4)]
a, b = parallel(lambda: calc.eval_(expression="6 * 7"), lambda: calc.eval_(expression="1 + 1"))
try:
    fs.read_file(path="/etc/passwd")
    refused = None
except Denied as e:
    refused = kind_of(e)
answer({"squares": squares, "pair": [a, b], "refused": refused})"#;
    let r = client.call_tool(params(program)).await.expect("tools/call");
    assert_eq!(r.is_error, Some(false), "{r:?}");
    let doc = content(&r);
    assert_eq!(
        doc["answer"],
        json!({"squares": [1, 4, 9], "pair": [42, 2], "refused": "denied"}),
        "{doc:#}"
    );
    assert_eq!(doc["stop"]["reason"], "completed", "{doc:#}");
    let calls = doc["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 6, "{doc:#}");
    assert_eq!(calls[5]["tool"], "fs", "{doc:#}");
    assert_eq!(calls[5]["error"]["kind"], "denied", "{doc:#}");
    // The run's journal: every call a step, and the chain verifies.
    let journal = doc["journal"].as_str().expect("a journal path");
    let verify = toolhost_tests::cli(["journal", "verify", journal]);
    assert_eq!(verify.code, 0, "{verify:?}");
    let text = std::fs::read_to_string(journal).unwrap();
    let finished = text.matches("\"kind\":\"step_finished\"").count();
    assert_eq!(finished, 6, "{text}");
    assert!(
        text.contains("\"program\""),
        "the program is journaled as its revision"
    );
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_a_raising_program_and_one_too_many_are_refused_with_why() {
    let fixture = Fixture::new();
    let client = client(&fixture, &["--max-programs", "1"]).await;
    // Not a program: a JSON-RPC error naming why.
    let bad = CallToolRequestParams::new("run_program")
        .with_arguments(json!({"program": 5}).as_object().unwrap().clone());
    let e = client.call_tool(bad).await.expect_err("refused");
    assert!(e.to_string().contains("`program` must be a string"), "{e}");
    // A program that raises: an isError result with its traceback.
    let r = client
        .call_tool(params("x = 1 / 0"))
        .await
        .expect("tools/call");
    assert_eq!(r.is_error, Some(true), "{r:?}");
    let error = &content(&r)["error"];
    assert_eq!(error["kind"], "program_error", "{r:?}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("ZeroDivisionError"),
        "{r:?}"
    );
    // One program at a time: a second one while the first sleeps is overloaded.
    let sleeping = tokio::spawn({
        let peer = client.peer().clone();
        async move {
            peer.call_tool(params("misbehave.sleep(ms=1200)\nanswer('slept')"))
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(400)).await;
    let r = client
        .call_tool(params("answer(1)"))
        .await
        .expect("tools/call");
    assert_eq!(r.is_error, Some(true), "{r:?}");
    assert_eq!(content(&r)["error"]["kind"], "overloaded", "{r:?}");
    let first = sleeping.await.unwrap().expect("the first program");
    assert_eq!(content(&first)["answer"], "slept", "{first:?}");
    client.cancel().await.ok();
}

#[test]
fn code_refuses_watch() {
    let fixture = Fixture::new();
    let out = fixture.command(&["--code", "--watch"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot be used with"),
        "{out:?}"
    );
}

/// The records of every journal under `state` (the server's and each program's run).
fn all_records(fixture: &Fixture) -> Vec<Value> {
    super::records(&super::journals(&fixture.state()))
}

/// Polls the journals until `found` holds of one of their records, for at most `limit`.
async fn wait_for(fixture: &Fixture, limit: Duration, found: impl Fn(&Value) -> bool) -> Value {
    let started = std::time::Instant::now();
    loop {
        if let Some(r) = all_records(fixture).into_iter().find(|r| found(r)) {
            return r;
        }
        assert!(started.elapsed() < limit, "not journaled within {limit:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_run_program_call_cancels_its_run() {
    use rmcp::model::{CallToolRequest, ClientRequest};
    use rmcp::service::PeerRequestOptions;
    // Only the cancellation can end this spin (fuel and deadline far away).
    let fixture = Fixture::with_limits(1 << 50, 120_000);
    let client = client(&fixture, &[]).await;
    let spin = ClientRequest::CallToolRequest(CallToolRequest::new(params(
        "misbehave.spin()\nanswer('never')",
    )));
    let handle = client
        .send_cancellable_request(spin, PeerRequestOptions::no_options())
        .await
        .expect("send run_program");
    wait_for(&fixture, Duration::from_secs(60), |r| {
        r["kind"] == "step_started" && r["data"]["id"] == "c1"
    })
    .await;
    handle
        .cancel(Some("the test cancels it".into()))
        .await
        .expect("send notifications/cancelled");
    let stopped = wait_for(&fixture, Duration::from_secs(20), |r| {
        r["kind"] == "stopped"
    })
    .await;
    assert!(
        stopped["data"].to_string().contains("cancelled"),
        "{stopped}"
    );
    client.cancel().await.ok();
}
