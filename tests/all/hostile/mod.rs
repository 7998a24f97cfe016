//! The hostile-tool suite: each test is one attack by a tool on the host. Every attack
//! runs beside a benign call in the same process and asserts three things: the attack's
//! specific typed failure, that the benign call still succeeded, and that the sandbox
//! recorded the denial (or the tripped limit) as an audit event.
//!
//! - `limits`: loops, host waits, memory and table bombs, stack, floods, panics, huge
//!   arguments, operations the policy does not allow, rate limits.
//! - `files`: escapes from file grants (`..`, absolute paths, symlinks, `/proc`, `/etc`)
//!   and writes to read-only grants.
//! - `outside`: paths outside every grant, opened through wasi-libc with no grant or one:
//!   refused and recorded by the host; when a refusal makes a call `denied`.
//! - `audit`: floods before the decisions that matter, denial floods, a spent audit
//!   budget, long values, oversized arguments, `exit`, shadow-stack overflow.
//! - `net`: HTTP to unlisted hosts, redirects, private and loopback addresses, raw TCP,
//!   name lookups; environment and arguments.
//! - `bounds`: host calls that cost the host time, memory or descriptors (floods of logs,
//!   random bytes, lookups, stdout; hoards of fields, bodies, streams, sockets): the
//!   deadline, the host-memory budget and the resource cap hold.
//! - `long`: a 1 MiB path stat'ed over and over: kept cut, in memory and in `--json`.
//! - `fuzz`: the `hog` tool calling host functions in random order with random sizes,
//!   over many seeds: the same bounds hold and the host stays alive.

mod audit;
mod bounds;
mod files;
mod fuzz;
mod limits;
mod long;
mod net;
mod outside;

use std::time::Duration;

use serde_json::{Value, json};
use toolhost_runtime::{AuditEvent, CallOutcome, Capabilities, Limits, Tool};
use toolhost_tests::{runtime, tool};

/// Runs `op` of tool `name` with `caps` and `limits` while a benign `calc` call runs
/// concurrently on the same runtime; asserts the benign call succeeded.
pub fn attack(
    name: &str,
    op: &str,
    args: Value,
    caps: &Capabilities,
    limits: &Limits,
) -> CallOutcome {
    attack_tool(&tool(name), op, args, caps, limits)
}

/// [`attack`] with an already loaded tool.
pub fn attack_tool(
    hostile: &Tool,
    op: &str,
    args: Value,
    caps: &Capabilities,
    limits: &Limits,
) -> CallOutcome {
    let rt = runtime();
    let calc = tool("calc");
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let (bad, good) = multi.block_on(async {
        let benign = async {
            // Let the attack start first, so the benign call overlaps it.
            tokio::time::sleep(Duration::from_millis(5)).await;
            rt.call(
                &calc,
                "eval",
                &json!({"expression": "6 * 7"}),
                &Capabilities::none(),
                &Limits::default(),
            )
            .await
        };
        tokio::join!(rt.call(hostile, op, &args, caps, limits), benign)
    });
    assert_eq!(
        good.result,
        Ok(json!(42)),
        "the benign call beside `{op}` failed"
    );
    bad
}

/// Asserts that `outcome` recorded an audit event matching `pred`; returns it.
#[track_caller]
pub fn assert_event(outcome: &CallOutcome, pred: impl Fn(&AuditEvent) -> bool) -> AuditEvent {
    outcome
        .report
        .events
        .iter()
        .find(|e| pred(e))
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "no matching audit event; recorded: {:#?}",
                outcome.report.events
            )
        })
}

/// Asserts that `outcome` recorded a denial (of any kind) among its events.
#[track_caller]
pub fn assert_denial_recorded(outcome: &CallOutcome) {
    assert_event(outcome, AuditEvent::is_denial);
}
