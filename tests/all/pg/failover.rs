//! The failover tests: 3 replicas of one real PostgreSQL (`toolhost worker`s, then
//! `toolhost serve`s) work 200 submitted runs whose every step leaves a countable mark;
//! one replica is killed (SIGKILL) mid-way, another paused (SIGSTOP) past its lease and
//! then resumed. Every run ends, no step's effect happened twice, a step cut off by the
//! kill or the pause waits for a person's decision rather than run again (and only such a
//! run waits: each is one the killed or paused replica held, with a step started and never
//! finished), no record of a fenced-off replica landed (epochs never go down along a
//! journal), and every chain verifies.

use super::wait_for;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::queue::{effects, marks_task, settled, signal, submit, text, toolhost, worker};
use crate::serve::{Fixture, Server};

const RUNS: usize = 200;
const STEPS: usize = 2;
const LEASE_MS: u64 = 1500;
const CONCURRENCY: usize = 2;

fn count(t: &toolhost_tests::postgres::TestDb, status: &str) -> usize {
    t.sql(&format!(
        "SELECT count(*) FROM runs WHERE status = '{status}'"
    ))
    .parse()
    .unwrap()
}

/// A replica under test: a `toolhost worker` or a `toolhost serve`.
enum Replica {
    Worker(Child),
    Serve(Server),
}

impl Replica {
    fn child(&self) -> &Child {
        match self {
            Replica::Worker(c) => c,
            Replica::Serve(s) => &s.child,
        }
    }

    /// Its lease owner's name, as a `LIKE` pattern.
    fn owner(&self) -> String {
        let kind = match self {
            Replica::Worker(_) => "worker",
            Replica::Serve(_) => "serve",
        };
        format!("toolhost {kind}, pid {} on %", self.child().id())
    }

    /// Stops it with SIGTERM: exit 0, and a worker's stats.
    fn stop(self) -> Option<Value> {
        signal(self.child(), libc::SIGTERM);
        match self {
            Replica::Worker(w) => {
                let out = w.wait_with_output().unwrap();
                assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
                let report: Value = serde_json::from_slice(&out.stdout)
                    .unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)));
                Some(report["stats"].clone())
            }
            Replica::Serve(mut s) => {
                assert_eq!(s.child.wait().unwrap().code(), Some(0));
                None
            }
        }
    }
}

/// Stops `worker` (SIGSTOP) at a moment it holds at least one run's lease; returns
/// those runs. The worker runs freely between looks (stopping it for each look would
/// starve it of runs while the others drain the queue).
fn stop_holding(t: &toolhost_tests::postgres::TestDb, replica: &Replica) -> Vec<String> {
    let (owner, worker) = (replica.owner(), replica.child());
    let held = || {
        t.sql(&format!(
            "SELECT id FROM runs WHERE lease_owner LIKE '{owner}' AND lease_expires > now()"
        ))
    };
    let start = Instant::now();
    loop {
        if !held().is_empty() {
            signal(worker, libc::SIGSTOP);
            // Still holding once stopped and once what it had sent has been done (a
            // release sent just before the stop lands after it): it cannot let go now.
            drained(t, worker.id());
            let still = held();
            if !still.is_empty() {
                return still.lines().map(str::to_string).collect();
            }
            signal(worker, libc::SIGCONT);
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the worker never held a run: {}",
            t.sql("SELECT status || ' ' || count(*) FROM runs GROUP BY status")
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits until no statement process `pid` sent to the database is still being carried
/// out (its connections are told from the others by their client ports, read from
/// `/proc`).
fn drained(t: &toolhost_tests::postgres::TestDb, pid: u32) {
    let sockets: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter_map(|link| {
            let link = link.to_string_lossy().into_owned();
            Some(
                link.strip_prefix("socket:[")?
                    .strip_suffix(']')?
                    .to_string(),
            )
        })
        .collect();
    let tcp = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")).unwrap();
    // `sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode`
    let ports: Vec<String> = tcp
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let port = f.get(1)?.rsplit(':').next()?;
            sockets
                .iter()
                .any(|s| Some(&s.as_str()) == f.get(9))
                .then(|| u16::from_str_radix(port, 16).ok())?
                .map(|p| p.to_string())
        })
        .collect();
    assert!(!ports.is_empty(), "process {pid} has no TCP connection");
    wait_for(
        "the stopped replica's statements done",
        Duration::from_secs(30),
        || {
            t.sql(&format!(
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND client_port IN ({})",
            ports.join(",")
        )) == "0"
        },
    );
}

/// Runs `f` on each item, four at a time.
fn each<T: Sync>(items: &[T], f: impl Fn(&T) + Sync) {
    let next = Mutex::new(items.iter());
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                loop {
                    let item = next.lock().unwrap().next();
                    match item {
                        Some(i) => f(i),
                        None => return,
                    }
                }
            });
        }
    });
}

#[test]
fn three_workers_survive_a_kill_and_a_pause_with_every_effect_once() {
    let Some(t) = toolhost_tests::postgres::database(
        "three_workers_survive_a_kill_and_a_pause_with_every_effect_once",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let flags = [
        "--concurrency",
        &CONCURRENCY.to_string(),
        "--lease-ms",
        &LEASE_MS.to_string(),
        "--poll-ms",
        "200",
        "--grace-ms",
        "5000",
    ]
    .map(str::to_string);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    failover(
        &t,
        dir.path(),
        || Replica::Worker(worker(&t, &flags, &[])),
        |_, task| submit(&t, task),
    );
}

#[test]
fn three_serve_replicas_survive_a_kill_and_a_pause_with_every_effect_once() {
    let Some(t) = toolhost_tests::postgres::database(
        "three_serve_replicas_survive_a_kill_and_a_pause_with_every_effect_once",
    ) else {
        return;
    };
    let f = Fixture::new();
    std::fs::copy(toolhost_tests::path("fs"), f.p("tools/fs.wasm")).unwrap();
    let flags = [
        "--database",
        &t.url,
        "--max-concurrent-runs",
        &CONCURRENCY.to_string(),
        "--lease-ms",
        &LEASE_MS.to_string(),
        "--poll-ms",
        "200",
        "--shutdown-grace-ms",
        "5000",
    ]
    .map(str::to_string);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    // Submitted through the API of the replica that is neither killed nor paused.
    let through_api = |steady: &Replica, task: &Path| {
        let Replica::Serve(s) = steady else {
            unreachable!("serve replicas only")
        };
        let name = task.file_stem().unwrap().to_string_lossy();
        let (code, run) = s.post("/v1/runs", serde_json::json!({"task": {"name": name}}));
        assert_eq!(code, 201, "{run}");
        run["id"].as_str().unwrap().to_string()
    };
    failover(
        &t,
        &f.p("tasks"),
        || Replica::Serve(f.start_with(&flags, &[])),
        through_api,
    );
}

/// The failover scenario (see the module doc) in `dir` (where the tasks are written and
/// their marks land), with replicas from `start`; `submit` queues a task through the
/// steady replica (or around it) and returns the run's id.
fn failover(
    t: &toolhost_tests::postgres::TestDb,
    dir: &Path,
    start: impl Fn() -> Replica,
    submit: impl Fn(&Replica, &Path) -> String + Sync,
) {
    let tags: Vec<String> = (0..RUNS).map(|i| format!("r{i:03}")).collect();
    let tasks: Vec<PathBuf> = tags.iter().map(|tag| marks_task(dir, tag, STEPS)).collect();
    let killed = start();
    let paused = start();
    let steady = start();
    let started = Instant::now();
    let limit = Duration::from_secs(240);
    let runs = Mutex::new(Vec::new());
    let submitted = || runs.lock().unwrap().len();
    // Both replicas are caught holding a run while runs are still being submitted, so
    // that there is always work to hold (a drained queue leaves nothing to take over).
    let (held_by_killed, held_by_paused) = std::thread::scope(|s| {
        s.spawn(|| {
            each(&tasks, |task| {
                let run = submit(&steady, task);
                let tag = task.file_stem().unwrap().to_string_lossy().into_owned();
                runs.lock().unwrap().push((run, tag));
            });
        });
        wait_for("a sixth of the runs submitted", limit, || {
            submitted() >= RUNS / 6
        });
        let held_by_killed = stop_holding(t, &killed);
        signal(killed.child(), libc::SIGKILL);
        wait_for("half of the runs submitted", limit, || {
            submitted() >= RUNS / 2
        });
        let held_by_paused = stop_holding(t, &paused);
        // Past its lease, so its runs are taken over while it sleeps.
        std::thread::sleep(Duration::from_millis(3 * LEASE_MS));
        signal(paused.child(), libc::SIGCONT);
        (held_by_killed, held_by_paused)
    });
    let runs = runs.into_inner().unwrap();
    assert_eq!(runs.len(), RUNS);
    settled(t, limit);
    let elapsed = started.elapsed();

    let mut killed = killed;
    let dead = match &mut killed {
        Replica::Worker(c) => c,
        Replica::Serve(s) => &mut s.child,
    };
    assert!(dead.wait().unwrap().code().is_none(), "it was killed");
    let stats: Vec<Value> = [paused, steady]
        .into_iter()
        .filter_map(Replica::stop)
        .collect();
    // A paused worker found its leases lost on waking and wrote nothing more (its report
    // says so; a serve replica's is its metrics, gone with it: the epochs below check it).
    if let Some(s) = stats.first() {
        assert!(s["lost"].as_u64().unwrap() >= 1, "the paused worker: {s}");
    }
    // Every run the killed or paused replica held was taken over by another, and is
    // leased to nobody now.
    for run in held_by_killed.iter().chain(&held_by_paused) {
        assert_eq!(
            t.sql(&format!(
                "SELECT takeovers >= 1, coalesce(lease_owner, '-') FROM runs WHERE id = '{run}'"
            )),
            "t|-",
            "run {run}"
        );
    }
    // Each run the two held was claimed again over their unreleased lease (counted in the
    // run's row); the replicas count those they carried on from a journal (a run taken
    // over before its first record was written is started afresh).
    let takeovers: usize = t.sql("SELECT sum(takeovers) FROM runs").parse().unwrap();
    assert!(
        takeovers >= held_by_killed.len() + held_by_paused.len(),
        "{takeovers} takeovers"
    );
    let taken_over: u64 = stats
        .iter()
        .map(|s| s["taken_over"].as_u64().unwrap())
        .sum();
    assert!(taken_over as usize <= takeovers, "{stats:?}");
    let from_journal = if stats.is_empty() {
        String::new()
    } else {
        format!(" ({taken_over} from a journal)")
    };

    // Every run ended: completed, or (a step cut off by the kill or the pause, which is not
    // idempotent) waiting for a decision.
    assert_eq!(
        count(t, "completed") + count(t, "waiting_for_decision"),
        RUNS
    );
    // Which wait, and why: each is a run the killed or the paused replica held, with a
    // step it started and never finished (its effect may or may not have happened, so no
    // replica runs it again on its own: a person decides, as `toolhost resume --rerun` or
    // the API's decision on `unfinished_steps`).
    let waiting: Vec<String> = t
        .sql("SELECT id FROM runs WHERE status = 'waiting_for_decision' ORDER BY id")
        .lines()
        .map(str::to_string)
        .collect();
    let mut why = Vec::new();
    for run in &waiting {
        assert!(
            held_by_killed.contains(run) || held_by_paused.contains(run),
            "run {run} waits for a decision, yet neither the killed nor the paused replica held it"
        );
        let cut_off = t.sql(&format!(
            "WITH r AS (SELECT convert_from(line, 'UTF8')::jsonb AS j FROM journal_records WHERE run_id = '{run}')
             SELECT coalesce(string_agg(j #>> '{{data,id}}', ','), '') FROM r WHERE j ->> 'kind' = 'step_started'
               AND NOT EXISTS (SELECT 1 FROM r f WHERE f.j ->> 'kind' = 'step_finished'
                                 AND f.j #>> '{{data,id}}' = r.j #>> '{{data,id}}')"
        ));
        assert!(!cut_off.is_empty(), "run {run} waits with no step cut off");
        why.push(format!("{run} (step {cut_off} cut off)"));
    }
    assert!(
        waiting.len() <= 2 * CONCURRENCY,
        "{} runs wait for a decision: {why:?}",
        waiting.len()
    );
    for (run, tag) in &runs {
        let status = t.sql(&format!("SELECT status FROM runs WHERE id = '{run}'"));
        let marks: Vec<usize> = (1..=STEPS).map(|s| effects(dir, tag, s)).collect();
        if status == "completed" {
            assert_eq!(marks, vec![1; STEPS], "run {run} ({tag})");
        } else {
            assert!(
                marks.iter().all(|&m| m <= 1),
                "run {run} ({tag}): {marks:?}"
            );
        }
        // Each step finished at most once in the journal.
        let finished = t.sql(&format!(
            "SELECT count(*) - count(DISTINCT convert_from(line, 'UTF8')::jsonb #>> '{{data,id}}')
             FROM journal_records WHERE run_id = '{run}'
               AND convert_from(line, 'UTF8')::jsonb ->> 'kind' = 'step_finished'"
        ));
        assert_eq!(finished, "0", "run {run}: a step finished twice");
    }
    // No record of a fenced-off replica landed: along every journal the epoch of the lease
    // a record was written under never goes down.
    assert_eq!(
        t.sql(
            "SELECT count(*) FROM journal_records a JOIN journal_records b
               ON a.run_id = b.run_id AND a.seq < b.seq AND a.epoch > b.epoch"
        ),
        "0"
    );
    assert_eq!(
        t.sql("SELECT count(*) FROM journal_records WHERE epoch IS NULL"),
        "0"
    );
    let ids: Vec<&String> = runs.iter().map(|(r, _)| r).collect();
    each(&ids, |run| {
        let v = toolhost(
            Path::new("/nonexistent"),
            &["journal", "verify", run, "--database", &t.url],
            &[],
        );
        assert_eq!(v.status.code(), Some(0), "{run}: {}", text(&v.stderr));
    });
    eprintln!(
        "failover: {RUNS} runs of {STEPS} steps through 3 replicas (concurrency {CONCURRENCY}, lease {LEASE_MS} ms) in {elapsed:.1?}; {takeovers} takeovers{from_journal}, {} waiting for a decision {why:?}; stats {stats:?}",
        waiting.len()
    );
}
