//! Durable tasks across replicas (`toolhost mcp --http --database URL`): two real servers
//! against one real PostgreSQL, spoken to in raw JSON-RPC over HTTP (stateless 2026-07-28
//! requests, which any replica answers, and 2025-11-25 sessions, which belong to one). A
//! task started on A is read on B; a cancel sent to B stops the call running on A; A is
//! SIGKILLed mid-task and B takes its tasks over: the idempotent one is run again and
//! completes, the other ends `failed` naming why. Denied: a stranger's `tasks/get` on B
//! (another session's task, or a session's task asked statelessly), and a task past
//! `--max-tasks` counted over both replicas. `TOOLHOST_SKIP_POSTGRES=1` skips it.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost_tests::path;
use toolhost_tests::postgres::database;

use super::{BIN, HttpServer, cache};

/// Two sections over the conformance fixture: `again` idempotent by policy, `once` not;
/// `slow-compute` runs as a task in both.
fn policy(dir: &Path) -> std::path::PathBuf {
    let policy = dir.join("policy.toml");
    let component = path("conformance").to_string();
    std::fs::write(
        &policy,
        format!(
            "version = 1\n\
             [tools.again]\ncomponent = {component:?}\nidempotent = true\n\
             tasks = [\"slow-compute\"]\nlimits = {{ timeout_ms = 120000 }}\n\
             [tools.once]\ncomponent = {component:?}\n\
             tasks = [\"slow-compute\"]\nlimits = {{ timeout_ms = 120000 }}\n"
        ),
    )
    .expect("policy");
    policy
}

/// A replica: its own state directory, the shared database, a 1 s lease, 2 tasks a client.
fn replica(dir: &Path, name: &str, url: &str) -> HttpServer {
    replica_with(
        dir,
        name,
        url,
        &["--task-lease-ms", "1000", "--max-tasks", "2"],
    )
}

/// [`replica`] with the task flags `flags`.
pub(super) fn replica_with(dir: &Path, name: &str, url: &str, flags: &[&str]) -> HttpServer {
    let own = dir.join(name);
    std::fs::create_dir_all(&own).expect("replica dir");
    let mut cmd = Command::new(BIN);
    cmd.arg("--cache-dir")
        .arg(cache())
        .arg("--state-dir")
        .arg(own.join("state"))
        .args(["mcp", "--policy"])
        .arg(policy(dir))
        .args(["--http", "127.0.0.1:0", "--database", url])
        .args(flags)
        .env_remove("TOOLHOST_LOG");
    HttpServer::start_with(cmd)
}

/// One stateless 2026-07-28 request (the tasks extension declared); its JSON-RPC answer.
pub(super) async fn stateless(url: &str, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "durable-test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities":
            {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    super::stateless(url, method, params).await
}

fn slow(tool: &str, seconds: u64, label: &str) -> Value {
    json!({"name": format!("{tool}.slow-compute"), "arguments": {"seconds": seconds, "label": label}})
}

/// Starts `slow(tool, …)` on `url` as a task; its id.
pub(super) async fn start(url: &str, tool: &str, seconds: u64, label: &str) -> String {
    let made = stateless(url, "tools/call", slow(tool, seconds, label)).await;
    made["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {made}"))
        .to_string()
}

/// Polls `tasks/get` of `id` on `url` until it is no longer working; the task.
pub(super) async fn ended(url: &str, id: &str, limit: Duration) -> Value {
    let started = Instant::now();
    loop {
        let got = stateless(url, "tasks/get", json!({"taskId": id})).await;
        let status = got["result"]["status"].as_str().map(str::to_string);
        match status.as_deref() {
            Some("working") => {}
            Some(_) => return got["result"].clone(),
            None => panic!("tasks/get {id}: {got}"),
        }
        assert!(
            started.elapsed() < limit,
            "task {id} still working after {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The records of every journal under `dir` (a replica's state).
pub(super) fn records(dir: &Path) -> Vec<Value> {
    super::records(&super::journals(&dir.join("state")))
}

/// Waits until `dir`'s journals hold a record that `matches`, or `limit` passes.
pub(super) async fn journaled(
    dir: &Path,
    limit: Duration,
    matches: impl Fn(&Value) -> bool,
) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        if records(dir).iter().any(&matches) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// A 2025-11-25 session on `url` with the tasks extension; sends one request, returns
/// the answer.
pub(super) async fn session_rpc(
    url: &str,
    session: &mut Option<String>,
    method: &str,
    params: Value,
) -> Value {
    let http = reqwest::Client::new();
    if session.is_none() {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
            "clientInfo": {"name": "durable-session", "version": "0"}}});
        let r = super::post(&http, url, "2025-11-25", None, &init).await;
        let id = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        super::post(&http, url, "2025-11-25", Some(&id), &note).await;
        *session = Some(id);
    }
    let msg = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let body = super::post(&http, url, "2025-11-25", session.as_deref(), &msg)
        .await
        .text()
        .await
        .unwrap();
    super::answer(&body, 7).unwrap_or_else(|| panic!("no answer to {method} in {body}"))
}

fn refused_as_unknown(answer: &Value, what: &str) {
    assert_eq!(answer["error"]["code"], -32602, "{what}: {answer}");
    assert_eq!(
        answer["error"]["data"]["kind"], "unknown_task",
        "{what}: {answer}"
    );
}

// Long: one story over two replicas and one database (started once, as costly as the
// checks), each step depending on the state the last left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_outlive_their_replica_in_the_database() {
    let Some(db) = database("tasks_outlive_their_replica_in_the_database") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let mut a = replica(dir.path(), "a", &db.url);
    let b = replica(dir.path(), "b", &db.url);

    // Started on A, read on B, to its result.
    let quick = start(&a.url, "again", 0, "quick").await;
    let done = ended(&b.url, &quick, Duration::from_secs(30)).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"], "computed `quick` in 0 s",
        "{done}"
    );

    // A session's task is its session's: neither another session nor a stateless request
    // reads it on B; nor does a session on B read a stateless task.
    let mut mine = None;
    let theirs = session_rpc(&a.url, &mut mine, "tools/call", slow("again", 0, "s")).await;
    let theirs = theirs["result"]["taskId"]
        .as_str()
        .expect("a task")
        .to_string();
    let mut stranger = None;
    let got = session_rpc(
        &b.url,
        &mut stranger,
        "tasks/get",
        json!({"taskId": theirs}),
    )
    .await;
    refused_as_unknown(&got, "another session's task");
    let got = stateless(&b.url, "tasks/get", json!({"taskId": theirs})).await;
    refused_as_unknown(&got, "a session's task asked statelessly");
    let got = session_rpc(&b.url, &mut stranger, "tasks/get", json!({"taskId": quick})).await;
    refused_as_unknown(&got, "a stateless task asked by a session");
    let got = session_rpc(&a.url, &mut mine, "tasks/get", json!({"taskId": theirs})).await;
    assert!(
        got["result"]["status"].is_string(),
        "its own session reads it: {got}"
    );

    // `--max-tasks 2` holds over both replicas: one working on A, one on B, a third refused.
    let on_a = start(&a.url, "once", 60, "held-a").await;
    let on_b = start(&b.url, "once", 60, "held-b").await;
    let third = stateless(&a.url, "tools/call", slow("once", 60, "third")).await;
    assert_eq!(third["result"]["isError"], true, "{third}");
    assert_eq!(
        third["result"]["structuredContent"]["error"]["kind"], "overloaded",
        "{third}"
    );

    // A cancel sent to B stops the call running on A (A journals it cancelled).
    let cancelled = stateless(&b.url, "tasks/cancel", json!({"taskId": on_a})).await;
    assert!(cancelled.get("error").is_none(), "{cancelled}");
    let a_dir = dir.path().join("a");
    let stopped_on_a = journaled(&a_dir, Duration::from_secs(5), |r| {
        r["kind"] == "step_finished"
            && r["data"]["error"]["kind"] == "cancelled"
            && r["data"]["tool"] == "once"
    })
    .await;
    assert!(stopped_on_a, "A never stopped the call cancelled through B");
    let got = stateless(&a.url, "tasks/get", json!({"taskId": on_a})).await;
    assert_eq!(got["result"]["status"], "cancelled", "{got}");
    stateless(&b.url, "tasks/cancel", json!({"taskId": on_b})).await;

    // A dies mid-task: B runs the idempotent task again, and fails the other, naming why.
    let again = start(&a.url, "again", 2, "survivor").await;
    let once = start(&a.url, "once", 60, "orphan").await;
    let running = journaled(&a_dir, Duration::from_secs(10), |r| {
        r["kind"] == "step_started"
            && r["data"]["tool"] == "once"
            && r["data"]["args"]["label"] == "orphan"
    })
    .await;
    assert!(running, "A never started the call");
    let a_pid = a.child.id();
    a.child.kill().expect("SIGKILL A");
    a.child.wait().expect("A ended");

    let done = ended(&b.url, &again, Duration::from_secs(30)).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"], "computed `survivor` in 2 s",
        "{done}"
    );
    let b_dir = dir.path().join("b");
    assert!(
        records(&b_dir)
            .iter()
            .any(|r| r["kind"] == "step_started" && r["data"]["args"]["label"] == "survivor"),
        "B ran the idempotent call again"
    );
    let failed = ended(&b.url, &once, Duration::from_secs(30)).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("replica `mcp-{a_pid}-"))
            && message.contains("not idempotent by policy")
            && message.contains("was not run again"),
        "{failed}"
    );
    assert_eq!(failed["error"]["data"]["kind"], "replica_lost", "{failed}");
    assert!(
        !records(&b_dir)
            .iter()
            .any(|r| r["kind"] == "step_started" && r["data"]["args"]["label"] == "orphan"),
        "B must not run the non-idempotent call again"
    );
    drop(b);
}

#[test]
fn task_flags_without_their_prerequisites_are_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = |extra: &[&str]| {
        let mut cmd = Command::new(BIN);
        cmd.arg("--cache-dir")
            .arg(cache())
            .args(["mcp", "--policy"])
            .arg(policy(dir.path()))
            .args(extra)
            .stdin(std::process::Stdio::null())
            .env_remove("TOOLHOST_LOG");
        cmd.output().expect("run")
    };
    for (extra, says) in [
        (&["--database", "postgres://u@127.0.0.1:1/d"][..], "--http"),
        (
            &["--http", "127.0.0.1:0", "--task-lease-ms", "1000"][..],
            "--database",
        ),
        (
            &[
                "--http",
                "127.0.0.1:0",
                "--database",
                "postgres://u@127.0.0.1:1/d",
                "--task-lease-ms",
                "10",
            ][..],
            "10 is not in 300..=3600000",
        ),
        (
            &["--http", "127.0.0.1:0", "--database", "mysql://x"][..],
            "`mysql://x` is not a PostgreSQL URL",
        ),
    ] {
        let out = run(extra);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{extra:?}: {stderr}");
    }
}

/// Sends `signal` (`-STOP`, `-CONT`) to process `pid`.
pub(super) fn signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill {signal} {pid}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_replica_never_settles_a_task_taken_from_it() {
    let Some(db) = database("a_paused_replica_never_settles_a_task_taken_from_it") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let a = replica(dir.path(), "a", &db.url);
    let b = replica(dir.path(), "b", &db.url);
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    let started_here = |label: &'static str| {
        move |r: &Value| r["kind"] == "step_started" && r["data"]["args"]["label"] == label
    };

    // A runs a 3 s call and is paused (SIGSTOP) in it; its lease lapses and B runs the
    // idempotent call again.
    let id = start(&a.url, "again", 3, "paused").await;
    assert!(
        journaled(&a_dir, Duration::from_secs(10), started_here("paused")).await,
        "A never started the call"
    );
    signal(a.child.id(), "-STOP");
    let taken = journaled(&b_dir, Duration::from_secs(10), started_here("paused")).await;
    // Past A's own call's end before A wakes: on waking, its call is over at once.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    signal(a.child.id(), "-CONT");
    assert!(taken, "B never took the task over");

    // A wakes, its call ends (or its renewal finds the task gone and stops it): whatever A
    // now writes is fenced off, and the task still works on B.
    let a_ended = journaled(&a_dir, Duration::from_secs(10), |r| {
        r["kind"] == "step_finished" && r["data"]["tool"] == "again"
    })
    .await;
    assert!(a_ended, "A's call never ended after it woke");
    let now = stateless(&b.url, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(
        now["result"]["status"], "working",
        "the paused replica's outcome landed over its successor's: {now}"
    );
    let done = ended(&b.url, &id, Duration::from_secs(30)).await;
    assert_eq!(done["status"], "completed", "{done}");
}
