//! Planner round trips per task: plan-then-execute vs step-wise, on the example tasks'
//! goal replayed with scripted planners (tokens are those the scripts charge).

use std::sync::Arc;

use serde_json::json;
use toolhost::engine::{
    ApprovalMode, Catalog, Engine, Entry, Mode, Quiet, RunConfig, Script, ScriptedPlanner,
    StopReason, Unattended,
};
use toolhost::{Gate, Policy, Runtime, RuntimeConfig};

use super::Figure;

fn calls(rt: &Arc<Runtime>, catalog: &Arc<Catalog>, mode: Mode, script: serde_json::Value) -> u32 {
    let script: Script = serde_json::from_value(script).unwrap();
    let mut planner = ScriptedPlanner::new(script);
    let mut approver = Unattended(ApprovalMode::Deny);
    let mut observer = Quiet;
    let mut engine = Engine {
        rt: rt.clone(),
        catalog: catalog.clone(),
        config: RunConfig {
            mode,
            ..RunConfig::default()
        },
        approver: &mut approver,
        observer: &mut observer,
        gate: Arc::new(Gate::new()),
    };
    let report = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(engine.run("three figures", &mut planner));
    assert!(
        matches!(
            report.stop,
            StopReason::Completed | StopReason::PlannerStopped
        ),
        "{report:?}"
    );
    report.spent.planner_calls
}

pub fn run() -> Figure {
    let rt = Arc::new(Runtime::new(RuntimeConfig::default()).expect("runtime"));
    let policy = Policy::parse("bench.toml", "version = 1\n[tools.calc]\n", ".".as_ref()).unwrap();
    let catalog = Arc::new(Catalog {
        tools: [(
            "calc".to_string(),
            Entry {
                tool: Arc::new(rt.load(toolhost_tools::CALC.as_ref()).unwrap()),
                policy: policy.tools["calc"].clone(),
            },
        )]
        .into(),
    });
    let exprs = ["12 * 4 + 5", "2 ^ 10", "(1 + 2) * 3"];
    let plan = json!({"plan": {"goal": "three figures", "steps": exprs.iter().enumerate().map(|(i, e)|
        json!({"id": format!("s{i}"), "tool": "calc", "operation": "eval", "args": {"expression": e}})).collect::<Vec<_>>()}});
    let mut turns: Vec<serde_json::Value> = exprs
        .iter()
        .map(|e| json!({"tool": "calc", "operation": "eval", "arguments": {"expression": e}}))
        .collect();
    turns.push(json!({"stop": true}));
    let whole = calls(&rt, &catalog, Mode::PlanThenExecute, plan);
    let stepwise = calls(&rt, &catalog, Mode::StepWise, json!({"turns": turns}));
    Figure {
        name: "planner round trips per task (3 steps)",
        detail: format!("plan-then-execute {whole} call(s) vs step-wise {stepwise} calls"),
        ratio: f64::from(stepwise) / f64::from(whole),
        target: 1.0,
        lower_is_better: false,
    }
}
