//! One writer per run: `toolhost resume` processes of one killed run started together,
//! and a `resume` started while the `run` is still going. Exactly one process carries the
//! run on, each side effect happens once (the loopback server counts them), the others are
//! refused with exit code 10 naming the holder, and the chain verifies.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use toolhost_tests::server::Server;
use toolhost_tests::{cli, tools_dir};

use super::crash::{calls, journal_of, spawn_with};
use super::{kinds, on_run, records};

const BIN: &str = env!("CARGO_BIN_EXE_toolhost-test-cli");
const LOCKED: i32 = 10;

/// Four steps in a chain, each fetching `/text?STEP-TAG` (`b` waits `slow_ms` first), so
/// the server counts every step's calls.
fn write_task(dir: &Path, server: &Server, tag: &str, slow_ms: u64) -> PathBuf {
    let policy = format!(
        "version = 1\napproval = \"deny\"\n[tools.http]\nnetwork = {{ http = [\"{}\"] }}\n",
        server.origin()
    );
    std::fs::write(dir.join("policy.toml"), policy).unwrap();
    let url = |step: &str| server.url(&format!("/text?{step}-{tag}"));
    let slow = server.url(&format!("/slow?{slow_ms}&b-{tag}"));
    let task = format!(
        r#"goal = "Fetch four pages in turn"
policy = "policy.toml"
tools = ["http"]

[planner.plan]
goal = "fetch in turn"
steps = [
  {{ id = "a", tool = "http", operation = "get-text", args = {{ url = "{a}" }} }},
  {{ id = "b", tool = "http", operation = "get-text", args = {{ url = "{slow}" }}, depends_on = ["a"] }},
  {{ id = "c", tool = "http", operation = "get-text", args = {{ url = "{c}" }}, depends_on = ["b"] }},
  {{ id = "d", tool = "http", operation = "get-text", args = {{ url = "{d}" }}, depends_on = ["c"] }},
]
"#,
        a = url("a"),
        c = url("c"),
        d = url("d"),
    );
    let path = dir.join("task.toml");
    std::fs::write(&path, task).unwrap();
    path
}

fn resume_cmd(state: &Path, journal: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(["--state-dir", state.to_str().unwrap(), "resume"])
        .arg(journal)
        .args(["--tools-dir", &tools_dir(), "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

fn verifies(journal: &Path) {
    let out = cli(["journal", "verify", journal.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{out:?}");
}

#[test]
fn resumes_started_together_have_exactly_one_writer() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    // Where to kill: right after step `a` finished, so nothing is in flight and a resume
    // carries the run on without asking.
    let probe = dir.path().join("probe");
    std::fs::create_dir_all(&probe).unwrap();
    let task = write_task(&probe, &server, "probe", 0);
    let status = spawn_with(&probe.join("state"), &task, None, Stdio::null())
        .wait()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let kill_at = kinds(&journal_of(&probe.join("state")))
        .iter()
        .position(|k| k == "step_finished")
        .expect("a finished step")
        + 1;
    let mut refused_as_locked = 0;
    for round in 0..20 {
        let writers = 2 + round % 7;
        let tag = format!("r{round}");
        let case = dir.path().join(&tag);
        std::fs::create_dir_all(&case).unwrap();
        let task = write_task(&case, &server, &tag, 150);
        let state = case.join("state");
        let hook = Some(("TOOLHOST_CRASH_AFTER_RECORD", kill_at));
        let status = spawn_with(&state, &task, hook, Stdio::null())
            .wait()
            .unwrap();
        assert_eq!(status.code(), None, "{tag}: not killed");
        let journal = journal_of(&state);
        let children: Vec<_> = (0..writers)
            .map(|_| resume_cmd(&state, &journal).spawn().unwrap())
            .collect();
        let outs: Vec<_> = children
            .into_iter()
            .map(|c| c.wait_with_output().unwrap())
            .collect();
        let mut carried_on = 0;
        for o in &outs {
            let stderr = String::from_utf8_lossy(&o.stderr);
            match o.status.code() {
                Some(0) => {
                    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
                    assert_eq!(doc["stop"]["reason"], "completed", "{tag}: {doc}");
                    carried_on += 1;
                }
                Some(LOCKED) => {
                    assert!(
                        stderr.contains("already has a writer: `toolhost resume`, pid ")
                            && stderr.contains(" on host `"),
                        "{tag}: {stderr}"
                    );
                    refused_as_locked += 1;
                }
                // Started after the winner had finished the run.
                Some(2) => assert!(
                    stderr.contains("the run already ended `completed`"),
                    "{tag}: {stderr}"
                ),
                other => panic!("{tag}: exit {other:?}: {stderr}"),
            }
        }
        assert_eq!(
            carried_on, 1,
            "{tag}: {writers} resumes, {carried_on} carried on"
        );
        let n = calls(&server, &tag);
        for step in ["a", "b", "c", "d"] {
            assert_eq!(n.get(step), Some(&1), "{tag}: step {step}: {n:?}");
        }
        let all = kinds(&journal);
        assert_eq!(all.iter().filter(|k| *k == "resumed").count(), 1, "{tag}");
        assert_eq!(
            all.iter().filter(|k| *k == "step_finished").count(),
            4,
            "{tag}"
        );
        verifies(&journal);
    }
    // Most rounds start their resumes within the winner's run: the lock, not luck, kept
    // them apart.
    assert!(refused_as_locked >= 20, "only {refused_as_locked} refused");
}

#[test]
fn a_resume_while_the_run_is_going_is_refused() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let task = write_task(dir.path(), &server, "live", 1500);
    let state = dir.path().join("state");
    let mut child = spawn_with(&state, &task, None, Stdio::null());
    let deadline = Instant::now() + Duration::from_secs(30);
    while !server
        .received()
        .iter()
        .any(|r| r.target.contains("b-live"))
    {
        assert!(Instant::now() < deadline, "step b never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    let journal = journal_of(&state);
    let before = super::crash::content(&journal);
    let (out, _) = on_run(&state, "resume", &journal, &[]);
    assert_eq!(out.code, LOCKED, "{out:?}");
    let holder = format!(
        "already has a writer: `toolhost run`, pid {} on host `",
        child.id()
    );
    assert!(out.stderr.contains(&holder), "{}", out.stderr);
    assert!(
        std::fs::read(&journal).unwrap().starts_with(&before),
        "the refused resume wrote to the journal"
    );
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let recs = records(&journal);
    assert!(recs.iter().all(|r| r["kind"] != "resumed"));
    assert_eq!(recs.last().unwrap()["data"]["reason"], "completed");
    let n = calls(&server, "live");
    for step in ["a", "b", "c", "d"] {
        assert_eq!(n.get(step), Some(&1), "step {step}: {n:?}");
    }
    verifies(&journal);
}
