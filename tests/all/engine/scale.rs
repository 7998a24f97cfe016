//! Plans of 10,000 steps, a chain and a fan-out/fan-in, validate and run to completion
//! under the default budgets raised only in their step counts. (That the scheduler's work
//! is linear in the plan is counted in the engine's own tests, not timed here.)

use std::collections::BTreeMap;

use serde_json::{Value, json};
use toolhost_engine::{Budgets, Plan, ProblemKind, RunConfig, StepStatus, StopReason, validate};

use super::{Recording, catalog, run};

const N: usize = 10_000;

/// The default budgets and limits, with room for `N` steps.
fn config() -> RunConfig {
    RunConfig {
        max_plan_steps: N,
        budgets: Budgets {
            max_steps: u32::try_from(N).unwrap(),
            ..Budgets::default()
        },
        ..RunConfig::default()
    }
}

fn calc(id: String, expression: String, depends_on: &[String]) -> Value {
    json!({"id": id, "tool": "calc", "operation": "eval",
           "args": {"expression": expression}, "depends_on": depends_on})
}

/// `s0` is 1; each next step adds 1 to the one before.
fn chain() -> Vec<Value> {
    (0..N)
        .map(|i| {
            let e = if i == 0 {
                "1".to_string()
            } else {
                format!("${{s{}.output}} + 1", i - 1)
            };
            calc(format!("s{i}"), e, &[])
        })
        .collect()
}

/// `root` is 1; `N - 2` steps each use it; `last` waits for all of them.
fn fan() -> Vec<Value> {
    let mid: Vec<String> = (1..N - 1).map(|i| format!("m{i}")).collect();
    let mut steps = vec![calc("root".into(), "1".into(), &[])];
    steps.extend(
        mid.iter()
            .enumerate()
            .map(|(i, id)| calc(id.clone(), format!("${{root.output}} + {i}"), &[])),
    );
    let last = format!("${{m1.output}} + ${{m{}.output}}", N - 2);
    steps.push(calc("last".into(), last, &mid));
    steps
}

#[test]
fn a_chain_of_10_000_steps_runs_in_order() {
    let mut planner = Recording::new(json!({"plan": {"goal": "count", "steps": chain()}}));
    let report = run(
        catalog("version = 1\n[tools.calc]\n"),
        config(),
        "count",
        &mut planner,
    );
    assert_eq!(report.stop, StopReason::Completed, "{:?}", report.stop);
    assert_eq!(report.steps.len(), N);
    assert!(
        report
            .steps
            .iter()
            .enumerate()
            .all(|(i, r)| r.id.as_str() == format!("s{i}") && r.status == StepStatus::Succeeded)
    );
    assert_eq!(report.answer, Some(json!(N)));
    assert_eq!(report.spent.steps, u32::try_from(N).unwrap());
}

#[test]
fn a_fan_out_and_in_of_10_000_steps_runs() {
    let mut planner = Recording::new(json!({"plan": {"goal": "fan", "steps": fan()}}));
    let report = run(
        catalog("version = 1\n[tools.calc]\n"),
        config(),
        "fan",
        &mut planner,
    );
    assert_eq!(report.stop, StopReason::Completed, "{:?}", report.stop);
    assert_eq!(report.steps.len(), N);
    assert_eq!(report.steps[0].id.as_str(), "root");
    assert_eq!(report.steps[N - 1].id.as_str(), "last");
    // (1 + 0) + (1 + 9,997)
    assert_eq!(report.answer, Some(json!(9_999)));
}

#[test]
fn a_10_000_step_plan_validates_and_its_cycle_is_found() {
    let cat = catalog("version = 1\n[tools.calc]\n");
    let plan: Plan = serde_json::from_value(json!({"goal": "fan", "steps": fan()})).unwrap();
    let valid = validate(&plan, &cat, N, &BTreeMap::new()).expect("valid");
    assert_eq!(valid.order.len(), N);
    assert_eq!(valid.order[0].as_str(), "root");
    assert_eq!(valid.order[N - 1].as_str(), "last");
    assert_eq!(valid.deps[&valid.order[N - 1]].len(), N - 2);
    // The chain's first step made to wait for its last: every step is in the cycle.
    let mut steps = chain();
    steps[0]["depends_on"] = json!([format!("s{}", N - 1)]);
    let plan: Plan = serde_json::from_value(json!({"goal": "count", "steps": steps})).unwrap();
    let problems = validate(&plan, &cat, N, &BTreeMap::new()).unwrap_err();
    assert_eq!(problems.len(), 1, "{:?}", problems[0]);
    assert_eq!(problems[0].kind, ProblemKind::Cycle);
    assert!(problems[0].message.starts_with("steps `s0`, `s1`, "));
    // One step over the cap is refused before anything else.
    let problems = validate(&plan, &cat, N - 1, &BTreeMap::new()).unwrap_err();
    assert_eq!(problems[0].kind, ProblemKind::TooManySteps);
}
