//! The pooling allocator (the default): recycled slots hold nothing of a previous call,
//! and calls beyond the pool wait for a slot on their own clock.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost_runtime::{CallError, Capabilities, Limits, Runtime, RuntimeConfig, Tool};
use toolhost_tests::{block_on, path, runtime};

/// Reports what it finds of an earlier call (a word of memory, a global, grown memory and
/// the first word of a page it grows), then leaves markers in all of them. In a fresh
/// instance every one reads 0.
const SNOOP: &str = r#"(component
    (core module $m
      (memory 1)
      (global $g (mut i32) (i32.const 0))
      (func (export "snoop") (result i32)
        (local $r i32) (local $page i32)
        (local.set $r (i32.add (i32.load (i32.const 0)) (global.get $g)))
        (local.set $r (i32.add (local.get $r) (i32.sub (memory.size) (i32.const 1))))
        (local.set $page (memory.grow (i32.const 1)))
        (local.set $r (i32.add (local.get $r)
          (i32.load (i32.mul (local.get $page) (i32.const 65536)))))
        (i32.store (i32.const 0) (i32.const 0xdead))
        (i32.store (i32.mul (local.get $page) (i32.const 65536)) (i32.const 0xbeef))
        (global.set $g (i32.const 1))
        (local.get $r)))
    (core instance $i (instantiate $m))
    (func (export "snoop") (result u32)
      (canon lift (core func $i "snoop"))))"#;

fn snoop(rt: &Runtime) -> Tool {
    let bytes = wat::parse_str(SNOOP).expect("valid WAT");
    rt.load_bytes("snoop", Path::new("snoop.wasm"), &bytes)
        .expect("load the snoop component")
}

fn pool_of(n: u32) -> Runtime {
    Runtime::new(RuntimeConfig::default().pooling(Some(n))).expect("runtime")
}

#[test]
fn the_default_runtime_pools_instances() {
    assert_eq!(
        RuntimeConfig::default().pooling,
        Some(toolhost_runtime::runtime::DEFAULT_POOL)
    );
}

#[test]
fn a_recycled_slot_holds_nothing_of_the_previous_call() {
    let one = pool_of(1);
    for rt in [runtime(), &one] {
        let tool = snoop(rt);
        for _ in 0..20 {
            let out = block_on(rt.call(
                &tool,
                "snoop",
                &json!({}),
                &Capabilities::none(),
                &Limits::default(),
            ));
            assert_eq!(out.result, Ok(json!(0)));
        }
    }
}

/// Calls `sleep` (150 ms) once per entry of `limits`, all at once, in that order.
fn sleepers(rt: &Runtime, tool: &Tool, limits: &[Limits]) -> Vec<toolhost_runtime::CallOutcome> {
    let args = json!({"ms": 150});
    let caps = Capabilities::none();
    let mut calls: Vec<_> = limits
        .iter()
        .map(|l| Box::pin(rt.call(tool, "sleep", &args, &caps, l)))
        .collect();
    let mut done: Vec<Option<toolhost_runtime::CallOutcome>> = calls.iter().map(|_| None).collect();
    block_on(std::future::poll_fn(|cx| {
        for (call, out) in calls.iter_mut().zip(done.iter_mut()) {
            if out.is_none()
                && let std::task::Poll::Ready(o) = call.as_mut().poll(cx)
            {
                *out = Some(o);
            }
        }
        if done.iter().all(Option::is_some) {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    }));
    done.into_iter().map(|o| o.expect("finished")).collect()
}

#[test]
fn calls_beyond_the_pool_wait_for_a_slot() {
    let rt = pool_of(1);
    let tool = rt.load(path("misbehave").as_ref()).expect("load");
    let t = Instant::now();
    let outs = sleepers(&rt, &tool, &vec![Limits::default(); 3]);
    for out in &outs {
        assert!(out.result.is_ok(), "{:?}", out.result);
    }
    // One slot: the three sleeps ran one after another.
    assert!(t.elapsed() >= Duration::from_millis(3 * 150));
}

#[test]
fn waiting_for_a_slot_counts_against_the_timeout() {
    let rt = pool_of(1);
    let tool = rt.load(path("misbehave").as_ref()).expect("load");
    let short = Limits::default().timeout(Duration::from_millis(50));
    let outs = sleepers(&rt, &tool, &[Limits::default(), short]);
    assert!(outs[0].result.is_ok(), "{:?}", outs[0].result);
    assert_eq!(outs[1].result, Err(CallError::Timeout { timeout_ms: 50 }));
}
