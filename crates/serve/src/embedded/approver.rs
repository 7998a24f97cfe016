//! The approver of served runs: it parks the run in `waiting_for_approval` with the
//! pending plan or step on show (or in `waiting_for_input` with a plan's question), and
//! waits until the API answers (or the run is cancelled, which rejects). A run submitted
//! without `approve` is parked for its questions only: the policy decides its steps. The journal wrapper around it (`Journal::approvals`)
//! records each decision before it takes effect, as for `toolhost run --approve`.

use std::sync::Arc;
use std::time::Duration;

use toolhost_engine::Step;
use toolhost_engine::approval::{
    Answered, ApprovalMode, Approver, PlanDecision, Question, StepDecision,
};
use toolhost_engine::validate::{Catalog, ValidPlan};

use super::run::{Answer, Run};
use crate::registry::Pending;

/// How often a waiting approver looks at the run's cancel flag.
const CANCEL_POLL: Duration = Duration::from_millis(100);

pub(crate) struct ApiApprover {
    pub run: Arc<Run>,
    /// `None` when people review plans and steps through the API; else the policy's
    /// mode decides steps and plans run as validated.
    pub reviews: Option<ApprovalMode>,
}

impl ApiApprover {
    fn wait(&self, pending: Pending) -> Option<Answer> {
        self.run.park(pending);
        self.run.wait_for_answer(CANCEL_POLL)
    }
}

impl Approver for ApiApprover {
    fn review_plan(&mut self, plan: &ValidPlan, _catalog: &Catalog) -> PlanDecision {
        if self.reviews.is_some() {
            return PlanDecision::Approve;
        }
        let pending = Pending::plan(&plan.plan);
        match self.wait(pending) {
            None => PlanDecision::Reject("cancelled while waiting for approval".into()),
            Some(Answer::Approve) => PlanDecision::Approve,
            Some(Answer::Edit(plan)) => PlanDecision::Edit(*plan),
            Some(Answer::Reject(why)) => PlanDecision::Reject(why),
            // `decide` gives answers to questions only.
            Some(Answer::Answer(_)) => PlanDecision::Reject("an answer is no approval".into()),
        }
    }

    fn approve_step(&mut self, step: &Step, why: &str, _catalog: &Catalog) -> StepDecision {
        match self.reviews {
            None => {}
            Some(ApprovalMode::Deny) => return StepDecision::NoApprover,
            Some(ApprovalMode::Auto) => return StepDecision::Approve,
        }
        let pending = Pending::step(step, why);
        match self.wait(pending) {
            None => StepDecision::Reject("cancelled while waiting for approval".into()),
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
            None => Answered::Decline("cancelled while waiting for an answer".into()),
            Some(Answer::Answer(v)) => Answered::Answer(v),
            Some(Answer::Reject(why)) => Answered::Decline(why),
            Some(Answer::Approve | Answer::Edit(_)) => {
                Answered::Decline("a question takes an answer, not an approval".into())
            }
        }
    }
}
