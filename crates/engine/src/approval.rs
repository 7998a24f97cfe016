//! Human approval: of a whole plan before it runs (with `--approve`), and of each step
//! that needs it (a `sensitive` tool, or a step-wise turn below the confidence threshold).

use super::plan::{Plan, Step};
use super::validate::{Catalog, ValidPlan};

/// Where the policy says it (`approval = "deny" | "auto"`).
pub use toolhost_runtime::policy::ApprovalMode;

/// A reviewer's answer to a plan.
#[derive(Debug, Clone, PartialEq)]
pub enum PlanDecision {
    Approve,
    /// Run this plan instead (it is validated again).
    Edit(Plan),
    Reject(String),
}

/// A reviewer's answer to a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepDecision {
    Approve,
    Reject(String),
    /// Nobody can approve: escalate.
    NoApprover,
}

/// Who approves. [`Unattended`] for non-interactive runs; the CLI's terminal approver for
/// `toolhost run --approve`.
pub trait Approver {
    /// Reviews a validated plan before any of it runs.
    fn review_plan(&mut self, plan: &ValidPlan, catalog: &Catalog) -> PlanDecision;
    /// Approves one step just before it runs; `why` says why it needs approval.
    fn approve_step(&mut self, step: &Step, why: &str, catalog: &Catalog) -> StepDecision;
}

/// A lent approver (`Engine::builder(..).approver(&mut mine)`), kept by its owner.
impl<A: Approver + ?Sized> Approver for &mut A {
    fn review_plan(&mut self, plan: &ValidPlan, catalog: &Catalog) -> PlanDecision {
        (**self).review_plan(plan, catalog)
    }

    fn approve_step(&mut self, step: &Step, why: &str, catalog: &Catalog) -> StepDecision {
        (**self).approve_step(step, why, catalog)
    }
}

/// No person present: plans run as validated; steps needing approval follow the mode.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unattended(pub ApprovalMode);

impl Approver for Unattended {
    fn review_plan(&mut self, _plan: &ValidPlan, _catalog: &Catalog) -> PlanDecision {
        PlanDecision::Approve
    }

    fn approve_step(&mut self, _step: &Step, _why: &str, _catalog: &Catalog) -> StepDecision {
        match self.0 {
            ApprovalMode::Deny => StepDecision::NoApprover,
            ApprovalMode::Auto => StepDecision::Approve,
        }
    }
}
