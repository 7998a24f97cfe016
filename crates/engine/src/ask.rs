//! The built-in `ask` step: a plan step that puts a question to a person and waits for
//! the answer, which becomes the step's output for later steps to reference.
//!
//! A step asks with tool `human`, operation `ask`, and two arguments: `question` (a
//! string; `${…}` interpolates earlier outputs) and `answer`, the JSON Schema the answer
//! must match (default `{"type": "string"}`). The schema is limited to what a plan's types
//! can say, so references into the answer are type-checked like any tool's output:
//! `string` (with `enum`), `integer`, `number`, `boolean`, `array` with `items`, and
//! `object` with `properties` (those not `required` are optional), plus any validation
//! keywords (`minimum`, `pattern`, `maxLength`…), which the answer is checked against.
//!
//! The run waits in `waiting_for_input` while a person answers — at the terminal for
//! `toolhost run`, through the API for `toolhost serve` — and the wait does not count
//! against `max_wall_ms`. A plan that asks is refused when nobody can answer.

use serde_json::{Value, json};

use super::plan::Step;
use toolhost_runtime::convert;
use toolhost_runtime::types::WitType;

/// The built-in tool's name.
pub const TOOL: &str = "human";
/// Its one operation.
pub const OPERATION: &str = "ask";

/// Whether `(tool, operation)` is the built-in question.
pub fn is(tool: &str, operation: &str) -> bool {
    tool == TOOL && operation == OPERATION
}

/// Whether `step` asks a person.
pub fn is_ask(step: &Step) -> bool {
    step.tool == TOOL
}

/// Whether `step`, cut off mid-call by a crash, may simply run again at resume: it is
/// `idempotent`, or it asks a person (a question has no effect to repeat: it is put
/// again).
pub fn reruns_safely(step: &Step) -> bool {
    step.idempotent || is_ask(step)
}

/// The schema of an answer when a step gives none.
fn default_schema() -> Value {
    json!({"type": "string"})
}

/// The `answer` schema of a step's (validated) arguments, or the default.
pub fn answer_schema(args: &Value) -> Value {
    args.get("answer").cloned().unwrap_or_else(default_schema)
}

/// A step's `answer` schema (the default when it has none), or why its arguments are
/// not a question.
pub fn schema_of(args: &Value) -> Result<Value, String> {
    let Some(map) = args.as_object() else {
        return Err("`args` must be an object with `question` and `answer`".into());
    };
    for key in map.keys() {
        if key != "question" && key != "answer" {
            return Err(format!(
                "`human.ask` takes `question` and `answer`, not `{key}`"
            ));
        }
    }
    match map.get("question") {
        Some(Value::String(q)) if !q.trim().is_empty() => {}
        Some(Value::Object(o)) if o.contains_key("$ref") => {}
        Some(other) => {
            return Err(format!(
                "`question` must be a non-empty string, not `{other}`"
            ));
        }
        None => return Err("`human.ask` needs a `question`".into()),
    }
    let schema = answer_schema(args);
    answer_type(&schema).map_err(|why| format!("`answer`: {why}"))?;
    if let Err(e) = jsonschema::validator_for(&schema) {
        return Err(format!("`answer` is not a valid JSON Schema: {e}"));
    }
    Ok(schema)
}

/// The plan type of an answer to `schema`, or why the schema says more than a plan's
/// types can.
pub fn answer_type(schema: &Value) -> Result<WitType, String> {
    let Some(map) = schema.as_object() else {
        return Err(format!("a schema is an object, not `{schema}`"));
    };
    let Some(ty) = map.get("type") else {
        return Err(
            "the schema needs a `type`: string, integer, number, boolean, array or object".into(),
        );
    };
    Ok(match ty.as_str() {
        Some("string") => WitType::String,
        Some("integer") => WitType::S64,
        Some("number") => WitType::F64,
        Some("boolean") => WitType::Bool,
        Some("array") => {
            let items = map.get("items").ok_or("an `array` schema needs `items`")?;
            WitType::List(Box::new(
                answer_type(items).map_err(|w| format!("items: {w}"))?,
            ))
        }
        Some("object") => {
            let props = map
                .get("properties")
                .and_then(Value::as_object)
                .ok_or("an `object` schema needs `properties`")?;
            let required: Vec<&str> = map
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut fields = Vec::with_capacity(props.len());
            for (name, sub) in props {
                let t = answer_type(sub).map_err(|w| format!("`{name}`: {w}"))?;
                let t = if required.contains(&name.as_str()) {
                    t
                } else {
                    WitType::Option(Box::new(t))
                };
                fields.push((name.clone(), t));
            }
            WitType::Record(fields)
        }
        _ => {
            return Err(format!(
                "`type` {ty} is not one of string, integer, number, boolean, array, object"
            ));
        }
    })
}

/// Why `answer` does not answer a question whose schema is `schema`: every problem,
/// one per line.
pub fn check(schema: &Value, answer: &Value) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    match jsonschema::validator_for(schema) {
        Ok(v) => {
            for e in v.iter_errors(answer) {
                let at = e.instance_path.to_string();
                problems.push(if at.is_empty() {
                    e.to_string()
                } else {
                    format!("{at}: {e}")
                });
            }
        }
        Err(e) => problems.push(format!("the question's schema is not valid: {e}")),
    }
    if problems.is_empty()
        && let Ok(ty) = answer_type(schema)
        && let Err(e) = convert::to_val(&ty, answer)
    {
        problems.push(e.to_string());
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// Reads a person's typed answer: JSON when it parses as an answer to `schema`, else, for
/// a string schema, the text itself.
pub fn parse_typed(schema: &Value, text: &str) -> Value {
    let text = text.trim_end_matches(['\r', '\n']);
    let is_string = schema.get("type").and_then(Value::as_str) == Some("string");
    match serde_json::from_str::<Value>(text) {
        Ok(v) if !is_string || v.is_string() => v,
        _ => Value::String(text.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_map_to_plan_types() {
        let s = json!({"type": "object", "properties": {
            "account": {"type": "string", "enum": ["a", "b"]},
            "amount": {"type": "integer", "minimum": 1},
            "note": {"type": "string"}
        }, "required": ["account", "amount"]});
        assert_eq!(
            answer_type(&s).unwrap(),
            WitType::Record(vec![
                ("account".into(), WitType::String),
                ("amount".into(), WitType::S64),
                ("note".into(), WitType::Option(Box::new(WitType::String))),
            ])
        );
        let err = answer_type(&json!({"type": "array"})).unwrap_err();
        assert!(err.contains("needs `items`"), "{err}");
        let err = answer_type(&json!({"oneOf": []})).unwrap_err();
        assert!(err.contains("needs a `type`"), "{err}");
        let err = answer_type(&json!({"type": "null"})).unwrap_err();
        assert!(err.contains("`type` \"null\""), "{err}");
    }

    #[test]
    fn arguments_are_checked() {
        assert_eq!(
            schema_of(&json!({"question": "Which?"})).unwrap(),
            json!({"type": "string"})
        );
        let err = schema_of(&json!({"question": "q", "schema": {}})).unwrap_err();
        assert!(err.contains("not `schema`"), "{err}");
        let err = schema_of(&json!({"answer": {"type": "string"}})).unwrap_err();
        assert!(err.contains("needs a `question`"), "{err}");
        let err = schema_of(&json!({"question": " "})).unwrap_err();
        assert!(err.contains("non-empty string"), "{err}");
        let err =
            schema_of(&json!({"question": "q", "answer": {"type": "string", "minLength": -1}}))
                .unwrap_err();
        assert!(err.contains("not a valid JSON Schema"), "{err}");
    }

    #[test]
    fn answers_are_checked_against_the_schema_and_the_type() {
        let s = json!({"type": "integer", "minimum": 1});
        assert!(check(&s, &json!(3)).is_ok());
        let errs = check(&s, &json!(0)).unwrap_err();
        assert!(errs[0].contains("minimum"), "{errs:?}");
        assert!(check(&s, &json!("3")).is_err());
        let obj =
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        let errs = check(&obj, &json!({})).unwrap_err();
        assert!(errs.iter().any(|e| e.contains("\"n\"")), "{errs:?}");
    }

    #[test]
    fn typed_answers_parse_as_json_or_text() {
        let s = json!({"type": "string"});
        assert_eq!(parse_typed(&s, "hello\n"), json!("hello"));
        assert_eq!(parse_typed(&s, "42"), json!("42"));
        assert_eq!(parse_typed(&s, "\"quoted\""), json!("quoted"));
        let n = json!({"type": "integer"});
        assert_eq!(parse_typed(&n, "42\n"), json!(42));
        assert_eq!(parse_typed(&n, "forty"), json!("forty"));
    }
}
