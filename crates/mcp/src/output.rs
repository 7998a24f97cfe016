//! `outputSchema` and `structuredContent`. MCP wants both to be objects: a WIT result that
//! is a record is served as it is; anything else (a string, a number, a list, an option,
//! nothing) is wrapped as `{"result": …}`. The shape is the same in every protocol
//! version, so what a client validates does not depend on the revision it speaks.

use rmcp::model::JsonObject;
use serde_json::{Value, json};

/// The output schema for an operation whose result has `result_schema`, and whether
/// results are wrapped.
pub(crate) fn schema(result_schema: &Value) -> (JsonObject, bool) {
    if result_schema.get("type").and_then(Value::as_str) == Some("object")
        && let Value::Object(map) = result_schema
    {
        return (map.clone(), false);
    }
    let mut wrapper = JsonObject::new();
    wrapper.insert("type".into(), "object".into());
    wrapper.insert("properties".into(), json!({ "result": result_schema }));
    wrapper.insert("required".into(), json!(["result"]));
    wrapper.insert("additionalProperties".into(), false.into());
    (wrapper, true)
}

/// The `structuredContent` of a result `value`.
pub(crate) fn structured(value: Value, wrapped: bool) -> Value {
    if wrapped {
        json!({ "result": value })
    } else {
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_served_as_they_are_and_everything_else_is_wrapped() {
        let record = json!({"type": "object", "properties": {"x": {"type": "integer"}}});
        let (s, wrapped) = schema(&record);
        assert!(!wrapped);
        assert_eq!(Value::Object(s), record);
        assert_eq!(structured(json!({"x": 1}), false), json!({"x": 1}));

        for scalar in [
            json!({"type": "string"}),
            json!({"type": "array", "items": {"type": "integer"}}),
            json!({"type": "null"}),
            json!({"anyOf": [{"type": "null"}, {"type": "number"}]}),
        ] {
            let (s, wrapped) = schema(&scalar);
            assert!(wrapped, "{scalar}");
            assert_eq!(s["type"], "object");
            assert_eq!(s["properties"]["result"], scalar);
            assert_eq!(s["required"], json!(["result"]));
        }
        assert_eq!(structured(json!(42), true), json!({"result": 42}));
    }
}
