//! Planning modes on AgentDojo's four suites (v1, `agentdojo==0.1.35`): each user task's
//! ground truth as a plan, as step-wise turns and as a code-mode program, all three written
//! by `bench/agentdojo/harness.py` from AgentDojo's own ground-truth calls (not by hand),
//! run through `toolhost eval --count-tokens` (this binary as the CLI) and scored by
//! AgentDojo's own utility checks. User tasks alone (`--pairs 0`), scripted planner, no
//! defence: the figure is the planner's tokens, not an attack's outcome (`scripts/agentdojo.sh`
//! and SECURITY.md measure those).
//!
//! The modes are compared at equal success or not at all. At the run's default budget of
//! 100,000 input tokens, step-wise stops `budget_exhausted` on some workspace and travel
//! tasks (BENCHMARKS.md, section 7); here every run gets [`BUDGET`], so each mode finishes
//! what it can and the figure is what step-wise needs to do as well as code mode.
//!
//! Needs the harness's venv (`scripts/agentdojo.sh install`; the test command makes it) and
//! the suites' tools in the tools directory; without them, and in `--quick` runs, the group
//! says so and reports nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::{Figure, Scale};

/// Each suite, the tool its tasks call, and its figure's name.
const SUITES: &[(&str, &str, &str)] = &[
    (
        "banking",
        "bank",
        "AgentDojo banking: step-wise planner input tokens over code mode's (goal: 60% fewer)",
    ),
    (
        "slack",
        "slack",
        "AgentDojo slack: step-wise planner input tokens over code mode's (goal: 60% fewer)",
    ),
    (
        "workspace",
        "workspace",
        "AgentDojo workspace: step-wise planner input tokens over code mode's (goal: 60% fewer)",
    ),
    (
        "travel",
        "booking",
        "AgentDojo travel: step-wise planner input tokens over code mode's (goal: 60% fewer)",
    ),
];

/// The input-token budget of every run here: room for step-wise to finish.
const BUDGET: u64 = 1_000_000;

/// What one mode spent on one suite, per user task.
struct Row {
    utility: f64,
    input: f64,
    output: f64,
    calls: f64,
}

pub fn run(scale: Scale) -> Vec<Figure> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let tools = PathBuf::from(toolhost_tests::tools_dir());
    if scale.quick {
        println!("planning (AgentDojo): not in --quick runs");
        return Vec::new();
    }
    let python = root.join("target/agentdojo/venv/bin/python");
    if !python.is_file() {
        println!(
            "planning (AgentDojo): not measured: no venv at {} (scripts/agentdojo.sh install makes it)",
            python.display()
        );
        return Vec::new();
    }
    if let Some((_, missing, _)) = SUITES
        .iter()
        .find(|(_, t, _)| !tools.join(format!("{t}.wasm")).is_file())
    {
        println!(
            "planning (AgentDojo): not measured: `{missing}` is not built in {}",
            tools.display()
        );
        return Vec::new();
    }
    let out = tempfile::tempdir().expect("a temporary directory");
    let ran = Command::new(&python)
        .arg(root.join("bench/agentdojo/harness.py"))
        .arg(std::env::current_exe().expect("own path"))
        .arg(&tools)
        .arg(out.path())
        .args(SUITES.iter().map(|(s, _, _)| s))
        .args([
            "--pairs",
            "0",
            "--planners",
            "scripted",
            "--defences",
            "none",
        ])
        .args(["--max-input-tokens", &BUDGET.to_string()])
        .env(super::mcp::AS_CLI, "1")
        .env_remove("TOOLHOST_LOG")
        .output()
        .expect("the AgentDojo harness starts");
    assert!(
        ran.status.success(),
        "the AgentDojo harness failed: {}",
        String::from_utf8_lossy(&ran.stderr)
    );
    SUITES
        .iter()
        .map(|(suite, _, name)| figure(out.path(), suite, name))
        .collect()
}

/// The figure of `suite` from the harness's rows in `out`.
fn figure(out: &Path, suite: &str, name: &'static str) -> Figure {
    let path = out.join(format!("agentdojo-{suite}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let rows: Vec<Value> = serde_json::from_str(&text).expect("the harness's rows are JSON");
    let row = |mode: &str| {
        let r = rows
            .iter()
            .find(|r| r["mode"] == mode)
            .unwrap_or_else(|| panic!("{suite}: no {mode} row"));
        let f = |k: &str| {
            r[k].as_f64()
                .unwrap_or_else(|| panic!("{suite} {mode}: {k}"))
        };
        Row {
            utility: f("utility"),
            input: f("input_tokens_per_task"),
            output: f("output_tokens_per_task"),
            calls: f("planner_calls_per_task"),
        }
    };
    let modes = [
        ("plan-then-execute", row("plan-then-execute")),
        ("step-wise", row("step-wise")),
        ("code mode", row("code")),
    ];
    let detail = modes
        .iter()
        .map(|(m, r)| {
            format!(
                "{m}: {:.0} in + {:.0} out tokens, {:.1} planner calls per task, utility {:.3}",
                r.input, r.output, r.calls, r.utility
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    // Equal success or no figure: a mode that failed tasks would look cheaper for it.
    assert!(
        modes.iter().all(|(_, r)| r.utility == modes[0].1.utility),
        "{suite}: the modes' utilities differ: {detail}"
    );
    Figure {
        name,
        detail: format!("{suite}, user tasks alone: {detail}"),
        ratio: modes[1].1.input / modes[2].1.input,
        target: 2.5,
        lower_is_better: false,
        gated: true,
    }
}
