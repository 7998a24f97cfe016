//! How a run proceeds: replanning after a failure, steps running side by side, the
//! evaluator's checks, and rate limits that hold across the run.

use serde_json::{Value, json};
use toolhost_engine::{RunConfig, RunReport, StepRecord, StepStatus, StopReason, Verdict};

use super::{Recording, catalog, catalog_in, error_kind, ids, record, run};

#[test]
fn a_replan_recovers_without_rerunning_what_succeeded() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("granted")).unwrap();
    std::fs::write(dir.path().join("granted/notes.txt"), "10").unwrap();
    let policy = r#"
version = 1
[tools.calc]
[tools.text]
[tools.fs]
files = [{ host = "granted", guest = "/data", access = "read" }]
"#;
    let mut planner = Recording::new(json!({
        "plan": {"goal": "add the notes", "steps": [
            {"id": "base", "tool": "calc", "operation": "eval", "args": {"expression": "2 + 3"}},
            {"id": "secret", "tool": "fs", "operation": "read-file", "args": {"path": "/etc/passwd"}},
            {"id": "count", "tool": "text", "operation": "count",
             "args": {"text": {"$ref": "secret.output"}}}
        ]},
        "replans": [{"after_failure_of": "secret", "plan": {"goal": "add the notes", "revision": 2,
            "steps": [
                {"id": "notes", "tool": "fs", "operation": "read-file",
                 "args": {"path": "/data/notes.txt"}},
                {"id": "total", "tool": "calc", "operation": "eval",
                 "args": {"expression": "${base.output} + ${notes.output}"}, "depends_on": ["base"]}
            ]}}]
    }));
    let report = run(
        catalog_in(policy, dir.path()),
        RunConfig::default(),
        "add the notes",
        &mut planner,
    );
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    assert_eq!(report.revisions.len(), 2);
    let secret = record(&report, "secret");
    // Outside every grant: the sandbox's denial, not the tool's own error.
    assert_eq!(
        (secret.status, error_kind(secret)),
        (StepStatus::Failed, "denied")
    );
    let count = record(&report, "count");
    assert_eq!(
        (count.status, error_kind(count)),
        (StepStatus::Skipped, "skipped")
    );
    // `base` ran once, in revision 1; revision 2 used its output.
    assert_eq!(record(&report, "base").revision, 1);
    let total = record(&report, "total");
    assert_eq!(total.revision, 2);
    assert_eq!(total.args, json!({"expression": "5 + 10"}));
    assert_eq!(report.answer, Some(json!(15)));
    assert_eq!(
        planner.requests[1].failure.as_ref().map(|f| f.id.as_str()),
        Some("secret")
    );
}

fn sleeps(n: usize, ms: u64) -> Value {
    let steps: Vec<Value> = (1..=n)
        .map(|i| {
            json!({"id": format!("z{i}"), "tool": "misbehave", "operation": "sleep",
                   "args": {"ms": ms}})
        })
        .collect();
    json!({"plan": {"goal": "sleep", "steps": steps}})
}

fn run_sleeps(max_parallel: usize) -> RunReport {
    let mut planner = Recording::new(sleeps(4, 200));
    let config = RunConfig {
        max_parallel,
        ..RunConfig::default()
    };
    let report = run(
        catalog("version = 1\n[tools.misbehave]\n"),
        config,
        "sleep",
        &mut planner,
    );
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    assert_eq!(report.steps.len(), 4);
    assert!(
        report
            .steps
            .iter()
            .all(|r| r.status == StepStatus::Succeeded)
    );
    report
}

fn span(r: &StepRecord) -> (u64, u64) {
    (r.started_us, r.finished_us)
}

#[test]
fn independent_steps_overlap_up_to_max_parallel() {
    let report = run_sleeps(4);
    let latest_start = report.steps.iter().map(|r| r.started_us).max().unwrap();
    let earliest_finish = report.steps.iter().map(|r| r.finished_us).min().unwrap();
    let spans: Vec<_> = report.steps.iter().map(span).collect();
    assert!(
        latest_start < earliest_finish,
        "every step started before any finished: {spans:?}"
    );
}

#[test]
fn with_max_parallel_one_steps_do_not_overlap() {
    let report = run_sleeps(1);
    let mut spans: Vec<_> = report.steps.iter().map(span).collect();
    spans.sort();
    for pair in spans.windows(2) {
        assert!(
            pair[1].0 >= pair[0].1,
            "a step started before the previous one finished: {spans:?}"
        );
    }
}

#[test]
fn a_failed_check_triggers_a_replan_and_equals_compares_numbers_by_value() {
    let mut planner = Recording::new(json!({
        "plan": {"goal": "g", "steps": [
            {"id": "wrong", "tool": "calc", "operation": "eval",
             "args": {"expression": "12 * 4 + 5"}, "expect": {"equals": 54}}
        ]},
        // No `revision`: the engine numbers the replan.
        "replans": [{"after_failure_of": "wrong", "plan": {"goal": "g", "steps": [
            {"id": "right", "tool": "calc", "operation": "eval",
             "args": {"expression": "12 * 4 + 5"}, "expect": {"equals": 53}}
        ]}}]
    }));
    let report = run(
        catalog("version = 1\n[tools.calc]\n"),
        RunConfig::default(),
        "g",
        &mut planner,
    );
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    let wrong = record(&report, "wrong");
    assert_eq!(
        (wrong.status, error_kind(wrong)),
        (StepStatus::Failed, "evaluation")
    );
    assert_eq!(
        wrong.evaluation.as_ref().map(|e| e.verdict),
        Some(Verdict::Fail)
    );
    let right = record(&report, "right");
    assert_eq!(right.status, StepStatus::Succeeded);
    assert_eq!(right.output, Some(json!(53)));
    assert_eq!(
        right.evaluation.as_ref().map(|e| e.verdict),
        Some(Verdict::Pass)
    );
    assert_eq!(right.revision, 2);
    assert_eq!(report.revisions[1].revision, 2);
    assert_eq!(report.spent.replans, 1);
}

#[test]
fn the_rate_limit_holds_across_the_steps_of_a_run() {
    let policy = "version = 1\n[tools.calc]\nlimits = { max_calls_per_minute = 2 }\n";
    let mut planner = Recording::new(json!({"plan": {"goal": "g", "steps": [
        {"id": "a", "tool": "calc", "operation": "eval", "args": {"expression": "1"}},
        {"id": "b", "tool": "calc", "operation": "eval", "args": {"expression": "2"}},
        {"id": "c", "tool": "calc", "operation": "eval", "args": {"expression": "3"}}
    ]}}));
    let mut config = RunConfig {
        max_parallel: 1,
        ..RunConfig::default()
    };
    config.budgets.max_replans = 0;
    let report = run(catalog(policy), config, "g", &mut planner);
    assert_eq!(report.stop, StopReason::ReplanLimit, "{report:#?}");
    assert_eq!(ids(&report), ["a", "b", "c"]);
    assert_eq!(record(&report, "a").status, StepStatus::Succeeded);
    assert_eq!(record(&report, "b").status, StepStatus::Succeeded);
    let c = record(&report, "c");
    assert_eq!(
        (c.status, error_kind(c)),
        (StepStatus::Failed, "rate_limited")
    );
}

#[test]
fn an_evaluator_tool_judges_each_output() {
    use toolhost_engine::{EvaluatorConfig, Reaction, StopReason, Verdict};

    let config = RunConfig {
        evaluator: EvaluatorConfig {
            on_fail: Reaction::Stop,
            on_uncertain: Reaction::Escalate,
            tool: Some("misbehave".into()),
            operation: Some("judge".into()),
        },
        ..RunConfig::default()
    };
    let policy = "version = 1\n[tools.calc]\n[tools.misbehave]\n";
    let plan = |expr: &str| {
        super::Recording::new(serde_json::json!({"plan": {"goal": "g", "steps": [
            {"id": "sum", "tool": "calc", "operation": "eval", "args": {"expression": expr}}
        ]}}))
    };
    let report = super::run(
        super::catalog(policy),
        config.clone(),
        "g",
        &mut plan("12 * 4 + 5"),
    );
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    let judged = super::record(&report, "sum").evaluation.clone().unwrap();
    assert_eq!(judged.verdict, Verdict::Pass);
    assert!(judged.detail.contains("\"pass\""), "{judged:?}");
    assert!(
        report.spent.fuel > super::record(&report, "sum").fuel,
        "the judge's fuel counts"
    );

    let report = super::run(super::catalog(policy), config, "g", &mut plan("1 + 1"));
    assert_eq!(
        report.stop,
        StopReason::EvaluatorFailed { step: "sum".into() },
        "{report:#?}"
    );
}

#[test]
fn a_step_wise_planner_can_hand_the_rest_to_a_plan() {
    let mut planner = Recording::new(json!({"turns": [
        {"thought": "compute first", "tool": "calc", "operation": "eval",
         "arguments": {"expression": "12 * 4 + 5"}},
        {"thought": "the rest is routine", "handoff": {"goal": "finish", "steps": [
            {"id": "double", "tool": "calc", "operation": "eval",
             "args": {"expression": "${t1.output} * 2"}},
            {"id": "words", "tool": "text", "operation": "count",
             "args": {"text": "${double.output} is twice ${t1.output}"}}
        ]}},
        {"stop": true, "answer": "never asked"}
    ]}));
    let config = RunConfig {
        mode: toolhost_engine::Mode::StepWise,
        ..RunConfig::default()
    };
    let report = run(
        catalog("version = 1\n[tools.calc]\n[tools.text]\n"),
        config,
        "g",
        &mut planner,
    );
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    assert_eq!(ids(&report), ["t1", "double", "words"]);
    assert_eq!(record(&report, "double").output, Some(json!(106)));
    assert_eq!(report.answer.as_ref().unwrap()["words"], 4);
    assert_eq!(
        planner.requests.len(),
        2,
        "the run completes without a third turn"
    );
    assert_eq!(report.revisions.len(), 2);
}
