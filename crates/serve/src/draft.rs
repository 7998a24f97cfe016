//! Checking a draft edit of the plan a run waits on, as the run would check the edit
//! (`POST /v1/runs/{id}/plan/check`, and the console's plan editor as the person types).
//!
//! A draft comes as a plan (JSON) or as the text an editor holds. Text that is not JSON is
//! one problem at its line and column; JSON that is not a plan is every shape problem at
//! once; a plan goes to the run's holder, which checks it with the validation the edit
//! will meet ([`toolhost_engine::PlanCheck`]: the catalog, the policy, the steps done so
//! far, what the planner has read). Each problem names its step and, for text, the line
//! where that step's `"id"` is written. Nothing is recorded and nothing is decided.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use toolhost_engine::{Plan, Problem};

use crate::registry::{Registry, RegistryError};

/// A draft edit: the plan as JSON, or the text of one.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"text": "{\"steps\": []}"}))]
pub struct DraftRequest {
    /// The draft plan.
    #[schema(value_type = Option<Object>)]
    pub plan: Option<Value>,
    /// The draft as text (problems then carry the line they are at).
    pub text: Option<String>,
}

/// One thing wrong with a draft.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DraftProblem {
    /// The class, as `plan validate --json` names it (`not_json` for text that does not
    /// parse).
    pub kind: String,
    /// The step it concerns, if one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// The line (1-based) of the text it is at: the step's `"id"`, or where the JSON
    /// breaks; absent for a plan given as JSON or a problem of the whole plan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// As `plan validate` prints it.
    pub message: String,
}

/// What the check found: `valid` when the edit would be accepted as it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DraftReport {
    pub valid: bool,
    pub problems: Vec<DraftProblem>,
}

/// Checks `draft` against run `id`'s plan under review. Blocking: the run's holder may be
/// another replica.
pub fn check(
    registry: &dyn Registry,
    id: &str,
    draft: DraftRequest,
) -> Result<DraftReport, RegistryError> {
    let (value, text) = match (draft.plan, draft.text) {
        (Some(plan), None) => (plan, None),
        (None, Some(text)) => match serde_json::from_str::<Value>(&text) {
            Ok(v) => (v, Some(text)),
            Err(e) => {
                return Ok(report(vec![DraftProblem {
                    kind: "not_json".into(),
                    step: None,
                    line: Some(e.line().max(1)),
                    message: format!("the plan is not JSON: {e}"),
                }]));
            }
        },
        _ => {
            return Err(RegistryError::BadRequest(
                "give the draft as `plan` (JSON) or as `text`, one of the two".into(),
            ));
        }
    };
    let problems = match Plan::from_json_all(value) {
        Ok(plan) => registry.check_plan(id, &plan)?,
        Err(shape) => {
            // Not a plan yet; the run must still be waiting on one for the answer to help.
            waiting_on_plan(registry, id)?;
            shape
        }
    };
    Ok(report(
        problems
            .iter()
            .map(|p| located(p, text.as_deref()))
            .collect(),
    ))
}

/// `Ok` when run `id` waits for a person's review of a plan; else 409 saying what it is.
pub fn waiting_on_plan(registry: &dyn Registry, id: &str) -> Result<(), RegistryError> {
    let view = registry.get(id)?;
    match &view.pending {
        Some(p) if p.subject == "plan" => Ok(()),
        Some(p) => Err(RegistryError::Conflict(format!(
            "run `{id}` waits on a {}, not on a plan: only a plan under review can be edited",
            p.subject
        ))),
        None => Err(RegistryError::Conflict(format!(
            "run `{id}` is {}, not waiting for a review of its plan",
            view.state.name()
        ))),
    }
}

fn report(problems: Vec<DraftProblem>) -> DraftReport {
    DraftReport {
        valid: problems.is_empty(),
        problems,
    }
}

fn located(p: &Problem, text: Option<&str>) -> DraftProblem {
    let step = p.step.as_ref().map(ToString::to_string);
    let nth = p.nth.map_or(1, |(n, _)| n);
    let line = match (&step, text) {
        (Some(s), Some(t)) => id_line(t, s, nth),
        _ => None,
    };
    DraftProblem {
        kind: serde_json::to_value(p.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        step,
        line,
        message: p.to_string(),
    }
}

/// The line (1-based) of the `nth` `"id": "<step>"` in `text`.
fn id_line(text: &str, step: &str, nth: usize) -> Option<usize> {
    let quoted = serde_json::to_string(step).ok()?;
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            line.find("\"id\"").is_some_and(|at| {
                let rest = line[at + 4..].trim_start();
                rest.strip_prefix(':')
                    .is_some_and(|v| v.trim_start().starts_with(&quoted))
            })
        })
        .nth(nth.saturating_sub(1))
        .map(|(i, _)| i + 1)
}

#[cfg(test)]
mod tests {
    use super::id_line;

    #[test]
    fn a_step_is_found_at_the_line_of_its_id() {
        let text = "{\n  \"steps\": [\n    {\"id\": \"a\"},\n    {\n      \"id\" : \"b\"\n    },\n    {\"id\": \"a\"}\n  ]\n}";
        assert_eq!(id_line(text, "a", 1), Some(3));
        assert_eq!(id_line(text, "b", 1), Some(5));
        assert_eq!(id_line(text, "a", 2), Some(7));
        assert_eq!(id_line(text, "c", 1), None);
        // A value that merely mentions the id is not the step.
        assert_eq!(id_line("{\"note\": \"a\"}", "a", 1), None);
    }
}
