//! A question's answer schema as a person reads it at the terminal: `a whole number, at
//! least 1`, `one of: small, medium, large`, `true or false`, with its default, in place of
//! the raw JSON Schema.

use serde_json::Value;

/// What `schema` asks for, in words; `None` for plain text (nothing to say).
pub(crate) fn hint(schema: &Value) -> Option<String> {
    let mut text = kind(schema)?;
    if let Some(d) = schema.get("default") {
        text.push_str(&format!(" (Enter for {})", shown(d)));
    }
    Some(text)
}

/// The schema's default, taken for an empty answer.
pub(crate) fn default(schema: &Value) -> Option<&Value> {
    schema.get("default")
}

fn kind(schema: &Value) -> Option<String> {
    if let Some(choices) = schema.get("enum").and_then(Value::as_array) {
        let choices: Vec<String> = choices.iter().map(shown).collect();
        return Some(format!("one of: {}", choices.join(", ")));
    }
    let ty = schema.get("type").and_then(Value::as_str).unwrap_or("");
    Some(match ty {
        "integer" => format!("a whole number{}", range(schema)),
        "number" => format!("a number{}", range(schema)),
        "boolean" => "true or false".into(),
        "string" => {
            let min = schema.get("minLength").and_then(Value::as_u64);
            let max = schema.get("maxLength").and_then(Value::as_u64);
            match (min, max) {
                (None, None) => return None,
                (Some(a), None) => format!("text of at least {a} characters"),
                (None, Some(b)) => format!("text of at most {b} characters"),
                (Some(a), Some(b)) => format!("text of {a} to {b} characters"),
            }
        }
        "array" => match schema.get("items").and_then(kind) {
            Some(item) => format!("a JSON list, each item {item}"),
            None => "a JSON list".into(),
        },
        "object" => object(schema),
        _ => format!("JSON matching {schema}"),
    })
}

/// `, from 1 to 10`, `, at least 1`, `, at most 10` (exclusive bounds said as such).
fn range(schema: &Value) -> String {
    let bound = |k: &str| schema.get(k).filter(|v| v.is_number()).map(shown);
    let low = bound("minimum")
        .map(|v| format!("at least {v}"))
        .or_else(|| bound("exclusiveMinimum").map(|v| format!("above {v}")));
    let high = bound("maximum")
        .map(|v| format!("at most {v}"))
        .or_else(|| bound("exclusiveMaximum").map(|v| format!("below {v}")));
    match (low, high) {
        (None, None) => String::new(),
        (Some(l), None) => format!(", {l}"),
        (None, Some(h)) => format!(", {h}"),
        (Some(l), Some(h)) => format!(", {l} and {h}"),
    }
}

/// `a JSON object: {"account": one of: a, b; "amount": a whole number, at least 1 (required)}`.
fn object(schema: &Value) -> String {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let fields: Vec<String> = schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(name, s)| {
            let what = kind(s).unwrap_or_else(|| "text".into());
            let req = if required.contains(&name.as_str()) {
                ", required"
            } else {
                ""
            };
            format!("{}: {what}{req}", shown(&Value::String(name.clone())))
        })
        .collect();
    if fields.is_empty() {
        "a JSON object".into()
    } else {
        format!("a JSON object with {}", fields.join("; "))
    }
}

/// A value as it is typed: strings bare, anything else as JSON.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => toolhost_runtime::terminal::line(s).into_owned(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schemas_read_as_words() {
        let h = |s: Value| hint(&s);
        assert_eq!(
            h(json!({"type": "integer", "minimum": 1})).as_deref(),
            Some("a whole number, at least 1")
        );
        assert_eq!(
            h(json!({"type": "number", "minimum": 0, "maximum": 1, "default": 0.5})).as_deref(),
            Some("a number, at least 0 and at most 1 (Enter for 0.5)")
        );
        assert_eq!(
            h(json!({"type": "string", "enum": ["small", "large"]})).as_deref(),
            Some("one of: small, large")
        );
        assert_eq!(
            h(json!({"type": "boolean"})).as_deref(),
            Some("true or false")
        );
        assert_eq!(h(json!({"type": "string"})), None);
        assert_eq!(
            h(json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}))
                .as_deref(),
            Some("a JSON object with n: a whole number, required")
        );
    }
}
