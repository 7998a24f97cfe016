//! The [`Planner`] trait, what a planner is asked and what it answers.
//!
//! Three modes: plan-then-execute (the planner returns a whole [`Plan`], and a revised
//! remainder after a failure), step-wise (each turn the planner returns one [`Turn`]), and
//! ReAct, the baseline the other two are measured against: turns like step-wise, but a
//! model planner is shown every earlier thought, action and observation in full.
//! Providers plug in by implementing [`Planner`]; [`scripted`](super::scripted) is the
//! offline one.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::ask;
pub use super::asked::Ask;
pub use super::budget::Usage;
use super::extract;
use super::plan::{OperationName, Plan, ToolName};
use super::record::{ModelCall, StepRecord};
use super::validate::{Catalog, Problem};

/// How the planner and executor take turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    PlanThenExecute,
    StepWise,
    /// Run as [`Mode::StepWise`] (one planner turn per action); a model planner's prompt
    /// is the whole ReAct transcript, uncut, so its cost grows with the history.
    React,
    /// Code mode: the planner answers a program (a plan whose `program` is Python source)
    /// that calls the run's tools as typed functions; each call runs as a plan step
    /// ([`code`](crate::code)).
    Code,
}

impl Mode {
    /// The modes evaluations compare, in the order reports list them (code mode is not
    /// among them yet: its planners are scripted only).
    pub const ALL: [Mode; 3] = [Mode::PlanThenExecute, Mode::StepWise, Mode::React];

    /// Whether the planner answers one [`Turn`] at a time (step-wise and ReAct).
    pub fn takes_turns(self) -> bool {
        match self {
            Mode::PlanThenExecute | Mode::Code => false,
            Mode::StepWise | Mode::React => true,
        }
    }

    /// The name a task file and `--mode` use (`plan-then-execute`, `step-wise`, `react`).
    pub fn name(self) -> &'static str {
        match self {
            Mode::PlanThenExecute => "plan-then-execute",
            Mode::StepWise => "step-wise",
            Mode::React => "react",
            Mode::Code => "code",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Mode, String> {
        Mode::ALL
            .into_iter()
            .chain([Mode::Code])
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                format!("unknown mode `{s}`: expected plan-then-execute, step-wise, react or code")
            })
    }
}

/// One operation as the planner sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct OperationSummary {
    pub name: OperationName,
    pub description: Option<String>,
    pub params_schema: Value,
    pub result_schema: Value,
}

/// One tool the policy allows, as the planner sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ToolSummary {
    pub name: ToolName,
    pub description: Option<String>,
    pub operations: Vec<OperationSummary>,
    pub sensitive: bool,
}

/// What the planner can use: the catalog's tools and their allowed operations.
pub(crate) fn tool_summaries(catalog: &Catalog) -> Vec<ToolSummary> {
    catalog
        .tools
        .iter()
        .map(|(name, e)| ToolSummary {
            name: name.clone(),
            description: e.tool.description.clone(),
            sensitive: e.policy.sensitive,
            operations: e
                .tool
                .operations
                .iter()
                .filter(|o| {
                    e.policy
                        .operations
                        .as_ref()
                        .is_none_or(|ops| ops.contains(&o.name))
                })
                .map(|o| OperationSummary {
                    name: o.name.as_str().into(),
                    description: o.description.clone(),
                    params_schema: o.params_schema.clone(),
                    result_schema: o.result_schema.clone(),
                })
                .collect(),
        })
        .collect()
}

/// Budgets left when the planner is called.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Remaining {
    pub steps: u32,
    pub replans: u32,
    pub wall_ms: u64,
    pub fuel: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
}

/// Everything a planner is given.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct PlanRequest {
    pub goal: String,
    pub mode: Mode,
    pub tools: Vec<ToolSummary>,
    /// Every step run so far, in order of completion.
    pub history: Vec<StepRecord>,
    /// The step whose failure asks for a revised plan.
    pub failure: Option<StepRecord>,
    /// Problems of the planner's previous answer, to repair.
    pub problems: Vec<Problem>,
    pub remaining: Remaining,
    /// The revision the answer will be (plan-then-execute), or the turn number.
    pub revision: u32,
    /// Turn-taking modes: the planner's `thought` for each earlier turn, by turn number
    /// (the `revision` of that turn's records), for a transcript to show beside its step.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub thoughts: BTreeMap<u32, String>,
    /// Code mode: the run's tools as the typed Python API a program calls (what
    /// `toolhost tool inspect --as python` prints, the allowed operations only). Derived
    /// from the catalog, so a recording leaves it out.
    #[serde(skip)]
    pub api: Option<String>,
}

/// A step-wise turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// The planner's reasoning, kept for the record.
    #[serde(default)]
    pub thought: String,
    /// What the next step does, in words.
    #[serde(default)]
    pub next_step: Option<String>,
    #[serde(default)]
    pub tool: Option<ToolName>,
    #[serde(default)]
    pub operation: Option<OperationName>,
    #[serde(default)]
    pub arguments: Option<Value>,
    /// The goal is reached (or cannot be): end the run.
    #[serde(default)]
    pub stop: bool,
    /// 0..=1; below the run's threshold the step needs approval.
    #[serde(default = "full_confidence")]
    pub confidence: f64,
    /// The final answer, with `stop`.
    #[serde(default)]
    pub answer: Option<Value>,
    /// Hands the rest of the task to this deterministic plan (hybrid automation): it is
    /// validated and run like a plan-then-execute revision; if every step succeeds the run
    /// completes, otherwise the failure is the next turn's observation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<Plan>,
}

fn full_confidence() -> f64 {
    1.0
}

/// What a planner answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Reply {
    Plan {
        plan: Plan,
    },
    Turn {
        turn: Box<Turn>,
    },
    /// The planner cannot go on (e.g. no scripted replan for this failure).
    GiveUp {
        why: String,
    },
}

impl Ask {
    pub fn of(req: &PlanRequest) -> Ask {
        match (req.mode, req.problems.is_empty(), &req.failure) {
            (Mode::StepWise | Mode::React, true, _) => Ask::Turn,
            (Mode::StepWise | Mode::React, false, _) => Ask::TurnRepair,
            (Mode::PlanThenExecute, false, _) => Ask::Repair,
            (Mode::PlanThenExecute, true, Some(f)) => Ask::Replan {
                failed: f.id.clone(),
            },
            (Mode::PlanThenExecute, true, None) => Ask::Plan,
            (Mode::Code, _, Some(f)) => Ask::Replan {
                failed: f.id.clone(),
            },
            (Mode::Code, _, None) => Ask::Plan,
        }
    }
}

/// Why a planner call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("planner `{planner}` failed: {reason}")]
pub struct PlannerError {
    pub planner: String,
    pub reason: String,
    /// Tokens the failed call still used (charged to the run).
    pub usage: Usage,
    /// The run budget the planner ran out of, if that is why it failed.
    pub budget: Option<super::budget::Budget>,
}

/// A boxed planner future.
pub type PlanFuture<'a> =
    Pin<Box<dyn Future<Output = Result<(Reply, Usage), PlannerError>> + Send + 'a>>;

/// Decides the steps. Implementations: the scripted planner; LLM providers.
pub trait Planner: Send {
    /// For messages and the record.
    fn name(&self) -> String;

    /// Model name for pricing, and the most input and output tokens `req` may use, for
    /// the budget check made before the call is sent.
    fn estimate(&self, req: &PlanRequest) -> Usage;

    /// Answers `req`.
    fn plan<'a>(&'a mut self, req: &'a PlanRequest) -> PlanFuture<'a>;

    /// Called once before a resumed run goes on, with what the planner was asked before
    /// the run stopped, in order. A planner that keeps state between calls (the scripted
    /// one) moves past the answers it already gave; a model needs nothing, since every
    /// request carries the whole history.
    fn fast_forward(&mut self, _asked: &[Ask]) {}
}

/// The built-in tool as the planner sees it, listed when a person can answer.
pub(crate) fn ask_summary() -> ToolSummary {
    let mut params = Map::new();
    params.insert("type".into(), "object".into());
    params.insert(
        "properties".into(),
        json!({
            "question": {"type": "string", "description": "The question, in words; `${STEP.output.PATH}` interpolates earlier outputs."},
            "answer": {"type": "object", "description": "The JSON Schema of the answer (default {\"type\": \"string\"}): type string (enum allowed), integer, number, boolean, array (with items) or object (with properties, required)."}
        }),
    );
    params.insert("required".into(), json!(["question"]));
    params.insert("additionalProperties".into(), false.into());
    ToolSummary {
        name: ask::TOOL.into(),
        description: Some(
            "Asks the person running the task a question and waits for the answer, which becomes the step's output. Use it when the goal leaves a choice to the person.".into(),
        ),
        operations: vec![OperationSummary {
            name: ask::OPERATION.into(),
            description: Some("Ask a question; the output is the answer, matching `answer`.".into()),
            params_schema: Value::Object(params),
            result_schema: json!({"description": "The answer, matching the step's `answer` schema."}),
        }],
        sensitive: false,
    }
}

/// What a step's model call (an extraction's) is charged as.
impl From<&ModelCall> for Usage {
    fn from(c: &ModelCall) -> Usage {
        Usage {
            model: c.model.clone(),
            input_tokens: c.input_tokens,
            output_tokens: c.output_tokens,
            cached_input_tokens: c.cached_input_tokens,
            ..Usage::default()
        }
    }
}

/// The built-in tool as the planner sees it, listed when the run has an extractor.
pub(crate) fn extract_summary() -> ToolSummary {
    let mut params = Map::new();
    params.insert("type".into(), "object".into());
    params.insert(
        "properties".into(),
        json!({
            "input": {"description": "What to read: usually {\"$ref\": \"STEP.output.PATH\"}, an earlier step's output."},
            "instruction": {"type": "string", "description": "What to extract, in words (a literal: no references)."},
            "output": {"type": "object", "description": "The JSON Schema of the value (default {\"type\": \"string\"}): type string (enum allowed), integer, number, boolean, array (with items) or object (with properties, required)."}
        }),
    );
    params.insert("required".into(), json!(["input", "instruction"]));
    params.insert("additionalProperties".into(), false.into());
    ToolSummary {
        name: extract::TOOL.into(),
        description: Some(
            "Reads a value out of text with a model that has no tools, typed by a JSON Schema. Use it to take a decision's input (an amount, a date, a name) from untrusted data; the value stays untrusted for the policy.".into(),
        ),
        operations: vec![OperationSummary {
            name: extract::OPERATION.into(),
            description: Some("Extract a value; the output matches `output`.".into()),
            params_schema: Value::Object(params),
            result_schema: json!({"description": "The value, matching the step's `output` schema."}),
        }],
        sensitive: false,
    }
}
