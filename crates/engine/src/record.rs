//! What happened to each step: [`StepRecord`]s, written back as the plan runs.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::flow::Taint;
use super::plan::{OperationName, StepId, ToolName};
use toolhost_runtime::sandbox::AuditEvent;

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Succeeded,
    /// The call failed, or its output failed evaluation.
    Failed,
    /// A step it depends on did not succeed; it never ran.
    Skipped,
}

/// A step's failure, as the planner sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepError {
    /// A `CallError` kind (`tool_error`, `timeout`, `denied`, …), or `evaluation`,
    /// `skipped`, `bad_reference`.
    pub kind: String,
    pub message: String,
    /// The tool's error value, for `tool_error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
}

impl StepError {
    /// A failed call as the planner sees it: its kind, its message, and the tool's error
    /// value for `tool_error`.
    pub fn of_call(e: &toolhost_runtime::error::CallError) -> StepError {
        StepError {
            kind: e.kind().as_str().to_string(),
            message: e.to_string(),
            value: match e {
                toolhost_runtime::error::CallError::ToolError { value } => Some(value.clone()),
                _ => None,
            },
        }
    }
}

/// The evaluator's verdict on a step's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Fail,
    Uncertain,
}

/// A verdict and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    pub verdict: Verdict,
    pub detail: String,
}

/// The model call a step made (an extraction, [`extract`](super::extract)): charged to
/// the run's token and cost budgets like a planner call, and read back by a resume.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelCall {
    pub model: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// How many of `input_tokens` the provider served from its prompt cache.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Answers asked for: 1, plus one per re-ask of an answer that missed the schema.
    pub attempts: u32,
}

/// One step as it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StepRecord {
    pub id: StepId,
    /// The plan revision (plan-then-execute) or turn (step-wise) it belongs to.
    pub revision: u32,
    pub tool: ToolName,
    pub operation: OperationName,
    /// The arguments with references resolved.
    pub args: Value,
    pub status: StepStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<StepError>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation: Option<Evaluation>,
    /// Empty when the output (or error) can be trusted; else how untrusted data reached
    /// it ([`flow`](super::flow)).
    #[serde(default, skip_serializing_if = "Taint::is_trusted")]
    pub untrusted: Taint,
    pub fuel: u64,
    /// The model call of an extraction step, with the tokens it spent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_call: Option<ModelCall>,
    /// Microseconds from the start of the run.
    pub started_us: u64,
    pub finished_us: u64,
    /// The sandbox's capability decisions during the call.
    #[serde(default, skip_serializing_if = "Vec::is_empty", skip_deserializing)]
    pub events: Vec<AuditEvent>,
}

impl StepRecord {
    /// The record of `step` (of `revision`) ending at `at_us` without running: skipped, or
    /// failed with `kind` for a step a resume abandoned.
    pub(crate) fn not_run(
        step: &super::plan::Step,
        revision: u32,
        status: StepStatus,
        kind: &str,
        message: String,
        at_us: u64,
    ) -> StepRecord {
        StepRecord {
            id: step.id.clone(),
            revision,
            tool: step.tool.clone(),
            operation: step.operation.clone(),
            args: step.args.clone(),
            status,
            output: None,
            error: Some(StepError {
                kind: kind.into(),
                message,
                value: None,
            }),
            evaluation: None,
            untrusted: Taint::default(),
            fuel: 0,
            model_call: None,
            started_us: at_us,
            finished_us: at_us,
            events: Vec::new(),
        }
    }
}
