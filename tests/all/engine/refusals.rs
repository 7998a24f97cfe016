//! Refused actions are security events: every request outside the grants and every plan
//! the data-flow rules refuse is counted in the report, and a policy's `max_refusals`
//! stops a run that keeps trying (`refusal_limit`), before anything more starts.

use serde_json::{Value, json};
use toolhost_engine::{Mode, RunConfig, StepStatus, StopReason};

use super::{Recording, catalog_in, run};

const POLICY: &str = r#"
version = 1
[tools.fs]
files = [{ host = "inbox", guest = "/inbox", access = "read" }]
[tools.calc]
trusted_args = { eval = ["expression"] }
"#;

fn inbox() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("inbox")).unwrap();
    std::fs::write(dir.path().join("inbox/note.txt"), "evaluate 6 * 7").unwrap();
    dir
}

/// A step-wise planner that tries four files it was never granted, then stops.
fn prying() -> Value {
    let read = |p: &str| json!({"thought": "look", "tool": "fs", "operation": "read-file", "arguments": {"path": p}});
    json!({"turns": [
        read("/private/a.txt"), read("/private/b.txt"), read("/etc/shadow"), read("/private/d.txt"),
        {"thought": "done", "stop": true, "answer": "nothing"}
    ]})
}

fn step_wise(max_refusals: Option<u64>) -> RunConfig {
    RunConfig {
        mode: Mode::StepWise,
        max_refusals,
        ..RunConfig::default()
    }
}

#[test]
fn without_a_limit_every_refusal_is_counted_and_the_run_goes_on() {
    let dir = inbox();
    let mut planner = Recording::new(prying());
    let report = run(
        catalog_in(POLICY, dir.path()),
        step_wise(None),
        "pry",
        &mut planner,
    );
    assert_eq!(report.stop, StopReason::PlannerStopped, "{report:#?}");
    assert_eq!(report.steps.len(), 4);
    assert!(report.steps.iter().all(|s| s.status == StepStatus::Failed));
    assert_eq!(report.refused, 4, "{report:#?}");
}

#[test]
fn a_run_stops_at_the_refusal_the_policy_allows_no_more_of() {
    let dir = inbox();
    let mut planner = Recording::new(prying());
    let report = run(
        catalog_in(POLICY, dir.path()),
        step_wise(Some(2)),
        "pry",
        &mut planner,
    );
    assert_eq!(
        report.stop,
        StopReason::RefusalLimit { refused: 2 },
        "{report:#?}"
    );
    assert_eq!(report.stop.to_string(), "refusal_limit (2 actions refused)");
    assert_eq!(report.refused, 2);
    // The second refusal ended the run: no third step, and the planner was not asked again.
    assert_eq!(report.steps.len(), 2, "{report:#?}");
    assert_eq!(planner.requests.len(), 2);
}

#[test]
fn a_plan_the_data_flow_rules_refuse_counts_and_can_end_the_run() {
    // The replan's literal was written after the planner read the (untrusted) note: the
    // rule on `calc.eval`'s `expression` refuses it, as it would an injected instruction.
    let script = || {
        json!({
            "plan": {"goal": "sum the note", "steps": [
                {"id": "note", "tool": "fs", "operation": "read-file", "args": {"path": "/inbox/note.txt"}},
                {"id": "bad", "tool": "calc", "operation": "eval", "args": {"expression": "1 +"}}
            ]},
            "replans": [{"after_failure_of": "bad", "plan": {"goal": "sum the note", "revision": 2,
                "steps": [{"id": "sum", "tool": "calc", "operation": "eval", "args": {"expression": "6 * 7"}}]}}]
        })
    };
    let dir = inbox();
    let mut counted = Recording::new(script());
    let report = run(
        catalog_in(POLICY, dir.path()),
        RunConfig::default(),
        "sum the note",
        &mut counted,
    );
    // Without a limit the planner is asked to repair the refused replan (the script has
    // no repair, so the run escalates then).
    assert!(
        matches!(report.stop, StopReason::Escalated { .. }),
        "{:?}",
        report.stop
    );
    assert_eq!(report.refused, 1, "{report:#?}");
    assert_eq!(counted.requests.len(), 3, "a repair was asked for");

    let mut stopped = Recording::new(script());
    let report = run(
        catalog_in(POLICY, dir.path()),
        RunConfig {
            max_refusals: Some(1),
            ..RunConfig::default()
        },
        "sum the note",
        &mut stopped,
    );
    assert_eq!(
        report.stop,
        StopReason::RefusalLimit { refused: 1 },
        "{report:#?}"
    );
    assert_eq!(stopped.requests.len(), 2, "no repair was asked for");
}
