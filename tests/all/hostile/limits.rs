//! Attacks on the call's budget and on the host process: loops, waits, memory and table
//! bombs, stack, floods, panics, huge or deeply nested arguments, reading the host's
//! environment and arguments, and calls the policy refuses.

use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Value, json};
use toolhost_runtime::{
    AuditEvent, CallError, Capabilities, Decision, ErrorKind, Gate, Limits, Policy, Tool,
};
use toolhost_tests::{block_on, runtime, tool};

use super::{assert_event, attack, attack_tool};

fn limits() -> Limits {
    Limits::default()
        .fuel(50_000_000)
        .timeout(Duration::from_secs(10))
}

fn misbehave(op: &str, args: Value, limits: &Limits) -> toolhost_runtime::CallOutcome {
    attack("misbehave", op, args, &Capabilities::none(), limits)
}

fn limit_event(outcome: &toolhost_runtime::CallOutcome, name: &str) {
    assert_event(
        outcome,
        |e| matches!(e, AuditEvent::Limit { limit, .. } if limit == name),
    );
}

fn trap_event(outcome: &toolhost_runtime::CallOutcome, kind: &str) {
    assert_event(
        outcome,
        |e| matches!(e, AuditEvent::Trap { kind: k, .. } if k == kind),
    );
}

#[test]
fn infinite_loop_exhausts_fuel() {
    let out = misbehave("spin", json!({}), &limits());
    assert_eq!(
        out.result,
        Err(CallError::FuelExhausted { limit: 50_000_000 })
    );
    limit_event(&out, "fuel");
}

#[test]
fn infinite_loop_with_ample_fuel_hits_the_deadline() {
    let l = Limits::default()
        .fuel(u64::MAX / 2)
        .timeout(Duration::from_millis(300));
    let out = misbehave("spin", json!({}), &l);
    assert_eq!(out.result, Err(CallError::Timeout { timeout_ms: 300 }));
    assert!(
        out.report.duration < Duration::from_secs(5),
        "{:?}",
        out.report.duration
    );
    limit_event(&out, "timeout");
}

#[test]
fn endless_wait_inside_a_host_call_hits_the_deadline() {
    let l = limits().timeout(Duration::from_millis(300));
    let out = misbehave("sleep", json!({"ms": 3_600_000u64}), &l);
    assert_eq!(out.result, Err(CallError::Timeout { timeout_ms: 300 }));
    assert!(
        out.report.duration < Duration::from_secs(5),
        "{:?}",
        out.report.duration
    );
    limit_event(&out, "timeout");
}

#[test]
fn memory_bomb_hits_the_memory_cap() {
    let l = limits().memory_mib(16);
    let out = misbehave("alloc-forever", json!({}), &l);
    let err = out.result.as_ref().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::MemoryLimit, "{err}");
    limit_event(&out, "memory");
}

/// A component whose only function grows its table until something stops it, written
/// in WAT because no source language exposes `table.grow` directly.
fn table_bomb() -> &'static Tool {
    static TOOL: OnceLock<Tool> = OnceLock::new();
    TOOL.get_or_init(|| {
        let bytes = wat::parse_str(
            r#"(component
                (core module $m
                  (table $t 1 funcref)
                  (func (export "grow") (result i32)
                    (loop $again
                      (br_if $again
                        (i32.ne
                          (table.grow $t (ref.null func) (i32.const 65536))
                          (i32.const -1))))
                    (table.size $t)))
                (core instance $i (instantiate $m))
                (func (export "table-bomb") (result u32)
                  (canon lift (core func $i "grow"))))"#,
        )
        .expect("valid WAT");
        runtime()
            .load_bytes("tablebomb", Path::new("tablebomb.wasm"), &bytes)
            .expect("load the table bomb")
    })
}

#[test]
fn table_growth_bomb_hits_the_memory_cap() {
    let l = limits().memory_mib(8);
    let out = attack_tool(
        table_bomb(),
        "table-bomb",
        json!({}),
        &Capabilities::none(),
        &l,
    );
    match out.result {
        Err(CallError::MemoryLimit { limit, requested }) => {
            assert_eq!(limit, 8 << 20);
            assert!(requested > limit);
        }
        ref other => panic!("expected memory_limit, got {other:?}"),
    }
    limit_event(&out, "memory");
}

#[test]
fn stack_overflow_is_contained() {
    let out = misbehave(
        "recurse-native",
        json!({"depth": 100_000_000u64}),
        &limits(),
    );
    assert_eq!(out.result, Err(CallError::StackOverflow));
    trap_event(&out, "stack_overflow");
}

#[test]
fn stdout_flood_is_capped() {
    let l = Limits::default().max_stdio_bytes(4096);
    let out = misbehave("print", json!({"bytes": 20_000_000u64}), &l);
    assert_eq!(out.result, Ok(json!(20_000_000u64)));
    assert_eq!(out.report.stdout.len(), 4096);
    assert_eq!(out.report.stdio_dropped, 20_000_000 - 4096);
    limit_event(&out, "stdio");
}

#[test]
fn log_flood_is_capped() {
    let l = limits().max_log_bytes(1000);
    // Each record costs 1,100 units of fuel (a host call and its 100 bytes): 10,000 fit.
    let out = misbehave("log-flood", json!({"count": 10_000}), &l);
    assert_eq!(out.result, Ok(json!(null)));
    assert_eq!(out.report.logs.len(), 10);
    assert_eq!(out.report.logs_dropped, 10_000 - 10);
    limit_event(&out, "log");
}

#[test]
fn giant_result_hits_the_output_cap() {
    let l = limits().max_result_bytes(1 << 20);
    let out = misbehave("big-result", json!({"bytes": 8 << 20}), &l);
    assert_eq!(
        out.result,
        Err(CallError::OutputLimit {
            size: (8 << 20) + 2,
            limit: 1 << 20
        })
    );
    limit_event(&out, "output");
}

#[test]
fn guest_panic_is_contained() {
    let out = misbehave("panic", json!({"message": "pwned?"}), &limits());
    assert_eq!(
        out.result,
        Err(CallError::Panic {
            message: "pwned?".into()
        })
    );
    trap_event(&out, "panic");
}

#[test]
fn deeply_nested_arguments_are_refused_before_the_guest_runs() {
    let mut nested = json!("leaf");
    for _ in 0..5_000 {
        nested = json!([nested]);
    }
    let out = misbehave("read-env", json!({"name": nested}), &limits());
    let err = out.result.as_ref().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArguments, "{err}");
    assert_eq!(out.report.fuel_consumed, 0, "the guest must not have run");
    assert_event(
        &out,
        |e| matches!(e, AuditEvent::Call { decision: Decision::Denied, operation, .. } if operation == "read-env"),
    );
}

#[test]
fn huge_arguments_hit_the_memory_cap() {
    // Past the argument cap, which would refuse them before the guest runs.
    let l = limits().memory_mib(16).max_args_bytes(128 << 20);
    let huge = "x".repeat(64 << 20);
    let out = misbehave("read-env", json!({ "name": huge }), &l);
    let err = out.result.as_ref().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::MemoryLimit, "{err}");
    limit_event(&out, "memory");
}

#[test]
fn host_environment_and_arguments_stay_hidden() {
    // The test process has PATH and HOME; the tool must see neither, nor any argument.
    let out = misbehave("env-vars", json!({}), &limits());
    assert_eq!(out.result, Ok(json!([])));
    assert_event(
        &out,
        |e| matches!(e, AuditEvent::EnvRead { names } if names.is_empty()),
    );
    let out = misbehave("read-env", json!({"name": "PATH"}), &limits());
    assert_eq!(out.result, Ok(json!(null)));
    let out = misbehave("args", json!({}), &limits());
    assert_eq!(out.result, Ok(json!([])));
}

fn policy(text: &str) -> Policy {
    Policy::parse("inline.toml", text, Path::new(".")).expect("valid policy")
}

#[test]
fn an_operation_the_policy_does_not_allow_never_runs() {
    let p = policy("version = 1\n[tools.misbehave]\noperations = [\"sleep\"]\n");
    let section = &p.tools["misbehave"];
    let t = tool("misbehave");
    let out =
        block_on(Gate::new().call(runtime(), section, &t, "spin", &json!({}), &section.limits));
    let err = out.result.as_ref().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Denied, "{err}");
    assert_eq!(out.report.fuel_consumed, 0);
    assert_event(
        &out,
        |e| matches!(e, AuditEvent::Call { decision: Decision::Denied, operation, .. } if operation == "spin"),
    );
    // The allowed operation runs.
    let out = block_on(Gate::new().call(
        runtime(),
        section,
        &t,
        "sleep",
        &json!({"ms": 1}),
        &section.limits,
    ));
    assert_eq!(out.result, Ok(json!(1)));
}

#[test]
fn a_call_flood_is_rate_limited() {
    let p = policy("version = 1\n[tools.misbehave]\nlimits = { max_calls_per_minute = 5 }\n");
    let section = &p.tools["misbehave"];
    let t = tool("misbehave");
    let gate = Gate::new();
    let results: Vec<_> = (0..20)
        .map(|_| {
            block_on(gate.call(
                runtime(),
                section,
                &t,
                "sleep",
                &json!({"ms": 0}),
                &section.limits,
            ))
        })
        .collect();
    let ok = results.iter().filter(|o| o.result.is_ok()).count();
    assert_eq!(ok, 5);
    let limited = &results[5];
    assert_eq!(
        limited.result.as_ref().unwrap_err().kind(),
        ErrorKind::RateLimited
    );
    assert_event(limited, |e| {
        matches!(
            e,
            AuditEvent::Call {
                decision: Decision::Denied,
                ..
            }
        )
    });
}
