//! Approval: sensitive tools need a yes before each call, and a reviewer may approve,
//! edit or reject a plan before any of it runs.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use toolhost_engine::{
    ApprovalMode, Catalog, Plan, PlanDecision, RunConfig, StepDecision, StepStatus, StopReason,
    Unattended,
};

use super::{Recording, Reviewer, catalog_in, ids, record, run, run_with};

/// `fs` may write under `out/`, and every call of it needs approval.
fn sensitive_fs(base: &Path) -> Arc<Catalog> {
    std::fs::create_dir(base.join("out")).unwrap();
    catalog_in(
        r#"
version = 1
[tools.calc]
[tools.fs]
sensitive = true
files = [{ host = "out", guest = "/out", access = "read-write" }]
"#,
        base,
    )
}

fn write_plan() -> Value {
    json!({"plan": {"goal": "write", "steps": [
        {"id": "n", "tool": "calc", "operation": "eval", "args": {"expression": "6 * 7"}},
        {"id": "write", "tool": "fs", "operation": "write-file",
         "args": {"path": "/out/x.txt", "content": "n = ${n.output}", "mode": "create"}}
    ]}})
}

#[test]
fn unattended_deny_escalates_at_a_sensitive_step_and_it_never_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut planner = Recording::new(write_plan());
    let report = run(
        sensitive_fs(dir.path()),
        RunConfig::default(),
        "write",
        &mut planner,
    );
    let StopReason::Escalated { why } = &report.stop else {
        panic!("{report:#?}")
    };
    assert!(
        why.contains("step `write` needs approval (tool `fs` is marked sensitive)"),
        "{why}"
    );
    assert_eq!(ids(&report), ["n"], "the step before it ran");
    assert!(!dir.path().join("out/x.txt").exists());
}

#[test]
fn unattended_auto_lets_a_sensitive_step_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut planner = Recording::new(write_plan());
    let report = run_with(
        sensitive_fs(dir.path()),
        RunConfig::default(),
        &mut Unattended(ApprovalMode::Auto),
        "write",
        &mut planner,
    );
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    assert_eq!(record(&report, "write").status, StepStatus::Succeeded);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out/x.txt")).unwrap(),
        "n = 42"
    );
}

#[test]
fn a_reviewer_who_rejects_the_plan_stops_the_run_before_any_step() {
    let dir = tempfile::tempdir().unwrap();
    let mut planner = Recording::new(write_plan());
    let mut reviewer = Reviewer::new(
        PlanDecision::Reject("not today".into()),
        StepDecision::Approve,
    );
    let report = run_with(
        sensitive_fs(dir.path()),
        RunConfig::default(),
        &mut reviewer,
        "write",
        &mut planner,
    );
    assert_eq!(
        report.stop,
        StopReason::RejectedByHuman {
            what: "not today".into()
        }
    );
    assert!(report.steps.is_empty(), "{:#?}", report.steps);
    assert_eq!(reviewer.plans_seen, 1);
    assert!(reviewer.steps_seen.is_empty());
    assert!(!dir.path().join("out/x.txt").exists());
}

#[test]
fn a_reviewer_who_rejects_a_step_stops_the_run_at_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut planner = Recording::new(write_plan());
    let mut reviewer = Reviewer::new(
        PlanDecision::Approve,
        StepDecision::Reject("no writes".into()),
    );
    let report = run_with(
        sensitive_fs(dir.path()),
        RunConfig::default(),
        &mut reviewer,
        "write",
        &mut planner,
    );
    assert_eq!(
        report.stop,
        StopReason::RejectedByHuman {
            what: "step `write`: no writes".into()
        }
    );
    assert_eq!(
        reviewer.steps_seen,
        ["write"],
        "only the sensitive step is asked"
    );
    assert_eq!(ids(&report), ["n"]);
    assert!(!dir.path().join("out/x.txt").exists());
}

#[test]
fn an_edited_plan_runs_instead_of_the_planned_one() {
    let edited: Plan = serde_json::from_value(json!({"goal": "g", "steps": [
        {"id": "edited", "tool": "calc", "operation": "eval", "args": {"expression": "2 * 21"}}
    ]}))
    .unwrap();
    let mut planner = Recording::new(json!({"plan": {"goal": "g", "steps": [
        {"id": "planned", "tool": "calc", "operation": "eval", "args": {"expression": "1 + 1"}}
    ]}}));
    let mut reviewer = Reviewer::new(PlanDecision::Edit(edited.clone()), StepDecision::Approve);
    let dir = tempfile::tempdir().unwrap();
    let report = run_with(
        sensitive_fs(dir.path()),
        RunConfig::default(),
        &mut reviewer,
        "g",
        &mut planner,
    );
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    assert_eq!(ids(&report), ["edited"]);
    assert_eq!(report.answer, Some(json!(42)));
    assert_eq!(report.revisions, [edited]);
}

#[test]
fn an_invalid_edited_plan_escalates() {
    let edited: Plan = serde_json::from_value(json!({"goal": "g", "steps": [
        {"id": "edited", "tool": "calc", "operation": "eval", "args": {"expression": 7}}
    ]}))
    .unwrap();
    let mut planner = Recording::new(json!({"plan": {"goal": "g", "steps": [
        {"id": "planned", "tool": "calc", "operation": "eval", "args": {"expression": "1 + 1"}}
    ]}}));
    let mut reviewer = Reviewer::new(PlanDecision::Edit(edited), StepDecision::Approve);
    let dir = tempfile::tempdir().unwrap();
    let report = run_with(
        sensitive_fs(dir.path()),
        RunConfig::default(),
        &mut reviewer,
        "g",
        &mut planner,
    );
    let StopReason::Escalated { why } = &report.stop else {
        panic!("{report:#?}")
    };
    assert!(
        why.contains("the edited plan is invalid") && why.contains("step `edited`"),
        "{why}"
    );
    assert!(
        report.steps.is_empty(),
        "neither plan ran: {:#?}",
        report.steps
    );
}
