//! LISTEN/NOTIFY doing its work: replicas whose every wait on the database polls only
//! once in ten minutes (`--poll-ms 600000`) still pick up a submitted run, carry on after
//! an approval recorded by another replica, stop on a cancellation recorded by another,
//! stream a followed run's records, run a pooled call and take its outcome — each within
//! a bound far below the poll, so only the notification can have woken them.

use std::path::Path;
use std::process::Child;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost_tests::postgres::TestDb;

use super::pools::{finished, policies, records, status, task};
use super::queue::{signal, submit, text, worker};
use super::serve::{holder, id};
use crate::serve::{Api, Fixture, Server, inline_plan};

/// No wait's poll comes due while a test runs.
const NEVER: &str = "600000";

/// What a notified wait must take at most (a loaded 2-core machine included).
const BOUND: Duration = Duration::from_secs(20);

/// Long enough for a replica's slots to have looked at the queue once, found nothing and
/// settled into waiting for a notification.
const SETTLE: Duration = Duration::from_secs(2);

fn replica(f: &Fixture, t: &TestDb) -> Server {
    f.start_with(
        &[
            "--database",
            &t.url,
            "--lease-ms",
            "30000",
            "--poll-ms",
            NEVER,
        ],
        &[],
    )
}

/// Run `run` as `api` shows it once `done` holds of it, within [`BOUND`] of `from`.
fn within(api: &Api, run: &str, from: Instant, done: impl Fn(&Value) -> bool) -> Value {
    loop {
        let (code, view) = api.get(&format!("/v1/runs/{run}"));
        assert_eq!(code, 200, "{view}");
        if done(&view) {
            return view;
        }
        assert!(
            from.elapsed() < BOUND,
            "run {run} was not woken within {BOUND:?} (the poll is {NEVER} ms): {view}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn idle_serve_replicas_act_on_notifications_alone() {
    let Some(t) = toolhost_tests::postgres::database("notified_serve") else {
        return;
    };
    let f = Fixture::new();
    let a = replica(&f, &t);
    let b = replica(&f, &t);
    std::thread::sleep(SETTLE);

    // Submitted through A: whichever replica claims it was woken by `toolhost_runs`.
    let sent = Instant::now();
    let (code, run) = a.post("/v1/runs", inline_plan("6 * 7"));
    assert_eq!(code, 201, "{run}");
    let first = id(&run);
    within(&a, &first, sent, |r| r["state"] == "waiting_for_approval");
    let picked = sent.elapsed();
    let (held, other) = if holder(&t, &first) == a.child.id() {
        (&a, &b)
    } else {
        (&b, &a)
    };

    // Followed through the replica that does not hold it: its records reach the stream
    // because `toolhost_changes` woke the follower.
    let (tx, rx) = mpsc::channel();
    let follower = Api {
        url: other.url.clone(),
        token: None,
    };
    let followed = first.clone();
    std::thread::spawn(move || {
        let _ = tx.send(follower.events(&followed, None));
    });

    // Approved through the other replica: the holder's wait for the decision is woken.
    let sent = Instant::now();
    let (code, e) = other.post(
        &format!("/v1/runs/{first}/approval"),
        json!({"decision": "approve"}),
    );
    assert_eq!(code, 200, "{e}");
    let done = within(held, &first, sent, |r| r["state"] == "completed");
    let approved = sent.elapsed();
    assert_eq!(done["answer"], 42, "{done}");
    let events = rx
        .recv_timeout(BOUND)
        .expect("the follower's stream ended within the bound");
    assert_eq!(events.last().map(|e| e.1.as_str()), Some("stopped"));
    assert!(events.iter().any(|e| e.1 == "approval"), "{events:?}");

    // Cancelled through the other replica while it waits: the holder stops it.
    let (code, run) = b.post("/v1/runs", inline_plan("1 + 1"));
    assert_eq!(code, 201, "{run}");
    let second = id(&run);
    within(&b, &second, Instant::now(), |r| {
        r["state"] == "waiting_for_approval"
    });
    let other = if holder(&t, &second) == a.child.id() {
        &b
    } else {
        &a
    };
    let sent = Instant::now();
    let (code, e) = other.post(&format!("/v1/runs/{second}/cancel"), json!({}));
    assert_eq!(code, 202, "{e}");
    let cancelled = within(other, &second, sent, |r| r["state"] == "cancelled");
    assert_eq!(cancelled["stop"]["reason"], "cancelled", "{cancelled}");
    eprintln!(
        "notified: picked up in {picked:.2?}, carried on after the approval in {approved:.2?}, cancelled in {:.2?} (poll {NEVER} ms)",
        sent.elapsed()
    );
}

fn idle_worker(t: &TestDb, extra: &[&str]) -> Child {
    let mut flags = vec![
        "--lease-ms",
        "30000",
        "--poll-ms",
        NEVER,
        "--grace-ms",
        "2000",
    ];
    flags.extend_from_slice(extra);
    worker(t, &flags, &[])
}

#[test]
fn an_idle_pool_worker_and_the_waiting_owner_act_on_notifications_alone() {
    let Some(t) = toolhost_tests::postgres::database("notified_pool") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    policies(dir.path());
    let write = task(
        dir.path(),
        "write",
        "\"fs\"",
        &[
            r#"  { id = "w1", tool = "fs", operation = "write-file", args = { path = "/data/one.txt", content = "1", mode = "overwrite" } }"#.into(),
            r#"  { id = "w2", tool = "fs", operation = "write-file", args = { path = "/data/two.txt", content = "2", mode = "overwrite" } }"#.into(),
        ],
    );
    let policy = dir.path().join("pool-policy.toml");
    let owner = idle_worker(&t, &[]);
    let pool = idle_worker(&t, &["--pool", "data", "--policy", path(&policy)]);
    std::thread::sleep(SETTLE);

    // The owner is woken by the run (`toolhost_runs`), the pool worker by each queued call
    // (`toolhost_calls`), the owner again by each outcome (`toolhost_call_ended`): two
    // sequential pooled steps, each a round trip through both notifications.
    let sent = Instant::now();
    let run = submit(&t, &write);
    loop {
        let s = status(&t, &run);
        if s == "completed" {
            break;
        }
        assert!(
            sent.elapsed() < BOUND,
            "run {run} is {s} after {BOUND:?} (the poll is {NEVER} ms)"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = sent.elapsed();
    let recs = records(&t, &run);
    for step in ["w1", "w2"] {
        assert_eq!(finished(&recs, step)["status"], "succeeded", "{step}");
    }
    assert_eq!(
        t.sql(&format!(
            "SELECT string_agg(DISTINCT status || ' ' || (claimed_by LIKE 'toolhost worker, pid {} on %')::text, ',') FROM step_calls WHERE run_id = '{run}'",
            pool.id()
        )),
        "done true",
        "the pool worker ran both calls"
    );
    for w in [owner, pool] {
        signal(&w, libc::SIGTERM);
        let out = w.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    eprintln!("notified: two pooled steps done in {took:.2?} (poll {NEVER} ms)");
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}
