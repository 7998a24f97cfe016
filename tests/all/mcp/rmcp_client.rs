//! The official Rust SDK's client (`rmcp`) against `toolhost mcp` over stdio.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ProgressNotificationParam, ProgressToken,
    RequestMetaObject,
};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Value, json};

use super::{FUEL, Fixture, TIMEOUT_MS, connect};

/// A client that keeps the progress notifications it gets.
#[derive(Clone, Default)]
struct Client {
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl ClientHandler for Client {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }
}

fn params(name: &str, args: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_string())
        .with_arguments(args.as_object().expect("arguments are an object").clone())
}

fn error_of(r: &CallToolResult) -> &Value {
    assert_eq!(r.is_error, Some(true), "{r:?}");
    &r.structured_content.as_ref().expect("structured error")["error"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_every_allowed_operation_with_schemas_and_annotations_from_the_grants() {
    let fixture = Fixture::new();
    let client = connect(&fixture, Client::default()).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for want in [
        "calc.eval",
        "misbehave.spin",
        "fs.write-file",
        "http.get-text",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    // Tools only, each named after a policy section: nothing reaches grants or policy.
    for name in &names {
        let section = name.split('.').next().unwrap();
        assert!(
            ["calc", "misbehave", "fs", "http"].contains(&section),
            "{name}"
        );
    }
    let tool = |n: &str| tools.iter().find(|t| t.name == n).unwrap();
    let calc = tool("calc.eval");
    let calc_wasm = toolhost_tests::tool("calc");
    assert_eq!(
        Value::Object((*calc.input_schema).clone()),
        calc_wasm.operation("eval").unwrap().params_schema
    );
    let out = calc.output_schema.as_ref().expect("an output schema");
    assert_eq!(out["type"], "object");
    assert_eq!(out["required"], json!(["result"]));
    let hints = |n: &str| {
        let a = tool(n).annotations.clone().expect("annotations");
        [
            a.read_only_hint,
            a.destructive_hint,
            a.idempotent_hint,
            a.open_world_hint,
        ]
    };
    let (t, f) = (Some(true), Some(false));
    assert_eq!(hints("calc.eval"), [t, f, t, f]);
    assert_eq!(hints("misbehave.spin"), [t, f, f, f]);
    assert_eq!(hints("fs.write-file"), [f, t, f, f]);
    assert_eq!(hints("http.get-text"), [f, f, f, t]);
    assert!(
        tools
            .iter()
            .all(|t| t.description.as_deref().is_some_and(|d| !d.is_empty()))
    );
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_and_every_kind_of_failure() {
    let fixture = Fixture::new();
    let client = connect(&fixture, Client::default()).await;
    let call = |name: &'static str, args: Value| client.call_tool(params(name, args));

    let ok = call("calc.eval", json!({"expression": "6*7"}))
        .await
        .unwrap();
    assert_eq!(ok.is_error, Some(false));
    assert_eq!(ok.structured_content, Some(json!({"result": 42})));
    let text = ok.content[0].as_text().expect("a text form").text.clone();
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({"result": 42})
    );

    let e = call("calc.eval", json!({"expression": "1/0"}))
        .await
        .unwrap();
    assert_eq!(error_of(&e)["kind"], "tool_error", "{e:?}");

    // A read-only grant: the write is refused by the sandbox, not by the tool.
    let e = call(
        "misbehave.write-file",
        json!({"path": "/data/new.txt", "content": "x"}),
    )
    .await
    .unwrap();
    assert_eq!(error_of(&e)["kind"], "denied", "{e:?}");
    assert!(!fixture.dir.path().join("data/new.txt").exists());

    // The fuel runs out in milliseconds of the guest's time, the deadline is seconds away:
    // only fuel metering can end the spin this way.
    let e = call("misbehave.spin", json!({})).await.unwrap();
    let err = error_of(&e);
    assert_eq!(err["kind"], "fuel_exhausted", "{e:?}");
    assert_eq!(err["limit"], "fuel", "{e:?}");
    assert!(
        err["message"].as_str().unwrap().contains(&FUEL.to_string()),
        "the message names the limit: {err}"
    );

    let started = Instant::now();
    let e = call("misbehave.sleep", json!({"ms": 60_000}))
        .await
        .unwrap();
    assert_eq!(error_of(&e)["kind"], "timeout", "{e:?}");
    assert_eq!(error_of(&e)["limit"], "timeout");
    assert!(started.elapsed() < Duration::from_millis(TIMEOUT_MS + 1000));

    // 2025-11-25 (what rmcp's client speaks): argument errors are tool errors.
    let e = call("calc.eval", json!({"expression": 5})).await.unwrap();
    assert_eq!(error_of(&e)["kind"], "bad_arguments", "{e:?}");

    let unknown = call("calc.nope", json!({})).await.unwrap_err();
    assert!(
        unknown.to_string().contains("unknown tool `calc.nope`"),
        "{unknown}"
    );
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_ends_the_call_in_its_sandbox_and_progress_reports_the_deadline() {
    let fixture = Fixture::new();
    let client = Client::default();
    let progress = client.progress.clone();
    let client = connect(&fixture, client).await;

    // Abandoning the request (rmcp sends notifications/cancelled on drop).
    let started = Instant::now();
    let abandoned = tokio::time::timeout(
        Duration::from_millis(300),
        client.call_tool(params("misbehave.sleep", json!({"ms": 60_000}))),
    )
    .await;
    assert!(abandoned.is_err(), "the call should still be running");
    // The server is free at once: a new call answers quickly.
    let ok = client
        .call_tool(params("calc.eval", json!({"expression": "1+1"})))
        .await
        .unwrap();
    assert_eq!(ok.structured_content, Some(json!({"result": 2})));
    assert!(
        started.elapsed() < Duration::from_millis(TIMEOUT_MS),
        "{:?}",
        started.elapsed()
    );

    let mut p = params("misbehave.sleep", json!({"ms": 900}));
    p.meta = Some(RequestMetaObject::with_progress_token(ProgressToken(
        rmcp::model::NumberOrString::String("tick".into()),
    )));
    let done = client.call_tool(p).await.unwrap();
    assert_eq!(done.is_error, Some(false), "{done:?}");
    // rmcp's client gives every request a progress token of its own (the abandoned call's
    // ticks are in the list too): keep this call's.
    let all = progress.lock().unwrap().clone();
    let last = all
        .last()
        .expect("progress notifications")
        .progress_token
        .clone();
    let ticks: Vec<_> = all
        .into_iter()
        .filter(|t| t.progress_token == last)
        .collect();
    assert!(ticks.len() >= 2, "{ticks:?}");
    assert!(
        ticks.windows(2).all(|w| w[0].progress < w[1].progress),
        "{ticks:?}"
    );
    assert_eq!(ticks[0].total, Some(TIMEOUT_MS as f64));
    client.cancel().await.expect("close");

    // The journal says the abandoned call was cancelled.
    let journal = fixture.journals();
    assert_eq!(journal.len(), 1, "{journal:?}");
    let text = std::fs::read_to_string(&journal[0]).unwrap();
    assert!(text.contains("cancelled"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_concurrent_calls_all_answer_correctly() {
    let fixture = Fixture::new();
    let client = Arc::new(connect(&fixture, Client::default()).await);
    let calls = (0..32).map(|i| {
        let client = client.clone();
        tokio::spawn(async move {
            let r = client
                .call_tool(params(
                    "calc.eval",
                    json!({"expression": format!("{i}*{i}")}),
                ))
                .await
                .unwrap();
            (i, r.structured_content)
        })
    });
    for call in calls {
        let (i, got) = call.await.unwrap();
        let got = got.expect("structured content")["result"].as_f64();
        assert_eq!(got, Some(f64::from(i * i)));
    }
}
