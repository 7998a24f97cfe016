//! [`Approvals`]: an approver whose decisions are journaled (synced) before they take
//! effect.

use serde_json::json;

use super::Kind;
use super::writer::Journal;
use toolhost_engine::approval::{Approver, PlanDecision, StepDecision};
use toolhost_engine::plan::Step;
use toolhost_engine::validate::{Catalog, ValidPlan};

/// An [`Approver`] that journals each decision of the approver it wraps.
pub struct Approvals<'a> {
    journal: Journal,
    inner: &'a mut dyn Approver,
}

impl Journal {
    /// Wraps `inner` so each decision it makes is journaled (synced) before it takes
    /// effect.
    pub fn approvals<'a>(&self, inner: &'a mut dyn Approver) -> Approvals<'a> {
        Approvals {
            journal: self.clone(),
            inner,
        }
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
