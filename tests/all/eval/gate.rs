//! The baseline gate: `--write-baseline` writes bands the same run stays in; `--baseline`
//! exits 1 naming each metric that left its band.

use serde_json::Value;

use super::Sandbox;

#[test]
fn a_written_baseline_passes_its_own_suite_and_names_the_metric_that_leaves_its_band() {
    let s = Sandbox::new();
    let base = s.path("base.json");
    let base_arg = base.to_str().unwrap();
    let out = s.eval("core", &["--write-baseline", base_arg]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&base).unwrap()).unwrap();
    let success = &doc["metrics"]["success_rate"];
    assert_eq!(success["value"], 1.0);
    assert_eq!(success["min"], 0.95);
    assert_eq!(doc["metrics"].as_object().unwrap().len(), 13);

    let out = s.eval("core", &["--baseline", base_arg]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("baseline 1.00 band [0.95, -]"),
        "{}",
        out.stdout
    );

    // A baseline whose steps per task was lower than this run's.
    let mut tight = doc.clone();
    tight["metrics"]["steps_per_task"] = serde_json::json!({"value": 1.5, "max": 2.0});
    tight["metrics"]["success_rate"] = serde_json::json!({"value": 1.0, "min": 1.0});
    std::fs::write(&base, tight.to_string()).unwrap();
    let out = s.eval("core", &["--baseline", base_arg]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("gate: steps_per_task 2.33 is above its band's maximum 2.00 (baseline 1.50)"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("error: 0 task(s) and 1 metric(s) failed the gate"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("success_rate"), "{}", out.stderr);
}

/// A band never forgives a failed task: `success_rate`'s band may let a share of tasks
/// fail, the gate does not (a task known to fail says so with `known_failure`).
#[test]
fn with_a_baseline_a_failed_task_still_fails_the_gate() {
    let s = Sandbox::new();
    let base = s.path("base.json");
    std::fs::write(
        &base,
        r#"{"metrics": {"success_rate": {"value": 0.0, "max": 0.1}}}"#,
    )
    .unwrap();
    let out = s.eval("fails", &["--baseline", base.to_str().unwrap()]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    for task in ["judge", "mismatch"] {
        assert!(
            out.stderr.contains(&format!("gate: task `{task}` failed")),
            "{}",
            out.stderr
        );
    }
    assert!(
        out.stderr
            .contains("error: 2 task(s) and 0 metric(s) failed the gate"),
        "{}",
        out.stderr
    );
    std::fs::write(
        &base,
        r#"{"metrics": {"success_rate": {"value": 0.93, "min": 0.9}}}"#,
    )
    .unwrap();
    let out = s.eval("fails", &["--baseline", base.to_str().unwrap()]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("gate: success_rate 0.00 is below its band's minimum 0.90 (baseline 0.93)"),
        "{}",
        out.stderr
    );
}

/// `known_failure` forgives a task's failure (and its reason is shown), a task naming a
/// component that is not built is skipped with the reason and left out of the metrics
/// (`--require-all` fails instead), an escalated task shows why, and a task marked known to
/// fail that passes fails the gate.
#[test]
fn known_failures_and_skipped_tasks_are_told_apart_from_failures() {
    let s = Sandbox::new();
    let out = s.eval("marks", &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.task("missing")["outcome"], "skipped");
    assert_eq!(
        out.task("missing")["skipped"],
        format!(
            "tool `not-built` is not built (no `{}/not-built.wasm`)",
            toolhost_tests::tools_dir()
        )
    );
    assert_eq!(out.task("known")["passed"], false);
    // Three tasks ran, one passed; the skipped one counts for none.
    assert_eq!(
        out.json["metrics"]["success_rate"].as_f64().unwrap(),
        1.0 / 3.0
    );
    for line in [
        "1 of 4 task(s) passed, 1 skipped",
        "      skipped: tool `not-built` is not built",
        "      known failure: the expected answer is wrong on purpose",
        "      it escalated: ",
    ] {
        assert!(out.stdout.contains(line), "{line}\n{}", out.stdout);
    }
    assert!(out.stdout.contains("abacus"), "{}", out.stdout);

    let out = s.eval("marks", &["--require-all"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("gate: task `missing` was skipped (tool `not-built` is not built"),
        "{}",
        out.stderr
    );

    // Fixed, the task still carries its mark: the gate asks for it to go.
    let known = s.path("eval/marks/known.toml");
    let text = std::fs::read_to_string(&known).unwrap();
    std::fs::write(&known, text.replace("equals = 5", "equals = 4")).unwrap();
    let out = s.eval("marks", &[]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "gate: task `known` passed but is marked `known_failure` (the expected answer is wrong on purpose: the test of the mark): remove the mark"
        ),
        "{}",
        out.stderr
    );
}

/// The first run of a suite says what it compiles (it can take half a minute); a run with
/// the compiled cache warm says nothing of it.
#[test]
fn a_suite_says_which_components_it_compiles_the_first_time() {
    let s = Sandbox::new();
    let cache = tempfile::tempdir().unwrap();
    let tools = std::path::PathBuf::from(toolhost_tests::tools_dir());
    let run = || {
        super::eval_cli(
            [cache.path(), &s.path("state"), &tools],
            &s.path("eval/marks"),
            &s.path("out.json"),
            &[],
        )
    };
    let first = run();
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(
        first.stderr.contains("/calc.wasm` in ")
            && first
                .stderr
                .contains(" s (once: the compiled cache keeps it)"),
        "{}",
        first.stderr
    );
    let second = run();
    assert!(!second.stderr.contains("compiled `"), "{}", second.stderr);
}
