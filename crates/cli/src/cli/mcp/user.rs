//! The approver of a `run_program` program's run ([`ClientApprover`]): the MCP client's
//! user decides. A `sensitive` call waits for the user's approval (a form with one
//! boolean), and a `human.ask` question is a form whose answer the engine checks against
//! the question's schema. When the client cannot be asked (no elicitation, or a stateless
//! request outside a task), the policy's `approval` decides steps as for any unattended
//! run, and a question has nobody to answer it. The journal records who decided: `mcp`
//! for the client's user, `auto` for the policy.

use serde_json::{Value, json};
use toolhost_engine::Step;
use toolhost_engine::approval::{
    Answered, ApprovalMode, Approver, Decider, How, PlanDecision, Question, StepDecision,
    Unattended,
};
use toolhost_engine::validate::{Catalog, ValidPlan};
use toolhost_mcp::program::{ClientUser, Reply, approval_form, approves};
use toolhost_runtime::ask::{Input, Kind, Request};

/// The client's user deciding for a program's run; the policy's `approval` when the
/// user cannot be asked.
pub(super) struct ClientApprover {
    pub user: ClientUser,
    pub policy: ApprovalMode,
    pub last: Option<Decider>,
}

impl ClientApprover {
    fn decided(&mut self, by: Decider) {
        self.last = Some(by);
    }
}

impl Approver for ClientApprover {
    fn review_plan(&mut self, _plan: &ValidPlan, _catalog: &Catalog) -> PlanDecision {
        // The client sent the program: its run is the plan it asked for.
        self.decided(Decider::auto());
        PlanDecision::Approve
    }

    fn approve_step(&mut self, step: &Step, why: &str, catalog: &Catalog) -> StepDecision {
        if self.user.offers(Kind::Form) {
            let name = format!("{}.{}", step.tool, step.operation);
            let form = approval_form(
                &format!("toolhost.approval.{}", step.id),
                &name,
                &json!(step.args),
            );
            match self.user.ask(form) {
                None => return StepDecision::Withdrawn,
                Some(Reply::Answer(a)) => {
                    self.decided(Decider::person(None, How::Mcp));
                    return match approves(&a) {
                        true => StepDecision::Approve,
                        false => StepDecision::Reject(format!(
                            "the client's user did not approve the call of `{name}` ({why})"
                        )),
                    };
                }
                Some(Reply::Failed(e)) => {
                    self.decided(Decider::person(None, How::Mcp));
                    return StepDecision::Reject(format!(
                        "the call of `{name}` was not approved: {e}"
                    ));
                }
                // Nobody to ask: the policy decides, as for any unattended run.
                Some(Reply::Unanswerable(_)) => {}
            }
        }
        self.decided(Decider::auto());
        Unattended(self.policy).approve_step(step, why, catalog)
    }

    fn can_answer(&self) -> bool {
        self.user.offers(Kind::Form)
    }

    fn answer(&mut self, question: &Question<'_>) -> Answered {
        let (schema, wrapped) = form_schema(question.schema);
        let form = Input::new(
            format!("toolhost.ask.{}", question.step.id),
            Request::Form {
                message: question.text.to_string(),
                schema,
            },
        );
        let reply = match self.user.ask(form) {
            None => return Answered::Withdrawn,
            Some(Reply::Unanswerable(_)) => return Answered::NoOne,
            Some(reply) => reply,
        };
        self.decided(Decider::person(None, How::Mcp));
        match reply {
            Reply::Answer(a) if a["action"] == "accept" => {
                let content = a.get("content").cloned().unwrap_or(Value::Null);
                Answered::Answer(match wrapped {
                    true => content.get("answer").cloned().unwrap_or(Value::Null),
                    false => content,
                })
            }
            Reply::Answer(a) => Answered::Decline(format!(
                "the client's user did not answer (the form's action was {})",
                a["action"]
            )),
            Reply::Failed(e) | Reply::Unanswerable(e) => Answered::Decline(e),
        }
    }

    fn decided_by(&self) -> Option<Decider> {
        self.last.clone()
    }
}

/// The form schema a question with answer schema `schema` is asked with: an object
/// schema as it is, any other wrapped as the object's one property `answer` (an MCP form
/// is an object). `true` when wrapped.
fn form_schema(schema: &Value) -> (Value, bool) {
    if schema["type"] == "object" && schema.get("properties").is_some() {
        return (schema.clone(), false);
    }
    let wrapped = json!({
        "type": "object",
        "properties": {"answer": schema},
        "required": ["answer"],
    });
    (wrapped, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_question_is_its_own_form_any_other_is_wrapped_as_answer() {
        let object = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
        assert_eq!(form_schema(&object), (object.clone(), false));
        let (form, wrapped) = form_schema(&json!({"type": "string", "enum": ["a", "b"]}));
        assert!(wrapped);
        assert_eq!(form["properties"]["answer"]["enum"], json!(["a", "b"]));
        assert_eq!(form["required"], json!(["answer"]));
    }
}
