//! Checking a client's answers before a tool sees them: an object; a form's, an action, and
//! when it accepts, content that matches the form's schema. Used for the answers of a
//! session's requests and of an `input_required` round (`ask`), and for those a
//! `tasks/update` brings to a waiting task ([`take`], `inbox`).

use std::collections::BTreeMap;

use rmcp::ErrorData;
use rmcp::model::{InputRequest, InputRequests, InputResponses};
use serde_json::{Value, json};
use toolhost_runtime::ask::{Input, Request};

/// Whether `answer` answers the MCP request `request` asked under `key` (an input of a
/// task, as `tasks/get` showed it): [`check`] with its form's schema.
pub(crate) fn check_request(
    key: &str,
    request: &InputRequest,
    answer: &Value,
) -> Result<(), String> {
    let elicits = serde_json::to_value(request)
        .ok()
        .filter(|r| r["method"] == "elicitation/create");
    if elicits
        .as_ref()
        .is_some_and(|r| r["params"]["mode"] == "url")
    {
        return check_action(key, answer);
    }
    let schema = elicits.and_then(|r| r.pointer("/params/requestedSchema").cloned());
    check(key, schema.as_ref(), answer)
}

/// The answer to a web page the user was sent to (URL-mode elicitation): an object whose
/// action is `accept`, `decline` or `cancel`.
pub(crate) fn check_action(key: &str, answer: &Value) -> Result<(), String> {
    match answer.get("action").and_then(Value::as_str) {
        Some("accept" | "decline" | "cancel") => Ok(()),
        _ if !answer.is_object() => {
            Err(format!("the answer to `{key}` is not an object: {answer}"))
        }
        other => Err(format!(
            "the answer to `{key}` has no action `accept`, `decline` or `cancel`: {}",
            other.map_or("none".to_string(), |a| format!("`{a}`"))
        )),
    }
}

/// An object; with a form's `schema`, an action, and when it accepts, content that matches
/// the schema.
pub(crate) fn check(key: &str, schema: Option<&Value>, answer: &Value) -> Result<(), String> {
    let Some(obj) = answer.as_object() else {
        return Err(format!("the answer to `{key}` is not an object: {answer}"));
    };
    let Some(schema) = schema else {
        return Ok(());
    };
    match obj.get("action").and_then(Value::as_str) {
        Some("decline" | "cancel") => Ok(()),
        Some("accept") => {
            let content = obj.get("content").cloned().unwrap_or(Value::Null);
            let validator = jsonschema::validator_for(schema)
                .map_err(|e| format!("the schema of `{key}` is not a JSON Schema: {e}"))?;
            let problems: Vec<String> = validator
                .iter_errors(&content)
                .map(|e| {
                    let at = e.instance_path.to_string();
                    let at = if at.is_empty() {
                        "the content".to_string()
                    } else {
                        format!("`{at}`")
                    };
                    format!("{at}: {e}")
                })
                .collect();
            if problems.is_empty() {
                Ok(())
            } else {
                Err(format!(
                    "the answer to `{key}` does not match its schema: {}",
                    problems.join("; ")
                ))
            }
        }
        other => Err(format!(
            "the answer to `{key}` has no action `accept`, `decline` or `cancel`: {}",
            other.map_or("none".to_string(), |a| format!("`{a}`"))
        )),
    }
}

/// Takes out of `pending` the keys `responses` answers, each answer checked against its
/// request; the answers taken. An answer that does not fit refuses the whole update (none
/// is taken); keys `pending` does not hold are ignored.
pub(crate) fn take(
    id: &str,
    pending: &mut InputRequests,
    responses: InputResponses,
) -> Result<BTreeMap<String, Value>, ErrorData> {
    let mut got = BTreeMap::new();
    for (key, answer) in responses {
        let Some(request) = pending.get(&key) else {
            continue;
        };
        if let Err(why) = check_request(&key, request, &answer) {
            return Err(ErrorData::invalid_params(
                format!("task `{id}` did not take the update: {why}"),
                Some(json!({"kind": "invalid_answer", "taskId": id, "key": key})),
            ));
        }
        got.insert(key, answer);
    }
    for key in got.keys() {
        pending.remove(key);
    }
    Ok(got)
}

/// What `tasks/update` answers for a task of its client that waits for no input now
/// (`status`: what it does instead).
pub(crate) fn not_waiting(id: &str, status: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "task `{id}` is not waiting for input (it is {status}): `tasks/update` answers only a task whose status is `input_required`"
        ),
        Some(json!({"kind": "not_waiting", "taskId": id, "status": status})),
    )
}

/// The form the call of `name` with `args` is approved through, under `key` (a program's
/// run asks one per call).
pub fn approval_keyed(key: &str, name: &str, args: &Value) -> Input {
    let mut shown = args.to_string();
    if shown.len() > 2000 {
        let mut cut = 2000;
        while !shown.is_char_boundary(cut) {
            cut -= 1;
        }
        shown.truncate(cut);
        shown.push('…');
    }
    Input::new(
        key,
        Request::Form {
            message: format!("Allow the call of `{name}` with the arguments {shown}?"),
            schema: json!({
                "type": "object",
                "properties": {"approve": {"type": "boolean", "title": "Approve this call"}},
                "required": ["approve"],
            }),
        },
    )
}

/// Whether an approval's answer approves.
pub fn approves(answer: &Value) -> bool {
    answer.get("action").and_then(Value::as_str) == Some("accept")
        && answer.pointer("/content/approve") == Some(&Value::Bool(true))
}
