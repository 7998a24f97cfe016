//! Feeding the journal: [`Approvals`], an approver whose decisions are journaled before
//! they take effect, and [`Tee`], one observer's events to two.

use serde_json::{Value, json};

use super::Kind;
use super::writer::Journal;
use toolhost_engine::approval::{Approver, PlanDecision, StepDecision};
use toolhost_engine::budget::{Spent, StopReason};
use toolhost_engine::plan::Step;
use toolhost_engine::record::StepRecord;
use toolhost_engine::run::{Observer, PlannerCall};
use toolhost_engine::validate::{Catalog, Problem, ValidPlan};

/// An [`Approver`] that journals each decision of the approver it wraps.
pub struct Approvals<'a> {
    journal: Journal,
    inner: &'a mut dyn Approver,
}

impl<'a> Approvals<'a> {
    pub(super) fn new(journal: Journal, inner: &'a mut dyn Approver) -> Approvals<'a> {
        Approvals { journal, inner }
    }
}

impl Approver for Approvals<'_> {
    fn review_plan(&mut self, plan: &ValidPlan, catalog: &Catalog) -> PlanDecision {
        let decision = self.inner.review_plan(plan, catalog);
        let data = match &decision {
            PlanDecision::Approve => json!({"decision": "approve"}),
            PlanDecision::Edit(edited) => json!({"decision": "edit", "edited": edited}),
            PlanDecision::Reject(why) => json!({"decision": "reject", "reason": why}),
        };
        let mut data = data;
        data["subject"] = "plan".into();
        data["revision"] = plan.plan.revision.into();
        self.journal.append(Kind::Approval, &data, true);
        decision
    }

    fn approve_step(&mut self, step: &Step, why: &str, catalog: &Catalog) -> StepDecision {
        let decision = self.inner.approve_step(step, why, catalog);
        let (name, reason) = match &decision {
            StepDecision::Approve => ("approve", None),
            StepDecision::Reject(r) => ("reject", Some(r.as_str())),
            StepDecision::NoApprover => ("no_approver", None),
        };
        let data = json!({
            "subject": "step",
            "step": step.id,
            "tool": step.tool,
            "operation": step.operation,
            "why": why,
            "decision": name,
            "reason": reason,
        });
        self.journal.append(Kind::Approval, &data, true);
        decision
    }
}

/// Feeds every event to two observers, `0` first (put the journal there, so a record is
/// on disk before it is shown).
pub struct Tee<'a>(pub &'a mut dyn Observer, pub &'a mut dyn Observer);

impl Observer for Tee<'_> {
    fn plan_accepted(&mut self, plan: &ValidPlan) {
        self.0.plan_accepted(plan);
        self.1.plan_accepted(plan);
    }

    fn plan_rejected(&mut self, problems: &[Problem]) {
        self.0.plan_rejected(problems);
        self.1.plan_rejected(problems);
    }

    fn planner_called(&mut self, call: &PlannerCall) {
        self.0.planner_called(call);
        self.1.planner_called(call);
    }

    fn step_started(&mut self, step: &Step, revision: u32) {
        self.0.step_started(step, revision);
        self.1.step_started(step, revision);
    }

    fn step_finished(&mut self, record: &StepRecord) {
        self.0.step_finished(record);
        self.1.step_finished(record);
    }

    fn stopped(&mut self, reason: &StopReason, spent: &Spent, answer: Option<&Value>) {
        self.0.stopped(reason, spent, answer);
        self.1.stopped(reason, spent, answer);
    }

    fn durable(&mut self) -> Option<Box<dyn FnOnce() + Send>> {
        match (self.0.durable(), self.1.durable()) {
            (Some(a), Some(b)) => Some(Box::new(move || {
                a();
                b();
            })),
            (a, b) => a.or(b),
        }
    }

    fn failed(&self) -> Option<String> {
        self.0.failed().or_else(|| self.1.failed())
    }

    fn run_id(&self) -> Option<String> {
        self.0.run_id().or_else(|| self.1.run_id())
    }
}
