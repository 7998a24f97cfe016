//! Runs that end with `completed`, `planner_stopped`, `replan_limit`, `evaluator_failed` or
//! `escalated` (for the planner's choices; approval escalations are in `approval`), or
//! `cancelled`.

use serde_json::json;
use toolhost_engine::{
    EvaluatorConfig, Mode, ProblemKind, Reaction, RunConfig, StepStatus, StopReason, Verdict,
};

use super::{Recording, catalog, catalog_in, error_kind, ids, record, run};

const CALC_TEXT: &str = "version = 1\n[tools.calc]\n[tools.text]\n";

#[test]
fn a_plan_with_references_completes() {
    let mut planner = Recording::new(json!({"plan": {"goal": "pick a line", "steps": [
        {"id": "sum", "tool": "calc", "operation": "eval", "args": {"expression": "12 * 4 + 5"}},
        {"id": "words", "tool": "text", "operation": "count",
         "args": {"text": "${sum.output} is the answer"}},
        {"id": "pick", "tool": "text", "operation": "extract-lines",
         "args": {"text": "zero\none\ntwo\nthree\nfour", "first": {"$ref": "words.output.words"}}}
    ]}}));
    let report = run(
        catalog(CALC_TEXT),
        RunConfig::default(),
        "pick a line",
        &mut planner,
    );
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    assert_eq!(ids(&report), ["sum", "words", "pick"]);
    assert_eq!(
        record(&report, "words").args,
        json!({"text": "53 is the answer"}),
        "`${{}}` inserts the JSON text of the value"
    );
    assert_eq!(
        record(&report, "pick").args["first"],
        json!(4),
        "`$ref` inserts the value"
    );
    assert_eq!(report.answer, Some(json!("three")));
    assert_eq!(report.revisions.len(), 1);
    assert_eq!(report.spent.steps, 3);
    assert_eq!(planner.requests.len(), 1);
}

#[test]
fn a_step_wise_run_stops_when_the_planner_says_so() {
    let mut planner = Recording::new(json!({"turns": [
        {"thought": "compute it", "tool": "calc", "operation": "eval",
         "arguments": {"expression": "12 * 4 + 5"}},
        {"thought": "done", "stop": true, "answer": 53}
    ]}));
    let config = RunConfig {
        mode: Mode::StepWise,
        ..RunConfig::default()
    };
    let report = run(
        catalog(CALC_TEXT),
        config,
        "What is 12 * 4 + 5?",
        &mut planner,
    );
    assert_eq!(report.stop, StopReason::PlannerStopped, "{report:#?}");
    assert_eq!(report.answer, Some(json!(53)));
    let t1 = record(&report, "t1");
    assert_eq!(t1.status, StepStatus::Succeeded);
    assert_eq!(t1.output.as_ref().and_then(|v| v.as_f64()), Some(53.0));
    // The second turn was asked with the first one's result in its history.
    assert_eq!(planner.requests.len(), 2);
    assert!(planner.requests[0].history.is_empty());
    let history = &planner.requests[1].history;
    assert_eq!(history.len(), 1);
    assert_eq!(history[0], *t1);
    assert_eq!(planner.requests[1].revision, 2);
}

#[test]
fn a_run_that_keeps_failing_stops_at_the_replan_limit() {
    let failing = |id: &str| {
        json!({"goal": "divide", "steps": [
            {"id": id, "tool": "calc", "operation": "eval", "args": {"expression": "1 / 0"}}
        ]})
    };
    let mut planner = Recording::new(json!({
        "plan": failing("a"),
        "replans": [
            {"after_failure_of": "a", "plan": failing("b")},
            {"after_failure_of": "b", "plan": failing("c")}
        ]
    }));
    let mut config = RunConfig::default();
    config.budgets.max_replans = 1;
    let report = run(catalog(CALC_TEXT), config, "divide", &mut planner);
    assert_eq!(report.stop, StopReason::ReplanLimit, "{report:#?}");
    assert_eq!(
        ids(&report),
        ["a", "b"],
        "the second replan is never asked for"
    );
    assert!(
        report
            .steps
            .iter()
            .all(|r| r.status == StepStatus::Failed && error_kind(r) == "tool_error")
    );
    assert_eq!(report.spent.replans, 1);
    assert_eq!(planner.requests.len(), 2);
    assert_eq!(
        planner.requests[1].failure.as_ref().map(|f| f.id.as_str()),
        Some("a")
    );
}

#[test]
fn a_failed_check_with_on_fail_stop_ends_the_run() {
    let mut planner = Recording::new(json!({"plan": {"goal": "g", "steps": [
        {"id": "sum", "tool": "calc", "operation": "eval", "args": {"expression": "12 * 4 + 5"},
         "expect": {"equals": 54}},
        {"id": "after", "tool": "calc", "operation": "eval", "args": {"expression": "1"}}
    ]}, "replans": [{"after_failure_of": "*", "plan": {"goal": "g", "steps": [
        {"id": "again", "tool": "calc", "operation": "eval", "args": {"expression": "1"}}
    ]}}]}));
    let config = RunConfig {
        max_parallel: 1,
        evaluator: EvaluatorConfig {
            on_fail: Reaction::Stop,
            ..EvaluatorConfig::default()
        },
        ..RunConfig::default()
    };
    let report = run(catalog(CALC_TEXT), config, "g", &mut planner);
    assert_eq!(
        report.stop,
        StopReason::EvaluatorFailed { step: "sum".into() },
        "{report:#?}"
    );
    assert_eq!(ids(&report), ["sum"], "nothing runs after the verdict");
    let sum = record(&report, "sum");
    assert_eq!(sum.status, StepStatus::Failed);
    assert_eq!(
        sum.evaluation.as_ref().map(|e| e.verdict),
        Some(Verdict::Fail)
    );
    assert_eq!(planner.requests.len(), 1, "no replan");
}

#[test]
fn a_tool_outside_the_catalog_escalates_before_anything_runs() {
    let mut planner = Recording::new(json!({"plan": {"goal": "g", "steps": [
        {"id": "ok", "tool": "calc", "operation": "eval", "args": {"expression": "1"}},
        {"id": "sh", "tool": "shell", "operation": "run", "args": {"command": "rm -rf /"}}
    ]}}));
    let report = run(catalog(CALC_TEXT), RunConfig::default(), "g", &mut planner);
    let StopReason::Escalated { why } = &report.stop else {
        panic!("{report:#?}")
    };
    assert!(why.contains("tool `shell` is not available"), "{why}");
    assert!(report.steps.is_empty(), "{:#?}", report.steps);
    assert!(report.revisions.is_empty());
    assert_eq!(planner.requests.len(), 1, "no repair is asked for");
}

#[test]
fn an_operation_the_policy_forbids_escalates_and_has_no_effect() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("out")).unwrap();
    let policy = r#"
version = 1
[tools.calc]
[tools.fs]
operations = ["read-file"]
files = [{ host = "out", guest = "/out", access = "read-write" }]
"#;
    let mut planner = Recording::new(json!({"plan": {"goal": "g", "steps": [
        {"id": "ok", "tool": "calc", "operation": "eval", "args": {"expression": "1"}},
        {"id": "write", "tool": "fs", "operation": "write-file",
         "args": {"path": "/out/x.txt", "content": "hi", "mode": "create"}}
    ]}}));
    let report = run(
        catalog_in(policy, dir.path()),
        RunConfig::default(),
        "g",
        &mut planner,
    );
    let StopReason::Escalated { why } = &report.stop else {
        panic!("{report:#?}")
    };
    assert!(
        why.contains("does not allow operation `write-file`"),
        "{why}"
    );
    assert!(report.steps.is_empty(), "{:#?}", report.steps);
    assert!(!dir.path().join("out/x.txt").exists());
}

#[test]
fn a_plan_still_invalid_after_the_repairs_escalates() {
    let bad = |id: &str| {
        json!({"goal": "g", "steps": [
            {"id": id, "tool": "calc", "operation": "eval", "args": {"expression": 42}}
        ]})
    };
    let mut planner = Recording::new(json!({"plan": bad("a"), "repairs": [bad("b"), bad("c")]}));
    let mut config = RunConfig::default();
    config.budgets.max_plan_repairs = 1;
    let report = run(catalog(CALC_TEXT), config, "g", &mut planner);
    let StopReason::Escalated { why } = &report.stop else {
        panic!("{report:#?}")
    };
    assert!(why.contains("still invalid after 1 repairs"), "{why}");
    assert!(
        why.contains("step `b`"),
        "the last problems are shown: {why}"
    );
    assert!(report.steps.is_empty());
    assert_eq!(planner.requests.len(), 2);
    let problems = &planner.requests[1].problems;
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert_eq!(problems[0].kind, ProblemKind::BadArguments);
}

#[test]
fn a_repaired_plan_runs() {
    let mut planner = Recording::new(json!({
        "plan": {"goal": "g", "steps": [
            {"id": "a", "tool": "calc", "operation": "eval", "args": {"expr": "2 + 2"}}
        ]},
        "repairs": [{"goal": "g", "steps": [
            {"id": "a", "tool": "calc", "operation": "eval", "args": {"expression": "2 + 2"}}
        ]}]
    }));
    let report = run(catalog(CALC_TEXT), RunConfig::default(), "g", &mut planner);
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    assert_eq!(report.answer, Some(json!(4)));
    assert_eq!(planner.requests.len(), 2);
    assert_eq!(
        planner.requests[1].problems[0].kind,
        ProblemKind::BadArguments
    );
}

#[test]
fn a_turn_below_the_confidence_threshold_escalates_unattended() {
    let mut planner = Recording::new(json!({"turns": [
        {"tool": "calc", "operation": "eval", "arguments": {"expression": "1 + 1"},
         "confidence": 0.5},
        {"stop": true}
    ]}));
    let config = RunConfig {
        mode: Mode::StepWise,
        confidence_threshold: 0.6,
        ..RunConfig::default()
    };
    let report = run(catalog(CALC_TEXT), config, "g", &mut planner);
    let StopReason::Escalated { why } = &report.stop else {
        panic!("{report:#?}")
    };
    assert!(
        why.contains("step `t1` needs approval") && why.contains("confidence 0.5"),
        "{why}"
    );
    assert!(report.steps.is_empty());
    assert_eq!(report.spent.steps, 0);
}

#[test]
fn cancelling_a_run_stops_it_and_records_the_step_it_cut_off() {
    use toolhost_engine::{ApprovalMode, Cancel, Engine, Quiet, Unattended};

    let mut planner = Recording::new(json!({"plan": {"goal": "wait", "steps": [
        {"id": "long", "tool": "misbehave", "operation": "sleep", "args": {"ms": 30000}},
        {"id": "after", "tool": "misbehave", "operation": "sleep", "args": {"ms": 1},
         "depends_on": ["long"]}
    ]}}));
    let catalog = catalog("version = 1\n[tools.misbehave]\nlimits = { timeout_ms = 60000 }\n");
    let mut approver = Unattended(ApprovalMode::Deny);
    let mut observer = Quiet;
    let mut engine = Engine::builder(super::rt(), catalog)
        .config(RunConfig {
            budgets: toolhost_engine::Budgets {
                max_wall_ms: 120_000,
                ..Default::default()
            },
            ..RunConfig::default()
        })
        .approver(&mut approver)
        .observer(&mut observer)
        .build();
    let cancel = Cancel::new();
    let report = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let trigger = cancel.clone();
            tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                trigger.cancel();
            });
            engine.run_until("wait", &mut planner, &cancel).await
        });
    assert_eq!(report.stop, StopReason::cancelled(), "{report:#?}");
    let long = record(&report, "long");
    assert_eq!(long.status, StepStatus::Failed);
    assert_eq!(error_kind(long), "cancelled");
    // Cut off soon after the cancellation, far before its 30 s sleep would end.
    assert!(long.finished_us - long.started_us < 10_000_000, "{long:?}");
    assert_eq!(ids(&report), ["long"], "nothing runs after a cancellation");
    // A cancelled token stops the next run before it asks the planner.
    let mut second = Recording::new(json!({"plan": {"goal": "g", "steps": []}}));
    let report = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(engine.run_until("g", &mut second, &cancel));
    assert_eq!(report.stop, StopReason::cancelled());
    assert!(second.requests.is_empty());
}
