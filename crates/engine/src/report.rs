//! What a run leaves behind: its [`RunReport`] and the record of each [`PlannerCall`].
//! Below the run loop, so that what reads reports (plan memory, observers, resume) need
//! not import the loop.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::budget::{Spent, StopReason};
use super::plan::Plan;
use super::planner::{Ask, Mode, Reply, Usage};
use super::record::StepRecord;

/// One planner call, for the record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PlannerCall {
    pub revision: u32,
    pub model: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// How many of `input_tokens` came from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
    pub latency_us: u64,
    /// `plan`, `turn` or `give_up`.
    pub reply: String,
    /// What the planner was asked for.
    pub ask: Ask,
    /// What it answered, for the record and for `toolhost replay`.
    pub response: Reply,
    /// Served from plan memory (`model` is `plan-memory`, no tokens).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
    /// Other models the reply needed, e.g. an ensemble's fast model before it escalated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<Usage>,
}

/// The result of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RunReport {
    pub goal: String,
    pub mode: Mode,
    pub stop: StopReason,
    /// The final answer: the planner's (step-wise) or the last step's output.
    pub answer: Option<Value>,
    /// Every validated plan revision, in order.
    pub revisions: Vec<Plan>,
    pub steps: Vec<StepRecord>,
    pub planner_calls: Vec<PlannerCall>,
    pub spent: Spent,
    /// Actions the policy refused during the run (a file, network or socket request
    /// outside the grants, an operation not allowed), counted from the steps' audit
    /// events: security events, whatever the stop reason.
    pub refused: u64,
}

/// How many actions the policy refused in `steps`.
pub fn refusals(steps: &[StepRecord]) -> u64 {
    steps
        .iter()
        .flat_map(|s| &s.events)
        .filter(|e| e.is_refusal())
        .count() as u64
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
