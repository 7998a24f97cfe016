//! Plan memory through `toolhost run`: a completed run's plan is stored, the same goal and
//! tools run it again without asking the model (recorded in the journal), a changed tool
//! set or a failed run stores or finds nothing, and a corrupt entry is a warned miss.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use toolhost_engine::PlanMemory;
use toolhost_tests::cli;
use toolhost_tests::server::{Canned, Server};

use super::mock::{base_url, openai};
use super::{catalog_in, strict_plan, strict_step};

struct Setup {
    dir: tempfile::TempDir,
    task: PathBuf,
}

impl Setup {
    /// A task asking `mock` (a keyless compatible server) about `goal` with `tools`, and
    /// the policy allowing them; plan memory enabled unless `memory` is false.
    fn new(mock: &Server, goal: &str, tools: &[&str], memory: bool) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let mut policy = String::from("version = 1\n");
        let mut paths = Vec::new();
        for t in tools {
            policy.push_str(&format!("[tools.{t}]\n"));
            paths.push(format!("{t} = {:?}", toolhost_tests::path(t)));
        }
        std::fs::write(dir.path().join("policy.toml"), policy).unwrap();
        let task = dir.path().join("task.toml");
        std::fs::write(
            &task,
            format!(
                "goal = {goal:?}\npolicy = \"policy.toml\"\ntools = {{ {} }}\n\
                 [budgets]\nmax_replans = 0\n\
                 [planner]\nkind = \"openai-compatible\"\nmodel = \"m\"\nbase_url = {:?}\nmax_retries = 0\n\
                 [memory]\nenabled = {memory}\n",
                paths.join(", "),
                base_url(mock)
            ),
        )
        .unwrap();
        Setup { dir, task }
    }

    fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    /// `toolhost run TASK --json EXTRA…`: exit code, report, stderr.
    fn run(&self, extra: &[&str]) -> (i32, Value, String) {
        let mut args = vec![
            "--state-dir".to_string(),
            self.state().display().to_string(),
            "run".into(),
            self.task.display().to_string(),
            "--json".into(),
        ];
        args.extend(extra.iter().map(ToString::to_string));
        let out = cli(&args);
        let report = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
        (out.code, report, out.stderr)
    }

    fn entries(&self) -> Vec<PathBuf> {
        match std::fs::read_dir(self.state().join("plans")) {
            Ok(d) => d.map(|e| e.unwrap().path()).collect(),
            Err(_) => Vec::new(),
        }
    }
}

fn answer(expression: &str) -> Canned {
    let step = strict_step("s1", "calc", "eval", json!({"expression": expression}));
    openai(&strict_plan("g", vec![step]), 100, 10)
}

fn journal(report: &Value) -> Vec<Value> {
    let path = report["journal"]["path"].as_str().expect("a journal path");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_stored_plan_is_run_again_without_asking_the_model() {
    let mock = Server::replying(vec![answer("40 + 2"), answer("40 + 2")]);
    let s = Setup::new(&mock, "What is 40 + 2?", &["calc"], true);
    let (code, first, stderr) = s.run(&[]);
    assert_eq!(code, 0, "{stderr}\n{first:#}");
    assert_eq!(mock.received().len(), 1);
    assert_eq!(s.entries().len(), 1, "{:?}", s.entries());

    // Off for one run: the model is asked.
    let (code, _, stderr) = s.run(&["--no-plan-memory"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(mock.received().len(), 2);

    let (code, again, stderr) = s.run(&[]);
    assert_eq!(code, 0, "{stderr}\n{again:#}");
    assert_eq!(mock.received().len(), 2, "the hit asked the model");
    assert_eq!(again["answer"], json!(42));
    let call = &again["planner_calls"][0];
    assert_eq!(call["model"], "plan-memory");
    assert_eq!(call["cached"], true);
    assert_eq!(
        (
            call["input_tokens"].as_u64(),
            call["output_tokens"].as_u64()
        ),
        (Some(0), Some(0))
    );
    assert_eq!(again["spent"]["input_tokens"], 0);
    let called: Vec<Value> = journal(&again)
        .into_iter()
        .filter(|r| r["kind"] == "planner_called")
        .collect();
    assert_eq!(called.len(), 1);
    assert_eq!(called[0]["data"]["model"], "plan-memory");
    assert_eq!(called[0]["data"]["cached"], true);
}

#[test]
fn a_goal_spelled_differently_hits_and_the_flag_turns_memory_on() {
    let mock = Server::replying(vec![answer("40 + 2")]);
    let s = Setup::new(&mock, "What is 40 + 2?", &["calc"], false);
    assert_eq!(s.run(&["--plan-memory"]).0, 0);
    assert_eq!(s.entries().len(), 1);
    let t = Setup::new(&mock, "  what IS 40 +   2 ", &["calc"], false);
    std::fs::rename(s.state(), t.state()).unwrap();
    let (code, report, stderr) = t.run(&["--plan-memory"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["planner_calls"][0]["model"], "plan-memory");
    assert_eq!(mock.received().len(), 1);
}

#[test]
fn a_changed_tool_set_misses() {
    let mock = Server::replying(vec![answer("40 + 2"), answer("40 + 2")]);
    let s = Setup::new(&mock, "What is 40 + 2?", &["calc"], true);
    assert_eq!(s.run(&[]).0, 0);
    let t = Setup::new(&mock, "What is 40 + 2?", &["calc", "text"], true);
    std::fs::rename(s.state(), t.state()).unwrap();
    let (code, report, stderr) = t.run(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["planner_calls"][0]["model"], "m");
    assert_eq!(mock.received().len(), 2);
    assert_eq!(t.entries().len(), 2);

    // A policy that allows other operations of the same component is another key; one
    // that spells out the operations it already allowed is not.
    let key = |policy: &str| {
        let c = catalog_in(&format!("version = 1\n{policy}"), Path::new("."));
        PlanMemory::new(Path::new("/s"), "g", &c)
            .path()
            .to_path_buf()
    };
    assert_ne!(
        key("[tools.text]\n"),
        key("[tools.text]\noperations = [\"count\"]\n")
    );
    assert_eq!(
        key("[tools.calc]\n"),
        key("[tools.calc]\noperations = [\"eval\"]\n")
    );
}

#[test]
fn a_failed_run_stores_nothing() {
    let mock = Server::replying(vec![answer("1 / 0")]);
    let s = Setup::new(&mock, "What is 1 / 0?", &["calc"], true);
    let (code, report, stderr) = s.run(&[]);
    assert_eq!(code, 7, "{stderr}\n{report:#}");
    assert_eq!(report["stop"]["reason"], "replan_limit", "{report:#}");
    assert!(s.entries().is_empty(), "{:?}", s.entries());
}

#[test]
fn a_corrupt_entry_is_a_miss_with_a_warning_and_is_replaced() {
    let mock = Server::replying(vec![answer("40 + 2"), answer("40 + 2")]);
    let s = Setup::new(&mock, "What is 40 + 2?", &["calc"], true);
    assert_eq!(s.run(&[]).0, 0);
    let entry = s.entries().pop().expect("an entry");
    std::fs::write(&entry, "{\"version\": 1, \"plan\": ").unwrap();
    let (code, report, stderr) = s.run(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("warning: plan memory") && stderr.contains("treated as a miss"),
        "{stderr}"
    );
    assert_eq!(report["planner_calls"][0]["model"], "m");
    assert_eq!(mock.received().len(), 2);
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&entry).unwrap()).unwrap();
    assert_eq!(stored["version"], 1);
}

/// A recalled plan runs as revision 1: an entry someone else could have written (edited,
/// here, to compute something else) must not be used.
#[test]
fn an_entry_another_user_could_have_written_is_not_used() {
    use std::os::unix::fs::PermissionsExt;
    let mock = Server::replying(vec![answer("40 + 2"), answer("40 + 2"), answer("40 + 2")]);
    let s = Setup::new(&mock, "What is 40 + 2?", &["calc"], true);
    assert_eq!(s.run(&[]).0, 0);
    let entry = s.entries().pop().expect("an entry");
    // SAFETY: geteuid(2) cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("not root: the case of another user's entry is skipped");
    }
    let mut asked = 1;
    for (how, why) in [
        ("writable by others", "mode 0666"),
        ("another user's", "owned by uid 65534"),
    ] {
        if how == "another user's" && !root {
            continue;
        }
        let text = std::fs::read_to_string(&entry).unwrap();
        assert!(text.contains("40 + 2"), "{text}");
        std::fs::write(&entry, text.replace("40 + 2", "1 + 1")).unwrap();
        if how == "writable by others" {
            std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o666)).unwrap();
        } else {
            std::os::unix::fs::lchown(&entry, Some(65534), Some(65534)).unwrap();
        }
        let (code, report, stderr) = s.run(&[]);
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(
            (&report["answer"], &report["planner_calls"][0]["model"]),
            (&json!(42), &json!("m")),
            "an entry {how} was run: {report:#}"
        );
        assert!(
            stderr.contains("warning: plan memory") && stderr.contains(why),
            "{how}: {stderr}"
        );
        asked += 1;
        assert_eq!(mock.received().len(), asked);
    }
}
