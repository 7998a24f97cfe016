//! The plan artifact: the contract between planner and executor. Its JSON Schema is
//! published at `schemas/plan.schema.json` (kept equal to [`plan_schema`] by a test).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A step id: letters, digits, `_` and `-`, starting with a letter, at most 64 bytes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct StepId(String);

impl StepId {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for StepId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<StepId> for String {
    fn from(id: StepId) -> String {
        id.0
    }
}

impl TryFrom<String> for StepId {
    type Error = String;

    fn try_from(s: String) -> Result<StepId, String> {
        let ok = s.len() <= 64
            && s.starts_with(|c: char| c.is_ascii_alphabetic())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if ok {
            Ok(StepId(s))
        } else {
            Err(format!(
                "`{s}` is not a valid step id: use letters, digits, `_` and `-`, starting with a letter (at most 64 characters)"
            ))
        }
    }
}

/// A whole plan, as a planner returns it (plan-then-execute) or as a plan file holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// What the plan achieves.
    pub goal: String,
    /// 1 for the first plan; each replan increments it.
    #[serde(default = "first_revision")]
    pub revision: u32,
    pub steps: Vec<Step>,
}

fn first_revision() -> u32 {
    1
}

/// One tool call of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub id: StepId,
    /// What the step is for, in words.
    #[serde(default)]
    pub description: String,
    /// The tool's name (its policy section).
    pub tool: String,
    pub operation: String,
    /// Arguments by parameter name. A value `{"$ref": "s1.output.items[0]"}` is an earlier
    /// step's output; `${s1.output.name}` inside a string interpolates one.
    #[serde(default = "empty_object")]
    pub args: Value,
    /// Steps that must finish first (references add theirs automatically).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<StepId>,
    /// Checks on the output; a failed check fails the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expect>,
    /// Safe to run again after a crash mid-step.
    #[serde(default)]
    pub idempotent: bool,
    /// A deadline below the tool's policy limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

fn empty_object() -> Value {
    json!({})
}

/// Deterministic checks on a step's output.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// A JSON Schema the output must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// Text the output (a string, or the JSON text of any other value) must contain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<String>,
    /// The exact output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<Value>,
    /// Lower bound of a numeric output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// Upper bound of a numeric output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

/// The JSON Schema of [`Plan`] (draft 2020-12), for planners and for
/// `schemas/plan.schema.json`.
pub fn plan_schema() -> Value {
    let id = json!({
        "type": "string",
        "pattern": "^[A-Za-z][A-Za-z0-9_-]{0,63}$",
    });
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://toolhost.dev/schemas/plan.schema.json",
        "title": "toolhost plan",
        "description": "A plan: steps that each call one operation of one sandboxed tool. Arguments may reference earlier outputs: a whole value as {\"$ref\": \"STEP.output.PATH\"}, or inside a string as ${STEP.output.PATH}; PATH is .field, [index] or [\"key\"] segments.",
        "type": "object",
        "additionalProperties": false,
        "required": ["goal", "steps"],
        "properties": {
            "goal": {"type": "string", "description": "What the plan achieves."},
            "revision": {"type": "integer", "minimum": 1, "description": "1 for the first plan; each replan increments it."},
            "steps": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["id", "tool", "operation"],
                    "properties": {
                        "id": id.clone(),
                        "description": {"type": "string"},
                        "tool": {"type": "string", "description": "The tool's name."},
                        "operation": {"type": "string", "description": "The operation of the tool to call."},
                        "args": {"type": "object", "description": "Arguments by parameter name, matching the operation's schema."},
                        "depends_on": {"type": "array", "items": id, "uniqueItems": true},
                        "expect": {
                            "type": "object",
                            "additionalProperties": false,
                            "properties": {
                                "schema": {"type": "object"},
                                "contains": {"type": "string"},
                                "equals": {},
                                "min": {"type": "number"},
                                "max": {"type": "number"}
                            }
                        },
                        "idempotent": {"type": "boolean"},
                        "timeout_ms": {"type": "integer", "minimum": 1}
                    }
                }
            }
        }
    })
}
