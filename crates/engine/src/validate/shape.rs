//! A plan read from JSON with every shape problem at once. Serde stops at the first field
//! it cannot read, so a plan with three malformed step ids would be fixed one run of
//! `plan validate` at a time; here the top-level fields and each step are read on their
//! own, and each that fails is one [`Problem`].

use serde::Deserialize;
use serde_json::Value;

use super::problem::{Problem, ProblemKind};
use crate::plan::{Plan, Step, StepId};

impl Plan {
    /// The plan in `value`, or every shape problem found in it: one for the top-level
    /// fields, then one per step that cannot be read (its first), in order. A step whose
    /// id is readable is named by it; every message says which step (`steps[N]`).
    pub fn from_json_all(value: Value) -> Result<Plan, Vec<Problem>> {
        let first = match Plan::deserialize(&value) {
            Ok(plan) => return Ok(plan),
            Err(e) => e.to_string(),
        };
        let Value::Object(mut top) = value else {
            return Err(vec![malformed(None, first)]);
        };
        let mut problems = Vec::new();
        let steps = top.remove("steps");
        top.insert("steps".into(), Value::Array(Vec::new()));
        if let Err(e) = Plan::deserialize(&Value::Object(top)) {
            problems.push(malformed(None, e.to_string()));
        }
        match steps {
            Some(Value::Array(steps)) => {
                for (i, step) in steps.iter().enumerate() {
                    if let Err(e) = Step::deserialize(step) {
                        let id = step
                            .get("id")
                            .and_then(Value::as_str)
                            .and_then(|s| StepId::try_from(s.to_string()).ok());
                        problems.push(malformed(id, format!("steps[{i}]: {e}")));
                    }
                }
            }
            Some(_) => problems.push(malformed(None, "`steps` must be an array of steps".into())),
            None => problems.push(malformed(None, "missing field `steps`".into())),
        }
        if problems.is_empty() {
            problems.push(malformed(None, first));
        }
        Err(problems)
    }
}

fn malformed(step: Option<StepId>, message: String) -> Problem {
    Problem {
        kind: ProblemKind::Malformed,
        step,
        nth: None,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_malformed_step_is_a_problem_of_its_own() {
        let plan = json!({
            "goal": "g",
            "revision": 0,
            "steps": [
                {"id": "Step 1", "tool": "calc", "operation": "eval", "args": {}},
                {"id": "ok", "tool": "calc", "operation": "eval", "args": {}},
                {"id": "s3", "tool": "calc", "operation": "eval", "args": {}, "colour": 1},
                {"id": "9lives", "tool": "calc", "operation": "eval", "args": {}},
            ]
        });
        let problems = Plan::from_json_all(plan).unwrap_err();
        let messages: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(messages.len(), 4, "{messages:#?}");
        assert!(
            messages[0].contains("`revision` counts from 1"),
            "{messages:#?}"
        );
        assert!(messages[1].starts_with("steps[0]: "), "{messages:#?}");
        assert!(
            messages[2].starts_with("step `s3`: steps[2]: unknown field `colour`"),
            "{messages:#?}"
        );
        assert!(messages[3].starts_with("steps[3]: "), "{messages:#?}");
        assert!(problems.iter().all(|p| p.kind == ProblemKind::Malformed));
        assert_eq!(
            Plan::from_json_all(json!({"goal": "g", "steps": []}))
                .unwrap()
                .steps
                .len(),
            0
        );
        assert_eq!(
            Plan::from_json_all(json!([1])).unwrap_err().len(),
            1,
            "not an object: one problem"
        );
    }
}
