//! The crash test: `toolhost run` is killed with SIGKILL at every journal record of a run
//! (the journal's `TOOLHOST_CRASH_AFTER_RECORD` kill points: step boundaries, a step
//! started and not yet finished, a planner answer not yet acted on, an approval) and
//! while a tool is mid-request (killed from outside); `toolhost resume` must finish the
//! run with no lost record, no finished step run again, and a chain that verifies, and
//! `toolhost replay` of the resumed run must not diverge from it.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use toolhost_tests::server::Server;
use toolhost_tests::{cli, tools_dir};

use super::{on_run, records};

const BIN: &str = env!("CARGO_BIN_EXE_toolhost-test-cli");

/// A task whose steps fetch `/text?STEP-TAG` (so the server counts each step's calls),
/// with parallel steps, an idempotent one, a failing one (404) that triggers a replan, and
/// a second revision that references the first.
pub(super) fn write_task(dir: &Path, server: &Server, tag: &str, slow: Option<&str>) -> PathBuf {
    let url = |step: &str| match slow {
        Some(s) if s == step => server.url(&format!("/slow?1500&{step}-{tag}")),
        _ => server.url(&format!("/text?{step}-{tag}")),
    };
    let policy = format!(
        "version = 1\napproval = \"deny\"\n[tools.http]\nnetwork = {{ http = [\"{}\"] }}\n[tools.text]\n[tools.calc]\n",
        server.origin()
    );
    std::fs::write(dir.join("policy.toml"), policy).unwrap();
    let task = format!(
        r#"goal = "Fetch, count and combine"
policy = "policy.toml"
tools = ["http", "text", "calc"]
max_parallel = 2

[planner.plan]
goal = "fetch and count"
steps = [
  {{ id = "a", tool = "http", operation = "get-text", args = {{ url = "{a}" }}, idempotent = true }},
  {{ id = "b", tool = "http", operation = "get-text", args = {{ url = "{b}" }} }},
  {{ id = "c", tool = "text", operation = "count", args = {{ text = "${{a.output}}" }} }},
  {{ id = "d", tool = "http", operation = "get-text", args = {{ url = "{d}" }}, depends_on = ["b"] }},
  {{ id = "e", tool = "calc", operation = "eval", args = {{ expression = "${{c.output.words}} * 2" }} }},
]

[[planner.replans]]
after_failure_of = "d"
plan = {{ goal = "fetch again and combine", steps = [
  {{ id = "f", tool = "http", operation = "get-text", args = {{ url = "{f}" }} }},
  {{ id = "g", tool = "text", operation = "count", args = {{ text = "${{f.output}}" }} }},
  {{ id = "h", tool = "calc", operation = "eval", args = {{ expression = "${{g.output.words}} + ${{c.output.words}}" }} }},
] }}
"#,
        a = url("a"),
        b = url("b"),
        d = server.url(&format!("/missing?d-{tag}")),
        f = url("f"),
    );
    let path = dir.join("task.toml");
    std::fs::write(&path, task).unwrap();
    path
}

/// The task's answer: the words of what `f` and `a` fetched (`/slow` answers one word).
pub(super) fn expected_answer(slow: Option<&str>) -> Value {
    let words = |step: &str| match slow {
        Some(s) if s == step => 1,
        _ => toolhost_tests::server::TEXT.split_whitespace().count(),
    };
    Value::from((words("f") + words("a")) as f64)
}

fn spawn(state: &Path, task: &Path, kill_after: Option<usize>) -> Child {
    let hook = kill_after.map(|n| ("TOOLHOST_CRASH_AFTER_RECORD", n));
    spawn_with(state, task, hook, Stdio::null())
}

/// `toolhost run TASK --json` as a child process, with a journal test hook (`VAR`, record)
/// in its environment and its stdout to `stdout`.
pub(crate) fn spawn_with(
    state: &Path,
    task: &Path,
    hook: Option<(&str, usize)>,
    stdout: Stdio,
) -> Child {
    let mut cmd = Command::new(BIN);
    cmd.args(["--state-dir", state.to_str().unwrap(), "run"])
        .arg(task)
        .args(["--tools-dir", &tools_dir(), "--json"])
        .stdout(stdout)
        .stderr(Stdio::null());
    if let Some((var, n)) = hook {
        cmd.env(var, n.to_string());
    }
    cmd.spawn().expect("spawn the CLI")
}

/// The one journal in `state`.
pub(crate) fn journal_of(state: &Path) -> PathBuf {
    let runs: Vec<PathBuf> = std::fs::read_dir(state.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs[0].clone()
}

/// The journal's content: its records, without the preallocated zeros a killed writer
/// leaves after them.
pub(crate) fn content(journal: &Path) -> Vec<u8> {
    toolhost_journal::written(&std::fs::read(journal).unwrap()).to_vec()
}

/// The step ids between backticks in an escalation's reason, before "started".
fn named_steps(why: &str) -> Vec<String> {
    let head = why.split(" started ").next().unwrap_or("");
    head.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// Resumes until the run completes, answering an escalation about unfinished
/// non-idempotent steps with `--rerun`; returns the steps rerun that way.
pub(crate) fn resume_to_the_end(state: &Path, journal: &Path, answer: &Value) -> Vec<String> {
    let mut rerun: Vec<String> = Vec::new();
    for _ in 0..3 {
        let args: Vec<&str> = rerun.iter().flat_map(|s| ["--rerun", s.as_str()]).collect();
        let (out, doc) = on_run(state, "resume", journal, &args);
        assert!(doc.is_object(), "{out:?}");
        if out.code == 0 {
            assert_eq!(doc["stop"]["reason"], "completed", "{doc}");
            assert_eq!(doc["answer"].as_f64(), answer.as_f64(), "{doc}");
            return rerun;
        }
        let why = doc["stop"]["why"].as_str().unwrap_or_default();
        assert!(
            why.contains("--rerun") && rerun.is_empty(),
            "resume stopped for another reason: {doc}"
        );
        rerun = named_steps(why);
        assert!(!rerun.is_empty(), "{why}");
    }
    panic!("the run did not complete after three resumes");
}

/// What the journal says about each step: finished (rev, id) pairs, and started ones.
type StepKeys = Vec<(u64, String)>;

fn steps_in(records: &[Value]) -> (StepKeys, StepKeys) {
    let pick = |kind: &str| {
        records
            .iter()
            .filter(|r| r["kind"] == kind)
            .map(|r| {
                let d = &r["data"];
                (
                    d["revision"].as_u64().unwrap(),
                    d["id"].as_str().unwrap().to_string(),
                )
            })
            .collect::<Vec<_>>()
    };
    (pick("step_finished"), pick("step_started"))
}

/// Requests per `STEP-TAG` query.
pub(crate) fn calls(server: &Server, tag: &str) -> BTreeMap<String, usize> {
    let mut n = BTreeMap::new();
    for r in server.received() {
        let Some(q) = r.target.split_once('?').map(|(_, q)| q) else {
            continue;
        };
        let key = q.rsplit('&').next().unwrap_or(q);
        if let Some(step) = key.strip_suffix(&format!("-{tag}")) {
            *n.entry(step.to_string()).or_default() += 1;
        }
    }
    n
}

/// The checks every kill point shares, given the journal's bytes at the kill; then a
/// replay of the finished run, which must not diverge from it.
pub(super) fn check_after_resume(
    journal: &Path,
    at_kill: &[u8],
    server: &Server,
    tag: &str,
    rerun: &[String],
) {
    let after = std::fs::read(journal).unwrap();
    assert!(
        after.starts_with(at_kill),
        "{tag}: records written before the kill were lost or changed"
    );
    let verify = cli(["journal", "verify", journal.to_str().unwrap()]);
    assert_eq!(verify.code, 0, "{tag}: {verify:?}");
    let before: Vec<Value> = String::from_utf8_lossy(at_kill)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let (finished_before, started_before) = steps_in(&before);
    let all = records(journal);
    let (finished, _) = steps_in(&all);
    // Every step of both revisions finished exactly once.
    let mut seen = finished.clone();
    seen.sort();
    seen.dedup();
    assert_eq!(
        seen.len(),
        finished.len(),
        "{tag}: a step finished twice: {finished:?}"
    );
    assert_eq!(finished.len(), 8, "{tag}: {finished:?}");
    // The server saw each fetching step once, except a step that had started and not
    // finished at the kill, which may have reached it once more if it ran again.
    let n = calls(server, tag);
    for step in ["a", "b", "f"] {
        let key = |(_, id): &(u64, String)| id == step;
        let done_before = finished_before.iter().any(key);
        let cut_off = started_before.iter().any(key) && !done_before;
        let got = n.get(step).copied().unwrap_or(0);
        if cut_off {
            assert!(
                (1..=2).contains(&got),
                "{tag}: step {step} reached the server {got} times"
            );
            if step != "a" && got == 2 {
                assert!(
                    rerun.contains(&step.to_string()),
                    "{tag}: {step} ran again unasked"
                );
            }
        } else {
            assert_eq!(
                got, 1,
                "{tag}: step {step} reached the server {got} times (finished before the kill: {done_before})"
            );
        }
    }
    let (out, doc) = on_run(state_of(journal), "replay", journal, &[]);
    assert_eq!(
        doc["replay"]["divergences"],
        serde_json::json!([]),
        "{tag}: {out:?}"
    );
    assert_eq!(out.code, 0, "{tag}: {out:?}");
}

/// The state directory a journal lives in (`STATE/runs/RUN.jsonl`).
fn state_of(journal: &Path) -> &Path {
    journal
        .parent()
        .and_then(Path::parent)
        .expect("STATE/runs/RUN.jsonl")
}

#[test]
fn killed_at_every_record_resume_finishes_the_run() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    // A run without a kill, for the number of records.
    let full_state = dir.path().join("full");
    let task = write_task(dir.path(), &server, "full", None);
    let status = spawn(&full_state, &task, None).wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let total = records(&journal_of(&full_state)).len();
    assert!(total >= 24, "{total} records");
    let mut points = 0;
    for n in 1..total {
        let tag = format!("k{n}");
        let case = dir.path().join(&tag);
        std::fs::create_dir_all(&case).unwrap();
        let task = write_task(&case, &server, &tag, None);
        let state = case.join("state");
        let status = spawn(&state, &task, Some(n)).wait().unwrap();
        assert_eq!(
            status.signal(),
            Some(9),
            "{tag}: the run was not killed: {status:?}"
        );
        let journal = journal_of(&state);
        let at_kill = content(&journal);
        assert_eq!(
            String::from_utf8_lossy(&at_kill).lines().count(),
            n,
            "{tag}"
        );
        let rerun = resume_to_the_end(&state, &journal, &expected_answer(None));
        check_after_resume(&journal, &at_kill, &server, &tag, &rerun);
        points += 1;
    }
    assert!(points >= 20, "only {points} kill points");
}

/// Waits until the server has received a request whose target contains `needle`.
fn wait_for(server: &Server, needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !server.received().iter().any(|r| r.target.contains(needle)) {
        assert!(Instant::now() < deadline, "no request for {needle}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn killed_mid_request_a_non_idempotent_step_waits_for_a_decision() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    for (slow, tag) in [("b", "mid-b"), ("a", "mid-a"), ("f", "mid-f")] {
        let case = dir.path().join(tag);
        std::fs::create_dir_all(&case).unwrap();
        let task = write_task(&case, &server, tag, Some(slow));
        let state = case.join("state");
        let mut child = spawn(&state, &task, None);
        wait_for(&server, &format!("{slow}-{tag}"));
        child.kill().unwrap();
        assert_eq!(child.wait().unwrap().signal(), Some(9));
        let journal = journal_of(&state);
        let at_kill = content(&journal);
        let rerun = resume_to_the_end(&state, &journal, &expected_answer(Some(slow)));
        // `a` is idempotent: it ran again without asking; `b` and `f` waited for --rerun.
        // (A fast step running beside the slow one may have been cut off too.)
        assert_eq!(
            rerun.contains(&slow.to_string()),
            slow != "a",
            "{tag}: {rerun:?}"
        );
        assert_eq!(calls(&server, tag)[slow], 2, "{tag}");
        check_after_resume(&journal, &at_kill, &server, tag, &rerun);
    }
}
