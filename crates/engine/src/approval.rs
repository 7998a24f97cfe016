//! People in the loop: review of a whole plan before it runs (with `--approve`), approval
//! of each step that needs it (a `sensitive` tool, or a step-wise turn below the confidence
//! threshold), and answers to a plan's questions (the built-in `human.ask` step, see
//! [`crate::ask`]).
//!
//! Time the engine spends waiting on an [`Approver`] is a person's time, not the run's:
//! it does not count against `max_wall_ms` (see [`crate::Budgets`]).

use serde_json::Value;

use super::plan::{Plan, Step};
use super::validate::{Catalog, Problem, ValidPlan};

/// Where the policy says it (`approval = "deny" | "auto"`).
pub use toolhost_runtime::policy::ApprovalMode;

pub use super::decider::{Decider, How};
pub use super::draft::PlanCheck;

/// A reviewer's answer to a plan.
#[derive(Debug, Clone, PartialEq)]
pub enum PlanDecision {
    Approve,
    /// Run this plan instead (it is validated again).
    Edit(Plan),
    Reject(String),
    /// Nobody decided: the run was cancelled (or suspended) while it waited. Nothing is
    /// journaled as a decision, and the run stops as its [`Cancel`](crate::Cancel) says.
    Withdrawn,
}

/// A reviewer's answer to a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepDecision {
    Approve,
    Reject(String),
    /// Nobody can approve: escalate.
    NoApprover,
    /// Nobody decided: the run was cancelled (or suspended) while it waited.
    Withdrawn,
}

/// A question a plan puts to a person (a `human.ask` step), with its arguments resolved.
#[derive(Debug, Clone, Copy)]
pub struct Question<'a> {
    pub step: &'a Step,
    /// The question, references interpolated.
    pub text: &'a str,
    /// The JSON Schema the answer must match.
    pub schema: &'a Value,
}

/// A person's reply to a [`Question`].
#[derive(Debug, Clone, PartialEq)]
pub enum Answered {
    /// The answer; the engine checks it against the question's schema again.
    Answer(Value),
    /// The person would not answer: the step fails with this reason.
    Decline(String),
    /// Nobody can answer: the run escalates.
    NoOne,
    /// Nobody answered: the run was cancelled (or suspended) while it waited.
    Withdrawn,
}

/// Who approves and answers. [`Unattended`] for non-interactive runs; the CLI's terminal
/// approver for `toolhost run --approve`; the service's, which waits for the API.
pub trait Approver {
    /// Reviews a validated plan before any of it runs.
    fn review_plan(&mut self, plan: &ValidPlan, catalog: &Catalog) -> PlanDecision;
    /// Approves one step just before it runs; `why` says why it needs approval.
    fn approve_step(&mut self, step: &Step, why: &str, catalog: &Catalog) -> StepDecision;
    /// Confirms a reviewer's edit that passed validation: the edited plan is shown for
    /// approval like any other (it may be edited again). By default the edit is the
    /// decision.
    fn confirm_edit(&mut self, edited: &ValidPlan, catalog: &Catalog) -> PlanDecision {
        let _ = (edited, catalog);
        PlanDecision::Approve
    }
    /// A reviewer's edit failed validation for `problems`: the reviewer may edit again
    /// or reject. `None` (the default) gives up: the run escalates with the problems.
    fn revise_edit(
        &mut self,
        edited: &Plan,
        problems: &[Problem],
        catalog: &Catalog,
    ) -> Option<PlanDecision> {
        let _ = (edited, problems, catalog);
        None
    }
    /// Called before each review of a plan ([`Self::review_plan`], and
    /// [`Self::revise_edit`] after an invalid edit): `check` tells, while the review
    /// lasts, what problems a draft edit would meet, with the validation the edit itself
    /// will meet (an editor validating as the person types). By default it is dropped.
    fn offer_check(&mut self, check: PlanCheck) {
        let _ = check;
    }
    /// Whether a person can answer questions (`human.ask` steps): plans that ask are
    /// refused at validation when nobody can.
    fn can_answer(&self) -> bool {
        false
    }
    /// Puts a question to a person and waits for the answer.
    fn answer(&mut self, question: &Question<'_>) -> Answered {
        let _ = question;
        Answered::NoOne
    }
    /// Who made the decision (or gave the answer) this approver returned last, for the
    /// journal; `None` (the default) when the approver does not say.
    fn decided_by(&self) -> Option<Decider> {
        None
    }
}

/// A lent approver (`Engine::builder(..).approver(&mut mine)`), kept by its owner.
impl<A: Approver + ?Sized> Approver for &mut A {
    fn review_plan(&mut self, plan: &ValidPlan, catalog: &Catalog) -> PlanDecision {
        (**self).review_plan(plan, catalog)
    }

    fn approve_step(&mut self, step: &Step, why: &str, catalog: &Catalog) -> StepDecision {
        (**self).approve_step(step, why, catalog)
    }

    fn confirm_edit(&mut self, edited: &ValidPlan, catalog: &Catalog) -> PlanDecision {
        (**self).confirm_edit(edited, catalog)
    }

    fn revise_edit(
        &mut self,
        edited: &Plan,
        problems: &[Problem],
        catalog: &Catalog,
    ) -> Option<PlanDecision> {
        (**self).revise_edit(edited, problems, catalog)
    }

    fn offer_check(&mut self, check: PlanCheck) {
        (**self).offer_check(check);
    }

    fn can_answer(&self) -> bool {
        (**self).can_answer()
    }

    fn answer(&mut self, question: &Question<'_>) -> Answered {
        (**self).answer(question)
    }

    fn decided_by(&self) -> Option<Decider> {
        (**self).decided_by()
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

    fn decided_by(&self) -> Option<Decider> {
        Some(Decider::auto())
    }
}
