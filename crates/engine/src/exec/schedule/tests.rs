//! The schedule hands out the steps a scan of the plan would, and its work grows with
//! the plan's steps and edges, not their square (counted, not timed).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use super::Schedule;
use crate::plan::{Plan, StepId};
use crate::record::StepStatus;
use crate::validate::{ValidPlan, topological};

fn id(s: &str) -> StepId {
    StepId::try_from(s.to_string()).unwrap()
}

/// A plan of `n` steps where step `i` depends on `deps(i)`.
fn plan(n: usize, deps: impl Fn(usize) -> Vec<usize>) -> ValidPlan {
    let steps: Vec<_> = (0..n)
        .map(|i| {
            let on: Vec<String> = deps(i).iter().map(|d| format!("s{d}")).collect();
            json!({"id": format!("s{i}"), "tool": "t", "operation": "op", "depends_on": on})
        })
        .collect();
    let plan: Plan = serde_json::from_value(json!({"goal": "g", "steps": steps})).unwrap();
    let deps: BTreeMap<StepId, BTreeSet<StepId>> = plan
        .steps
        .iter()
        .map(|s| (s.id.clone(), s.depends_on.iter().cloned().collect()))
        .collect();
    let ids: Vec<StepId> = plan.steps.iter().map(|s| s.id.clone()).collect();
    let order = topological(&ids, &deps).unwrap_or_default();
    ValidPlan { plan, deps, order }
}

fn chain(n: usize) -> ValidPlan {
    plan(n, |i| if i == 0 { vec![] } else { vec![i - 1] })
}

/// One step fans out to `n - 2`, which fan in to the last.
fn fan(n: usize) -> ValidPlan {
    plan(n, |i| match i {
        0 => vec![],
        i if i == n - 1 => (1..n - 1).collect(),
        _ => vec![0],
    })
}

/// Runs the schedule to the end, `parallel` at a time, every step ending as `status`
/// says; the events in order and the work done.
fn drive(
    p: &ValidPlan,
    parallel: usize,
    status: impl Fn(&str) -> StepStatus,
) -> (Vec<String>, u64) {
    let mut s = Schedule::new(p, &BTreeMap::new());
    let mut events = Vec::new();
    let mut running = Vec::new();
    loop {
        while let Some((step, bad)) = s.next_blocked() {
            events.push(format!("skip {} ({bad})", step.id));
            s.finished(&step.id, StepStatus::Skipped);
        }
        while running.len() < parallel
            && let Some(step) = s.next_ready()
        {
            events.push(format!("start {}", step.id));
            s.launched(&step.id);
            running.push(step.id.clone());
        }
        if running.is_empty() {
            return (events, s.work());
        }
        let id = running.remove(0);
        s.finished(&id, status(id.as_str()));
    }
}

#[test]
fn steps_start_in_order_and_a_failure_skips_its_dependents() {
    // s0 → s1 → s3, s0 → s2, s4 alone; s1 fails.
    let p = plan(5, |i| match i {
        1 | 2 => vec![0],
        3 => vec![1, 2],
        _ => vec![],
    });
    let status = |id: &str| {
        if id == "s1" {
            StepStatus::Failed
        } else {
            StepStatus::Succeeded
        }
    };
    let (events, _) = drive(&p, 2, status);
    assert_eq!(
        events,
        [
            "start s0",
            "start s4",
            "start s1",
            "start s2",
            "skip s3 (s1)"
        ]
    );
}

#[test]
fn prior_steps_count_as_finished() {
    let p = chain(3);
    let prior = BTreeMap::from([
        (id("s0"), StepStatus::Succeeded),
        (id("s1"), StepStatus::Failed),
    ]);
    let mut s = Schedule::new(&p, &prior);
    assert!(s.next_ready().is_none());
    let (step, bad) = s.next_blocked().expect("s2 is blocked");
    assert_eq!((step.id.as_str(), bad.as_str()), ("s2", "s1"));
}

/// The work per step at 10,000 steps is within 1.3× of that at 100 (it was proportional
/// to the plan: a 100× larger plan did 100× the work per step).
fn linear(shape: fn(usize) -> ValidPlan, parallel: usize) {
    let per_step = |n: usize| {
        let (events, work) = drive(&shape(n), parallel, |_| StepStatus::Succeeded);
        assert_eq!(events.len(), n);
        work as f64 / n as f64
    };
    let (small, large) = (per_step(100), per_step(10_000));
    assert!(
        large <= small * 1.3,
        "work per step: {small} at 100 steps, {large} at 10,000"
    );
}

#[test]
fn a_chain_is_scheduled_in_linear_work() {
    linear(chain, 4);
}

#[test]
fn a_fan_out_and_in_is_scheduled_in_linear_work() {
    linear(fan, 4);
}

#[test]
fn a_failure_at_the_root_of_10_000_steps_skips_them_in_linear_work() {
    let n = 10_000;
    let (events, work) = drive(&fan(n), 4, |id| {
        if id == "s0" {
            StepStatus::Failed
        } else {
            StepStatus::Succeeded
        }
    });
    assert_eq!(events.len(), n);
    assert_eq!(events[1], "skip s1 (s0)");
    // The fan-in step names its first blocked dependency in id order.
    assert_eq!(events[n - 1], format!("skip s{} (s1)", n - 1));
    // Each step and edge a small constant number of times.
    assert!(work < 8 * 2 * n as u64, "work {work} for {n} steps");
}

#[test]
fn the_order_is_by_round_then_plan_order() {
    // s0 → s2, s1 alone, s2 → s3; s4 depends on s1.
    let p = plan(5, |i| match i {
        2 => vec![0],
        3 => vec![2],
        4 => vec![1],
        _ => vec![],
    });
    let order: Vec<&str> = p.order.iter().map(StepId::as_str).collect();
    assert_eq!(order, ["s0", "s1", "s2", "s4", "s3"]);
}

#[test]
fn a_cycle_leaves_its_steps_over() {
    let p = plan(3, |i| match i {
        0 => vec![],
        1 => vec![2],
        _ => vec![1],
    });
    let ids: Vec<StepId> = p.plan.steps.iter().map(|s| s.id.clone()).collect();
    let left = topological(&ids, &p.deps).map(|_| ()).unwrap_err();
    assert_eq!(left, [id("s1"), id("s2")]);
}
