//! The host-wide budget and the bounds on queued work, through the binary: `serve` holds
//! inline tasks to its `[run_limits]`, keeps its calls within the call budget and refuses
//! submissions past its run queue with 503 and `Retry-After`; `mcp`'s `--max-in-flight`
//! bounds the calls running at once and its bounded queue refuses the rest with an
//! `isError` result of kind `overloaded` (the official Rust SDK as the client).
//!
//! Concurrency is measured by the guest itself: `misbehave.occupy` takes the lowest free
//! slot file in a granted directory, so the highest slot any call got, plus one, is the
//! most calls that ran at once.

use std::sync::Arc;

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use toolhost_tests::path;

use super::serve::Fixture;

/// A serve fixture whose policy also grants `misbehave` the read-write directory
/// `/slots` (tasks/slots on the host), with a 64 MiB memory cap.
fn serve_fixture() -> Fixture {
    let f = Fixture::new();
    std::fs::copy(path("misbehave"), f.p("tools/misbehave.wasm")).unwrap();
    std::fs::create_dir_all(f.p("tasks/slots")).unwrap();
    std::fs::write(
        f.p("tasks/policy.toml"),
        "version = 1\napproval = \"deny\"\n[tools.calc]\n\n[tools.misbehave]\n\
         files = [{ host = \"slots\", guest = \"/slots\", access = \"read-write\" }]\n\
         limits = { memory_mib = 64, timeout_ms = 20000 }\n",
    )
    .unwrap();
    f
}

/// An inline task of `n` parallel `occupy` steps, each holding its slot `ms`.
fn occupying(n: usize, ms: u64, extra: &str) -> Value {
    let steps: Vec<String> = (0..n)
        .map(|i| {
            format!(
                "{{ id = \"s{i}\", tool = \"misbehave\", operation = \"occupy\", args = {{ dir = \"/slots\", ms = {ms} }} }}"
            )
        })
        .collect();
    let toml = format!(
        "goal = \"occupy\"\ntools = [\"misbehave\"]\n{extra}\n[planner.plan]\ngoal = \"g\"\nsteps = [{}]\n",
        steps.join(", ")
    );
    json!({"task": {"toml": toml}})
}

/// The value of the metric `name` in a Prometheus exposition.
fn metric(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

#[test]
fn serve_refuses_an_inline_task_asking_past_its_run_limits() {
    let f = serve_fixture();
    let server = f.start(&[]);
    let (status, body) = server.post(
        "/v1/runs",
        occupying(1, 0, "max_parallel = 30\n[budgets]\nmax_steps = 100000"),
    );
    assert_eq!(
        status, 422,
        "an inline task may not ask for 30 parallel steps: {body}"
    );
    let problems = body["problems"].to_string();
    assert!(
        problems.contains("`max_parallel` 30 is above this server's limit of 4")
            && problems.contains("`budgets.max_steps` 100000 is above this server's limit of 20"),
        "{body}"
    );
    let (status, body) = server.post(
        "/v1/runs",
        json!({"task": {"name": "seed"}, "overrides": {"max_steps": 1000000}}),
    );
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]
            .to_string()
            .contains("`overrides.max_steps` 1000000"),
        "{body}"
    );
}

#[test]
fn serve_keeps_the_calls_of_its_runs_within_the_call_budget() {
    let f = serve_fixture();
    // Room for two 64 MiB calls at once, whatever `max_calls` and `max_parallel` allow.
    let server = f.start(&["--max-calls", "3", "--max-calls-memory-mib", "130"]);
    let (status, run) = server.post("/v1/runs", occupying(4, 300, "max_parallel = 4"));
    assert_eq!(status, 201, "{run}");
    let id = run["id"].as_str().unwrap();
    let done = server.wait(id, |r| r["state"] != "queued" && r["state"] != "running");
    assert_eq!(done["state"], "completed", "{done}");
    let (_, journal) = server.text(&format!("/v1/runs/{id}/journal"));
    let slots: Vec<u64> = journal
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["kind"] == "step_finished")
        .filter_map(|r| r["data"]["output"].as_u64())
        .collect();
    assert_eq!(slots.len(), 4, "every step's slot: {journal}");
    assert_eq!(
        slots.iter().max(),
        Some(&1),
        "two calls at once, never three: {slots:?}"
    );
    let (_, metrics) = server.text("/metrics");
    assert_eq!(
        metric(&metrics, "toolhost_calls_running_peak"),
        Some(2),
        "{metrics}"
    );
    assert_eq!(
        metric(&metrics, "toolhost_calls_reserved_mib_peak"),
        Some(128),
        "{metrics}"
    );
}

#[test]
fn serve_refuses_submissions_past_its_run_queue_with_503_and_retry_after() {
    let f = Fixture::new();
    // One worker, parked on the first run's plan; two more runs may wait.
    let server = f.start(&["--max-queued-runs", "2"]);
    let park = |expr: &str| server.post("/v1/runs", super::serve::inline_plan(expr));
    for i in 0..3 {
        let (status, body) = park(&format!("{i}+1"));
        assert_eq!(status, 201, "run {i}: {body}");
    }
    let r = server
        .req(reqwest::Method::POST, "/v1/runs")
        .json(&super::serve::inline_plan("9+1"))
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 503, "a fourth run is past the queue");
    let retry = r
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    assert_eq!(retry.as_deref(), Some("5"));
    let body: Value = r.json().unwrap();
    assert!(body["error"].to_string().contains("overloaded"), "{body}");
    assert!(
        body["error"].to_string().contains("`max_queued_runs` 2"),
        "{body}"
    );
    let journals = std::fs::read_dir(f.state().join("runs"))
        .unwrap()
        .filter(|e| {
            let p = e.as_ref().unwrap().path();
            p.extension().is_some_and(|x| x == "jsonl")
        })
        .count();
    assert_eq!(
        journals, 3,
        "nothing was written for the refused submission"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_max_in_flight_bounds_running_calls_and_its_queue_refuses_the_rest() {
    use rmcp::ServiceExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("slots")).unwrap();
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        "version = 1\n[tools.misbehave]\n\
         files = [{ host = \"slots\", guest = \"/slots\", access = \"read-write\" }]\n\
         limits = { timeout_ms = 20000 }\n",
    )
    .unwrap();
    let mut cmd = tokio::process::Command::new(super::mcp::BIN);
    cmd.arg("--cache-dir")
        .arg(super::mcp::cache())
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .args([
            "mcp",
            "--max-in-flight",
            "2",
            "--max-queued-calls",
            "2",
            "--policy",
        ])
        .arg(&policy)
        .arg(path("misbehave"))
        .env_remove("TOOLHOST_LOG");
    let transport = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start toolhost mcp")
        .0;
    let client = Arc::new(().serve(transport).await.expect("MCP handshake"));
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move {
                let args = json!({"dir": "/slots", "ms": 1500});
                let p = CallToolRequestParams::new("misbehave.occupy")
                    .with_arguments(args.as_object().unwrap().clone());
                client.call_tool(p).await.expect("a result")
            })
        })
        .collect();
    let (mut slots, mut overloaded) = (Vec::new(), Vec::new());
    for call in calls {
        let r = call.await.unwrap();
        let content = r.structured_content.clone().unwrap_or_default();
        if r.is_error == Some(true) {
            overloaded.push(content["error"].clone());
        } else {
            slots.push(content["result"].as_u64().expect("a slot"));
        }
    }
    assert_eq!(
        slots.iter().max(),
        Some(&1),
        "at most 2 calls ran at once: {slots:?}"
    );
    assert!(
        !overloaded.is_empty(),
        "8 calls at once with 2 running and 2 queued: some must be refused"
    );
    for e in &overloaded {
        assert_eq!(e["kind"], "overloaded", "{e}");
        assert!(e["message"].to_string().contains("`max_queued` 2"), "{e}");
    }
}
