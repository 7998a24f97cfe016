//! Budgets are checked before spending: a run stops at a budget, never past it.

use std::time::Duration;

use serde_json::{Value, json};
use toolhost_engine::{Budget, Mode, Price, RunConfig, StepStatus, StopReason};

use super::{Recording, catalog, error_kind, ids, record, run};

const CALC: &str = "version = 1\n[tools.calc]\n";
const CALC_MISBEHAVE: &str = "version = 1\n[tools.calc]\n[tools.misbehave]\n";

fn calc_steps(n: usize) -> Value {
    let steps: Vec<Value> = (1..=n)
        .map(|i| {
            json!({"id": format!("s{i}"), "tool": "calc", "operation": "eval",
                   "args": {"expression": format!("{i} * 2")}})
        })
        .collect();
    json!({"goal": "g", "steps": steps})
}

#[test]
fn a_plan_longer_than_the_step_budget_runs_exactly_max_steps() {
    let mut planner = Recording::new(json!({"plan": calc_steps(5)}));
    let mut config = RunConfig::default();
    config.budgets.max_steps = 3;
    let report = run(catalog(CALC), config, "g", &mut planner);
    assert_eq!(
        report.stop,
        StopReason::BudgetExhausted {
            which: Budget::Steps
        },
        "{report:#?}"
    );
    assert_eq!(report.steps.len(), 3, "{:#?}", report.steps);
    assert!(
        report
            .steps
            .iter()
            .all(|r| r.status == StepStatus::Succeeded)
    );
    assert_eq!(report.spent.steps, 3);
}

#[test]
fn fuel_is_capped_by_what_the_run_has_left() {
    let mut planner = Recording::new(json!({"plan": {"goal": "g", "steps": [
        {"id": "spin", "tool": "misbehave", "operation": "spin"},
        {"id": "next", "tool": "calc", "operation": "eval", "args": {"expression": "1"}}
    ]}}));
    let mut config = RunConfig {
        max_parallel: 1,
        ..RunConfig::default()
    };
    config.budgets.max_fuel = 1_000_000;
    let report = run(catalog(CALC_MISBEHAVE), config, "g", &mut planner);
    assert_eq!(
        report.stop,
        StopReason::BudgetExhausted {
            which: Budget::Fuel
        },
        "{report:#?}"
    );
    let spin = record(&report, "spin");
    assert_eq!(error_kind(spin), "fuel_exhausted");
    assert_eq!(
        spin.fuel, 1_000_000,
        "the call got the run's fuel, not its policy's"
    );
    assert!(report.spent.fuel <= 1_000_000, "{:?}", report.spent);
    assert_eq!(ids(&report), ["spin"], "nothing runs without fuel");
}

#[test]
fn parallel_reservations_do_not_stop_a_run_that_fits_its_fuel() {
    // Each call may use up to 10M units and three run at once, but they use far less:
    // waiting for reserved fuel to come back lets all three run within 15M.
    let policy = "version = 1\n[tools.calc]\nlimits = { fuel = 10_000_000 }\n";
    let mut planner = Recording::new(json!({"plan": calc_steps(3)}));
    let mut config = RunConfig::default();
    config.budgets.max_fuel = 15_000_000;
    let report = run(catalog(policy), config, "g", &mut planner);
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    assert_eq!(report.steps.len(), 3);
    assert!(report.spent.fuel <= 15_000_000);
    assert_eq!(
        report.spent.fuel,
        report.steps.iter().map(|r| r.fuel).sum::<u64>()
    );
}

#[test]
fn the_wall_time_budget_cuts_a_step_short_and_stops_the_run() {
    let mut planner = Recording::new(json!({"plan": {"goal": "g", "steps": [
        {"id": "slow", "tool": "misbehave", "operation": "sleep", "args": {"ms": 3000}},
        {"id": "next", "tool": "misbehave", "operation": "sleep", "args": {"ms": 1}}
    ]}}));
    let mut config = RunConfig {
        max_parallel: 1,
        ..RunConfig::default()
    };
    config.budgets.max_wall_ms = 300;
    let report = run(catalog(CALC_MISBEHAVE), config, "g", &mut planner);
    assert_eq!(
        report.stop,
        StopReason::BudgetExhausted {
            which: Budget::WallTime
        },
        "{report:#?}"
    );
    let slow = record(&report, "slow");
    assert_eq!(error_kind(slow), "timeout");
    assert!(
        slow.finished_us - slow.started_us < 3_000_000,
        "the step's deadline was the run's remaining time, not its 3 s sleep: {slow:?}"
    );
    assert!(slow.finished_us >= 300_000, "{slow:?}");
    assert_eq!(ids(&report), ["slow"]);
    assert!(report.spent.wall >= Duration::from_millis(300));
}

/// Step-wise turns, each charged `usage` tokens; returns the report and the number of
/// planner calls actually made.
fn token_run(usage: Value, config: RunConfig) -> (toolhost_engine::RunReport, usize) {
    let turn = json!({"tool": "calc", "operation": "eval", "arguments": {"expression": "1 + 1"}});
    let mut planner = Recording::new(json!({
        "turns": [turn, turn, turn, turn, {"stop": true}],
        "usage_per_call": usage
    }));
    let config = RunConfig {
        mode: Mode::StepWise,
        ..config
    };
    let report = run(catalog(CALC), config, "g", &mut planner);
    (report, planner.requests.len())
}

#[test]
fn the_planner_call_that_would_exceed_input_tokens_is_never_made() {
    let mut config = RunConfig::default();
    config.budgets.max_input_tokens = 250;
    let (report, calls) = token_run(json!({"input_tokens": 100, "output_tokens": 1}), config);
    assert_eq!(
        report.stop,
        StopReason::BudgetExhausted {
            which: Budget::InputTokens
        },
        "{report:#?}"
    );
    assert_eq!(calls, 2);
    assert_eq!(report.planner_calls.len(), 2);
    assert_eq!(report.spent.input_tokens, 200);
    assert_eq!(report.steps.len(), 2, "each answered turn ran");
}

#[test]
fn the_planner_call_that_would_exceed_output_tokens_is_never_made() {
    let mut config = RunConfig::default();
    config.budgets.max_output_tokens = 35;
    let (report, calls) = token_run(json!({"input_tokens": 1, "output_tokens": 10}), config);
    assert_eq!(
        report.stop,
        StopReason::BudgetExhausted {
            which: Budget::OutputTokens
        },
        "{report:#?}"
    );
    assert_eq!(calls, 3);
    assert_eq!(report.spent.output_tokens, 30);
}

#[test]
fn the_planner_call_that_would_exceed_the_cost_is_never_made() {
    let mut config = RunConfig::default();
    config.budgets.max_cost_usd = 0.25;
    // $0.10 per call: 10,000 input tokens at $10/M.
    config.prices.insert(
        "priced".into(),
        Price {
            input_per_mtok: 10.0,
            output_per_mtok: 0.0,
            cached_input_per_mtok: None,
        },
    );
    let usage = json!({"model": "priced", "input_tokens": 10_000, "output_tokens": 0});
    let (report, calls) = token_run(usage, config);
    assert_eq!(
        report.stop,
        StopReason::BudgetExhausted {
            which: Budget::Cost
        },
        "{report:#?}"
    );
    assert_eq!(calls, 2);
    assert!(
        (report.spent.cost_usd - 0.2).abs() < 1e-9,
        "{:?}",
        report.spent
    );
}
