//! `toolhost resume` beyond the crash test: a torn last line, a budget stop carried on
//! with a raised budget, a step-wise run, `--abandon`, and the refusals (a completed
//! run, a changed task, a broken journal).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use toolhost_tests::{CliOutput, cli, tools_dir};

use super::{example, on_run, records, run_in};

const BIN: &str = env!("CARGO_BIN_EXE_toolhost-test-cli");

fn resume(state: &Path, journal: &Path, extra: &[&str]) -> (CliOutput, Value) {
    on_run(state, "resume", journal, extra)
}

/// Runs `task` in a child killed after journal record `n`; returns the journal.
fn killed_after(state: &Path, task: &str, n: usize) -> PathBuf {
    let status = Command::new(BIN)
        .args(["--state-dir", state.to_str().unwrap(), "run", task])
        .args(["--tools-dir", &tools_dir(), "--json"])
        .env("TOOLHOST_CRASH_AFTER_RECORD", n.to_string())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(!status.success());
    let runs: Vec<PathBuf> = std::fs::read_dir(state.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(runs.len(), 1);
    runs[0].clone()
}

fn finished(journal: &Path) -> Vec<(u64, String)> {
    records(journal)
        .iter()
        .filter(|r| r["kind"] == "step_finished")
        .map(|r| {
            (
                r["data"]["revision"].as_u64().unwrap(),
                r["data"]["id"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_torn_last_line_is_cut_off_recorded_and_the_run_finishes() {
    let state = tempfile::tempdir().unwrap();
    let journal = killed_after(state.path(), &example("research.toml"), 9);
    // The kill left a half-written record behind (where the records end: before the
    // preallocated zeros).
    let mut bytes = super::crash::content(&journal);
    let torn = br#"{"seq":10,"ts":"2026-"#;
    bytes.extend_from_slice(torn);
    std::fs::write(&journal, &bytes).unwrap();
    let (out, doc) = resume(
        state.path(),
        &journal,
        // Which steps the kill cut off depends on how the parallel steps interleaved.
        &[
            "--rerun", "release", "--rerun", "latest", "--rerun", "notes", "--rerun", "counts",
            "--rerun", "relase",
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    // A step with nothing to decide is named back, not silently ignored.
    assert!(
        out.stderr.contains(
            "warning: --rerun relase ignored: step `relase` is not an unfinished step of run"
        ),
        "{}",
        out.stderr
    );
    assert_eq!(doc["stop"]["reason"], "completed");
    let recs = records(&journal);
    let resumed = recs.iter().find(|r| r["kind"] == "resumed").unwrap();
    assert_eq!(resumed["seq"], 10);
    assert_eq!(resumed["data"]["after_record"], 9);
    assert_eq!(resumed["data"]["torn"]["line"], 10);
    assert_eq!(resumed["data"]["torn"]["bytes"], torn.len());
    let verify = cli(["journal", "verify", journal.to_str().unwrap()]);
    assert_eq!(verify.code, 0, "{verify:?}");
    let show = cli(["journal", "show", journal.to_str().unwrap()]);
    let line = format!("torn line 10 dropped ({} bytes)", torn.len());
    assert!(show.stdout.contains(&line), "{}", show.stdout);
}

/// The parallel example with `max_steps = 3`, in `dir`: (the task file, the state dir).
fn parallel_capped_at_three_steps(dir: &Path) -> (PathBuf, PathBuf) {
    let text = std::fs::read_to_string(example("parallel.toml"))
        .unwrap()
        .replace(
            "policy = \"policy.toml\"",
            &format!("policy = {:?}", example("policy.toml")),
        );
    let task = dir.join("task.toml");
    std::fs::write(&task, format!("{text}\n[budgets]\nmax_steps = 3\n")).unwrap();
    (task, dir.join("state"))
}

#[test]
fn a_budget_stop_is_carried_on_with_a_raised_budget() {
    let dir = tempfile::tempdir().unwrap();
    let (task, state) = parallel_capped_at_three_steps(dir.path());
    let (code, doc, journal) = run_in(&state, task.to_str().unwrap(), &[]);
    assert_eq!(code, 7);
    assert_eq!(doc["stop"]["which"], "steps", "{doc}");
    let before = finished(&journal);
    assert_eq!(before.len(), 3);
    // The same budget stops it again at once, without running anything.
    let (out, doc) = resume(&state, &journal, &[]);
    assert_eq!(out.code, 7, "{out:?}");
    assert_eq!(doc["stop"]["which"], "steps");
    assert_eq!(finished(&journal), before);
    let (out, doc) = resume(&state, &journal, &["--max-steps", "10"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(doc["stop"]["reason"], "completed");
    assert!(
        (doc["answer"].as_f64().unwrap() - 2093.28).abs() < 0.01,
        "{doc}"
    );
    let after = finished(&journal);
    assert_eq!(after.len(), 5, "each step finished once: {after:?}");
    assert_eq!(&after[..3], &before[..]);
    let resumed = records(&journal)
        .into_iter()
        .rfind(|r| r["kind"] == "resumed")
        .unwrap();
    assert_eq!(resumed["data"]["budgets"]["max_steps"], 10);
    assert_eq!(resumed["data"]["last_stop"]["reason"], "budget_exhausted");
}

#[test]
fn the_summary_of_a_resumed_run_lists_every_step_in_start_order() {
    let dir = tempfile::tempdir().unwrap();
    let (task, state) = parallel_capped_at_three_steps(dir.path());
    let (code, _, journal) = run_in(&state, task.to_str().unwrap(), &[]);
    assert_eq!(code, 7);
    let out = cli([
        "--state-dir",
        state.to_str().unwrap(),
        "resume",
        journal.to_str().unwrap(),
        "--tools-dir",
        &tools_dir(),
        "--max-steps",
        "10",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let total = out
        .stdout
        .lines()
        .find(|l| l.starts_with("total: "))
        .unwrap_or_else(|| panic!("{}", out.stdout));
    assert!(total.starts_with("total: 5 steps, "), "{}", out.stdout);
    // Every step of the run has a row (three ran before the resume), in start order.
    let starts: Vec<f64> = out
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("step "))
        .skip(1)
        .take_while(|l| !l.starts_with("total: "))
        .map(|l| {
            let start = l.split_whitespace().nth(2).unwrap();
            start.trim_start_matches('+').parse().unwrap()
        })
        .collect();
    assert_eq!(starts.len(), 5, "{}", out.stdout);
    assert!(starts.is_sorted(), "{}", out.stdout);
}

#[test]
fn a_step_wise_run_resumes_at_every_record() {
    let task = example("seed.toml");
    let probe = tempfile::tempdir().unwrap();
    let (_, _, full) = run_in(probe.path(), &task, &[]);
    let total = records(&full).len();
    for n in 1..total {
        let state = tempfile::tempdir().unwrap();
        let journal = killed_after(state.path(), &task, n);
        let reruns = ["--rerun", "t1", "--rerun", "t2", "--rerun", "t3"];
        let (out, doc) = resume(state.path(), &journal, &reruns);
        assert_eq!(out.code, 0, "kill after {n}: {out:?}");
        assert_eq!(doc["answer"], 53.0, "kill after {n}: {doc}");
        let mut steps = finished(&journal);
        let all = steps.len();
        steps.dedup();
        assert_eq!(steps.len(), all, "kill after {n}: a turn ran twice");
    }
}

#[test]
fn an_abandoned_step_is_recorded_failed_and_planned_around() {
    let state = tempfile::tempdir().unwrap();
    // Record 5 is the start of the first step: it never finished.
    let journal = killed_after(state.path(), &example("research.toml"), 5);
    let started = &records(&journal)[4];
    assert_eq!(started["kind"], "step_started");
    let id = started["data"]["id"].as_str().unwrap().to_string();
    let (out, doc) = resume(state.path(), &journal, &[]);
    assert_eq!(out.code, 7);
    let why = doc["stop"]["why"].as_str().unwrap();
    assert!(
        why.contains(&format!("`{id}`")) && why.contains("--abandon"),
        "{why}"
    );
    let (out, _) = resume(state.path(), &journal, &["--abandon", &id]);
    assert!(out.code == 0 || out.code == 7, "{out:?}");
    let recs = records(&journal);
    let mine: Vec<&Value> = recs
        .iter()
        .filter(|r| r["kind"] == "step_finished" && r["data"]["id"] == id.as_str())
        .collect();
    assert_eq!(mine.len(), 1, "{mine:?}");
    assert_eq!(mine[0]["data"]["error"]["kind"], "interrupted");
}

#[test]
fn a_completed_run_is_not_resumed() {
    let state = tempfile::tempdir().unwrap();
    let (_, _, journal) = run_in(state.path(), &example("seed.toml"), &[]);
    let before = std::fs::read(&journal).unwrap();
    let (out, _) = resume(state.path(), &journal, &[]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("the run already ended `planner_stopped`: there is nothing to carry on"),
        "{}",
        out.stderr
    );
    assert_eq!(
        std::fs::read(&journal).unwrap(),
        before,
        "nothing was appended"
    );
}

#[test]
fn a_changed_task_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let task = dir.path().join("task.toml");
    let text = std::fs::read_to_string(example("parallel.toml"))
        .unwrap()
        .replace(
            "policy = \"policy.toml\"",
            &format!("policy = {:?}", example("policy.toml")),
        );
    std::fs::write(&task, format!("{text}\n[budgets]\nmax_steps = 1\n")).unwrap();
    let state = dir.path().join("state");
    let (code, _, journal) = run_in(&state, task.to_str().unwrap(), &[]);
    assert_eq!(code, 7);
    std::fs::write(&task, format!("{text}\n[budgets]\nmax_steps = 9\n")).unwrap();
    let (out, _) = resume(&state, &journal, &[]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("task file `") && out.stderr.contains("changed since run"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_step_that_waited_for_approval_runs_once_a_person_approves_it_at_resume() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::write(
        dir.path().join("policy.toml"),
        "version = 1\napproval = \"deny\"\n[tools.calc]\nsensitive = true\n[tools.text]\n",
    )
    .unwrap();
    let task = dir.path().join("task.toml");
    std::fs::write(
        &task,
        format!(
            "goal = \"g\"\npolicy = \"policy.toml\"\ntools = {{ calc = {:?}, text = {:?} }}\n\
             [planner.plan]\ngoal = \"g\"\nsteps = [\n\
             {{ id = \"words\", tool = \"text\", operation = \"count\", args = {{ text = \"a b c\" }} }},\n\
             {{ id = \"sum\", tool = \"calc\", operation = \"eval\", args = {{ expression = \"${{words.output.words}} + 1\" }} }},\n]\n",
            toolhost_tests::path("calc"),
            toolhost_tests::path("text")
        ),
    )
    .unwrap();
    let (code, doc, journal) = run_in(&state, task.to_str().unwrap(), &[]);
    assert_eq!(code, 7, "{doc}");
    assert!(
        doc["stop"]["why"]
            .as_str()
            .unwrap()
            .contains("needs approval")
    );
    // The person answers the prompt on the resumed run's terminal.
    let mut child = Command::new(BIN)
        .args(["--state-dir", state.to_str().unwrap(), "resume"])
        .arg(&journal)
        .args(["--tools-dir", &tools_dir(), "--approve", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), b"y\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Step `sum`"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["answer"].as_f64(), Some(4.0), "{doc}");
    // `words` ran before the pause and not again.
    let ran: Vec<String> = finished(&journal).into_iter().map(|(_, id)| id).collect();
    assert_eq!(ran, ["words", "sum"]);
    let approvals: Vec<Value> = records(&journal)
        .into_iter()
        .filter(|r| r["kind"] == "approval" && r["data"]["subject"] == "step")
        .map(|r| r["data"]["decision"].clone())
        .collect();
    assert_eq!(approvals, ["no_approver", "approve"]);
}

/// `resume` and `replay` without `--tools-dir` (nor `TOOLHOST_TOOLS_DIR`) load the tools
/// from where the run found them, as its journal records; a tool path journaled redacted is
/// refused by the tool's name.
#[test]
fn resume_and_replay_find_the_tools_where_the_run_found_them() {
    let bare = |state: &Path, args: &[&str]| {
        let out = Command::new(BIN)
            .arg("--state-dir")
            .arg(state)
            .args(args)
            .env_remove("TOOLHOST_TOOLS_DIR")
            .output()
            .unwrap();
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (out, doc)
    };
    let dir = tempfile::tempdir().unwrap();
    let (task, state) = parallel_capped_at_three_steps(dir.path());
    let (code, _, journal) = run_in(&state, task.to_str().unwrap(), &[]);
    assert_eq!(code, 7);
    let journal = journal.to_str().unwrap();
    let (out, doc) = bare(&state, &["resume", journal, "--max-steps", "10", "--json"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(doc["stop"]["reason"], "completed", "{doc}");
    // The replay found the tools too: it ran, and parted from the record only where the
    // task's own step budget stops it (the resume had raised it).
    let (out, doc) = bare(&state, &["replay", journal, "--json"]);
    assert_eq!(out.status.code(), Some(9), "{out:?}");
    assert_eq!(
        doc["replay"]["divergences"][0]["at"], "r1:combined",
        "{doc}"
    );

    // A tools folder whose name the journal redacts (it looks like an e-mail address):
    // the journal cannot say where the tools are.
    let state = tempfile::tempdir().unwrap();
    let hidden = state.path().join("ops@example.com");
    std::fs::create_dir(&hidden).unwrap();
    for tool in ["fs", "text", "json"] {
        let file = format!("{tool}.wasm");
        std::fs::copy(Path::new(&tools_dir()).join(&file), hidden.join(&file)).unwrap();
    }
    let status = Command::new(BIN)
        .args(["--state-dir", state.path().to_str().unwrap(), "run"])
        .arg(example("research.toml"))
        .arg("--tools-dir")
        .arg(&hidden)
        .env("TOOLHOST_CRASH_AFTER_RECORD", "9")
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(!status.success());
    let run = std::fs::read_dir(state.path().join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    let (out, _) = bare(state.path(), &["resume", run.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the path of tool `fs` in run ")
            && err.contains("was journaled with part of it redacted")
            && err.contains("pass --tools-dir DIR"),
        "{err}"
    );
}
