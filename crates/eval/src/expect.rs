//! `[expect]`: what a golden task's run must do — stop how, call what in which order,
//! answer what, leave which files.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

/// The `[expect]` table as written. Everything but `outcome` is optional: an absent check
/// is not made.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The run's stop (`completed`, `escalated`, `budget_exhausted`, …); default `completed`.
    #[serde(default = "completed")]
    pub outcome: String,
    /// `tool.operation` of the steps that ran, in order.
    pub sequence: Option<Vec<String>>,
    #[serde(default)]
    pub order: Order,
    /// With `order = "partial"`: `[a, b]` pairs, `a` ran before `b` (`NAME#k` is the k-th
    /// call of `NAME`, from 0; `NAME` alone is `NAME#0`).
    #[serde(default)]
    pub before: Vec<[String; 2]>,
    pub answer: Option<AnswerCheck>,
    #[serde(default)]
    pub files: Vec<FileCheck>,
    /// Why this task is known to fail (`known_failure = "REASON"`): its failure does not fail
    /// the suite's gate, and a pass does (the mark is out of date).
    pub known_failure: Option<String>,
}

impl Default for Expect {
    fn default() -> Expect {
        Expect {
            outcome: completed(),
            sequence: None,
            order: Order::Exact,
            before: Vec::new(),
            answer: None,
            files: Vec::new(),
            known_failure: None,
        }
    }
}

fn completed() -> String {
    "completed".into()
}

/// How `sequence` is compared.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// The same calls in the same order.
    #[default]
    Exact,
    /// The same calls (as a multiset), in any order.
    Set,
    /// The same calls, with the `before` edges holding.
    Partial,
}

/// The final-answer check: one of its forms.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "RawAnswer")]
pub enum AnswerCheck {
    /// Equal as JSON values (numbers compared as numbers: 53 equals 53.0).
    Equals { equals: Value },
    /// A string answer that contains this text.
    Contains { contains: String },
    /// Valid against this JSON Schema.
    Schema { schema: Value },
    /// A number within `tolerance` (default 0) of this one.
    Number { number: f64, tolerance: f64 },
    /// A sandboxed tool judges the answer.
    Evaluator { evaluator: Judge },
}

/// `answer = { … }` as written: exactly one form.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAnswer {
    equals: Option<Value>,
    contains: Option<String>,
    schema: Option<Value>,
    number: Option<f64>,
    tolerance: Option<f64>,
    evaluator: Option<Judge>,
}

impl TryFrom<RawAnswer> for AnswerCheck {
    type Error = String;

    fn try_from(r: RawAnswer) -> Result<AnswerCheck, String> {
        if r.tolerance.is_some() && r.number.is_none() {
            return Err("`tolerance` goes with `number`".into());
        }
        if r.tolerance.is_some_and(|t| t < 0.0 || t.is_nan()) {
            return Err(format!(
                "tolerance {} is negative",
                r.tolerance.unwrap_or(0.0)
            ));
        }
        let mut forms = Vec::new();
        if let Some(v) = r.equals {
            forms.push(AnswerCheck::Equals { equals: v });
        }
        if let Some(s) = r.contains {
            forms.push(AnswerCheck::Contains { contains: s });
        }
        if let Some(schema) = r.schema {
            if let Err(e) = jsonschema::validator_for(&schema) {
                return Err(format!(
                    "the answer's schema is not a valid JSON Schema: {e}"
                ));
            }
            forms.push(AnswerCheck::Schema { schema });
        }
        if let Some(number) = r.number {
            forms.push(AnswerCheck::Number {
                number,
                tolerance: r.tolerance.unwrap_or(0.0),
            });
        }
        if let Some(j) = r.evaluator {
            forms.push(AnswerCheck::Evaluator { evaluator: j });
        }
        match forms.len() {
            1 => Ok(forms.remove(0)),
            0 => Err("`answer` needs one of `equals`, `contains`, `schema`, `number` (with `tolerance`) or `evaluator`".into()),
            _ => Err("`answer` gives more than one check; keep one of `equals`, `contains`, `schema`, `number` and `evaluator`".into()),
        }
    }
}

/// `answer = { evaluator = { tool, operation, args } }`: the task's tool `tool` is called
/// with `args`, in which the string `"$answer"` stands for the answer; it passes when the
/// result is `true` or `{"pass": true}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Judge {
    pub tool: String,
    pub operation: String,
    #[serde(default)]
    pub args: Value,
}

/// `[[expect.files]]`: a file the run leaves, equal as JSON to another (both relative to
/// the task file).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileCheck {
    pub path: PathBuf,
    pub equals_json: PathBuf,
}
