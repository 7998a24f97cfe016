//! The approver of served runs: it parks the run in `waiting_for_approval` with the
//! pending plan or step on show (or in `waiting_for_input` with a plan's question), and
//! waits until the API answers (or the run is cancelled or suspended, which withdraws the
//! question: nobody decided). A run submitted
//! without `approve` is parked for its questions only: the policy decides its steps. The journal wrapper around it (`Journal::approvals`)
//! records each decision before it takes effect, as for `toolhost run --approve`.

use std::sync::Arc;
use std::time::Duration;

use toolhost_engine::approval::{
    Answered, ApprovalMode, Approver, Decider, PlanCheck, PlanDecision, Question, StepDecision,
};
use toolhost_engine::validate::{Catalog, Problem, ValidPlan};
use toolhost_engine::{Plan, Step};

use super::run::{Answer, EditVerdict, Run};
use crate::registry::Pending;

/// How often a waiting approver looks at the run's cancel flag.
const CANCEL_POLL: Duration = Duration::from_millis(100);

pub(crate) struct ApiApprover {
    pub run: Arc<Run>,
    /// `None` when people review plans and steps through the API; else the policy's
    /// mode decides steps and plans run as validated.
    pub reviews: Option<ApprovalMode>,
    /// The plan under review, shown again when an edit of it fails validation.
    pub proposed: Option<Pending>,
    /// Who made the last decision, for the journal.
    pub last: Option<Decider>,
}

impl ApiApprover {
    /// Waits for the answer to `pending`, noting who gave it (nobody, on a cancel).
    fn wait(&mut self, pending: Pending) -> Option<Answer> {
        self.run.park(pending);
        self.take_answer()
    }

    fn take_answer(&mut self) -> Option<Answer> {
        let answer = self.run.wait_for_answer(CANCEL_POLL);
        self.last = answer.as_ref().map(|(_, by)| by.clone());
        answer.map(|(a, _)| a)
    }

    /// The policy decides, nobody is asked.
    fn auto<T>(&mut self, decision: T) -> T {
        self.last = Some(Decider::auto());
        decision
    }
}

impl ApiApprover {
    fn decide_plan(&mut self, pending: Pending) -> PlanDecision {
        self.run.park(pending);
        self.decide_plan_parked()
    }

    fn decide_plan_parked(&mut self) -> PlanDecision {
        match self.take_answer() {
            None => PlanDecision::Withdrawn,
            Some(Answer::Approve) => PlanDecision::Approve,
            Some(Answer::Edit(plan)) => PlanDecision::Edit(*plan),
            Some(Answer::Reject(why)) => PlanDecision::Reject(why),
            // `decide` gives answers to questions only.
            Some(Answer::Answer(_)) => PlanDecision::Reject("an answer is no approval".into()),
        }
    }
}

impl Approver for ApiApprover {
    fn review_plan(&mut self, plan: &ValidPlan, catalog: &Catalog) -> PlanDecision {
        if self.reviews.is_some() {
            return self.auto(PlanDecision::Approve);
        }
        let pending = Pending::reviewed(plan, catalog);
        self.proposed = Some(pending.clone());
        self.decide_plan(pending)
    }

    /// The edit validated: it is the decision (the API's caller gets its 200), made by
    /// whoever made the edit.
    fn confirm_edit(&mut self, _edited: &ValidPlan, _catalog: &Catalog) -> PlanDecision {
        self.run.judged(EditVerdict::Accepted);
        PlanDecision::Approve
    }

    /// The edit did not validate: the API's caller gets a 422 with every problem, and the
    /// run waits again on the plan under review, to be approved, rejected or edited anew.
    fn revise_edit(
        &mut self,
        edited: &Plan,
        problems: &[Problem],
        _catalog: &Catalog,
    ) -> Option<PlanDecision> {
        let pending = self
            .proposed
            .clone()
            .unwrap_or_else(|| Pending::plan(edited));
        // Parked before the verdict is told, so the caller sees the run waiting again.
        self.run.park(pending.clone());
        self.run.judged(EditVerdict::Invalid(
            problems.iter().map(ToString::to_string).collect(),
        ));
        Some(self.decide_plan_parked())
    }

    fn offer_check(&mut self, check: PlanCheck) {
        self.run.offer_check(check);
    }

    fn approve_step(&mut self, step: &Step, why: &str, catalog: &Catalog) -> StepDecision {
        match self.reviews {
            None => {}
            Some(ApprovalMode::Deny) => return self.auto(StepDecision::NoApprover),
            Some(ApprovalMode::Auto) => return self.auto(StepDecision::Approve),
        }
        let pending = Pending::step(step, why, catalog);
        match self.wait(pending) {
            None => StepDecision::Withdrawn,
            Some(Answer::Approve) => StepDecision::Approve,
            Some(Answer::Reject(why)) => StepDecision::Reject(why),
            // `decide` refuses to edit a step or answer it; should one arrive, it is no
            // approval.
            Some(Answer::Edit(_) | Answer::Answer(_)) => {
                StepDecision::Reject("a step can only be approved or rejected".into())
            }
        }
    }

    fn can_answer(&self) -> bool {
        true
    }

    fn answer(&mut self, q: &Question<'_>) -> Answered {
        let pending = Pending::question(q);
        match self.wait(pending) {
            None => Answered::Withdrawn,
            Some(Answer::Answer(v)) => Answered::Answer(v),
            Some(Answer::Reject(why)) => Answered::Decline(why),
            Some(Answer::Approve | Answer::Edit(_)) => {
                Answered::Decline("a question takes an answer, not an approval".into())
            }
        }
    }

    fn decided_by(&self) -> Option<Decider> {
        self.last.clone()
    }
}
