//! The critic: deterministic checks from a step's `expect`, and what to do on a verdict.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::plan::Expect;
use super::record::{Evaluation, Verdict};

/// What the run does when a step's output does not pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reaction {
    /// Treat the step as succeeded.
    Accept,
    /// Treat the step as failed: dependents are skipped and the planner revises.
    Replan,
    /// Stop the run for a person to decide.
    Escalate,
    /// Stop the run (`evaluator_failed`).
    Stop,
}

/// How the critic reacts. `EvaluatorConfig::default()`: `on_fail = replan`,
/// `on_uncertain = escalate`, no evaluator tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EvaluatorConfig {
    pub on_fail: Reaction,
    pub on_uncertain: Reaction,
    /// A sandboxed tool that judges outputs: called as `operation(step, output)` with the
    /// step's id and its output as JSON text; it returns `pass`, `fail` or `uncertain`.
    pub tool: Option<String>,
    pub operation: Option<String>,
}

impl Default for EvaluatorConfig {
    fn default() -> EvaluatorConfig {
        EvaluatorConfig {
            on_fail: Reaction::Replan,
            on_uncertain: Reaction::Escalate,
            tool: None,
            operation: None,
        }
    }
}

/// Checks `output` against `expect`; every check must pass.
pub fn check(expect: &Expect, output: &Value) -> Evaluation {
    let fail = |detail: String| Evaluation {
        verdict: Verdict::Fail,
        detail,
    };
    if let Some(want) = &expect.equals
        && !same(want, output)
    {
        return fail(format!(
            "expected the output to equal `{want}`, got `{output}`"
        ));
    }
    if let Some(needle) = &expect.contains {
        let text = match output {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if !text.contains(needle.as_str()) {
            return fail(format!("expected the output to contain `{needle}`"));
        }
    }
    if expect.min.is_some() || expect.max.is_some() {
        let Some(n) = output.as_f64() else {
            return fail(format!("expected a number, got `{output}`"));
        };
        if let Some(min) = expect.min
            && n < min
        {
            return fail(format!("expected at least {min}, got {n}"));
        }
        if let Some(max) = expect.max
            && n > max
        {
            return fail(format!("expected at most {max}, got {n}"));
        }
    }
    if let Some(schema) = &expect.schema {
        match jsonschema::validator_for(schema) {
            Err(e) => {
                return Evaluation {
                    verdict: Verdict::Uncertain,
                    detail: format!("the expected schema is not a valid JSON Schema: {e}"),
                };
            }
            Ok(v) => {
                let errors: Vec<String> = v
                    .iter_errors(output)
                    .take(3)
                    .map(|e| format!("{} at `{}`", e, e.instance_path))
                    .collect();
                if !errors.is_empty() {
                    return fail(format!(
                        "the output does not match the schema: {}",
                        errors.join("; ")
                    ));
                }
            }
        }
    }
    Evaluation {
        verdict: Verdict::Pass,
        detail: "all checks passed".into(),
    }
}

/// JSON equality where numbers compare by value (`53` equals `53.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// The verdict an evaluator tool's output stands for.
pub(crate) fn verdict_of(output: &Value) -> Evaluation {
    let text = output
        .as_str()
        .or_else(|| output.get("verdict").and_then(Value::as_str))
        .unwrap_or_default();
    let verdict = match text {
        "pass" => Verdict::Pass,
        "fail" => Verdict::Fail,
        _ => Verdict::Uncertain,
    };
    Evaluation {
        verdict,
        detail: format!("evaluator tool said `{output}`"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_check_must_pass() {
        let e = Expect {
            min: Some(1.0),
            max: Some(10.0),
            ..Expect::default()
        };
        assert_eq!(check(&e, &json!(5)).verdict, Verdict::Pass);
        assert_eq!(check(&e, &json!(11)).verdict, Verdict::Fail);
        assert_eq!(check(&e, &json!("5")).verdict, Verdict::Fail);
        let e = Expect {
            contains: Some("ok".into()),
            schema: Some(json!({"type": "object", "required": ["status"]})),
            ..Expect::default()
        };
        assert_eq!(check(&e, &json!({"status": "ok"})).verdict, Verdict::Pass);
        assert_eq!(check(&e, &json!({"state": "ok"})).verdict, Verdict::Fail);
        let e = Expect {
            equals: Some(json!(53)),
            ..Expect::default()
        };
        assert_eq!(check(&e, &json!(53.0)).verdict, Verdict::Pass);
        assert_eq!(check(&e, &json!(53.5)).verdict, Verdict::Fail);
    }
}
