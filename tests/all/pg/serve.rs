//! `toolhost serve --database`: replicas (the real binary, on `127.0.0.1:0`) sharing one
//! real PostgreSQL. A run submitted to one is followed (SSE), approved and cancelled
//! through another; a replica killed (SIGKILL) or stopped (SIGTERM) while it holds a run
//! leaves it to another, which carries it on exactly once; a run cut off in a step that
//! is not idempotent waits for a person's decision through the API; `toolhost cancel`.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost_tests::postgres::TestDb;

use super::queue::{BIN, effects, marks_task, signal, text};
use crate::serve::hosts::call;
use crate::serve::{Api, Fixture, Server, inline_plan};

const LEASE_MS: &str = "1500";

/// A replica of database `t` in fixture `f`.
pub(crate) fn replica(f: &Fixture, t: &TestDb, extra: &[&str], env: &[(&str, String)]) -> Server {
    let mut args = vec![
        "--database",
        &t.url,
        "--lease-ms",
        LEASE_MS,
        "--poll-ms",
        "100",
    ];
    args.extend_from_slice(extra);
    f.start_with(&args, env)
}

pub(super) fn id(run: &Value) -> String {
    run["id"].as_str().unwrap().to_string()
}

/// The replica (by pid) holding run `run`'s lease, once one does.
pub(super) fn holder(t: &TestDb, run: &str) -> u32 {
    let start = Instant::now();
    loop {
        let owner = t.sql(&format!(
            "SELECT coalesce(lease_owner, '') FROM runs WHERE id = '{run}'"
        ));
        if let Some(pid) = owner
            .strip_prefix("toolhost serve, pid ")
            .and_then(|r| r.split(' ').next())
        {
            return pid.parse().unwrap();
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "nobody holds {run}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn metric(api: &Api, series: &str) -> f64 {
    let (status, text) = api.text("/metrics");
    assert_eq!(status, 200);
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {series} in {text}"))
        .parse()
        .unwrap()
}

pub(super) fn verify(t: &TestDb, run: &str) {
    let out = Command::new(BIN)
        .args(["journal", "verify", run, "--database", &t.url])
        .env_remove("TOOLHOST_DATABASE_URL")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn a_run_submitted_to_one_replica_is_followed_approved_and_cancelled_through_another() {
    let Some(t) = toolhost_tests::postgres::database("serve_two_replicas") else {
        return;
    };
    let f = Fixture::new();
    let a = replica(&f, &t, &[], &[]);
    let b = replica(&f, &t, &[], &[]);

    let (status, run) = a.post("/v1/runs", inline_plan("2 + 3"));
    assert_eq!(status, 201, "{run}");
    let first = id(&run);
    let waiting = b.wait(&first, |r| r["state"] == "waiting_for_approval");
    assert_eq!(waiting["pending"]["subject"], "plan", "{waiting}");
    assert_eq!(waiting["pending"]["plan"]["steps"][0]["id"], "s1");
    // Its report, read from the database meanwhile, says what it waits for.
    let out = toolhost_tests::cli(["report", &first, "--database", &t.url, "--html", "-"]);
    assert!(
        out.stdout
            .contains("no stop record yet: it waits for a person&#39;s decision"),
        "{out:?}"
    );
    // What the step may do, parked in the run's row by the replica holding it.
    assert_eq!(
        waiting["pending"]["reach"][0]["capabilities"][0], "no capabilities (pure computation)",
        "{waiting}"
    );
    assert_eq!(
        t.sql(&format!("SELECT status FROM runs WHERE id = '{first}'")),
        "waiting_for_approval"
    );
    // This backend is behind the same `Host`/`Origin` check (tests/all/serve/hosts.rs).
    let port = b.url.rsplit(':').next().unwrap().to_string();
    let rebound = format!("attacker.example:{port}");
    for headers in [
        [("host", rebound.as_str())],
        [("origin", "http://attacker.example")],
    ] {
        let approve = Some(json!({"decision": "approve"}));
        let at = format!("/v1/runs/{first}/approval");
        let (status, e) = call(&b, reqwest::Method::POST, &at, &headers, approve);
        assert_eq!(status, 403, "{e}");
        let (status, e) = call(&b, reqwest::Method::GET, "/v1/runs", &headers, None);
        assert_eq!(status, 403, "{e}");
    }
    // Followed on B from the start while A or B executes it.
    let follower = {
        let url = b.url.clone();
        let first = first.clone();
        std::thread::spawn(move || Api { url, token: None }.events(&first, None))
    };
    let (status, e) = b.post(
        &format!("/v1/runs/{first}/approval"),
        json!({"decision": "edit"}),
    );
    assert_eq!(status, 400, "{e}");
    let (status, e) = a.post(
        &format!("/v1/runs/{first}/approval"),
        json!({"decision": "approve"}),
    );
    assert_eq!(status, 200, "{e}");
    let done = a.wait(&first, |r| r["state"] == "completed");
    assert_eq!(done["answer"], 5, "{done}");
    assert_eq!(done["steps"]["succeeded"], 1);
    // The run's head, from its journal rows, as the console's Runs page shows it.
    assert_eq!(done["planner"], "scripted", "{done}");
    assert_eq!(done["mode"], "plan-then-execute", "{done}");
    assert!(
        done["started"].as_str().is_some_and(|s| s.ends_with('Z')),
        "{done}"
    );
    assert!(done["budgets"]["max_steps"].is_u64(), "{done}");
    let (status, page) = b.text("/");
    assert_eq!(status, 200);
    assert!(
        page.contains(&first) && page.contains("scripted (plan-then-execute)"),
        "{page}"
    );
    let events = follower.join().unwrap();
    let seqs: Vec<u64> = events.iter().map(|e| e.0).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    assert_eq!(events[0].1, "run_started");
    assert!(events.iter().any(|e| e.1 == "approval"), "{events:?}");
    assert_eq!(events.last().unwrap().1, "stopped");
    // Resumed on A after record 2: exactly the records after it.
    let again: Vec<u64> = a.events(&first, Some(2)).iter().map(|e| e.0).collect();
    assert_eq!(again, seqs[2..].to_vec());
    let (status, e) = b.post(
        &format!("/v1/runs/{first}/approval"),
        json!({"decision": "approve"}),
    );
    assert_eq!(status, 409, "{e}");
    let (status, journal) = b.text(&format!("/v1/runs/{first}/journal"));
    assert_eq!(status, 200);
    assert_eq!(journal.lines().count(), seqs.len());
    let (status, html) = a.text(&format!("/v1/runs/{first}/report"));
    assert_eq!(status, 200);
    assert!(html.contains(&first) && html.contains("<html"));
    verify(&t, &first);

    // Cancelled through B while it waits for approval: it ends `cancelled`.
    let (_, run) = b.post("/v1/runs", inline_plan("1 + 1"));
    let second = id(&run);
    a.wait(&second, |r| r["state"] == "waiting_for_approval");
    let (status, e) = a.post(&format!("/v1/runs/{second}/cancel"), json!({}));
    assert_eq!(status, 202, "{e}");
    let cancelled = b.wait(&second, |r| r["state"] == "cancelled");
    assert_eq!(cancelled["stop"]["reason"], "cancelled", "{cancelled}");
    // Through the API (no tokens here, so no name): the holder on either replica says so.
    assert_eq!(cancelled["stop"]["how"], "api", "{cancelled}");
    assert_eq!(cancelled["steps"]["succeeded"], 0);
    // Nobody rejected it, and its journal says no one did.
    let (_, journal) = b.text(&format!("/v1/runs/{second}/journal"));
    assert!(!journal.contains("\"kind\":\"approval\""), "{journal}");
    let (status, e) = b.post(&format!("/v1/runs/{second}/cancel"), json!({}));
    assert_eq!(status, 409, "{e}");
    verify(&t, &second);

    let (status, page) = b.get("/v1/runs");
    assert_eq!(status, 200);
    let mut ids: Vec<&str> = page["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    // Ids sort by their second of creation, then at random.
    ids.sort_unstable();
    let mut both = vec![first.as_str(), second.as_str()];
    both.sort_unstable();
    assert_eq!(ids, both);
    for api in [&a, &b] {
        assert_eq!(metric(api, "toolhost_runs{state=\"completed\"}"), 1.0);
        assert_eq!(metric(api, "toolhost_runs{state=\"cancelled\"}"), 1.0);
        assert_eq!(metric(api, "toolhost_lease_takeovers_total"), 0.0);
    }
    // Steps count where they ran: the one calc step on one of the two replicas.
    let steps = metric(&a, "toolhost_steps_total{status=\"succeeded\"}")
        + metric(&b, "toolhost_steps_total{status=\"succeeded\"}");
    assert_eq!(steps, 1.0);
}

/// Fixture `f` with the marks tasks `m` and `n` (steps that append to
/// `tasks/out/TAG-sN`, not idempotent) in its task directory and the `fs` tool beside
/// `calc`.
fn marks(f: &Fixture, steps: usize) {
    marks_task(&f.p("tasks"), "m", steps);
    marks_task(&f.p("tasks"), "n", steps);
    std::fs::copy(toolhost_tests::path("fs"), f.p("tools").join("fs.wasm")).unwrap();
}

fn marks_run(tag: &str, approve: bool) -> Value {
    json!({"task": {"name": tag}, "approve": approve})
}

#[test]
fn a_replica_killed_or_stopped_holding_a_run_leaves_it_to_another_exactly_once() {
    let Some(t) = toolhost_tests::postgres::database("serve_failover") else {
        return;
    };
    let f = Fixture::new();
    marks(&f, 2);
    let mut a = replica(&f, &t, &["--shutdown-grace-ms", "300"], &[]);
    let (status, run) = a.post("/v1/runs", marks_run("m", true));
    assert_eq!(status, 201, "{run}");
    let first = id(&run);
    a.wait(&first, |r| r["state"] == "waiting_for_approval");

    // SIGTERM: after the grace period the lease is handed back, and the replica exits 0.
    signal(&a.child, libc::SIGTERM);
    let status = a.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(
        t.sql(&format!(
            "SELECT status || '|' || coalesce(lease_owner, '-') FROM runs WHERE id = '{first}'"
        )),
        "running|-"
    );
    let b = replica(&f, &t, &[], &[]);
    let c = replica(&f, &t, &[], &[]);
    b.wait(&first, |r| r["state"] == "waiting_for_approval");
    let (status, e) = c.post(
        &format!("/v1/runs/{first}/approval"),
        json!({"decision": "approve"}),
    );
    assert_eq!(status, 200, "{e}");
    let done = c.wait(&first, |r| r["state"] == "completed");
    assert_eq!(done["steps"]["succeeded"], 2, "{done}");
    assert_eq!(effects(&f.p("tasks"), "m", 1), 1);
    assert_eq!(effects(&f.p("tasks"), "m", 2), 1);
    verify(&t, &first);

    // SIGKILL of the replica holding a run: the other takes it over after the lease.
    let (status, run) = b.post("/v1/runs", marks_run("n", true));
    assert_eq!(status, 201, "{run}");
    let second = id(&run);
    b.wait(&second, |r| r["state"] == "waiting_for_approval");
    let pid = holder(&t, &second);
    let (mut dead, alive) = if pid == b.child.id() { (b, c) } else { (c, b) };
    assert_eq!(pid, dead.child.id());
    dead.child.kill().unwrap();
    dead.child.wait().unwrap();
    let killed = Instant::now();
    let start = Instant::now();
    while holder(&t, &second) == pid {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "never taken over"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    alive.wait(&second, |r| r["state"] == "waiting_for_approval");
    eprintln!("taken over {:?} after the kill", killed.elapsed());
    let (status, e) = alive.post(
        &format!("/v1/runs/{second}/approval"),
        json!({"decision": "approve"}),
    );
    assert_eq!(status, 200, "{e}");
    let done = alive.wait(&second, |r| r["state"] == "completed");
    assert_eq!(done["steps"]["succeeded"], 2, "{done}");
    assert_eq!(effects(&f.p("tasks"), "n", 1), 1);
    assert_eq!(effects(&f.p("tasks"), "n", 2), 1);
    assert_eq!(metric(&alive, "toolhost_lease_takeovers_total"), 1.0);
    verify(&t, &second);
}

#[test]
fn a_step_cut_off_by_a_dying_replica_waits_for_a_decision_through_the_api() {
    let Some(t) = toolhost_tests::postgres::database("serve_unfinished") else {
        return;
    };
    let f = Fixture::new();
    marks(&f, 2);
    // Dies right after journaling that step s1 started (record 5), before its effect.
    let mut a = replica(
        &f,
        &t,
        &[],
        &[("TOOLHOST_CRASH_AFTER_RECORD", "5".to_string())],
    );
    let (status, run) = a.post("/v1/runs", marks_run("m", false));
    assert_eq!(status, 201, "{run}");
    let run = id(&run);
    assert!(!a.child.wait().unwrap().success());
    let b = replica(&f, &t, &[], &[]);
    let waiting = b.wait(&run, |r| r["state"] == "waiting_for_approval");
    assert_eq!(
        waiting["pending"]["subject"], "unfinished_steps",
        "{waiting}"
    );
    assert_eq!(waiting["pending"]["step"]["ids"], json!(["s1"]));
    assert_eq!(
        t.sql(&format!("SELECT status FROM runs WHERE id = '{run}'")),
        "waiting_for_decision"
    );
    // Nothing ran again on its own.
    assert_eq!(effects(&f.p("tasks"), "m", 1), 0);
    assert_eq!(effects(&f.p("tasks"), "m", 2), 0);
    let (status, e) = b.post(
        &format!("/v1/runs/{run}/approval"),
        json!({"decision": "approve"}),
    );
    assert_eq!(status, 200, "{e}");
    let done = b.wait(&run, |r| r["state"] == "completed");
    assert_eq!(done["steps"]["succeeded"], 2, "{done}");
    assert_eq!(effects(&f.p("tasks"), "m", 1), 1);
    assert_eq!(effects(&f.p("tasks"), "m", 2), 1);
    verify(&t, &run);
}

#[test]
fn toolhost_cancel_stops_a_queued_run_and_refuses_a_stopped_one() {
    let Some(t) = toolhost_tests::postgres::database("cancel_cli") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let task = marks_task(dir.path(), "c", 1);
    let run = super::queue::submit(&t, &task);
    let cancel = || {
        Command::new(BIN)
            .args(["cancel", &run, "--database", &t.url])
            .env_remove("TOOLHOST_DATABASE_URL")
            .output()
            .unwrap()
    };
    let out = cancel();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), format!("cancelled {run}"));
    assert_eq!(
        t.sql(&format!(
            "SELECT status || '|' || state || '|' || stop_reason FROM runs WHERE id = '{run}'"
        )),
        "cancelled|stopped|cancelled"
    );
    let out = cancel();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("is cancelled already"),
        "{}",
        text(&out.stderr)
    );
    let out = Command::new(BIN)
        .args(["cancel", "nosuchrun", "--database", &t.url])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("nosuchrun"),
        "{}",
        text(&out.stderr)
    );
}

/// A run parked for approval longer than its task's `max_wait_ms` stops at the wait budget
/// on PostgreSQL too: the database's approver heeds the run's token like the embedded one.
#[test]
fn a_wait_for_approval_past_max_wait_ms_ends_a_run_in_the_database() {
    let Some(t) = toolhost_tests::postgres::database("serve_max_wait") else {
        return;
    };
    let f = Fixture::new();
    let a = replica(&f, &t, &[], &[]);
    let mut task = inline_plan("2 + 2");
    let toml = task["task"]["toml"].as_str().unwrap().to_string();
    task["task"]["toml"] = json!(format!("{toml}\n[budgets]\nmax_wait_ms = 800\n"));
    let (status, run) = a.post("/v1/runs", task);
    assert_eq!(status, 201, "{run}");
    let run = id(&run);
    let waiting = a.wait(&run, |r| r["state"] == "waiting_for_approval");
    assert_eq!(waiting["pending"]["subject"], "plan", "{waiting}");
    let stopped = a.wait(&run, |r| r["state"] != "waiting_for_approval");
    assert_eq!(stopped["state"], "failed", "{stopped}");
    assert_eq!(stopped["stop"]["reason"], "budget_exhausted", "{stopped}");
    assert_eq!(stopped["stop"]["which"], "wait", "{stopped}");
    assert_eq!(stopped["steps"]["succeeded"], 0);
    verify(&t, &run);
}
