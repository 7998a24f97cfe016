//! Scale-out on PostgreSQL through the real binary: `resume --database` after a crash
//! behaves as a file resume; `submit` queues runs and `worker`s start them, take over the
//! run of a worker that died, and hand back at SIGTERM. The tasks' steps each append a
//! line to a file named by task and step, so the test counts every step's effects.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use toolhost_tests::postgres::TestDb;
use toolhost_tests::tools_dir;

pub(super) const BIN: &str = env!("CARGO_BIN_EXE_toolhost-test-cli");

pub(super) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `toolhost ARGS` with the state directory `state` and no database from the environment.
pub(super) fn toolhost(state: &Path, args: &[&str], env: &[(&str, String)]) -> Output {
    Command::new(BIN)
        .args(["--state-dir", state.to_str().unwrap()])
        .args(args)
        .env_remove("TOOLHOST_DATABASE_URL")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("toolhost runs")
}

/// Writes the policy (fs may write `dir/out`) and the task `TAG.toml` whose `steps` steps
/// run one after another, each appending a line to `out/TAG-sN`; returns the task.
pub(super) fn marks_task(dir: &Path, tag: &str, steps: usize) -> PathBuf {
    std::fs::create_dir_all(dir.join("out")).unwrap();
    std::fs::write(
        dir.join("policy.toml"),
        "version = 1\napproval = \"deny\"\n[tools.fs]\noperations = [\"write-file\"]\nfiles = [{ host = \"out\", guest = \"/out\", access = \"read-write\" }]\n",
    )
    .unwrap();
    let steps: Vec<String> = (1..=steps)
        .map(|n| {
            let after = if n > 1 {
                format!(", depends_on = [\"s{}\"]", n - 1)
            } else {
                String::new()
            };
            format!(
                "  {{ id = \"s{n}\", tool = \"fs\", operation = \"write-file\", args = {{ path = \"/out/{tag}-s{n}\", content = \"x\\n\", mode = \"append\" }}{after} }},"
            )
        })
        .collect();
    let task = dir.join(format!("{tag}.toml"));
    std::fs::write(
        &task,
        format!(
            "goal = \"Leave a mark per step ({tag})\"\npolicy = \"policy.toml\"\ntools = [\"fs\"]\nmax_parallel = 1\n\n[planner.plan]\ngoal = \"marks\"\nsteps = [\n{}\n]\n",
            steps.join("\n")
        ),
    )
    .unwrap();
    task
}

/// How many times step `step` of task `tag` had its effect.
pub(super) fn effects(dir: &Path, tag: &str, step: usize) -> usize {
    std::fs::read_to_string(dir.join("out").join(format!("{tag}-s{step}")))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

pub(super) fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&out.stdout), text(&out.stderr)))
}

/// The steps that finished in the run's journal, in order.
fn finished(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .filter(|r| r["kind"] == "step_finished")
        .map(|r| r["data"]["id"].as_str().unwrap().to_string())
        .collect()
}

/// What a crashed-and-resumed run came to: resume's exit code, the stop, the finished
/// steps and each step's effects.
#[derive(Debug, PartialEq)]
struct Outcome {
    code: Option<i32>,
    stop: Value,
    finished: Vec<String>,
    effects: Vec<usize>,
}

pub(super) const STEPS: usize = 3;

/// A run killed after record `n` and resumed, with its journal in a file.
fn in_file(n: usize) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let task = marks_task(dir.path(), "f", STEPS);
    let state = dir.path().join("state");
    let tools = tools_dir();
    let crash = [("TOOLHOST_CRASH_AFTER_RECORD", n.to_string())];
    let killed = toolhost(
        &state,
        &[
            "run",
            task.to_str().unwrap(),
            "--tools-dir",
            &tools,
            "--json",
        ],
        &crash,
    );
    assert!(!killed.status.success());
    let journal = std::fs::read_dir(state.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    let out = toolhost(
        &state,
        &[
            "resume",
            journal.to_str().unwrap(),
            "--tools-dir",
            &tools,
            "--json",
        ],
        &[],
    );
    let records: Vec<Value> = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    Outcome {
        code: out.status.code(),
        stop: json(&out)["stop"].clone(),
        finished: finished(&records),
        effects: (1..=STEPS).map(|s| effects(dir.path(), "f", s)).collect(),
    }
}

/// The same in the database: the run's status after the resume too.
fn in_database(t: &TestDb, n: usize) -> (Outcome, String) {
    let dir = tempfile::tempdir().unwrap();
    let task = marks_task(dir.path(), "f", STEPS);
    let state = dir.path().join("state");
    let tools = tools_dir();
    let crash = [("TOOLHOST_CRASH_AFTER_RECORD", n.to_string())];
    let before: Vec<String> = all_runs(t);
    let killed = toolhost(
        &state,
        &[
            "run",
            task.to_str().unwrap(),
            "--tools-dir",
            &tools,
            "--database",
            &t.url,
            "--json",
        ],
        &crash,
    );
    assert!(!killed.status.success());
    let run = all_runs(t)
        .into_iter()
        .find(|r| !before.contains(r))
        .expect("the killed run is in the database");
    // The killed run's lease is still held (for 30 s): the resume is refused meanwhile,
    // as a second writer of a file is.
    let held = toolhost(
        &state,
        &["resume", &run, "--tools-dir", &tools, "--database", &t.url],
        &[],
    );
    assert_eq!(held.status.code(), Some(10), "{}", text(&held.stderr));
    assert!(
        text(&held.stderr).contains("its lease is held by `toolhost run, pid"),
        "{}",
        text(&held.stderr)
    );
    // As if it expired.
    t.sql(&format!(
        "UPDATE runs SET lease_expires = now() - interval '1 second' WHERE id = '{run}'"
    ));
    let out = toolhost(
        &state,
        &[
            "resume",
            &run,
            "--tools-dir",
            &tools,
            "--database",
            &t.url,
            "--json",
        ],
        &[],
    );
    let show = toolhost(
        &state,
        &["journal", "show", &run, "--database", &t.url, "--json"],
        &[],
    );
    assert_eq!(show.status.code(), Some(0), "{}", text(&show.stderr));
    let shown = json(&show);
    let records: Vec<Value> = shown["records"].as_array().unwrap().clone();
    let status = t.sql(&format!(
        "SELECT status || '|' || state || '|' || coalesce(lease_owner, '-') FROM runs WHERE id = '{run}'"
    ));
    (
        Outcome {
            code: out.status.code(),
            stop: json(&out)["stop"].clone(),
            finished: finished(&records),
            effects: (1..=STEPS).map(|s| effects(dir.path(), "f", s)).collect(),
        },
        status,
    )
}

fn all_runs(t: &TestDb) -> Vec<String> {
    t.sql("SELECT id FROM runs ORDER BY id")
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn resume_on_postgres_after_a_crash_behaves_as_file_resume() {
    let Some(t) = toolhost_tests::postgres::database(
        "resume_on_postgres_after_a_crash_behaves_as_file_resume",
    ) else {
        return;
    };
    // Migrated, so the runs can be listed before the first one is written.
    toolhost_store_pg::Database::connect(&t.url).unwrap_or_else(|e| panic!("{e}"));
    // run_started, planner_called, plan_accepted, the plan's approval, then a
    // started/finished pair per step, then stopped: every kill point before the stop.
    let last = 4 + 2 * STEPS;
    let mut waited = 0;
    for n in 1..=last {
        let file = in_file(n);
        let (pg, status) = in_database(&t, n);
        assert_eq!(pg, file, "killed after record {n}");
        // No completed step ran again; a step cut off between its start and its finish
        // (records 5, 7, 9) is not idempotent and waits for a decision.
        let cut_off = n >= 5 && n % 2 == 1;
        if cut_off {
            waited += 1;
            assert_eq!(pg.code, Some(7), "killed after record {n}: {pg:?}");
            assert_eq!(
                status, "waiting_for_decision|stopped|-",
                "killed after record {n}"
            );
            assert!(pg.effects.iter().all(|&e| e <= 1), "{pg:?}");
        } else {
            assert_eq!(pg.code, Some(0), "killed after record {n}: {pg:?}");
            assert_eq!(pg.stop["reason"], "completed");
            assert_eq!(pg.effects, vec![1; STEPS], "killed after record {n}");
            assert_eq!(status, "completed|stopped|-", "killed after record {n}");
        }
    }
    assert_eq!(waited, STEPS);
    // Every chain verifies, and a finished run is not carried on again (exit 2, nothing
    // changed).
    for run in all_runs(&t) {
        let v = toolhost(
            Path::new("/nonexistent"),
            &["journal", "verify", &run, "--database", &t.url],
            &[],
        );
        assert_eq!(v.status.code(), Some(0), "{}", text(&v.stderr));
    }
    let done = t.sql("SELECT id FROM runs WHERE status = 'completed' LIMIT 1");
    let epoch = t.sql(&format!("SELECT epoch FROM runs WHERE id = '{done}'"));
    // The same task again (the run's own went with its directory).
    let dir = tempfile::tempdir().unwrap();
    let task = marks_task(dir.path(), "f", STEPS);
    let again = toolhost(
        Path::new("/nonexistent"),
        &[
            "resume",
            &done,
            "--task",
            task.to_str().unwrap(),
            "--tools-dir",
            &tools_dir(),
            "--database",
            &t.url,
        ],
        &[],
    );
    assert_eq!(again.status.code(), Some(2), "{}", text(&again.stderr));
    assert!(
        text(&again.stderr).contains("already ended `completed`"),
        "{}",
        text(&again.stderr)
    );
    assert_eq!(
        t.sql(&format!(
            "SELECT status || '|' || state || '|' || coalesce(lease_owner, '-') FROM runs WHERE id = '{done}'"
        )),
        "completed|stopped|-"
    );
    assert_ne!(
        t.sql(&format!("SELECT epoch FROM runs WHERE id = '{done}'")),
        epoch,
        "the refused resume claimed the run (and gave it back)"
    );
}

/// A `toolhost worker` subprocess of database `t`. It is killed when the test's thread
/// ends (a failing test included): a worker whose database is gone would otherwise retry
/// for ever after the test.
pub(super) fn worker(t: &TestDb, extra: &[&str], env: &[(&str, String)]) -> Child {
    let mut cmd = Command::new(BIN);
    toolhost_tests::die_with_parent(&mut cmd);
    cmd.args(["worker", "--database", &t.url, "--tools-dir", &tools_dir()])
        .args(extra)
        .env_remove("TOOLHOST_DATABASE_URL")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::piped())
        // Not piped: nobody reads it while the worker runs, and a full pipe would stall it.
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the worker starts")
}

/// Submits `task`; returns the run id.
pub(super) fn submit(t: &TestDb, task: &Path) -> String {
    let out = Command::new(BIN)
        .args(["submit", "--database", &t.url, task.to_str().unwrap()])
        .args(["--tools-dir", &tools_dir()])
        .env_remove("TOOLHOST_DATABASE_URL")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout).trim().to_string()
}

/// Waits until no run of `t` is queued or running (or `limit` passes: a panic).
pub(super) fn settled(t: &TestDb, limit: Duration) {
    let start = Instant::now();
    loop {
        let open = t.sql("SELECT count(*) FROM runs WHERE status IN ('queued', 'running')");
        if open == "0" {
            return;
        }
        assert!(
            start.elapsed() < limit,
            "{open} run(s) still open after {limit:?}: {}",
            t.sql("SELECT string_agg(id || ' ' || status || ' ' || coalesce(lease_owner, '-'), E'\\n') FROM runs WHERE status IN ('queued', 'running')")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Sends `signal` to `child`.
pub(super) fn signal(child: &Child, signal: i32) {
    // SAFETY: kill(2) on a child's pid has no memory-safety preconditions.
    let r = unsafe { libc::kill(child.id() as i32, signal) };
    assert_eq!(r, 0, "kill({}, {signal})", child.id());
}

#[test]
fn workers_start_queued_runs_take_over_a_dead_workers_run_and_stop_on_sigterm() {
    let Some(t) = toolhost_tests::postgres::database(
        "workers_start_queued_runs_take_over_a_dead_workers_run_and_stop_on_sigterm",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let runs: Vec<(String, String)> = (0..5)
        .map(|i| {
            let tag = format!("q{i}");
            let task = marks_task(dir.path(), &tag, STEPS);
            (submit(&t, &task), tag)
        })
        .collect();
    assert_eq!(
        t.sql("SELECT count(*) FROM runs WHERE status = 'queued' AND spec IS NOT NULL AND lease_owner IS NULL"),
        "5"
    );
    // A bad submission is refused, naming the file; nothing is queued.
    let bad = Command::new(BIN)
        .args(["submit", "--database", &t.url, "/nonexistent/task.toml"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad.stderr));
    assert!(text(&bad.stderr).contains("/nonexistent/task.toml"));
    // The first worker dies right after its first run's first step finished (record 6).
    let mut doomed = worker(
        &t,
        &["--lease-ms", "1000"],
        &[("TOOLHOST_CRASH_AFTER_RECORD", "6".into())],
    );
    let status = doomed.wait().unwrap();
    assert!(!status.success());
    let orphan = t.sql("SELECT id FROM runs WHERE status = 'running'");
    assert_eq!(orphan.lines().count(), 1, "{orphan}");
    let w = worker(&t, &["--lease-ms", "1000", "--poll-ms", "100"], &[]);
    settled(&t, Duration::from_secs(60));
    signal(&w, libc::SIGTERM);
    let out = w.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["stats"]["taken_over"], 1, "{report}");
    assert_eq!(report["stats"]["started"], 4, "{report}");
    assert_eq!(report["stats"]["completed"], 5, "{report}");
    for (run, tag) in &runs {
        assert_eq!(
            t.sql(&format!(
                "SELECT status || '|' || takeovers FROM runs WHERE id = '{run}'"
            )),
            format!("completed|{}", if run == &orphan { 1 } else { 0 })
        );
        for s in 1..=STEPS {
            assert_eq!(effects(dir.path(), tag, s), 1, "{tag} step {s}");
        }
        let v = toolhost(
            dir.path(),
            &["journal", "verify", run, "--database", &t.url],
            &[],
        );
        assert_eq!(v.status.code(), Some(0), "{}", text(&v.stderr));
    }
    // The taken-over run was carried on once, after its first step.
    let resumed = t.sql(&format!(
        "SELECT count(*) FROM journal_records WHERE run_id = '{orphan}' AND convert_from(line, 'UTF8') LIKE '%\"kind\":\"resumed\"%'"
    ));
    assert_eq!(resumed, "1");
}
