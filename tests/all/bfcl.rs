//! The BFCL-derived suite (`tests/bfcl`, converted by `tests/bfcl/convert.py` from
//! bfcl-eval's multi-turn base category): `toolhost eval`, the binary as a subprocess, runs
//! every task through the generated `tools/bfcl` tools to the end state plain Python
//! reached (`scripts/bfcl.sh` adds BFCL's own state comparison and the timing); and a
//! task's state grant is the boundary of what its tools can change or even see.
//!
//! The suite is copied to a temporary directory first: set-up copies write next to the
//! tasks. Compiled components go to a cache under cargo's `CARGO_TARGET_TMPDIR`, kept
//! between test runs: compiling the eight Python tools takes about 12 s each (a cold run
//! of these tests takes about 3 minutes on 2 cores, a warm one under 20 s), and the cache
//! is keyed by each component's digest and checked before use.

use std::path::{Path, PathBuf};

use serde_json::Value;
use toolhost_tests::{path, root};

use crate::eval::{Out, copy_dir, eval_cli, step_errors};

/// Every tool `tools/bfcl/gen.py` generates, one per BFCL backend class.
pub const TOOLS: &[&str] = &[
    "bfcl-fs", "math", "message", "ticket", "trading", "travel", "twitter", "vehicle",
];

/// A task whose ground truth only uses the file system: `ls(a=True)`, `cd`, `mv`, ...
const FS_TASK: &str = "multi_turn_base_1";

/// The compiled-component cache for these tests, emptied when any BFCL component has
/// changed since it was filled (each holds 40 MB per component, and a rebuilt component
/// never hits the old entries).
fn cache() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bfcl-cache");
        let stamp: String = TOOLS
            .iter()
            .map(|name| {
                let meta = std::fs::metadata(path(name)).unwrap();
                format!("{name} {} {:?}\n", meta.len(), meta.modified().unwrap())
            })
            .collect();
        let file = dir.join("components");
        if std::fs::read_to_string(&file).ok().as_deref() != Some(stamp.as_str()) {
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&file, stamp).unwrap();
        }
        dir
    })
    .clone()
}

/// `tests/bfcl/{suite,policy}` (every task, or one) in a temporary directory, without
/// the `state/` a run in place may have left.
struct Copy {
    dir: tempfile::TempDir,
}

impl Copy {
    fn new(only: Option<&str>) -> Copy {
        let dir = tempfile::tempdir().unwrap();
        let (src, to) = (root().join("tests/bfcl/suite"), dir.path().join("suite"));
        match only {
            None => copy_dir(&src, &to, &["state"]),
            Some(id) => copy_dir(&src.join(id), &to.join(id), &["state"]),
        }
        copy_dir(
            &root().join("tests/bfcl/policy"),
            &dir.path().join("policy"),
            &[],
        );
        Copy { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn eval(&self, jobs: &str) -> Out {
        self.eval_with(&["--jobs", jobs])
    }

    fn eval_with(&self, args: &[&str]) -> Out {
        let tools = Path::new(path("bfcl-fs")).parent().unwrap();
        eval_cli(
            [&cache(), &self.path("runs"), tools],
            &self.path("suite"),
            &self.path("out.json"),
            args,
        )
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }
}

/// The one task of a run of a one-task copy.
fn only_task(out: &Out) -> &Value {
    let tasks = out.json["tasks"].as_array().expect("a tasks array");
    assert_eq!(tasks.len(), 1, "{}", out.json);
    &tasks[0]
}

/// The first step error in the journal at `path`: the failed step's (the skipped
/// steps after it come later).
fn step_error(path: &str) -> (String, String) {
    step_errors(path).into_iter().next().expect("a failed step")
}

/// What a whole-suite run in one mode spent, summed over its tasks.
#[derive(Debug, Default)]
struct Spent {
    input_tokens: u64,
    planner_calls: u64,
}

/// Runs the whole suite in `mode` with `--count-tokens`; every task must pass, each of its
/// calls succeeding. Returns the run's JSON tasks and what they spent.
fn every_task_passes(copy: &Copy, mode: &str) -> (Vec<Value>, Spent) {
    let out = copy.eval_with(&["--jobs", "2", "--mode", mode, "--count-tokens"]);
    assert_eq!(out.code, 0, "{mode}: {}\n{}", out.stdout, out.stderr);
    let tasks = out.json["tasks"].as_array().unwrap().clone();
    let mut spent = Spent::default();
    for t in &tasks {
        assert_eq!(t["passed"], true, "{mode}: {t}");
        assert_eq!(t["mode"], mode, "{t}");
        assert_eq!(t["tool_calls"], t["tool_calls_ok"], "{mode}: {t}");
        spent.input_tokens += t["input_tokens"].as_u64().unwrap();
        spent.planner_calls += t["planner_calls"].as_u64().unwrap();
    }
    (tasks, spent)
}

/// The suite passes in each mode from the same scripts (`plan.json` holds the plan, the
/// same calls as turns and as a program), and code mode sends the planner far fewer
/// tokens than step-wise: the goal is at least 60% fewer input tokens. The counts
/// are `--count-tokens`' (what a model planner would be sent), so they do not vary from
/// run to run; the benchmark's `planning` group reports them beside each other.
#[test]
fn every_converted_task_reaches_the_plain_python_end_state_in_every_mode() {
    if !crate::langs::built() {
        return;
    }
    let copy = Copy::new(None);
    let (tasks, whole) = every_task_passes(&copy, "plan-then-execute");
    let dirs = std::fs::read_dir(copy.path("suite"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().join("task.toml").is_file())
        .count();
    // Issue 19 asks for at least 50 trajectories; convert.py keeps all but those it
    // cannot express (it says which).
    assert!(tasks.len() >= 100, "{} tasks", tasks.len());
    assert_eq!(tasks.len(), dirs);
    let mut called: Vec<&str> = Vec::new();
    for t in &tasks {
        let plan: Value = serde_json::from_str(
            &copy.read(&format!("suite/{}/plan.json", t["id"].as_str().unwrap())),
        )
        .unwrap();
        for step in plan["plan"]["steps"].as_array().unwrap() {
            called.push(TOOLS.iter().find(|n| step["tool"] == **n).unwrap());
        }
    }
    for tool in TOOLS {
        assert!(called.contains(tool), "no task calls `{tool}`");
    }
    // The end-state check compared what the tools saved with what plain Python reached:
    // the public attributes, which are what BFCL's state_checker compares.
    let state: Value =
        serde_json::from_str(&copy.read(&format!("suite/{FS_TASK}/state/GorillaFileSystem.json")))
            .unwrap();
    assert_eq!(state["class"], "GorillaFileSystem");
    assert!(state["attrs"]["root"].is_object(), "{state}");
    assert_eq!(
        state,
        serde_json::from_str::<Value>(
            &copy.read(&format!("suite/{FS_TASK}/expected/GorillaFileSystem.json"))
        )
        .unwrap()
    );
    let (_, stepwise) = every_task_passes(&copy, "step-wise");
    let (_, code) = every_task_passes(&copy, "code");
    let n = tasks.len() as u64;
    assert_eq!(whole.planner_calls, n, "{whole:?}");
    assert_eq!(code.planner_calls, n, "{code:?}");
    assert!(stepwise.planner_calls > 3 * n, "{stepwise:?}");
    assert!(
        code.input_tokens * 10 <= stepwise.input_tokens * 4,
        "code mode {code:?} vs step-wise {stepwise:?}: not 60% fewer input tokens"
    );
}

/// Rewrites the task's policy with `f`.
fn edit_policy(copy: &Copy, id: &str, f: impl Fn(String) -> String) {
    let p = copy.path(&format!("policy/{id}.toml"));
    let text = std::fs::read_to_string(&p).unwrap();
    let edited = f(text.clone());
    assert_ne!(edited, text, "the edit changed nothing");
    std::fs::write(p, edited).unwrap();
}

#[test]
fn a_read_only_state_grant_refuses_the_save_and_keeps_the_state() {
    if !crate::langs::built() {
        return;
    }
    let copy = Copy::new(Some(FS_TASK));
    edit_policy(&copy, FS_TASK, |p| {
        p.replace("access = \"read-write\"", "access = \"read\"")
    });
    let out = copy.eval("1");
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let t = only_task(&out);
    assert_eq!(t["passed"], false);
    assert_eq!(t["outcome"], "replan_limit", "{t}");
    assert_eq!(t["tool_calls_ok"], 0, "{t}");
    let (kind, message) = step_error(t["journal"].as_str().unwrap());
    assert_eq!(kind, "denied", "{message}");
    assert!(
        message.contains(
            "the sandbox refused `create` of `/state/GorillaFileSystem.private.json.tmp`"
        ),
        "{message}"
    );
    // The tool read its state, ran `ls`, and could not write a byte of it back.
    let dir = format!("suite/{FS_TASK}");
    assert_eq!(
        copy.read(&format!("{dir}/state/GorillaFileSystem.json")),
        copy.read(&format!("{dir}/initial/GorillaFileSystem.json"))
    );
    assert!(
        !copy
            .path(&format!("{dir}/state/GorillaFileSystem.private.json"))
            .exists()
    );
}

#[test]
fn a_state_file_outside_the_grant_is_not_there_for_the_tool() {
    if !crate::langs::built() {
        return;
    }
    let copy = Copy::new(Some(FS_TASK));
    // The set-up copy still writes the task's state/; the tool is granted another directory.
    let other = copy.path(&format!("suite/{FS_TASK}/other"));
    std::fs::create_dir(&other).unwrap();
    edit_policy(&copy, FS_TASK, |p| {
        p.replace(&format!("{FS_TASK}/state\""), &format!("{FS_TASK}/other\""))
    });
    let out = copy.eval("1");
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let t = only_task(&out);
    assert_eq!(t["outcome"], "replan_limit", "{t}");
    let (kind, message) = step_error(t["journal"].as_str().unwrap());
    assert_eq!(kind, "tool_error", "{message}");
    assert!(
        message.contains("state: cannot read `/state/GorillaFileSystem.json`"),
        "{message}"
    );
    let dir = format!("suite/{FS_TASK}");
    assert_eq!(
        copy.read(&format!("{dir}/state/GorillaFileSystem.json")),
        copy.read(&format!("{dir}/initial/GorillaFileSystem.json"))
    );
    assert_eq!(std::fs::read_dir(&other).unwrap().count(), 0);
}
