//! Every way a call can fail comes back typed, within its limits, and the host keeps serving.

use std::time::Duration;

use serde_json::{Value, json};
use toolhost_runtime::{CallError, Capabilities, ErrorKind, Limits};
use toolhost_tests::{call, call_with, runtime, tool};

fn limits() -> Limits {
    Limits::default()
        .fuel(50_000_000)
        .timeout(Duration::from_secs(10))
}

fn misbehave(op: &str, args: Value, limits: &Limits) -> toolhost_runtime::CallOutcome {
    call_with("misbehave", op, args, &Capabilities::none(), limits)
}

/// After any failure, the same process still answers a benign call.
fn host_still_serves() {
    assert_eq!(
        call("calc", "eval", json!({"expression": "1 + 1"})).result,
        Ok(json!(2))
    );
}

#[test]
fn infinite_loop_runs_out_of_fuel() {
    let out = misbehave("spin", json!({}), &limits());
    assert_eq!(
        out.result,
        Err(CallError::FuelExhausted { limit: 50_000_000 })
    );
    assert_eq!(out.report.fuel_consumed, 50_000_000);
    host_still_serves();
}

#[test]
fn infinite_loop_hits_the_deadline_when_fuel_is_plentiful() {
    let l = Limits::default()
        .fuel(u64::MAX / 2)
        .timeout(Duration::from_millis(200));
    let out = misbehave("spin", json!({}), &l);
    assert_eq!(out.result, Err(CallError::Timeout { timeout_ms: 200 }));
    // Its next fuel yield after 200 ms ends it; the bound only guards against a hang.
    assert!(
        out.report.duration < Duration::from_secs(3),
        "{:?}",
        out.report.duration
    );
    host_still_serves();
}

#[test]
fn a_host_wait_is_cut_off_by_the_deadline() {
    let l = limits().timeout(Duration::from_millis(200));
    let out = misbehave("sleep", json!({"ms": 60_000}), &l);
    assert_eq!(out.result, Err(CallError::Timeout { timeout_ms: 200 }));
    assert!(
        out.report.duration < Duration::from_secs(3),
        "{:?}",
        out.report.duration
    );
    assert_eq!(
        misbehave("sleep", json!({"ms": 1}), &limits()).result,
        Ok(json!(1))
    );
}

#[test]
fn allocation_loop_hits_the_memory_limit() {
    let l = limits().memory_mib(16);
    let err = misbehave("alloc-forever", json!({}), &l)
        .result
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::MemoryLimit, "{err}");
    let err = misbehave("alloc", json!({"mib": 32}), &l)
        .result
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::MemoryLimit, "{err}");
    assert_eq!(
        misbehave("alloc", json!({"mib": 4}), &l).result,
        Ok(json!(4 << 20))
    );
    host_still_serves();
}

#[test]
fn deep_recursion_traps() {
    let err = misbehave(
        "recurse-native",
        json!({"depth": 100_000_000u64}),
        &limits(),
    )
    .result
    .unwrap_err();
    assert_eq!(err, CallError::StackOverflow);
    // Frames in the guest's shadow stack (linear memory) run off its bottom instead: an
    // out-of-bounds access with recursion all over the backtrace, read as what it is.
    let err = misbehave("recurse", json!({"depth": 100_000_000u64}), &limits())
        .result
        .unwrap_err();
    assert_eq!(err, CallError::StackOverflow);
    assert_eq!(
        misbehave("recurse", json!({"depth": 100}), &limits()).result,
        Ok(json!(100))
    );
    host_still_serves();
}

#[test]
fn guest_panic_reports_its_message() {
    let out = misbehave(
        "panic",
        json!({"message": "the tool gave up: 42"}),
        &limits(),
    );
    assert_eq!(
        out.result,
        Err(CallError::Panic {
            message: "the tool gave up: 42".into()
        })
    );
    assert!(out.report.stderr.contains("the tool gave up: 42"));
    host_still_serves();
}

#[test]
fn stdout_flood_is_capped_not_fatal() {
    let l = limits().max_stdio_bytes(1000);
    let out = misbehave("print", json!({"bytes": 1_000_000}), &l);
    assert_eq!(out.result, Ok(json!(1_000_000)));
    assert_eq!(out.report.stdout.len(), 1000);
    assert_eq!(out.report.stdio_dropped, 999_000);
}

#[test]
fn log_flood_is_capped_and_counted() {
    let l = limits().max_log_bytes(1000);
    let out = misbehave("log-flood", json!({"count": 50}), &l);
    assert_eq!(out.result, Ok(json!(null)));
    assert_eq!(out.report.logs.len(), 10);
    assert_eq!(out.report.logs_dropped, 40);
    assert_eq!(out.report.logs[0].level, "info");
}

#[test]
fn giant_result_hits_the_output_limit() {
    let l = limits().max_result_bytes(1000);
    let out = misbehave("big-result", json!({"bytes": 5000}), &l);
    assert_eq!(
        out.result,
        Err(CallError::OutputLimit {
            size: 5002,
            limit: 1000
        })
    );
    assert_eq!(
        misbehave("big-result", json!({"bytes": 3}), &l).result,
        Ok(json!("yyy"))
    );
}

#[test]
fn a_benign_call_succeeds_while_another_call_misbehaves() {
    let rt = runtime();
    let (spin, calc) = (tool("misbehave"), tool("calc"));
    let caps = Capabilities::none();
    let slow = Limits::default()
        .fuel(u64::MAX / 2)
        .timeout(Duration::from_millis(500));
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let (bad, good) = multi.block_on(async {
        let bad = tokio::spawn({
            let (spin, caps, slow) = (spin.clone(), caps.clone(), slow.clone());
            async move { rt.call(&spin, "spin", &json!({}), &caps, &slow).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let good = rt
            .call(
                &calc,
                "eval",
                &json!({"expression": "6 * 7"}),
                &caps,
                &Limits::default(),
            )
            .await;
        (bad.await.unwrap(), good)
    });
    assert_eq!(good.result, Ok(json!(42)));
    assert_eq!(bad.result.unwrap_err().kind(), ErrorKind::Timeout);
    // The benign call finished while the bad one was still running.
    assert!(good.report.duration < bad.report.duration);
}
