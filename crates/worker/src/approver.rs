//! The approver of a queued run: it parks the run in the database, `waiting_for_approval`
//! with the pending plan or step on show (a run served with approvals, its spec's
//! `approve`; otherwise the policy's `approval` decides) or with a plan's question (every
//! run: the API shows it `waiting_for_input`), and waits for the answer that any replica
//! records (woken by the `toolhost_changes`
//! notification, else polling). A cancellation asked for meanwhile ends the wait: nobody
//! decided, and the run stops `cancelled`. The journal wrapper around it records each decision before it takes
//! effect, as for `toolhost run --approve`.

use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;
use toolhost_engine::approval::{
    Answered, ApprovalMode, Approver, Decider, PlanCheck, PlanDecision, Question, StepDecision,
};
use toolhost_engine::validate::{Catalog, Problem, ValidPlan};
use toolhost_engine::{Cancel, Plan, Step};
use toolhost_serve::Pending;
use toolhost_store_pg::{Answer, Database, Lease};

/// How often a waiting approver looks at its own cancellation (a lost lease, a
/// shutdown): a flag in memory, no query. The database is asked again only when notified
/// or once per the worker's poll interval.
const LOCAL: Duration = Duration::from_millis(100);

/// A person's answer as a replica records it (`decision` column).
#[derive(Debug, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Recorded {
    Approve,
    Reject {
        reason: String,
    },
    Edit {
        plan: Value,
    },
    /// The answer to a question, checked against its schema when it was recorded.
    Answer {
        answer: Value,
    },
}

pub(super) struct DbApprover {
    pub(super) db: Database,
    pub(super) lease: Lease,
    pub(super) cancel: Cancel,
    /// How long a wait goes without a notification before asking the database again.
    pub(super) poll: Duration,
    /// `None` when people review plans and steps through the API; else the policy's
    /// mode decides steps and plans run as validated.
    pub(super) reviews: Option<ApprovalMode>,
    /// Who made the last decision, for the journal.
    pub(super) last: Option<Decider>,
    /// The plan under review, shown again when an edit of it fails validation.
    pub(super) proposed: Option<Pending>,
    /// The run's check of draft edits of the plan under review, for the drafts any
    /// replica asks about while the run waits ([`DbApprover::serve_checks`]).
    pub(super) check: Option<PlanCheck>,
}

/// Cancels `cancel` on behalf of `by` (the `cancelled_by` a replica or `toolhost cancel`
/// recorded: who and how), named in the run's stop when it can be read.
pub(super) fn cancel_by(cancel: &Cancel, by: Option<&str>) {
    match by.and_then(|b| serde_json::from_str::<Decider>(b).ok()) {
        Some(d) => cancel.cancel_by(d),
        None => cancel.cancel(),
    }
}

/// Reads a recorded decision: who made it (`decider`, which the replica that took it
/// wrote from the caller's token; absent in rows recorded before it was), and what it is.
fn read_recorded(text: &str) -> Result<(Recorded, Option<Decider>), serde_json::Error> {
    let mut v: Value = serde_json::from_str(text)?;
    let decider = match v.as_object_mut().and_then(|m| m.remove("decider")) {
        Some(d) => Some(serde_json::from_value(d)?),
        None => None,
    };
    Ok((serde_json::from_value(v)?, decider))
}

impl DbApprover {
    /// The answer to `pending`; `None` when the run was cancelled (or its lease lost)
    /// first. Notes who gave it.
    fn wait(&mut self, pending: &Pending) -> Option<Recorded> {
        self.last = None;
        let (recorded, by) = self.wait_recorded(pending)?;
        self.last = by;
        Some(recorded)
    }

    /// The policy decides, nobody is asked.
    fn auto<T>(&mut self, decision: T) -> T {
        self.last = Some(Decider::auto());
        decision
    }

    /// Parks the run on the plan review `pending` and waits for the decision.
    fn decide_plan(&mut self, pending: &Pending) -> PlanDecision {
        match self.wait(pending) {
            None => PlanDecision::Withdrawn,
            Some(Recorded::Approve) => PlanDecision::Approve,
            Some(Recorded::Reject { reason }) => PlanDecision::Reject(reason),
            Some(Recorded::Edit { plan }) => match serde_json::from_value::<Plan>(plan) {
                Ok(p) => PlanDecision::Edit(p),
                Err(e) => PlanDecision::Reject(format!("the edited plan is not a plan: {e}")),
            },
            Some(Recorded::Answer { .. }) => {
                PlanDecision::Reject("an answer is no approval".into())
            }
        }
    }

    fn wait_recorded(&self, pending: &Pending) -> Option<(Recorded, Option<Decider>)> {
        let text = serde_json::to_string(pending).expect("a pending decision serialises");
        // Listening before parking: an answer recorded right after is not missed.
        let listener = self.db.listen_changes().ok();
        if let Err(e) = self.db.park(&self.lease, &text) {
            tracing::warn!(run = %self.lease.run, error = %e, "cannot park the run for approval");
            self.cancel.cancel();
            return None;
        }
        loop {
            if self.cancel.is_cancelled() {
                return None;
            }
            match self.db.answer(&self.lease) {
                Ok(Answer::Decided(d)) => match read_recorded(&d) {
                    Ok(r) => return Some(r),
                    Err(e) => {
                        let reason = format!("the recorded decision cannot be read: {e}");
                        return Some((Recorded::Reject { reason }, None));
                    }
                },
                Ok(Answer::Cancelled(by)) => {
                    cancel_by(&self.cancel, by.as_deref());
                    return None;
                }
                // Still waiting: check the drafts replicas ask about meanwhile.
                Ok(_) if pending.subject == "plan" => self.serve_checks(),
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(run = %self.lease.run, error = %e, "stopped waiting for approval");
                    self.cancel.cancel();
                    return None;
                }
            }
            if !self.idle(listener.as_ref()) {
                return None;
            }
        }
    }

    /// Waits for a notification or the poll interval; `false` when the run was cancelled
    /// meanwhile.
    fn idle(&self, listener: Option<&toolhost_store_pg::Listener>) -> bool {
        let until = Instant::now() + self.poll;
        loop {
            if self.cancel.is_cancelled() {
                return false;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            let slice = left.min(LOCAL);
            match listener {
                Some(l) if l.wait(slice) => return true,
                Some(_) => {}
                None => std::thread::sleep(slice),
            }
        }
    }
}

impl DbApprover {
    /// Checks the drafts of the plan under review that replicas asked about, writing the
    /// problems each would meet as an edit (`[]`: it would be accepted).
    fn serve_checks(&self) {
        let Some(check) = &self.check else { return };
        let open = match self.db.open_checks(&self.lease) {
            Ok(open) => open,
            Err(e) => {
                tracing::warn!(run = %self.lease.run, error = %e, "cannot read the drafts to check");
                return;
            }
        };
        for (id, draft) in open {
            let problems = match serde_json::from_str::<Plan>(&draft) {
                Ok(plan) => serde_json::to_string(&check.check(&plan)),
                // The asker sent a plan it had read: say so rather than leave it waiting.
                Err(e) => serde_json::to_string(&[serde_json::json!({
                    "kind": "malformed", "step": null,
                    "message": format!("the draft is not a plan: {e}"),
                })]),
            };
            let problems = problems.unwrap_or_else(|_| "[]".into());
            if let Err(e) = self.db.answer_check(id, &problems) {
                tracing::warn!(run = %self.lease.run, error = %e, "cannot answer a draft's check");
            }
        }
    }
}

impl Approver for DbApprover {
    fn offer_check(&mut self, check: PlanCheck) {
        self.check = Some(check);
    }

    fn review_plan(&mut self, plan: &ValidPlan, catalog: &Catalog) -> PlanDecision {
        if self.reviews.is_some() {
            return self.auto(PlanDecision::Approve);
        }
        let pending = Pending::reviewed(plan, catalog);
        self.proposed = Some(pending.clone());
        self.decide_plan(&pending)
    }

    /// The edit did not validate (its problems are journaled, where the replica that took
    /// it reads them for its 422): the run waits again on the plan under review, to be
    /// approved, rejected or edited anew.
    fn revise_edit(
        &mut self,
        edited: &Plan,
        _problems: &[Problem],
        _catalog: &Catalog,
    ) -> Option<PlanDecision> {
        let pending = self
            .proposed
            .clone()
            .unwrap_or_else(|| Pending::plan(edited));
        Some(self.decide_plan(&pending))
    }

    fn approve_step(&mut self, step: &Step, why: &str, catalog: &Catalog) -> StepDecision {
        match self.reviews {
            None => {}
            Some(ApprovalMode::Deny) => return self.auto(StepDecision::NoApprover),
            Some(ApprovalMode::Auto) => return self.auto(StepDecision::Approve),
        }
        let pending = Pending::step(step, why, catalog);
        match self.wait(&pending) {
            None => StepDecision::Withdrawn,
            Some(Recorded::Approve) => StepDecision::Approve,
            Some(Recorded::Reject { reason }) => StepDecision::Reject(reason),
            Some(Recorded::Edit { .. } | Recorded::Answer { .. }) => {
                StepDecision::Reject("a step can only be approved or rejected".into())
            }
        }
    }

    fn can_answer(&self) -> bool {
        true
    }

    fn answer(&mut self, q: &Question<'_>) -> Answered {
        let pending = Pending::question(q);
        match self.wait(&pending) {
            None => Answered::Withdrawn,
            Some(Recorded::Answer { answer }) => Answered::Answer(answer),
            Some(Recorded::Reject { reason }) => Answered::Decline(reason),
            Some(Recorded::Approve | Recorded::Edit { .. }) => {
                Answered::Decline("a question takes an answer, not an approval".into())
            }
        }
    }

    fn decided_by(&self) -> Option<Decider> {
        self.last.clone()
    }
}
