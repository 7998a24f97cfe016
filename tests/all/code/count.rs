//! `--count-tokens`: one script that answers every mode (a plan, turns and a program for
//! the same three calls), charged as a model planner would be: each mode completes with the
//! same calls, step-wise asks once per call plus the stop and pays for its history, code
//! mode sends one prompt; without the flag a script costs nothing, and over a planner that
//! reports its own usage (a cassette) the flag is refused.

use serde_json::Value;
use toolhost_tests::cli;

const TASK: &str = r#"goal = "three sums"
policy = "policy.toml"
tools = ["calc"]

[planner]
program = '''
answer([calc.eval_(expression=e) for e in ["1 + 1", "2 + 2", "3 + 3"]])
'''
turns = [
  { tool = "calc", operation = "eval", arguments = { expression = "1 + 1" } },
  { tool = "calc", operation = "eval", arguments = { expression = "2 + 2" } },
  { tool = "calc", operation = "eval", arguments = { expression = "3 + 3" } },
  { stop = true },
]

[planner.plan]
goal = "three sums"
steps = [
  { id = "s1", tool = "calc", operation = "eval", args = { expression = "1 + 1" } },
  { id = "s2", tool = "calc", operation = "eval", args = { expression = "2 + 2" } },
  { id = "s3", tool = "calc", operation = "eval", args = { expression = "3 + 3" } },
]
"#;

/// [`TASK`] and its policy written into `dir`; the task file's path.
fn written_task(dir: &std::path::Path) -> std::path::PathBuf {
    std::fs::write(dir.join("policy.toml"), "version = 1\n[tools.calc]\n").unwrap();
    let task = dir.join("task.toml");
    std::fs::write(&task, TASK).unwrap();
    task
}

/// The run's `spent` in `mode`, with `extra` flags; the run must end normally with three
/// calls made.
fn spent(task: &str, mode: &str, extra: &[&str]) -> Value {
    let (code, doc) = super::run_json(task, &[&["--mode", mode], extra].concat());
    assert_eq!(code, 0, "{mode}: {doc:#}");
    assert_eq!(doc["spent"]["steps"], 3, "{mode}: {doc:#}");
    doc["spent"].clone()
}

#[test]
fn one_script_answers_every_mode_and_each_is_charged_as_a_model_would_be() {
    let dir = tempfile::tempdir().unwrap();
    let task = written_task(dir.path());
    let task = task.to_str().unwrap();
    let count = ["--count-tokens"];
    let whole = spent(task, "plan-then-execute", &count);
    let stepwise = spent(task, "step-wise", &count);
    let code = spent(task, "code", &count);
    let n = |s: &Value, k: &str| s[k].as_u64().unwrap();
    assert_eq!(n(&whole, "planner_calls"), 1);
    assert_eq!(n(&code, "planner_calls"), 1);
    assert_eq!(n(&stepwise, "planner_calls"), 4);
    for s in [&whole, &stepwise, &code] {
        assert!(
            n(s, "input_tokens") > 500,
            "the prompt has rules and tools: {s}"
        );
        assert!(n(s, "output_tokens") > 0, "{s}");
    }
    // Step-wise sends the same prefix four times (read from a cache after the first).
    assert!(n(&stepwise, "input_tokens") > 3 * n(&code, "input_tokens"));
    assert!(n(&stepwise, "cached_input_tokens") > 0, "{stepwise}");
    assert_eq!(n(&code, "cached_input_tokens"), 0, "{code}");
    // The program is shorter than the plan's JSON.
    assert!(n(&code, "output_tokens") < n(&whole, "output_tokens"));
    // Without the flag a script is free.
    let free = spent(task, "code", &[]);
    assert_eq!(n(&free, "input_tokens"), 0, "{free}");
}

#[test]
fn counting_over_a_planner_that_reports_its_own_usage_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let task = written_task(dir.path());
    let cassette = dir.path().join("planner.jsonl");
    let (task, cassette) = (task.to_str().unwrap(), cassette.to_str().unwrap());
    let tools = toolhost_tests::tools_dir();
    let recorded = cli(["run", task, "--tools-dir", &tools, "--record", cassette]);
    assert_eq!(recorded.code, 0, "{recorded:?}");
    let out = cli([
        "run",
        task,
        "--tools-dir",
        &tools,
        "--planner",
        "replay",
        "--cassette",
        cassette,
        "--count-tokens",
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains(
            "--count-tokens charges a scripted planner's answers as a model planner's would be; this run's planner (`replay`) reports the usage it was charged itself"
        ),
        "{out:?}"
    );
}
