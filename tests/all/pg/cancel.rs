//! Stopping a run that a worker is carrying, on a real PostgreSQL: a cancellation asked
//! for reaches the lease's holder at once (migration 0005's notification), not at its next
//! renewal a third of the lease later.

use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use super::queue::{settled, signal, submit, text, toolhost, worker};
use super::wait_for;

/// Long enough that a renewal (every third of it) cannot be what stops the run in time.
const LEASE_MS: &str = "30000";

fn marks(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("marks/m"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

fn status(t: &toolhost_tests::postgres::TestDb, run: &str) -> String {
    t.sql(&format!("SELECT status FROM runs WHERE id = '{run}'"))
}

fn stop(w: Child) {
    signal(&w, libc::SIGTERM);
    let out = w.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// Task `NAME.toml` in `dir`: `toml` after its goal, policy and tools lines.
fn task(dir: &Path, name: &str, toml: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(dir.join("marks")).unwrap();
    std::fs::write(
        dir.join("policy.toml"),
        "version = 1\n[tools.misbehave]\nfiles = [{ host = \"marks\", guest = \"/marks\", access = \"read-write\" }]\n",
    )
    .unwrap();
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(
        &path,
        format!(
            "goal = \"{name}\"\npolicy = \"policy.toml\"\ntools = [\"misbehave\"]\nmax_parallel = 1\n{toml}"
        ),
    )
    .unwrap();
    path
}

#[test]
fn a_cancelled_running_run_stops_at_once_not_at_the_next_renewal() {
    let Some(t) = toolhost_tests::postgres::database("cancel_running") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Twenty steps of half a second each, one after another: each leaves a mark first.
    let steps: Vec<String> = (1..=20)
        .map(|n| {
            let after = if n > 1 {
                format!(", depends_on = [\"s{}\"]", n - 1)
            } else {
                String::new()
            };
            format!(
                "  {{ id = \"s{n}\", tool = \"misbehave\", operation = \"append-then-sleep\", args = {{ path = \"/marks/m\", line = \"x\", ms = 500 }}{after} }}"
            )
        })
        .collect();
    let path = task(
        dir.path(),
        "slow",
        &format!(
            "[planner.plan]\ngoal = \"marks\"\nsteps = [\n{}\n]\n",
            steps.join(",\n")
        ),
    );
    let w = worker(&t, &["--lease-ms", LEASE_MS, "--poll-ms", "100"], &[]);
    let run = submit(&t, &path);
    wait_for("the first mark", Duration::from_secs(60), || {
        marks(dir.path()) >= 1
    });
    let state = tempfile::tempdir().unwrap();
    let asked = Instant::now();
    let cancel = toolhost(state.path(), &["cancel", &run, "--database", &t.url], &[]);
    assert_eq!(cancel.status.code(), Some(0), "{}", text(&cancel.stderr));
    assert!(
        text(&cancel.stdout).starts_with("cancelling "),
        "{}",
        text(&cancel.stdout)
    );
    settled(&t, Duration::from_secs(60));
    let took = asked.elapsed();
    assert_eq!(status(&t, &run), "cancelled");
    // The renewal that used to carry the news comes every 10 s; the step running when it
    // was asked finishes (half a second).
    assert!(
        took < Duration::from_secs(4),
        "the cancellation took {took:?} to stop the run"
    );
    let made = marks(dir.path());
    assert!(made < 10, "{made} of 20 steps ran after a prompt cancel");
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(marks(dir.path()), made, "a step started after the cancel");
    stop(w);
}
