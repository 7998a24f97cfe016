//! The plan artifact: the contract between planner and executor. Its JSON Schema,
//! [`plan_schema`], is derived from these types (with `schemars`: doc comments become
//! descriptions, serde's defaults decide what is required, `deny_unknown_fields` closes
//! every object), and published at `schemas/plan.schema.json`, kept equal by a test.

use std::borrow::Cow;

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// A step id: letters, digits, `_` and `-`, starting with a letter, at most 64 bytes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct StepId(String);

/// The pattern of a [`StepId`] in the schema; the same rule as `StepId::try_from`.
const STEP_ID_PATTERN: &str = "^[A-Za-z][A-Za-z0-9_-]{0,63}$";

impl JsonSchema for StepId {
    fn schema_name() -> Cow<'static, str> {
        "StepId".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": STEP_ID_PATTERN,
            "description": "Letters, digits, `_` and `-`, starting with a letter, at most 64 characters.",
        })
    }
}

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

/// The typed names plans call tools and operations by: the policy model's
/// (`toolhost-policy`), so a plan and a policy section spell a tool the same way.
pub use toolhost_runtime::policy::{OperationName, ToolName};

/// A plan: steps that each call one operation of one sandboxed tool. Arguments may
/// reference earlier outputs: a whole value as `{"$ref": "STEP.output.PATH"}`, or inside
/// a string as `${STEP.output.PATH}`; PATH is `.field`, `[index]` or `["key"]` segments.
///
/// A planner returns one (plan-then-execute); a plan file holds one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "toolhost plan")]
pub struct Plan {
    /// What the plan achieves.
    pub goal: String,
    /// 1 for the first plan; each replan increments it.
    #[serde(default = "first_revision", deserialize_with = "positive")]
    #[schemars(range(min = 1))]
    pub revision: u32,
    /// The tool calls, in any order: references and `depends_on` order them.
    pub steps: Vec<Step>,
    /// What the run answers once every step succeeded: any JSON value, built from step
    /// outputs by `{"$ref": "STEP.output.PATH"}` and `${STEP.output.PATH}` (say, an object
    /// with a field per part of a goal). Without it, the answer is the output of the step
    /// that finished last in the plan's order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<Value>,
    /// Code mode only: the program (Python) this revision runs; `steps` is then empty and
    /// each tool call the program makes runs as a step. Not in the published plan schema:
    /// a plan-then-execute planner never writes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub program: Option<String>,
}

fn first_revision() -> u32 {
    1
}

/// A revision counts from 1, as the schema says.
fn positive<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    match u32::deserialize(d)? {
        0 => Err(serde::de::Error::custom("`revision` counts from 1, not 0")),
        n => Ok(n),
    }
}

/// A step's deadline is at least 1 ms: 0 would end the call before it starts.
fn positive_ms<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    match Option::<u64>::deserialize(d)? {
        Some(0) => Err(serde::de::Error::custom(
            "`timeout_ms` is at least 1 (milliseconds), not 0",
        )),
        ms => Ok(ms),
    }
}

/// One tool call of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// The step's id, unique in the plan; references name it.
    pub id: StepId,
    /// What the step is for, in words.
    #[serde(default)]
    pub description: String,
    /// The tool's name (its policy section).
    pub tool: ToolName,
    /// The operation of the tool to call.
    pub operation: OperationName,
    /// Arguments by parameter name, matching the operation's schema. A value
    /// `{"$ref": "s1.output.items[0]"}` is an earlier step's output; `${s1.output.name}`
    /// inside a string interpolates one.
    #[serde(default = "empty_object", deserialize_with = "object")]
    #[schemars(with = "Map<String, Value>")]
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
    /// A deadline below the tool's policy limit, in milliseconds.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "positive_ms"
    )]
    #[schemars(range(min = 1))]
    pub timeout_ms: Option<u64>,
}

fn empty_object() -> Value {
    json!({})
}

/// Arguments are an object by parameter name (kept as a `Value`: references and
/// interpolation are resolved in place).
fn object<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
    Map::<String, Value>::deserialize(d).map(Value::Object)
}

/// An `expect.schema` is a JSON Schema object.
fn optional_object<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Ok(Option::<Map<String, Value>>::deserialize(d)?.map(Value::Object))
}

/// Deterministic checks on a step's output.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// A JSON Schema the output must match.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_object"
    )]
    #[schemars(with = "Option<Map<String, Value>>")]
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

/// The JSON Schema of [`Plan`] (draft 2020-12, every subschema inline), for planners and
/// for `schemas/plan.schema.json`.
pub fn plan_schema() -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true);
    let mut value = settings
        .into_generator()
        .into_root_schema_for::<Plan>()
        .to_value();
    unwrap_descriptions(&mut value);
    // The identifying keys first, as a reader of the published file expects them.
    let Value::Object(body) = value else {
        unreachable!("a struct's schema is an object")
    };
    let mut out = Map::new();
    if let Some(v) = body.get("$schema") {
        out.insert("$schema".into(), v.clone());
    }
    out.insert(
        "$id".into(),
        "https://toolhost.dev/schemas/plan.schema.json".into(),
    );
    for key in ["title", "description"] {
        if let Some(v) = body.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    for (k, v) in body {
        out.entry(k).or_insert(v);
    }
    Value::Object(out)
}

/// Doc comments keep their line breaks; a description is one paragraph per blank line.
fn unwrap_descriptions(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                match v {
                    Value::String(s) if k == "description" => {
                        *s = s
                            .split("\n\n")
                            .map(|p| p.replace('\n', " "))
                            .collect::<Vec<_>>()
                            .join("\n\n");
                    }
                    _ => unwrap_descriptions(v),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(unwrap_descriptions),
        _ => {}
    }
}
