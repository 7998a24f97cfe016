//! Opaque handles (CaMeL's design, enforced at the call boundary): the value of a call
//! whose output is untrusted (its record's taint is not empty) stays on the host, and
//! the program gets `{"$handle": "cN"}`, `cN` the call's id, which the prelude wraps in an
//! `Untrusted` object. Call ids are numbered in the program's order and journaled, so a
//! resumed or replayed program gets the same handles.
//!
//! The program may take a part of a handle (`x["amount"]`, `x[0]`): another handle,
//! `cN["amount"]`, `cN[0]`, named with the path of a plan reference; it learns nothing of
//! the content by doing so. A handle the program passes to a tool becomes the plan
//! reference `{"$ref": "cN.output…"}` (the path after it) before the call is validated, so the policy's data-flow rules
//! (`untrusted_may_reach`, `trusted_args`) apply to it exactly as to a plan step's
//! reference, and the tool receives the real value. The program itself never holds the
//! content: it cannot print, compare, branch on or answer it. A failed untrusted call
//! raises with its kind only ([`error_text`]).

use serde_json::{Map, Value, json};

use crate::record::{StepError, StepRecord, StepStatus};
use crate::reference;

/// The key of a handle on the wire.
pub(crate) const HANDLE: &str = "$handle";

/// What the program gets for a succeeded call's output: the output itself when it can be
/// trusted, else the handle of the call.
pub(crate) fn shown_output(r: &StepRecord) -> Value {
    if r.untrusted.is_trusted() {
        r.output.clone().unwrap_or(Value::Null)
    } else {
        json!({ HANDLE: r.id.as_str() })
    }
}

/// The message of a failed call's exception: the tool's own error value when it has one;
/// withheld when the call's output would be untrusted (an error may carry its text).
pub(crate) fn error_text(r: &StepRecord, e: &StepError) -> String {
    if !r.untrusted.is_trusted() {
        return format!(
            "withheld: the output of `{}` is untrusted, and so is its error (only its kind is shown)",
            r.id
        );
    }
    match &e.value {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => e.message.clone(),
    }
}

/// `args` with each handle replaced by the reference to its call's output. `records`:
/// the run's records; a handle must name a call of the run that succeeded. `Err`: the
/// message naming the handle that does not.
pub(crate) fn to_refs(args: &Value, records: &[StepRecord]) -> Result<Value, String> {
    Ok(match args {
        Value::Object(m) => match handle_of(m) {
            Some(handle) => {
                let (id, path) = split(handle);
                let known = records
                    .iter()
                    .any(|r| r.id.as_str() == id && r.status == StepStatus::Succeeded);
                let text = format!("{id}.output{path}");
                if !known || reference::parse(&text).is_err() {
                    return Err(format!(
                        "`{{\"{HANDLE}\": {handle:?}}}` is not the handle of a call of this run that succeeded"
                    ));
                }
                json!({ "$ref": text })
            }
            None => {
                let mut out = Map::with_capacity(m.len());
                for (k, v) in m {
                    out.insert(k.clone(), to_refs(v, records)?);
                }
                Value::Object(out)
            }
        },
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| to_refs(v, records))
                .collect::<Result<_, _>>()?,
        ),
        other => other.clone(),
    })
}

/// A handle's call id and the path after it (`c3["amount"]` → `c3`, `["amount"]`).
fn split(handle: &str) -> (&str, &str) {
    let at = handle.find(['.', '[']).unwrap_or(handle.len());
    handle.split_at(at)
}

/// The value a handle names in `records`: its call's output, or the part of it the path
/// names.
fn value_of<'a>(handle: &str, records: &'a [StepRecord]) -> Option<&'a Value> {
    let (id, path) = split(handle);
    let output = records
        .iter()
        .rev()
        .find(|r| r.id.as_str() == id && r.status == StepStatus::Succeeded)?
        .output
        .as_ref()?;
    let parsed = reference::parse(&format!("{id}.output{path}")).ok()?;
    reference::value_at(output, &parsed.path).ok()
}

/// `args` (handles already references) with every reference resolved against `records`'
/// outputs: the arguments as a call's record holds them, to compare a resumed program's
/// call with the journal's. A reference that does not resolve is left as written.
pub(crate) fn resolved(args: &Value, records: &[StepRecord]) -> Value {
    let mut lookup = |r: &reference::Ref| -> Result<Value, String> {
        let output = records
            .iter()
            .rev()
            .find(|x| x.id == r.step)
            .and_then(|x| x.output.as_ref())
            .ok_or_else(|| format!("no output of `{}`", r.step))?;
        reference::value_at(output, &r.path).cloned()
    };
    reference::substitute(args, &mut lookup).unwrap_or_else(|_| args.clone())
}

/// The answer `answer` with each handle of a call that succeeded replaced by that call's
/// output (the policy lets untrusted values be the answer); a handle naming no such call
/// is left as written.
pub(crate) fn answered(answer: &Value, records: &[StepRecord]) -> Value {
    match answer {
        Value::Object(m) => match handle_of(m) {
            Some(handle) => value_of(handle, records)
                .cloned()
                .unwrap_or_else(|| answer.clone()),
            None => Value::Object(
                m.iter()
                    .map(|(k, v)| (k.clone(), answered(v, records)))
                    .collect(),
            ),
        },
        Value::Array(items) => Value::Array(items.iter().map(|v| answered(v, records)).collect()),
        other => other.clone(),
    }
}

/// The handle a `{"$handle": "cN…"}` object names.
fn handle_of(m: &Map<String, Value>) -> Option<&str> {
    match (m.len(), m.get(HANDLE)) {
        (1, Some(Value::String(id))) => Some(id.as_str()),
        _ => None,
    }
}
