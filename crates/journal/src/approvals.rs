//! [`Approvals`]: an approver whose decisions (and answers) are journaled (synced) before
//! they take effect, each with `waited_ms`, the time the run waited for the person: a
//! resume leaves it out of the run's wall time, as the run itself did. Each also says who
//! decided (`by`: a token's name, the terminal's user) and how (`how`: `console`, `api`,
//! `terminal`, `mcp`, or the policy's `auto`), as the approver reports it: records written before
//! these fields existed have neither, and still verify and show.

use std::time::Instant;

use serde_json::{Value, json};

use super::Kind;
use super::writer::Journal;
use toolhost_engine::approval::{
    Answered, Approver, Decider, PlanCheck, PlanDecision, Question, StepDecision,
};
use toolhost_engine::plan::{Plan, Step};
use toolhost_engine::validate::{Catalog, Problem, ValidPlan};

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

/// Who made the decision of an `approval` record's `data`, for people: `NAME (how)`,
/// `auto (the policy)`, `an unnamed caller (how)` (a server without tokens); `None` for a
/// record written before decisions said who made them.
pub(crate) fn decider(d: &Value) -> Option<String> {
    let how = d.get("how").and_then(Value::as_str)?;
    Some(match d.get("by") {
        _ if how == "auto" => "auto (the policy)".into(),
        _ if how == "mcp" => "the MCP client's user (mcp)".into(),
        Some(Value::String(by)) => format!("{by} ({how})"),
        _ => format!("an unnamed caller ({how})"),
    })
}

fn millis(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

impl Approvals<'_> {
    /// Appends a decision record, with who made it when the approver says.
    fn journal_decision(&self, mut data: Value) {
        if let Some(d) = self.inner.decided_by() {
            data["by"] = d.by.map_or(Value::Null, Value::String);
            data["how"] = d.how.as_str().into();
        }
        self.journal.append(Kind::Approval, &data, true);
    }

    /// Journals a decision about the plan of `revision`. An edit is decided on once it is
    /// confirmed (`"then": "confirm"`): the edited plan is shown for approval again.
    fn plan_decision(&self, decision: &PlanDecision, revision: u32, waited_ms: u64) {
        let mut data = match decision {
            // Nobody decided: the run's stop says why.
            PlanDecision::Withdrawn => return,
            PlanDecision::Approve => json!({"decision": "approve"}),
            PlanDecision::Edit(edited) => {
                json!({"decision": "edit", "edited": edited, "then": "confirm"})
            }
            PlanDecision::Reject(why) => json!({"decision": "reject", "reason": why}),
        };
        data["subject"] = "plan".into();
        data["revision"] = revision.into();
        data["waited_ms"] = waited_ms.into();
        self.journal_decision(data);
    }
}

impl Approver for Approvals<'_> {
    fn review_plan(&mut self, plan: &ValidPlan, catalog: &Catalog) -> PlanDecision {
        let at = Instant::now();
        let decision = self.inner.review_plan(plan, catalog);
        self.plan_decision(&decision, plan.plan.revision, millis(at));
        decision
    }

    fn confirm_edit(&mut self, edited: &ValidPlan, catalog: &Catalog) -> PlanDecision {
        let at = Instant::now();
        let decision = self.inner.confirm_edit(edited, catalog);
        self.plan_decision(&decision, edited.plan.revision, millis(at));
        decision
    }

    fn revise_edit(
        &mut self,
        edited: &Plan,
        problems: &[Problem],
        catalog: &Catalog,
    ) -> Option<PlanDecision> {
        let at = Instant::now();
        let decision = self.inner.revise_edit(edited, problems, catalog);
        if let Some(d) = &decision {
            self.plan_decision(d, edited.revision, millis(at));
        }
        decision
    }

    fn offer_check(&mut self, check: PlanCheck) {
        self.inner.offer_check(check);
    }

    fn can_answer(&self) -> bool {
        self.inner.can_answer()
    }

    fn decided_by(&self) -> Option<Decider> {
        self.inner.decided_by()
    }

    fn answer(&mut self, question: &Question<'_>) -> Answered {
        let at = Instant::now();
        let reply = self.inner.answer(question);
        let (decision, answer, reason) = match &reply {
            // Nobody answered: the step's record and the run's stop say why.
            Answered::Withdrawn => return reply,
            Answered::Answer(v) => ("answer", Some(v.clone()), None),
            Answered::Decline(why) => ("decline", None, Some(why.as_str())),
            Answered::NoOne => ("no_one", None, None),
        };
        let data = json!({
            "subject": "question",
            "step": question.step.id,
            "question": question.text,
            "decision": decision,
            "answer": answer.unwrap_or(Value::Null),
            "reason": reason,
            "waited_ms": millis(at),
        });
        self.journal_decision(data);
        reply
    }

    fn approve_step(&mut self, step: &Step, why: &str, catalog: &Catalog) -> StepDecision {
        let at = Instant::now();
        let decision = self.inner.approve_step(step, why, catalog);
        let (name, reason) = match &decision {
            // Nobody decided: the run's stop says why.
            StepDecision::Withdrawn => return decision,
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
            "waited_ms": millis(at),
        });
        self.journal_decision(data);
        decision
    }
}
