//! [`Problem`]: one thing wrong with a plan, and its [`ProblemKind`].

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::plan::StepId;

/// The class of a plan problem, stable for machines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ProblemKind {
    /// The plan's JSON does not have the plan's shape (a missing or unknown field, a
    /// malformed step id, a value of the wrong type).
    Malformed,
    TooManySteps,
    DuplicateId,
    UnknownTool,
    UnknownOperation,
    NotAllowed,
    BadArguments,
    BadReference,
    UnknownDependency,
    Cycle,
    TimeoutAbovePolicy,
    /// Untrusted data would reach an argument the policy keeps for trusted data.
    UntrustedFlow,
    /// The plan carries a `program`: a code-mode answer, which runs only in code mode.
    Program,
    /// A step needs someone this run does not have: a person to answer `human.ask`, or a
    /// model for `model.extract`. How the run was started, not a refusal by the policy.
    NobodyToAnswer,
}

/// One thing wrong with a plan (read back from a `plan_rejected` journal record too).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Problem {
    pub kind: ProblemKind,
    /// The step it concerns, if one.
    pub step: Option<StepId>,
    /// Which of the steps sharing a duplicated id it concerns: `(n, of)`, 1-based.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nth: Option<(usize, usize)>,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.step, self.nth) {
            (Some(s), Some((n, of))) => {
                write!(
                    f,
                    "step `{s}` (number {n} of the {of} steps with that id): {}",
                    self.message
                )
            }
            (Some(s), None) => write!(f, "step `{s}`: {}", self.message),
            (None, _) => f.write_str(&self.message),
        }
    }
}

/// Why a plan with `problems` stops the run at once, with no repair round: the planner
/// chose a tool it may not use (unknown, or not allowed), or a step needs someone this run
/// does not have; `None` when a repair may fix every problem.
pub(crate) fn escalates_at_once(problems: &[Problem]) -> Option<String> {
    if let Some(p) = problems
        .iter()
        .find(|p| matches!(p.kind, ProblemKind::UnknownTool | ProblemKind::NotAllowed))
    {
        return Some(format!("the planner chose a tool it may not use: {p}"));
    }
    problems
        .iter()
        .find(|p| p.kind == ProblemKind::NobodyToAnswer)
        .map(|p| format!("the plan needs what this run does not have: {p}"))
}
