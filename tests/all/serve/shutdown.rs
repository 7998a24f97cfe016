//! SIGTERM: the server drains, then suspends what is left. A run waiting for a person
//! was journaled as a rejection nobody made (`cancelled while waiting for approval`); now
//! nobody's decision is on record, the stop says `suspended`, and the next start carries
//! the run on: it waits again, and a person's approval finishes it.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost_tests::cli;

use super::{Fixture, Server, TIMEOUT, inline_plan};

/// The records of run `id`'s journal.
fn records(f: &Fixture, id: &str) -> Vec<Value> {
    std::fs::read_to_string(f.state().join("runs").join(format!("{id}.jsonl")))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Sends SIGTERM and waits for the server to exit: its exit code.
fn terminate(mut server: Server) -> Option<i32> {
    let pid = server.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let started = Instant::now();
    loop {
        if let Some(s) = server.child.try_wait().unwrap() {
            return s.code();
        }
        assert!(started.elapsed() < TIMEOUT, "the server did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigterm_suspends_a_waiting_run_and_the_next_start_carries_it_on() {
    let f = Fixture::new();
    let server = f.start(&["--shutdown-grace-ms", "300"]);
    let (status, run) = server.post("/v1/runs", inline_plan("1 + 2"));
    assert_eq!(status, 201, "{run}");
    let id = run["id"].as_str().unwrap().to_string();
    server.wait(&id, |r| r["state"] == "waiting_for_approval");
    assert_eq!(terminate(server), Some(0));

    // Past the grace period the run was stopped as what happened: a shutdown. No
    // decision is on record, and the journal holds.
    let journal = records(&f, &id);
    let last = journal.last().unwrap();
    assert_eq!(last["kind"], "stopped", "{last}");
    assert_eq!(last["data"]["reason"], "suspended", "{last}");
    assert!(
        journal.iter().all(|r| r["kind"] != "approval"),
        "{journal:?}"
    );
    let path = f.state().join("runs").join(format!("{id}.jsonl"));
    let verify = cli(["journal", "verify", path.to_str().unwrap()]);
    assert_eq!(verify.code, 0, "{}", verify.stderr);

    // The next start carries it on: it waits for the same decision again.
    let server = f.start(&[]);
    let waiting = server.wait(&id, |r| r["state"] == "waiting_for_approval");
    assert_eq!(waiting["pending"]["subject"], "plan", "{waiting}");
    let (status, body) = server.post(
        &format!("/v1/runs/{id}/approval"),
        json!({"decision": "approve"}),
    );
    assert_eq!(status, 200, "{body}");
    let done = server.wait(&id, |r| {
        r["state"]
            .as_str()
            .is_some_and(|s| s != "waiting_for_approval" && s != "running" && s != "queued")
    });
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(done["answer"], 3, "{done}");

    // One journal: the suspension, the `resumed` record, then the one decision made.
    let journal = records(&f, &id);
    let kinds: Vec<&str> = journal.iter().filter_map(|r| r["kind"].as_str()).collect();
    let resumed = kinds
        .iter()
        .position(|k| *k == "resumed")
        .expect("a resumed record");
    let approvals: Vec<&Value> = journal.iter().filter(|r| r["kind"] == "approval").collect();
    assert_eq!(approvals.len(), 1, "{journal:?}");
    assert_eq!(approvals[0]["data"]["decision"], "approve");
    assert!(
        journal
            .iter()
            .position(|r| r["kind"] == "approval")
            .unwrap()
            > resumed
    );
    assert_eq!(journal[resumed]["data"]["last_stop"]["reason"], "suspended");
    let verify = cli(["journal", "verify", path.to_str().unwrap()]);
    assert_eq!(verify.code, 0, "{}", verify.stderr);
}
