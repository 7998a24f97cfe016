//! A hostile tool served over MCP: whatever it does ends its own call, with the limit
//! named, and nothing else. The stdio framing survives a tool that writes to stdout, the
//! server survives a tool that exits or panics, and two spinning calls in flight do not
//! hold up a quick one beside them.

use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Value, json};

use super::{Fixture, TIMEOUT_MS, connect};

fn params(name: &str, args: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_string())
        .with_arguments(args.as_object().expect("arguments are an object").clone())
}

/// The `error` object of a failed call, with its kind checked.
fn failed<'a>(r: &'a CallToolResult, kind: &str) -> &'a Value {
    assert_eq!(r.is_error, Some(true), "{r:?}");
    let err = &r.structured_content.as_ref().expect("structured error")["error"];
    assert_eq!(err["kind"], kind, "{r:?}");
    err
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_tool_ends_only_its_own_call() {
    let fixture = Fixture::new();
    let client = connect(&fixture, ()).await;
    let call = |name: &'static str, args: Value| client.call_tool(params(name, args));
    let calc_answers = || async {
        let ok = call("calc.eval", json!({"expression": "6*7"}))
            .await
            .expect("the server still answers");
        assert_eq!(ok.structured_content, Some(json!({"result": 42})), "{ok:?}");
    };

    // 1 MiB written to the guest's stdout: captured by the sandbox (and capped), never
    // mixed into the protocol stream on the server's stdout.
    let printed = call("misbehave.print", json!({"bytes": 1 << 20}))
        .await
        .expect("a framed reply");
    assert_eq!(printed.is_error, Some(false), "{printed:?}");
    calc_answers().await;

    // A result over the 1 MiB output cap, 512 MiB asked of a 64 MiB cap, a panic and a
    // process exit: each a failed call naming what stopped it.
    let big = call("misbehave.big-result", json!({"bytes": 4 << 20}))
        .await
        .unwrap();
    assert_eq!(failed(&big, "output_limit")["limit"], "output");
    let hog = call("misbehave.alloc", json!({"mib": 512})).await.unwrap();
    assert_eq!(failed(&hog, "memory_limit")["limit"], "memory");
    let panicked = call("misbehave.panic", json!({"message": "boom"}))
        .await
        .unwrap();
    failed(&panicked, "panic");
    let exited = call("misbehave.call-exit", json!({"code": 3}))
        .await
        .unwrap();
    failed(&exited, "exit");
    calc_answers().await;

    // Two spins in flight: a calc call beside them answers long before their limits end
    // them, and the spins themselves end within their deadline.
    let started = Instant::now();
    let quick = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let t = Instant::now();
        calc_answers().await;
        t.elapsed()
    };
    let (a, b, quick) = tokio::join!(
        call("misbehave.spin", json!({})),
        call("misbehave.spin", json!({})),
        quick
    );
    assert!(
        quick < Duration::from_millis(500),
        "calc beside two spins took {quick:?}"
    );
    for spin in [a.unwrap(), b.unwrap()] {
        assert_eq!(
            failed_kind(&spin),
            "fuel_exhausted",
            "a spin ends by its fuel, long before its deadline: {spin:?}"
        );
    }
    assert!(started.elapsed() < Duration::from_millis(TIMEOUT_MS + 1500));
    client.cancel().await.expect("close");
}

fn failed_kind(r: &CallToolResult) -> String {
    assert_eq!(r.is_error, Some(true), "{r:?}");
    r.structured_content.as_ref().expect("structured error")["error"]["kind"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}
