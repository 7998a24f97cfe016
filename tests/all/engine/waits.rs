//! `max_wait_ms`: a person may take their time (it is not the run's `max_wall_ms`), but no
//! longer than the wait budget when one is set: an approver still waiting then is
//! released (the run is cancelled under it) and the run stops at the wait budget.

use std::time::{Duration, Instant};

use serde_json::json;
use toolhost_engine::{
    Approver, Budget, Budgets, Cancel, Catalog, PlanDecision, RunConfig, Step, StepDecision,
    StopReason, ValidPlan,
};

use super::{Recording, catalog, run_until};

/// A reviewer who takes `takes` to approve, or who leaves the prompt open until the run is
/// cancelled (as every approver must heed) when `takes` is `None`.
struct Slow {
    cancel: Cancel,
    takes: Option<Duration>,
}

impl Approver for Slow {
    fn review_plan(&mut self, _plan: &ValidPlan, _catalog: &Catalog) -> PlanDecision {
        let start = Instant::now();
        while !self.cancel.is_cancelled() {
            if self.takes.is_some_and(|t| start.elapsed() >= t) {
                return PlanDecision::Approve;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        PlanDecision::Withdrawn
    }

    fn approve_step(&mut self, _step: &Step, _why: &str, _catalog: &Catalog) -> StepDecision {
        StepDecision::Approve
    }
}

fn planner() -> Recording {
    Recording::new(json!({"plan": {"goal": "g", "steps": [
        {"id": "sum", "tool": "calc", "operation": "eval", "args": {"expression": "6 * 7"}}
    ]}}))
}

fn budgets(max_wall_ms: u64, max_wait_ms: Option<u64>) -> RunConfig {
    RunConfig {
        budgets: Budgets {
            max_wall_ms,
            max_wait_ms,
            ..Budgets::default()
        },
        ..RunConfig::default()
    }
}

fn review(takes: Option<Duration>, config: RunConfig) -> (toolhost_engine::RunReport, Duration) {
    let cancel = Cancel::new();
    let mut approver = Slow {
        cancel: cancel.clone(),
        takes,
    };
    let start = Instant::now();
    let report = run_until(
        catalog("version = 1\n[tools.calc]\n"),
        config,
        &mut approver,
        "g",
        &mut planner(),
        &cancel,
    );
    (report, start.elapsed())
}

#[test]
fn a_review_longer_than_the_wall_budget_but_within_the_wait_budget_completes() {
    let (report, _) = review(Some(Duration::from_millis(600)), budgets(300, Some(10_000)));
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    assert_eq!(report.answer, Some(json!(42)));
}

#[test]
fn a_wait_past_max_wait_ms_ends_the_run_at_the_wait_budget() {
    let (report, took) = review(None, budgets(60_000, Some(200)));
    assert_eq!(
        report.stop,
        StopReason::BudgetExhausted {
            which: Budget::Wait
        },
        "{report:#?}"
    );
    assert_eq!(
        report.stop.to_string(),
        "budget_exhausted (wait for a person)"
    );
    assert!(report.steps.is_empty(), "nothing ran: {report:#?}");
    // Released at the budget, not at some later timeout (a generous bound, not a timing
    // measurement: the reviewer above would otherwise wait for ever).
    assert!(took < Duration::from_secs(20), "{took:?}");
}

#[test]
fn without_a_wait_budget_a_slow_review_is_not_cut_off() {
    let (report, _) = review(Some(Duration::from_millis(400)), budgets(60_000, None));
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
}
