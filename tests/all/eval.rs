//! `toolhost eval`, the binary as a subprocess, on the suites in `tests/eval` (copied to a
//! temporary directory, since set-up copies write next to the tasks): results and their
//! JSON, failure messages, injected faults as the journal records them, the baseline gate.

mod faults;
mod gate;
mod modes;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use toolhost_tests::{root, tools_dir};

const BIN: &str = env!("CARGO_BIN_EXE_toolhost-test-cli");

/// A copy of `tests/eval` with a state directory, and what a run of the binary left.
struct Sandbox {
    dir: tempfile::TempDir,
}

pub(crate) struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    /// The `--json` output.
    pub json: Value,
}

pub(crate) fn cache() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("temp dir"))
        .path()
}

/// `from` copied to `to`, without the directories named `skip` anywhere below it.
pub(crate) fn copy_dir(from: &Path, to: &Path, skip: &[&str]) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            if !skip.iter().any(|s| e.file_name() == *s) {
                copy_dir(&e.path(), &target, skip);
            }
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// `toolhost eval SUITE --tools-dir TOOLS --json JSON ARGS…`, the binary with its own
/// compiled-component cache and state directory.
pub(crate) fn eval_cli(dirs: [&Path; 3], suite: &Path, json: &Path, args: &[&str]) -> Out {
    let [cache, state, tools] = dirs;
    let _ = std::fs::remove_file(json);
    let out = Command::new(BIN)
        .arg("--cache-dir")
        .arg(cache)
        .arg("--state-dir")
        .arg(state)
        .arg("eval")
        .arg(suite)
        .arg("--tools-dir")
        .arg(tools)
        .arg("--json")
        .arg(json)
        .args(args)
        .env_remove("TOOLHOST_LOG")
        .output()
        .unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        json: std::fs::read_to_string(json)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null),
    }
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(&root().join("tests/eval"), &dir.path().join("eval"), &[]);
        Sandbox { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// `toolhost eval eval/SUITE ARGS… --json out.json`.
    fn eval(&self, suite: &str, args: &[&str]) -> Out {
        let tools = PathBuf::from(tools_dir());
        eval_cli(
            [cache(), &self.path("state"), &tools],
            &self.path(&format!("eval/{suite}")),
            &self.path("out.json"),
            args,
        )
    }
}

/// The errors of the steps in the journal at `path`, in journal order: `(kind, message)`.
pub(crate) fn step_errors(path: &str) -> Vec<(String, String)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["kind"] == "step_finished")
        .filter_map(|r| {
            let e = &r["data"]["error"];
            e.is_object().then(|| {
                (
                    e["kind"].as_str().unwrap().to_string(),
                    e["message"].as_str().unwrap().to_string(),
                )
            })
        })
        .collect()
}

impl Out {
    fn task(&self, id: &str) -> &Value {
        self.json["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .unwrap_or_else(|| panic!("no task {id} in {}", self.json))
    }
}

#[test]
fn a_suite_that_passes_exits_0_with_a_row_per_task_and_every_metric() {
    let s = Sandbox::new();
    let out = s.eval("core", &["--jobs", "1"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.json["suite"], "core");
    let ids: Vec<&str> = out.json["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    // Path order; `id` or the file stem.
    assert_eq!(
        ids,
        [
            "arith",
            "chain",
            "error",
            "fuel",
            "malformed",
            "probability",
            "timeout",
            "unavailable",
            "query"
        ]
    );
    for id in &ids {
        assert!(out.stdout.contains(&format!("✔  {id}")), "{}", out.stdout);
    }
    // Progress on stderr though it is a pipe here (a CI log): a line per task as it
    // finished, counted; none of them on stdout.
    let progress: Vec<&str> = out.stderr.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(progress.len(), ids.len(), "{}", out.stderr);
    for (i, line) in progress.iter().enumerate() {
        assert!(line.starts_with(&format!("[{}/9] ✔ ", i + 1)), "{line}");
    }
    assert!(!out.stdout.contains("[1/9]"), "{}", out.stdout);
    let arith = out.task("arith");
    assert_eq!(arith["passed"], true);
    assert_eq!(arith["outcome"], "completed");
    assert_eq!(arith["tool_calls"], 1);
    let journal = arith["journal"].as_str().unwrap();
    assert!(Path::new(journal).starts_with(s.path("state")), "{journal}");
    assert!(out.stdout.contains(journal));
    // The set-up copy made the file the end-state check compared.
    assert!(s.path("eval/core/state/arith.json").is_file());
    let m = &out.json["metrics"];
    assert_eq!(m["success_rate"], 1.0);
    assert_eq!(m["escalation_rate"].as_f64().unwrap(), 1.0 / 9.0);
    assert_eq!(m["replan_recovery_rate"], 1.0);
    for name in [
        "success_rate",
        "steps_per_task",
        "planner_calls_per_task",
        "tool_success_rate",
        "replans",
        "wall_ms_total",
    ] {
        assert!(out.stdout.contains(name), "{name} missing:\n{}", out.stdout);
    }
}

#[test]
fn the_json_has_the_specified_fields() {
    let out = Sandbox::new().eval("core", &[]);
    let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(keys(&out.json), ["suite", "tasks", "metrics"]);
    assert_eq!(
        keys(out.task("chain")),
        [
            "id",
            "passed",
            "outcome",
            "mode",
            "steps",
            "tool_calls",
            "tool_calls_ok",
            "planner_calls",
            "replans",
            "faults_injected",
            "recovered",
            "escalated",
            "evaluator_disagreement",
            "input_tokens",
            "cached_input_tokens",
            "output_tokens",
            "cost_usd",
            "wall_ms",
            "step_ms",
            "failures",
            "journal"
        ]
    );
    assert_eq!(
        keys(&out.json["metrics"]),
        [
            "success_rate",
            "steps_per_task",
            "planner_calls_per_task",
            "tool_success_rate",
            "replans",
            "replan_recovery_rate",
            "escalation_rate",
            "evaluator_disagreement_rate",
            "input_tokens",
            "output_tokens",
            "cost_usd",
            "wall_ms_p50",
            "wall_ms_total"
        ]
    );
    assert!(out.json["metrics"]["replans"].is_u64());
    assert_eq!(out.task("chain")["step_ms"].as_array().unwrap().len(), 2);
}

#[test]
fn failed_checks_are_sentences_naming_expected_and_got() {
    let out = Sandbox::new().eval("fails", &[]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("error: 2 task(s) and 0 metric(s) failed the gate"),
        "{}",
        out.stderr
    );
    let mismatch = out.task("mismatch");
    assert_eq!(mismatch["passed"], false);
    assert_eq!(
        mismatch["failures"],
        serde_json::json!([
            "sequence: expected [calc.eval, text.count], got [calc.eval]",
            "answer: expected 5, got 4"
        ])
    );
    assert!(
        out.stdout.contains("      answer: expected 5, got 4"),
        "{}",
        out.stdout
    );
    let judge = out.task("judge")["failures"][0]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        judge.starts_with("answer: expected an answer that `json.validate` passes, got 4"),
        "{judge}"
    );
}

/// The results without what varies from run to run (times, journal paths).
fn stable(out: &Out) -> Value {
    let mut v = out.json.clone();
    for t in v["tasks"].as_array_mut().unwrap() {
        let t = t.as_object_mut().unwrap();
        for k in ["wall_ms", "step_ms", "journal"] {
            t.remove(k);
        }
    }
    let m = v["metrics"].as_object_mut().unwrap();
    m.remove("wall_ms_p50");
    m.remove("wall_ms_total");
    v
}

#[test]
fn tasks_at_once_give_the_results_of_one_at_a_time() {
    let s = Sandbox::new();
    let one = s.eval("core", &["--jobs", "1"]);
    let four = s.eval("core", &["--jobs", "4"]);
    assert_eq!(one.code, 0);
    assert_eq!(stable(&one), stable(&four));
}

#[test]
fn the_html_page_has_a_chart_per_metric_and_no_external_resource() {
    let s = Sandbox::new();
    let page = s.path("eval.html");
    let base = s.path("base.json");
    let out = s.eval(
        "core",
        &[
            "--html",
            page.to_str().unwrap(),
            "--write-baseline",
            base.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 0);
    let out = s.eval(
        "core",
        &[
            "--html",
            page.to_str().unwrap(),
            "--baseline",
            base.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches(r#"<svg class="metric""#).count(), 13);
    assert_eq!(html.matches(r#"class="band""#).count(), 13);
    assert!(html.contains("every metric within its baseline band"));
    assert!(!html.contains("http://") && !html.contains("https://") && !html.contains("<script"));
}
