//! The built-in `extract` step: CaMeL's quarantined model. Where a plan needs a value out
//! of untrusted text (an amount in a bill, a date in an e-mail), a step asks a model for
//! it, with no tools, and gets back only a value of the type the plan declared.
//!
//! A step extracts with tool `model`, operation `extract`, and three arguments: `input`
//! (the text or value to read, usually `{"$ref": …}` to an untrusted output), `instruction`
//! (what to extract, a literal string the planner wrote: no references) and `output` (the
//! JSON Schema of the value, default `{"type": "string"}`; the same schemas a `human.ask`
//! answer takes, [`ask::answer_type`], so references into the value are type-checked at
//! validation).
//!
//! The engine makes one extraction per step through the embedder's [`Extractor`] (the
//! engine speaks to no model provider); an answer that does not match the schema is asked
//! again a bounded number of times by the extractor, and checked here once more, else the
//! step fails `bad_extraction`. The value is as tainted as `input` ([`flow`](crate::flow)):
//! reading untrusted text makes an untrusted value, so the data-flow rules hold for
//! everything it reaches. The tokens it spends count against the run's budgets and are
//! recorded on the step (`model_call`). A run without an extractor refuses such a plan at
//! validation.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Value, json};

use super::ask;
use super::budget::{Budget, Usage};
use super::plan::{Step, StepId};

/// The built-in tool's name.
pub const TOOL: &str = "model";
/// Its one operation.
pub const OPERATION: &str = "extract";

/// Whether `(tool, operation)` is the built-in extraction.
pub fn is(tool: &str, operation: &str) -> bool {
    tool == TOOL && operation == OPERATION
}

/// Whether `step` asks a model to extract a value.
pub fn is_extract(step: &Step) -> bool {
    step.tool == TOOL
}

/// The `output` schema of a step's (validated) arguments, or the default.
pub fn output_schema(args: &Value) -> Value {
    args.get("output")
        .cloned()
        .unwrap_or_else(|| json!({"type": "string"}))
}

/// A step's `output` schema (the default when it has none), or why its arguments are not
/// an extraction.
pub fn schema_of(args: &Value) -> Result<Value, String> {
    let Some(map) = args.as_object() else {
        return Err("`args` must be an object with `input`, `instruction` and `output`".into());
    };
    if let Some(key) = map
        .keys()
        .find(|k| !matches!(k.as_str(), "input" | "instruction" | "output"))
    {
        return Err(format!(
            "`{TOOL}.{OPERATION}` takes `input`, `instruction` and `output`, not `{key}`"
        ));
    }
    if !map.contains_key("input") {
        return Err(format!("`{TOOL}.{OPERATION}` needs an `input` to read"));
    }
    match map.get("instruction") {
        // The instruction is the planner's: data it could be steered by has no way in.
        Some(Value::String(s)) if !super::reference::find_all(&json!(s)).is_empty() => {
            return Err(
                "`instruction` must be a literal: references and `${…}` belong in `input`".into(),
            );
        }
        Some(Value::String(s)) if !s.trim().is_empty() => {}
        Some(other) => {
            return Err(format!(
                "`instruction` must be a non-empty string, not `{other}`"
            ));
        }
        None => return Err(format!("`{TOOL}.{OPERATION}` needs an `instruction`")),
    }
    let schema = output_schema(args);
    ask::answer_type(&schema).map_err(|why| format!("`output`: {why}"))?;
    if let Err(e) = jsonschema::validator_for(&schema) {
        return Err(format!("`output` is not a valid JSON Schema: {e}"));
    }
    Ok(schema)
}

/// What an [`Extractor`] is asked: one extraction, within what the run has left.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Extraction {
    /// The step asking, and its revision (or turn): what a recording is keyed by.
    pub step: StepId,
    pub revision: u32,
    pub instruction: String,
    /// The value to read, references resolved: data, never instructions.
    pub input: Value,
    /// The JSON Schema the value must match (a plan type, [`ask::answer_type`]).
    pub schema: Value,
    /// Tokens and wall time the run has left for the whole extraction, re-asks included.
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub wall_ms: u64,
}

impl Extraction {
    /// The extraction `step` (validated) asks for, with `args` resolved.
    pub(crate) fn of(step: &Step, revision: u32, args: &Value) -> Extraction {
        Extraction {
            step: step.id.clone(),
            revision,
            instruction: args["instruction"].as_str().unwrap_or_default().to_string(),
            input: args.get("input").cloned().unwrap_or(Value::Null),
            schema: output_schema(args),
            input_tokens: 0,
            output_tokens: 0,
            wall_ms: 0,
        }
    }
}

/// Why an extraction gave no value.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failure {
    /// The model answered, never with a value matching the schema (after every re-ask):
    /// the step fails `bad_extraction`.
    Unusable,
    /// The provider could not be reached or refused: the step fails `extractor_failed`.
    Unavailable,
    /// Another attempt would exceed this run budget: the run stops `budget_exhausted`.
    Budget(Budget),
}

/// An extraction that failed, with the tokens it spent all the same.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{reason}")]
pub struct ExtractError {
    pub failure: Failure,
    pub reason: String,
    pub usage: Usage,
    /// How many answers were asked for.
    pub attempts: u32,
}

/// A value extracted, with what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Extracted {
    pub value: Value,
    pub usage: Usage,
    /// How many answers were asked for (1 when the first matched the schema).
    pub attempts: u32,
}

/// A boxed extraction: owned, so the step's task can run it beside other steps.
pub type ExtractFuture = Pin<Box<dyn Future<Output = Result<Extracted, ExtractError>> + Send>>;

/// Makes extractions: a model with no tools (`toolhost-llm`), or a recording of one.
/// Shared by the steps of a run, which may extract concurrently.
pub trait Extractor: Send + Sync {
    /// For messages and the record.
    fn name(&self) -> String;

    /// The model's name (for pricing) and the most tokens one attempt at `req` may use:
    /// the budgets are checked with it before the extraction starts.
    fn estimate(&self, req: &Extraction) -> Usage;

    /// Extracts `req`'s value: a value matching `req.schema`, re-asking within `req`'s
    /// budgets when an answer does not.
    fn extract(&self, req: Extraction) -> ExtractFuture;
}

/// Extractions answered from a record instead of a model, each served for the same step
/// of the same revision: a journal's (`toolhost replay`, `toolhost_journal::replay`) or a
/// cassette's (`toolhost_llm::cassette`). A request the record does not hold fails,
/// naming it, as the run went another way.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Names the record in messages: "the recorded run", "cassette `run.jsonl`".
    source: String,
    served: Arc<BTreeMap<(u32, StepId), Result<Extracted, ExtractError>>>,
}

impl Recorded {
    /// Serves `served`, by revision and step, from `source`.
    pub fn new(
        source: impl Into<String>,
        served: BTreeMap<(u32, StepId), Result<Extracted, ExtractError>>,
    ) -> Recorded {
        Recorded {
            source: source.into(),
            served: Arc::new(served),
        }
    }

    fn get(&self, req: &Extraction) -> Result<Extracted, ExtractError> {
        self.served
            .get(&(req.revision, req.step.clone()))
            .cloned()
            .unwrap_or_else(|| {
                Err(ExtractError {
                    failure: Failure::Unavailable,
                    reason: format!(
                        "{} holds no extraction for step `{}` of revision {}: the run went another way",
                        self.source, req.step, req.revision
                    ),
                    usage: Usage::default(),
                    attempts: 0,
                })
            })
    }
}

impl Extractor for Recorded {
    fn name(&self) -> String {
        "recorded".into()
    }

    /// What the recorded extraction spent: the budgets see what the recorded run saw.
    fn estimate(&self, req: &Extraction) -> Usage {
        match self.get(req) {
            Ok(x) => x.usage,
            Err(e) => e.usage,
        }
    }

    fn extract(&self, req: Extraction) -> ExtractFuture {
        let result = self.get(&req);
        Box::pin(async move { result })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked() {
        let ok = json!({"input": {"$ref": "a.output"}, "instruction": "the amount",
                        "output": {"type": "number"}});
        assert_eq!(schema_of(&ok).unwrap(), json!({"type": "number"}));
        let default = json!({"input": "text", "instruction": "the name"});
        assert_eq!(schema_of(&default).unwrap(), json!({"type": "string"}));
        let err = schema_of(&json!({"instruction": "x"})).unwrap_err();
        assert!(err.contains("needs an `input`"), "{err}");
        let err = schema_of(&json!({"input": "t"})).unwrap_err();
        assert!(err.contains("needs an `instruction`"), "{err}");
        let err = schema_of(&json!({"input": "t", "instruction": "${a.output}"})).unwrap_err();
        assert!(err.contains("must be a literal"), "{err}");
        let err = schema_of(&json!({"input": "t", "instruction": "x", "tools": []})).unwrap_err();
        assert!(err.contains("not `tools`"), "{err}");
        let err = schema_of(&json!({"input": "t", "instruction": "x", "output": {"type": "null"}}))
            .unwrap_err();
        assert!(err.starts_with("`output`: `type` \"null\""), "{err}");
    }
}
