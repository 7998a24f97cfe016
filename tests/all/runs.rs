//! `toolhost runs` (issue 42, item 3): the runs of the state directory, newest first, with
//! state, goal, start, duration and stop reason; `--json` in `serve`'s state names.

use serde_json::Value;
use toolhost_tests::{cli, path, root};

#[test]
fn runs_lists_the_state_directory_newest_first() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let s = state.display().to_string();
    let tools = std::path::Path::new(path("calc"))
        .parent()
        .unwrap()
        .display()
        .to_string();
    let empty = cli(["--state-dir", &s, "runs"]);
    assert_eq!(
        (empty.code, empty.stdout.trim()),
        (0, "no runs yet"),
        "{empty:?}"
    );

    let seed = root()
        .join("examples/tasks/seed.toml")
        .display()
        .to_string();
    let first = cli(["--state-dir", &s, "run", &seed, "--tools-dir", &tools]);
    assert_eq!(first.code, 0, "{first:?}");
    // A second run, stopped by its step budget: one step allowed, two planned.
    let tight = dir.path().join("tight.toml");
    std::fs::write(
        &tight,
        r#"goal = "What is 12 * 4 + 5?"
mode = "step-wise"
policy = "policy.toml"
tools = ["calc"]

[[planner.turns]]
next_step = "first"
tool = "calc"
operation = "eval"
arguments = { expression = "12 * 4" }
confidence = 0.95

[[planner.turns]]
next_step = "second"
tool = "calc"
operation = "eval"
arguments = { expression = "48 + 5" }
confidence = 0.95

[[planner.turns]]
stop = true
answer = 53

[budgets]
max_steps = 1
"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("policy.toml"),
        "version = 1\n[tools.calc]\n",
    )
    .unwrap();
    let tight = tight.display().to_string();
    let second = cli(["--state-dir", &s, "run", &tight, "--tools-dir", &tools]);
    assert_ne!(second.code, 0, "{second:?}");
    // Something that is not a run's journal is no run.
    std::fs::write(state.join("runs/stray.jsonl"), "not a journal\n").unwrap();

    let out = cli(["--state-dir", &s, "runs", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let runs: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(runs.len(), 2, "{runs:#?}");
    let (newest, oldest) = (&runs[0], &runs[1]);
    assert_eq!(oldest["state"], "completed", "{runs:#?}");
    assert_eq!(oldest["stop"]["reason"], "planner_stopped");
    assert_eq!(newest["state"], "failed", "{runs:#?}");
    assert_eq!(newest["stop"]["reason"], "budget_exhausted", "{runs:#?}");
    assert!(newest["started"].as_str().unwrap() >= oldest["started"].as_str().unwrap());
    for run in &runs {
        assert_eq!(run["goal"], "What is 12 * 4 + 5?");
        assert!(run["duration_ms"].is_u64(), "{run}");
        let keys: Vec<&String> = run.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["id", "state", "goal", "started", "duration_ms", "stop"]
        );
    }

    let text = cli(["--state-dir", &s, "runs"]);
    assert_eq!(text.code, 0, "{text:?}");
    let lines: Vec<&str> = text.stdout.lines().collect();
    assert!(lines[0].starts_with("RUN"), "{}", text.stdout);
    assert!(
        lines[1].contains(newest["id"].as_str().unwrap()),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.contains("stop: budget_exhausted"),
        "{}",
        text.stdout
    );
}
