//! `notifications/cancelled` with the session kept open: the cancelled call's sandbox ends
//! at once. A spinning guest (fuel and deadline far away) is cancelled by request id; the
//! server's journal records the call `cancelled` within a poll of the notification (the
//! record is written after the sandbox is dropped), the server stops spending CPU, and the
//! same session serves the next call.

use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};

use super::Fixture;

/// Far beyond the test: only the cancellation can end the spin.
const SPIN_FUEL: u64 = 1 << 50;
const SPIN_TIMEOUT_MS: u64 = 120_000;

/// How often the journal is read.
const POLL: Duration = Duration::from_millis(5);

/// The promise: a fuel-metered guest yields about every millisecond, so a cancelled call
/// ends within 50 ms of the notification. Plus one poll of the journal, plus slack for a
/// loaded test machine scheduling the server's threads late (what the test measured is
/// printed).
const PROMISE: Duration = Duration::from_millis(50);
const SLACK: Duration = Duration::from_millis(150);

/// The journal's records, parsed.
fn records(fixture: &Fixture) -> Vec<Value> {
    super::records(&fixture.journals())
}

fn record_of<'a>(records: &'a [Value], kind: &str, call: &str) -> Option<&'a Value> {
    records
        .iter()
        .find(|r| r["kind"] == kind && r["data"]["id"] == call)
}

/// Waits (polling every [`POLL`]) until `call` has a record of `kind`, or `limit` passes.
async fn wait_for(fixture: &Fixture, kind: &str, call: &str, limit: Duration) -> Option<Value> {
    let started = Instant::now();
    loop {
        if let Some(r) = record_of(&records(fixture), kind, call) {
            return Some(r.clone());
        }
        if started.elapsed() > limit {
            return None;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The CPU time (user + system, in clock ticks) process `pid` has used.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/PID/stat");
    // Fields after the command name (which may hold spaces) start after its `)`.
    let fields: Vec<&str> = stat[stat.rfind(')').expect("a command name") + 2..]
        .split(' ')
        .collect();
    // utime and stime are fields 14 and 15 of stat(5); here 11 and 12 (from 0, after `)`).
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_ends_its_sandbox_at_once_while_the_session_stays_open() {
    use rmcp::ServiceExt;
    let fixture = Fixture::with_limits(SPIN_FUEL, SPIN_TIMEOUT_MS);
    let cmd = tokio::process::Command::from(fixture.command(&[]));
    let (transport, _) = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start toolhost mcp");
    let pid = transport.id().expect("the server's pid");
    let client = ().serve(transport).await.expect("MCP handshake");

    let spin = ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams::new(
        "misbehave.spin",
    )));
    let handle = client
        .send_cancellable_request(spin, PeerRequestOptions::no_options())
        .await
        .expect("send misbehave.spin");
    // The call is in its sandbox: its start is journaled before it runs, and the server
    // is burning CPU on the spin.
    wait_for(&fixture, "step_started", "call-1", Duration::from_secs(30))
        .await
        .expect("the spin started");
    let before = cpu_ticks(pid);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        cpu_ticks(pid) > before,
        "the spin is not running: the server used no CPU"
    );
    assert!(record_of(&records(&fixture), "step_finished", "call-1").is_none());

    let cancelled = Instant::now();
    handle
        .cancel(Some("the test cancels it".into()))
        .await
        .expect("send notifications/cancelled");
    let limit = PROMISE + POLL + SLACK;
    let finished = wait_for(&fixture, "step_finished", "call-1", limit).await;
    let took = cancelled.elapsed();
    let finished = finished.unwrap_or_else(|| {
        panic!(
            "the spin was not ended within {limit:?} of notifications/cancelled (the session \
             still open): its sandbox kept running"
        )
    });
    eprintln!("the cancelled call was journaled ended {took:?} after notifications/cancelled");
    assert_eq!(finished["data"]["error"]["kind"], "cancelled", "{finished}");

    // The sandbox is gone: the server spends (next to) no CPU now. A spin still running
    // would take every tick it is given over this second.
    let idle = cpu_ticks(pid);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let spent = cpu_ticks(pid) - idle;
    assert!(
        spent <= 5,
        "the server used {spent} ticks of CPU in the second after the cancellation"
    );

    // The same session goes on: the next call answers.
    let ok = client
        .call_tool(
            CallToolRequestParams::new("calc.eval")
                .with_arguments(json!({"expression": "6*7"}).as_object().unwrap().clone()),
        )
        .await
        .expect("the next call on the same session");
    assert_eq!(ok.structured_content, Some(json!({"result": 42})));
    client.cancel().await.expect("close");
}
