//! The executor's output check: a step's output must be a value of its operation's WIT
//! result type. The runtime's conversion only makes such values, so the check guards the
//! executor's own input — a malformed-output fault, a future output path — and a bad
//! output fails the step (`bad_output`) instead of reaching later steps' references.

use serde_json::{Value, json};

use crate::record::StepError;
use toolhost_runtime::convert;
use toolhost_runtime::tool::{Operation, Returns};
use toolhost_runtime::types::WitType;

/// The success type of `op`, `None` when it returns nothing (the output is `null`).
fn ok_type(op: &Operation) -> Option<&WitType> {
    match &op.returns {
        Returns::Nothing | Returns::Fallible { ok: None, .. } => None,
        Returns::Value(t) | Returns::Fallible { ok: Some(t), .. } => Some(t),
    }
}

/// Why `output` is not a value of `op`'s result type, if it is not.
fn mismatch(op: &Operation, output: &Value) -> Option<String> {
    match ok_type(op) {
        None if output.is_null() => None,
        None => Some(format!("expected `null`, got {}", short(output))),
        Some(ty) => convert::to_val(ty, output).err().map(|e| e.to_string()),
    }
}

/// Checks `output` against `op`'s result type; `note` ends the message (a fault's).
pub(crate) fn check(op: &Operation, output: &Value, note: Option<&str>) -> Result<(), StepError> {
    let Some(why) = mismatch(op, output) else {
        return Ok(());
    };
    let note = note.map(|n| format!(" — {n}")).unwrap_or_default();
    Err(StepError {
        kind: "bad_output".into(),
        message: format!(
            "the output of `{}` is not a value of its result type: {why}{note}",
            op.name
        ),
        value: None,
    })
}

/// A value `op`'s result type does not allow, standing in for a tool's real output.
pub(crate) fn malformed(op: &Operation) -> Value {
    let candidates = [
        json!({"fault injected": "malformed output"}),
        json!("fault injected: malformed output"),
        json!(-0.5),
        json!([null]),
    ];
    candidates
        .into_iter()
        .find(|v| mismatch(op, v).is_some())
        // Only a type that takes any JSON value allows all four; none in WIT does.
        .unwrap_or(Value::Null)
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}
