//! Planning modes on a suite we did not write: the BFCL multi-turn suite
//! (`tests/bfcl/suite`, converted from bfcl-eval by `tests/bfcl/convert.py`), whose every
//! task's script holds the ground truth as a plan, as step-wise turns and as a code-mode
//! program. Each mode runs the whole suite through `toolhost eval --mode M --count-tokens`
//! (this binary as the CLI), so the tokens are what a model planner would be sent and
//! would write for the same calls (`toolhost_llm::Counted`), and success is checked by the
//! suite's own end-state checks: the modes are compared at equal success or not at all.
//!
//! Needs the BFCL tools (`scripts/guest-langs.sh` builds them into the tools directory);
//! without them, and in `--quick` runs (compiling the eight Python tools takes minutes on
//! two cores), the group says so and reports nothing. `bfcl::every_converted_task_…` in
//! the tests checks the same 60% goal on every test run.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::{Figure, Scale};

/// The tools the suite's tasks call, one per BFCL backend class.
const TOOLS: &[&str] = &[
    "bfcl-fs", "math", "message", "ticket", "trading", "travel", "twitter", "vehicle",
];

/// What one mode spent over the whole suite.
struct Totals {
    tasks: usize,
    passed: usize,
    input: u64,
    cached: u64,
    output: u64,
    calls: u64,
}

impl Totals {
    fn per_task(&self, n: u64) -> f64 {
        n as f64 / self.tasks as f64
    }

    fn describe(&self, mode: &str) -> String {
        format!(
            "{mode}: {:.0} in ({:.0} cached) + {:.0} out tokens, {:.1} planner calls per task, {} of {} passed",
            self.per_task(self.input),
            self.per_task(self.cached),
            self.per_task(self.output),
            self.per_task(self.calls),
            self.passed,
            self.tasks
        )
    }
}

pub fn run(scale: Scale) -> Vec<Figure> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let tools = PathBuf::from(toolhost_tests::tools_dir());
    if scale.quick {
        println!("planning (BFCL suite): not in --quick runs (it compiles eight Python tools)");
        return Vec::new();
    }
    if let Some(missing) = TOOLS
        .iter()
        .find(|t| !tools.join(format!("{t}.wasm")).is_file())
    {
        println!(
            "planning (BFCL suite): not measured: `{missing}` is not built in {} (scripts/guest-langs.sh builds the BFCL tools)",
            tools.display()
        );
        return Vec::new();
    }
    let work = tempfile::tempdir().expect("a temporary directory");
    for part in ["suite", "policy"] {
        copy_dir(&root.join("tests/bfcl").join(part), &work.path().join(part));
    }
    let cache = root.join("target/bfcl/cache");
    let run = |mode| eval(work.path(), &cache, &tools, mode);
    let (whole, stepwise, code) = (run("plan-then-execute"), run("step-wise"), run("code"));
    let detail = [
        whole.describe("plan-then-execute"),
        stepwise.describe("step-wise"),
        code.describe("code mode"),
    ]
    .join("; ");
    // Equal success or no figure: a mode that failed tasks would look cheaper for it.
    for t in [&whole, &stepwise, &code] {
        assert_eq!(t.passed, t.tasks, "{detail}");
    }
    let figure = |name, ratio, target| Figure {
        name,
        detail: detail.clone(),
        ratio,
        target,
        lower_is_better: false,
        gated: true,
    };
    vec![
        figure(
            "BFCL suite: step-wise planner input tokens over code mode's (goal: 60% fewer)",
            stepwise.input as f64 / code.input as f64,
            2.5,
        ),
        figure(
            "BFCL suite: step-wise planner input tokens over plan-then-execute's",
            stepwise.input as f64 / whole.input as f64,
            1.0,
        ),
        figure(
            "BFCL suite: step-wise planner round trips over code mode's",
            stepwise.calls as f64 / code.calls as f64,
            1.0,
        ),
    ]
}

/// The suite in `work` run in `mode` with `--count-tokens`, summed over its tasks.
fn eval(work: &Path, cache: &Path, tools: &Path, mode: &str) -> Totals {
    let json = work.join(format!("{mode}.json"));
    let out = Command::new(std::env::current_exe().expect("own path"))
        .env(super::mcp::AS_CLI, "1")
        .env_remove("TOOLHOST_LOG")
        .arg("--cache-dir")
        .arg(cache)
        .arg("--state-dir")
        .arg(work.join("state"))
        .arg("eval")
        .arg(work.join("suite"))
        .arg("--tools-dir")
        .arg(tools)
        .args(["--jobs", "2", "--count-tokens", "--mode", mode, "--json"])
        .arg(&json)
        .output()
        .expect("toolhost eval starts");
    let text = std::fs::read_to_string(&json).unwrap_or_else(|e| {
        panic!(
            "{mode}: no results ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let doc: Value = serde_json::from_str(&text).expect("the results are JSON");
    let tasks = doc["tasks"].as_array().expect("a tasks array");
    let sum = |k: &str| tasks.iter().map(|t| t[k].as_u64().unwrap_or(0)).sum();
    Totals {
        tasks: tasks.len(),
        passed: tasks.iter().filter(|t| t["passed"] == true).count(),
        input: sum("input_tokens"),
        cached: sum("cached_input_tokens"),
        output: sum("output_tokens"),
        calls: sum("planner_calls"),
    }
}

/// Copies the directory `from` to `to`, without the `state/` directories a run in place
/// may have left.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("a copy of the suite");
    for entry in std::fs::read_dir(from).expect("the suite is there") {
        let entry = entry.expect("a directory entry");
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type().expect("a file type").is_dir() {
            if entry.file_name() != "state" {
                copy_dir(&src, &dst);
            }
        } else {
            std::fs::copy(&src, &dst).expect("a copied file");
        }
    }
}
