//! Planner round trips and tokens per task: plan-then-execute vs step-wise, on two tasks
//! replayed with scripted planners (3 and 8 calculator steps). Tokens are what a model
//! would be charged: the prompt the LLM planner builds for each request
//! (`llm::prompt::build`: rules, tools with their schemas, budgets, history) with its
//! response schema, and the answer's JSON, at four characters a token.

use std::sync::Arc;

use serde_json::{Value, json};
use toolhost_engine::planner::PlanFuture;
use toolhost_engine::{
    ApprovalMode, Canned, Catalog, Engine, Mode, PlanRequest, Planner, Quiet, RunConfig, Script,
    Spent, StopReason, Unattended, Usage,
};
use toolhost_llm::{LlmConfig, ProviderKind, prompt};
use toolhost_runtime::Runtime;

use super::Figure;

/// The scripted answers, charged as a model's would be: a token per four bytes of the
/// prompt toolhost builds, of which the bytes it shares at the start with the previous
/// request are counted as read from a prompt cache (a provider that caches any repeated
/// prefix; OpenAI and Anthropic cache only prefixes of 1,024 tokens or more).
struct Counted {
    script: Canned,
    context_chars: usize,
    /// The previous request's text: system prompt, answer schema, user message.
    last: String,
}

impl Planner for Counted {
    fn name(&self) -> String {
        self.script.name()
    }

    fn estimate(&self, req: &PlanRequest) -> Usage {
        self.script.estimate(req)
    }

    fn plan<'a>(&'a mut self, req: &'a PlanRequest) -> PlanFuture<'a> {
        Box::pin(async move {
            let (reply, _) = self.script.plan(req).await?;
            let p = prompt::build(req, self.context_chars, 1024, None);
            let sent = format!("{}{}{}", p.system, p.strict_schema, p.user);
            let shared = sent
                .bytes()
                .zip(self.last.bytes())
                .take_while(|(a, b)| a == b)
                .count();
            self.last = sent;
            let answer = serde_json::to_string(&reply).map_or(0, |s| s.len());
            let usage = Usage {
                model: "counted".into(),
                input_tokens: (self.last.len() / 4) as u64,
                cached_input_tokens: (shared / 4) as u64,
                output_tokens: (answer / 4) as u64,
                ..Usage::default()
            };
            Ok((reply, usage))
        })
    }
}

fn spent(rt: &Arc<Runtime>, catalog: &Arc<Catalog>, mode: Mode, script: Value) -> Spent {
    let script: Script = serde_json::from_value(script).unwrap();
    let mut planner = Counted {
        script: Canned::scripted(script),
        context_chars: LlmConfig::new(ProviderKind::OpenAi, "bench").context_chars,
        last: String::new(),
    };
    let mut approver = Unattended(ApprovalMode::Deny);
    let mut observer = Quiet;
    let mut engine = Engine::builder(rt.clone(), catalog.clone())
        .config(RunConfig {
            mode,
            ..RunConfig::default()
        })
        .approver(&mut approver)
        .observer(&mut observer)
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

/// The task of evaluating `exprs`, in both modes: (plan-then-execute, step-wise).
fn task(rt: &Arc<Runtime>, catalog: &Arc<Catalog>, exprs: &[&str]) -> (Spent, Spent) {
    let plan = json!({"plan": {"goal": "figures", "steps": exprs.iter().enumerate().map(|(i, e)|
        json!({"id": format!("s{i}"), "tool": "calc", "operation": "eval", "args": {"expression": e}})).collect::<Vec<_>>()}});
    let mut turns: Vec<Value> = exprs
        .iter()
        .map(|e| json!({"tool": "calc", "operation": "eval", "arguments": {"expression": e}}))
        .collect();
    turns.push(json!({"stop": true}));
    (
        spent(rt, catalog, Mode::PlanThenExecute, plan),
        spent(rt, catalog, Mode::StepWise, json!({"turns": turns})),
    )
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
    let runs: Vec<(usize, Spent, Spent)> = tasks
        .iter()
        .map(|exprs| {
            let (whole, stepwise) = task(&rt, &catalog, exprs);
            (exprs.len(), whole, stepwise)
        })
        .collect();
    let tokens = |s: &Spent| s.input_tokens + s.output_tokens;
    let mean = |f: &dyn Fn(&(usize, Spent, Spent)) -> f64| {
        runs.iter().map(f).sum::<f64>() / runs.len() as f64
    };
    let detail = |what: &dyn Fn(&Spent) -> String| {
        runs.iter()
            .map(|(n, whole, stepwise)| {
                format!(
                    "{n} steps: plan-then-execute {} vs step-wise {}",
                    what(whole),
                    what(stepwise)
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    vec![
        Figure {
            name: "planner round trips per task (mean of 2 tasks)",
            detail: detail(&|s| format!("{} call(s)", s.planner_calls)),
            ratio: mean(&|(_, w, s)| f64::from(s.planner_calls) / f64::from(w.planner_calls)),
            target: 1.0,
            lower_is_better: false,
            gated: true,
        },
        Figure {
            name: "planner tokens per task (mean of 2 tasks)",
            detail: detail(&|s| {
                format!(
                    "{} in ({} of them a cached prefix, {} not) + {} out tokens",
                    s.input_tokens,
                    s.cached_input_tokens,
                    s.input_tokens - s.cached_input_tokens,
                    s.output_tokens
                )
            }),
            ratio: mean(&|(_, w, s)| tokens(s) as f64 / tokens(w) as f64),
            target: 1.0,
            lower_is_better: false,
            gated: true,
        },
    ]
}
