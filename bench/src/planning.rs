//! Planner round trips and tokens per task: plan-then-execute vs step-wise, and code mode
//! (one program over the tools' typed Python API) vs step-wise, on two tasks replayed with
//! scripted planners (3 and 8 calculator steps). Tokens are what a model
//! would be charged ([`Counted`]: the prompt the LLM planner builds for each request, with
//! its response schema, and the answer's JSON, at four characters a token).

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use toolhost_engine::{
    ApprovalMode, Canned, Catalog, Engine, Mode, Quiet, RunConfig, Script, Spent, StopReason,
    Unattended,
};
use toolhost_llm::{Counted, LlmConfig, ProviderKind};
use toolhost_runtime::{Runtime, Tool};

use super::Figure;

/// What each mode spent on one task.
struct Modes {
    whole: Spent,
    stepwise: Spent,
    code: Spent,
}

fn spent(
    rt: &Arc<Runtime>,
    catalog: &Arc<Catalog>,
    interpreter: &Arc<Tool>,
    mode: Mode,
    script: Value,
) -> Spent {
    let script: Script = serde_json::from_value(script).unwrap();
    let mut planner = Counted::new(
        Box::new(Canned::scripted(script)),
        LlmConfig::new(ProviderKind::OpenAi, "bench").context_chars,
    );
    let mut approver = Unattended(ApprovalMode::Deny);
    let mut observer = Quiet;
    let mut engine = Engine::builder(rt.clone(), catalog.clone())
        .config(RunConfig {
            mode,
            ..RunConfig::default()
        })
        .approver(&mut approver)
        .observer(&mut observer)
        .interpreter(interpreter.clone())
        .build();
    let report = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(engine.run("figures", &mut planner));
    assert!(
        matches!(
            report.stop,
            StopReason::Completed | StopReason::PlannerStopped
        ),
        "{report:?}"
    );
    report.spent
}

/// The task of evaluating `exprs`, in each mode.
fn task(
    rt: &Arc<Runtime>,
    catalog: &Arc<Catalog>,
    interpreter: &Arc<Tool>,
    exprs: &[&str],
) -> Modes {
    let plan = json!({"plan": {"goal": "figures", "steps": exprs.iter().enumerate().map(|(i, e)|
        json!({"id": format!("s{i}"), "tool": "calc", "operation": "eval", "args": {"expression": e}})).collect::<Vec<_>>()}});
    let mut turns: Vec<Value> = exprs
        .iter()
        .map(|e| json!({"tool": "calc", "operation": "eval", "arguments": {"expression": e}}))
        .collect();
    turns.push(json!({"stop": true}));
    let program = format!(
        "answer([calc.eval_(expression=e) for e in {}])\n",
        serde_json::to_string(exprs).unwrap()
    );
    let run = |mode, script| spent(rt, catalog, interpreter, mode, script);
    Modes {
        whole: run(Mode::PlanThenExecute, plan),
        stepwise: run(Mode::StepWise, json!({"turns": turns})),
        code: run(Mode::Code, json!({"program": program})),
    }
}

pub fn run() -> Vec<Figure> {
    let (rt, catalog) = crate::setup::one_tool(
        "version = 1\n[tools.calc]\n",
        "calc",
        toolhost_tools::CALC.as_ref(),
    );
    let tasks: [&[&str]; 2] = [
        &["12 * 4 + 5", "2 ^ 10", "(1 + 2) * 3"],
        &[
            "1 + 1",
            "2 * 3",
            "10 / 4",
            "7 - 9",
            "3 ^ 4",
            "(5 + 5) * 2",
            "100 / 8",
            "6 * 7",
        ],
    ];
    let interpreter = Arc::new(
        rt.load_interpreter(Path::new(toolhost_tools::PYTHON))
            .expect("the code-mode interpreter loads"),
    );
    let runs: Vec<(usize, Modes)> = tasks
        .iter()
        .map(|exprs| (exprs.len(), task(&rt, &catalog, &interpreter, exprs)))
        .collect();
    let mut figures = Vec::new();
    for (other, name, pick) in [
        (
            "plan-then-execute",
            [
                "planner round trips per task (mean of 2 tasks)",
                "planner tokens per task (mean of 2 tasks)",
            ],
            (|m: &Modes| &m.whole) as fn(&Modes) -> &Spent,
        ),
        (
            "code mode",
            [
                "code mode: planner round trips per task (mean of 2 tasks)",
                "code mode: planner tokens per task (mean of 2 tasks)",
            ],
            |m: &Modes| &m.code,
        ),
    ] {
        figures.extend(compare(&runs, other, name, pick));
    }
    figures
}

/// Step-wise against `other` (picked from each task's [`Modes`]): round trips and tokens.
fn compare(
    runs: &[(usize, Modes)],
    other: &str,
    [trips, tokens_name]: [&'static str; 2],
    pick: fn(&Modes) -> &Spent,
) -> Vec<Figure> {
    let tokens = |s: &Spent| s.input_tokens + s.output_tokens;
    let mean = |f: &dyn Fn(&Spent, &Spent) -> f64| {
        runs.iter()
            .map(|(_, m)| f(pick(m), &m.stepwise))
            .sum::<f64>()
            / runs.len() as f64
    };
    let detail = |what: &dyn Fn(&Spent) -> String| {
        runs.iter()
            .map(|(n, m)| {
                format!(
                    "{n} steps: {other} {} vs step-wise {}",
                    what(pick(m)),
                    what(&m.stepwise)
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    vec![
        Figure {
            name: trips,
            detail: detail(&|s| format!("{} call(s)", s.planner_calls)),
            ratio: mean(&|w, s| f64::from(s.planner_calls) / f64::from(w.planner_calls)),
            target: 1.0,
            lower_is_better: false,
            gated: true,
        },
        Figure {
            name: tokens_name,
            detail: detail(&|s| {
                format!(
                    "{} in ({} of them a cached prefix, {} not) + {} out tokens",
                    s.input_tokens,
                    s.cached_input_tokens,
                    s.input_tokens - s.cached_input_tokens,
                    s.output_tokens
                )
            }),
            ratio: mean(&|w, s| tokens(s) as f64 / tokens(w) as f64),
            target: 1.0,
            lower_is_better: false,
            gated: true,
        },
    ]
}
