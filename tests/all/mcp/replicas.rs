//! Replicas of `toolhost mcp --http --database URL` as an operator runs them: behind a
//! round-robin proxy (`toolhost_tests::proxy`, no stickiness: each request to the next
//! replica) and stopped the two ways replicas stop.
//!
//! - SIGKILL mid-task, driven by the official Python SDK in 2026-07-28 stateless mode
//!   (tests/mcp/replica_cases.py): every request after the kill succeeds through the proxy,
//!   the killed replica's idempotent task is taken over and completes, its other task ends
//!   `failed` (`replica_lost`).
//! - SIGTERM mid-task with a lease far longer than the test: the replica exits 0 at once,
//!   handing its idempotent task back, and the other replica finishes it well before the
//!   lease would have lapsed; its other task ends `failed` (`replica_stopped`).
//!
//! `TOOLHOST_SKIP_POSTGRES=1` skips both; the first needs the SDK of
//! `scripts/guest-langs.sh`, as the other Python SDK tests do.

use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost_tests::postgres::database;
use toolhost_tests::proxy::RoundRobin;
use toolhost_tests::root;

use super::HttpServer;
use super::durable::{ended, journaled, records, replica_with, signal, start, stateless};
use super::python::toolchain;

/// The address a replica listens on, from its URL.
fn addr(server: &HttpServer) -> SocketAddr {
    let rest = server.url.strip_prefix("http://").expect("an http URL");
    rest.split('/').next().unwrap().parse().expect("an address")
}

/// `NAME=PID=STATE_DIR` for the script.
fn spec(name: &str, server: &HttpServer, dir: &std::path::Path) -> String {
    let state = dir.join(name).join("state");
    format!("{name}={}={}", server.child.id(), state.display())
}

#[test]
fn python_sdk_through_a_round_robin_over_two_replicas_one_killed_mid_task() {
    let Some(python) = toolchain("mcp-venv/bin/python") else {
        return;
    };
    let Some(db) = database("python_sdk_through_a_round_robin_over_two_replicas") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let flags = ["--task-lease-ms", "1000", "--max-tasks", "8"];
    let a = replica_with(dir.path(), "a", &db.url, &flags);
    let b = replica_with(dir.path(), "b", &db.url, &flags);
    let proxy = RoundRobin::start(vec![addr(&a), addr(&b)]);
    let out = Command::new(python)
        .arg(root().join("tests/mcp/replica_cases.py"))
        .arg("--url")
        .arg(proxy.url("/mcp"))
        .arg("--replica")
        .arg(spec("a", &a, dir.path()))
        .arg("--replica")
        .arg(spec("b", &b, dir.path()))
        .output()
        .expect("run tests/mcp/replica_cases.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the replica cases failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        stdout.contains("\"passed\""),
        "no summary:\n{stdout}\n{stderr}"
    );
    // Every request was answered by a replica (none got the proxy's 502), and both served.
    assert_eq!(proxy.failed(), 0, "requests no replica answered");
    let served = proxy.served();
    assert!(
        served.iter().all(|n| *n > 0),
        "both replicas served: {served:?}"
    );
    drop((a, b));
}

/// Waits up to `limit` for `server`'s process to exit; its exit code.
fn exits(server: &mut HttpServer, limit: Duration) -> Option<i32> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if let Some(status) = server.child.try_wait().expect("wait") {
            return status.code();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_stopped_with_sigterm_hands_its_tasks_over_at_once() {
    let Some(db) = database("a_replica_stopped_with_sigterm_hands_its_tasks_over_at_once") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    // A minute's lease: without the hand-back, B would take A's tasks over only after it.
    let flags = ["--task-lease-ms", "60000", "--max-tasks", "8"];
    let mut a = replica_with(dir.path(), "a", &db.url, &flags);
    let b = replica_with(dir.path(), "b", &db.url, &flags);
    let a_dir = dir.path().join("a");
    let again = start(&a.url, "again", 3, "handed").await;
    let once = start(&a.url, "once", 60, "stopped").await;
    for label in ["handed", "stopped"] {
        let running = journaled(&a_dir, Duration::from_secs(10), |r| {
            r["kind"] == "step_started" && r["data"]["args"]["label"] == label
        })
        .await;
        assert!(running, "A never started the call `{label}`");
    }

    let stopped = Instant::now();
    signal(a.child.id(), "-TERM");
    let code = exits(&mut a, Duration::from_secs(10));
    assert_eq!(code, Some(0), "A exits 0 soon after SIGTERM");

    let done = ended(&b.url, &again, Duration::from_secs(20)).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"], "computed `handed` in 3 s",
        "{done}"
    );
    let took = stopped.elapsed();
    assert!(
        took < Duration::from_secs(20),
        "B finished the handed back task {took:?} after SIGTERM, not well before the 60 s lease"
    );
    let b_dir = dir.path().join("b");
    assert!(
        records(&b_dir)
            .iter()
            .any(|r| r["kind"] == "step_started" && r["data"]["args"]["label"] == "handed"),
        "B ran the handed back call"
    );

    let failed = stateless(&b.url, "tasks/get", json!({"taskId": once})).await;
    let failed = &failed["result"];
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(
        failed["error"]["data"]["kind"], "replica_stopped",
        "{failed}"
    );
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("was stopped while running `once.slow-compute`")
            && message.contains("not idempotent by policy"),
        "{failed}"
    );
    assert!(
        !records(&b_dir)
            .iter()
            .any(|r| r["kind"] == "step_started" && r["data"]["args"]["label"] == "stopped"),
        "B must not run the non-idempotent call again"
    );
}
