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
            .contains("error: 1 metric(s) left their baseline band"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("success_rate"), "{}", out.stderr);
}

#[test]
fn with_a_baseline_failing_tasks_are_judged_by_the_bands() {
    let s = Sandbox::new();
    let base = s.path("base.json");
    std::fs::write(
        &base,
        r#"{"metrics": {"success_rate": {"value": 0.0, "max": 0.1}}}"#,
    )
    .unwrap();
    let out = s.eval("fails", &["--baseline", base.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
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
