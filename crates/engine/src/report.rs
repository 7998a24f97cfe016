//! What a run leaves behind: its [`RunReport`] and the record of each [`PlannerCall`].
//! Below the run loop, so that what reads reports (plan memory, observers, resume) need
//! not import the loop.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::budget::{Spent, StopReason};
use super::plan::Plan;
use super::planner::{Ask, Mode, Reply, Usage};
use super::record::StepRecord;
use super::validate::{Problem, ProblemKind};

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
    /// What the answering model was sent, where it differs from `ask` ([`Usage::sent_as`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_as: Option<Ask>,
}

impl PlannerCall {
    /// What the call used, as its planner reported it.
    pub fn usage(&self) -> Usage {
        Usage {
            model: self.model.clone(),
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cached_input_tokens: self.cached_input_tokens,
            also: self.also.clone(),
            cached: self.cached,
            sent_as: self.sent_as.clone().map(Box::new),
        }
    }
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

/// How many actions the policy refused in one step: requests its audit events show
/// refused, and its call if the data-flow rules stopped it before it was made.
pub(crate) fn refused_in(step: &StepRecord) -> u64 {
    let events = step.events.iter().filter(|e| e.is_refusal()).count() as u64;
    let flow = step
        .error
        .as_ref()
        .is_some_and(|e| e.kind == crate::flow::UNTRUSTED_FLOW);
    events + u64::from(flow)
}

/// How many of a rejected plan's problems are the policy's refusals (a tool or operation
/// it does not allow, untrusted data where a data-flow rule forbids it), rather than
/// mistakes.
pub(crate) fn refused_problems(problems: &[Problem]) -> u64 {
    problems
        .iter()
        .filter(|p| matches!(p.kind, ProblemKind::NotAllowed | ProblemKind::UntrustedFlow))
        .count() as u64
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
