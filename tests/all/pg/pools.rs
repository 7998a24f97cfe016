//! Executor pools through the real binary and a real PostgreSQL: the run's policy routes
//! `fs` to pool `data` and `misbehave` to pool `slow` and grants neither anything; only
//! the `--pool` workers' own policy holds the grants. A plain worker owns and journals
//! the runs, a pool worker runs their pooled calls: the step succeeds with the grant the
//! owner lacks, the worker's policy refuses what it does not allow, a pool nobody serves
//! fails the step naming the pool, and a pool worker killed mid-call has its call run
//! again only when it is idempotent.

use super::wait_for;
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use serde_json::Value;
use toolhost_tests::postgres::TestDb;

use super::queue::{json, settled, signal, submit, text, toolhost, worker};

pub(super) const LEASE: &str = "1000";

/// The run's policy (pooled tools, no grants) and the pool workers' (the grants, and
/// `fs` may only write), with the directories the grants name.
pub(super) fn policies(dir: &Path) {
    for d in ["data", "marks"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    std::fs::write(
        dir.join("policy.toml"),
        "version = 1\napproval = \"deny\"\n\
         [defaults.limits]\ntimeout_ms = 30000\n\
         [tools.calc]\n\
         [tools.fs]\npool = \"data\"\noperations = [\"write-file\", \"read-file\"]\n\
         [tools.misbehave]\npool = \"slow\"\noperations = [\"append-then-sleep\"]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("pool-policy.toml"),
        "version = 1\n\
         [tools.fs]\noperations = [\"write-file\"]\n\
         files = [{ host = \"data\", guest = \"/data\", access = \"read-write\" }]\n\
         [tools.misbehave]\n\
         files = [{ host = \"marks\", guest = \"/marks\", access = \"read-write\" }]\n",
    )
    .unwrap();
}

/// Task `NAME.toml` running `steps` (TOML inline tables) one after another.
pub(super) fn task(dir: &Path, name: &str, tools: &str, steps: &[String]) -> std::path::PathBuf {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(
        &path,
        format!(
            "goal = \"pools: {name}\"\npolicy = \"policy.toml\"\ntools = [{tools}]\nmax_parallel = 1\n\n[planner.plan]\ngoal = \"{name}\"\nsteps = [\n{}\n]\n",
            steps.join(",\n")
        ),
    )
    .unwrap();
    path
}

pub(super) fn pool_worker(t: &TestDb, dir: &Path, pool: &str) -> Child {
    let policy = dir.join("pool-policy.toml");
    worker(
        t,
        &[
            "--pool",
            pool,
            "--policy",
            policy.to_str().unwrap(),
            "--lease-ms",
            LEASE,
            "--poll-ms",
            "100",
            "--grace-ms",
            "2000",
        ],
        &[],
    )
}

pub(super) fn plain_worker(t: &TestDb) -> Child {
    worker(
        t,
        &[
            "--lease-ms",
            LEASE,
            "--poll-ms",
            "100",
            "--grace-ms",
            "2000",
        ],
        &[],
    )
}

/// Stops `w` with SIGTERM; its stats.
fn stop(w: Child) -> Value {
    signal(&w, libc::SIGTERM);
    let out = w.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    json(&out)["stats"].clone()
}

/// The run's journal records, read back from the database (and verified).
pub(super) fn records(t: &TestDb, run: &str) -> Vec<Value> {
    let state = tempfile::tempdir().unwrap();
    let verify = toolhost(
        state.path(),
        &["journal", "verify", run, "--database", &t.url],
        &[],
    );
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify.stderr));
    let show = toolhost(
        state.path(),
        &["journal", "show", run, "--database", &t.url, "--json"],
        &[],
    );
    assert_eq!(show.status.code(), Some(0), "{}", text(&show.stderr));
    json(&show)["records"].as_array().unwrap().clone()
}

/// The `step_finished` record of step `id`.
pub(super) fn finished<'a>(records: &'a [Value], id: &str) -> &'a Value {
    records
        .iter()
        .find(|r| r["kind"] == "step_finished" && r["data"]["id"] == id)
        .map(|r| &r["data"])
        .unwrap_or_else(|| panic!("no step_finished for `{id}` in {records:#?}"))
}

pub(super) fn status(t: &TestDb, run: &str) -> String {
    t.sql(&format!("SELECT status FROM runs WHERE id = '{run}'"))
}

#[test]
fn a_pool_worker_runs_the_pooled_steps_under_its_own_policy() {
    let Some(t) = toolhost_tests::postgres::database(
        "a_pool_worker_runs_the_pooled_steps_under_its_own_policy",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    policies(dir.path());
    let write = task(
        dir.path(),
        "write",
        "\"fs\", \"calc\"",
        &[
            r#"  { id = "w", tool = "fs", operation = "write-file", args = { path = "/data/out.txt", content = "from the pool", mode = "overwrite" } }"#.into(),
            r#"  { id = "c", tool = "calc", operation = "eval", args = { expression = "6 * 7" } }"#.into(),
        ],
    );
    // Without the database nothing reaches the pool: refused before anything runs.
    let state = dir.path().join("state");
    let local = toolhost(
        &state,
        &[
            "run",
            write.to_str().unwrap(),
            "--tools-dir",
            &toolhost_tests::tools_dir(),
        ],
        &[],
    );
    assert_eq!(local.status.code(), Some(2), "{}", text(&local.stderr));
    assert!(
        text(&local.stderr).contains("tool `fs` runs on executor pool `data`")
            && text(&local.stderr).contains("toolhost worker --pool data"),
        "{}",
        text(&local.stderr)
    );
    assert!(
        !state.join("runs").exists()
            || std::fs::read_dir(state.join("runs"))
                .unwrap()
                .next()
                .is_none()
    );

    let plain = plain_worker(&t);
    let pool = pool_worker(&t, dir.path(), "data");
    let run = submit(&t, &write);
    // The worker's own policy allows only `write-file`: a read is refused there.
    let read = task(
        dir.path(),
        "read",
        "\"fs\"",
        &[r#"  { id = "r", tool = "fs", operation = "read-file", args = { path = "/data/out.txt" } }"#.into()],
    );
    let refused = submit(&t, &read);
    settled(&t, Duration::from_secs(60));

    assert_eq!(status(&t, &run), "completed");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("data/out.txt")).unwrap(),
        "from the pool"
    );
    let recs = records(&t, &run);
    let w = finished(&recs, "w");
    assert_eq!(w["status"], "succeeded", "{w}");
    // The pool worker's sandbox decisions joined the owner's journal.
    assert!(
        w["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["event"] == "file"
                && e["decision"] == "allowed"
                && e["path"].as_str().unwrap().starts_with("/data")),
        "{w}"
    );
    assert_eq!(finished(&recs, "c")["output"], 42);
    // The pool worker ran the call; the plain worker owns the run.
    let pool_pid = pool.id();
    assert_eq!(
        t.sql(&format!(
            "SELECT status, attempt, claimed_by LIKE 'toolhost worker, pid {pool_pid} on %' FROM step_calls WHERE run_id = '{run}'"
        )),
        "done|1|t"
    );

    let r = finished(&records(&t, &refused), "r").clone();
    assert_eq!(r["error"]["kind"], "denied", "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("does not allow operation `read-file`"),
        "{r}"
    );
    assert!(
        r["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["event"] == "call" && e["decision"] == "denied"),
        "{r}"
    );

    let pool_stats = stop(pool);
    let plain_stats = stop(plain);
    assert_eq!(pool_stats["started"], 0, "a --pool worker claims no runs");
    assert_eq!(pool_stats["calls_run"], 2, "{pool_stats}");
    assert_eq!(pool_stats["calls_refused"], 1, "{pool_stats}");
    assert_eq!(plain_stats["started"], 2, "{plain_stats}");
    assert_eq!(plain_stats["calls_run"], 0, "{plain_stats}");
}

#[test]
fn a_pooled_step_nobody_serves_fails_naming_the_pool() {
    let Some(t) =
        toolhost_tests::postgres::database("a_pooled_step_nobody_serves_fails_naming_the_pool")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    policies(dir.path());
    let write = task(
        dir.path(),
        "lonely",
        "\"fs\"",
        &[r#"  { id = "w", tool = "fs", operation = "write-file", args = { path = "/data/x", content = "x", mode = "overwrite" }, timeout_ms = 500 }"#.into()],
    );
    let plain = plain_worker(&t);
    let started = Instant::now();
    let run = submit(&t, &write);
    settled(&t, Duration::from_secs(30));
    // The step's timeout plus the owner's lease, and the run's end: not a hang.
    let took = started.elapsed();
    assert!(took < Duration::from_secs(20), "{took:?}");
    let w = finished(&records(&t, &run), "w").clone();
    assert_eq!(w["error"]["kind"], "pool_unavailable", "{w}");
    assert!(
        w["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no worker of executor pool `data` took the call of step `w` within 1500 ms"),
        "{w}"
    );
    assert_eq!(
        t.sql(&format!(
            "SELECT status FROM step_calls WHERE run_id = '{run}'"
        )),
        "withdrawn"
    );
    assert!(!dir.path().join("data/x").exists());

    // A cancelled run's queued call is withdrawn: no pool worker will take it later.
    let waiting = task(
        dir.path(),
        "cancelled",
        "\"fs\"",
        &[r#"  { id = "w", tool = "fs", operation = "write-file", args = { path = "/data/y", content = "y", mode = "overwrite" }, timeout_ms = 20000 }"#.into()],
    );
    let run = submit(&t, &waiting);
    wait_for("the call queued", Duration::from_secs(30), || {
        t.sql(&format!(
            "SELECT count(*) FROM step_calls WHERE run_id = '{run}' AND status = 'queued'"
        )) == "1"
    });
    let state = tempfile::tempdir().unwrap();
    let cancel = toolhost(state.path(), &["cancel", &run, "--database", &t.url], &[]);
    assert_eq!(cancel.status.code(), Some(0), "{}", text(&cancel.stderr));
    settled(&t, Duration::from_secs(30));
    assert_eq!(status(&t, &run), "cancelled");
    wait_for("the call withdrawn", Duration::from_secs(10), || {
        t.sql(&format!(
            "SELECT status FROM step_calls WHERE run_id = '{run}'"
        )) == "withdrawn"
    });
    stop(plain);
}

/// Submits a run whose one step appends to `/marks/NAME` and sleeps; kills the `slow`
/// pool worker that runs it once the mark is there, starts another; returns the run
/// once settled, with how many marks were made.
fn kill_mid_call(t: &TestDb, dir: &Path, name: &str, idempotent: bool) -> (String, usize) {
    let step = format!(
        r#"  {{ id = "m", tool = "misbehave", operation = "append-then-sleep", args = {{ path = "/marks/{name}", line = "x", ms = 1500 }}, timeout_ms = 10000, idempotent = {idempotent} }}"#
    );
    let run = submit(t, &task(dir, name, "\"misbehave\"", &[step]));
    let first = pool_worker(t, dir, "slow");
    let marks = || {
        std::fs::read_to_string(dir.join("marks").join(name))
            .map(|s| s.lines().count())
            .unwrap_or(0)
    };
    let start = Instant::now();
    while marks() == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no mark after 30 s: run {} ({}), calls: {}, journal: {:#?}",
            run,
            status(t, &run),
            t.sql("SELECT status || ' ' || coalesce(claimed_by, '-') FROM step_calls"),
            records(t, &run)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = first.id();
    assert_eq!(
        t.sql(&format!(
            "SELECT status, claimed_by LIKE 'toolhost worker, pid {pid} on %' FROM step_calls WHERE run_id = '{run}'"
        )),
        "claimed|t"
    );
    signal(&first, libc::SIGKILL);
    let mut first = first;
    first.wait().unwrap();
    let second = pool_worker(t, dir, "slow");
    settled(t, Duration::from_secs(60));
    stop(second);
    (run, marks())
}

#[test]
fn a_pool_worker_killed_mid_call_never_runs_a_call_twice_unless_idempotent() {
    let Some(t) = toolhost_tests::postgres::database(
        "a_pool_worker_killed_mid_call_never_runs_a_call_twice_unless_idempotent",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    policies(dir.path());
    let plain = plain_worker(&t);

    let (once, marks) = kill_mid_call(&t, dir.path(), "once", false);
    assert_eq!(marks, 1, "a call that is not idempotent ran again");
    let m = finished(&records(&t, &once), "m").clone();
    assert_eq!(m["error"]["kind"], "pool_worker_lost", "{m}");
    assert!(
        m["error"]["message"]
            .as_str()
            .unwrap()
            .contains("stopped answering while it ran step `m`, which is not idempotent"),
        "{m}"
    );
    assert_eq!(
        t.sql(&format!(
            "SELECT status, attempt FROM step_calls WHERE run_id = '{once}'"
        )),
        "lost|1"
    );

    let (again, marks) = kill_mid_call(&t, dir.path(), "again", true);
    assert_eq!(marks, 2, "the idempotent call runs again on another worker");
    assert_eq!(status(&t, &again), "completed");
    assert_eq!(finished(&records(&t, &again), "m")["status"], "succeeded");
    assert_eq!(
        t.sql(&format!(
            "SELECT status, attempt FROM step_calls WHERE run_id = '{again}'"
        )),
        "done|2"
    );
    stop(plain);
}

/// The mean wall time of the `n`-step run's steps (`step_finished` start to finish, in
/// µs), from its journal.
fn mean_step_us(t: &TestDb, run: &str) -> f64 {
    let recs = records(t, run);
    let took: Vec<f64> = recs
        .iter()
        .filter(|r| r["kind"] == "step_finished")
        .map(|r| {
            (r["data"]["finished_us"].as_u64().unwrap() - r["data"]["started_us"].as_u64().unwrap())
                as f64
        })
        .collect();
    took.iter().sum::<f64>() / took.len() as f64
}

/// The latency a pool hop adds to a step (BENCHMARKS.md, section "Scale-out on
/// PostgreSQL"): the same 15 sequential `fs` `write-file` steps, run by one worker with the
/// grant in the run's own policy, then with `fs` on pool `data` and a `--pool data`
/// worker holding the grant. `cargo test --release -p toolhost-tests --test all --
/// --ignored pg::pools --nocapture` prints them.
#[test]
#[ignore = "a benchmark: run explicitly"]
fn pool_hop_latency() {
    let t = toolhost_tests::postgres::database("pool_hop_latency").expect("PostgreSQL");
    let dir = tempfile::tempdir().unwrap();
    policies(dir.path());
    std::fs::write(
        dir.path().join("local-policy.toml"),
        "version = 1\n[tools.fs]\nfiles = [{ host = \"data\", guest = \"/data\", access = \"read-write\" }]\n",
    )
    .unwrap();
    let steps: Vec<String> = (1..=15)
        .map(|n| {
            let after = if n > 1 { format!(", depends_on = [\"s{}\"]", n - 1) } else { String::new() };
            format!(r#"  {{ id = "s{n}", tool = "fs", operation = "write-file", args = {{ path = "/data/hop", content = "x\n", mode = "append" }}{after} }}"#)
        })
        .collect();
    let pooled = task(dir.path(), "pooled", "\"fs\"", &steps);
    let local = dir.path().join("local.toml");
    std::fs::write(
        &local,
        std::fs::read_to_string(&pooled)
            .unwrap()
            .replace("policy = \"policy.toml\"", "policy = \"local-policy.toml\""),
    )
    .unwrap();
    let plain = plain_worker(&t);
    let pool = pool_worker(&t, dir.path(), "data");
    // One run of each first: tools compiled and cached, connections open.
    let mut means = Vec::new();
    for round in 0..3 {
        let l = submit(&t, &local);
        settled(&t, Duration::from_secs(120));
        let p = submit(&t, &pooled);
        settled(&t, Duration::from_secs(120));
        assert_eq!(status(&t, &l), "completed");
        assert_eq!(status(&t, &p), "completed");
        if round > 0 {
            means.push((mean_step_us(&t, &l), mean_step_us(&t, &p)));
        }
    }
    for (l, p) in &means {
        eprintln!(
            "pool hop: local step {:.0} µs, pooled step {:.0} µs, the hop adds {:.0} µs",
            l,
            p,
            p - l
        );
    }
    stop(pool);
    stop(plain);
}
