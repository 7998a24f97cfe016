//! SIGTERM on a `serve --database` replica whose run waits for a person: after the grace
//! period it hands the run back, and another replica carries it on, waiting for the same
//! decision. The shutdown is no decision: the journal holds only the approval a person
//! gave afterwards (a waiting run used to be journaled `reject: cancelled while waiting
//! for approval`, a rejection nobody made).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::queue::signal;
use super::serve::{holder, id, replica, verify};
use crate::serve::{Fixture, inline_plan};

#[test]
fn a_waiting_run_survives_sigterm_on_its_replica_with_no_decision_on_record() {
    let Some(t) = toolhost_tests::postgres::database("serve_sigterm_waiting") else {
        return;
    };
    let f = Fixture::new();
    let grace = ["--shutdown-grace-ms", "200"];
    let a = replica(&f, &t, &grace, &[]);
    let b = replica(&f, &t, &grace, &[]);
    let (status, run) = a.post("/v1/runs", inline_plan("6 * 7"));
    assert_eq!(status, 201, "{run}");
    let run = id(&run);
    a.wait(&run, |r| r["state"] == "waiting_for_approval");
    let pid = holder(&t, &run);
    let (mut stopped, alive) = if pid == a.child.id() { (a, b) } else { (b, a) };
    signal(&stopped.child, libc::SIGTERM);
    let started = Instant::now();
    let status = loop {
        if let Some(s) = stopped.child.try_wait().unwrap() {
            break s;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "never stopped");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));

    // The other replica carries it on: the same plan waits for a person again.
    let started = Instant::now();
    while holder(&t, &run) == pid {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "never taken over"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let waiting = alive.wait(&run, |r| r["state"] == "waiting_for_approval");
    assert_eq!(waiting["pending"]["subject"], "plan", "{waiting}");
    let (status, e) = alive.post(
        &format!("/v1/runs/{run}/approval"),
        json!({"decision": "approve"}),
    );
    assert_eq!(status, 200, "{e}");
    let done = alive.wait(&run, |r| r["state"] == "completed");
    assert_eq!(done["answer"], 42, "{done}");

    let (_, journal) = alive.text(&format!("/v1/runs/{run}/journal"));
    let approvals: Vec<Value> = journal
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["kind"] == "approval")
        .collect();
    assert_eq!(approvals.len(), 1, "{journal}");
    assert_eq!(approvals[0]["data"]["decision"], "approve", "{journal}");
    verify(&t, &run);
}
