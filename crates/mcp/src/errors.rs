//! A failed call as MCP sees it. A failure of the tool (its `err` value, a denial, a limit,
//! a trap) is a result with `isError: true`, so the model can read it and correct course;
//! its `structuredContent` is `{"error": {"kind", "message", …}}` with the kind's stable
//! name and, for a limit, the limit's name. Protocol misuse is a JSON-RPC error: an unknown
//! tool, and, for clients below protocol revision 2025-11-25, arguments that do not match
//! the input schema (2025-11-25 made those tool errors, SEP-1303).

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ProtocolVersion};
use serde_json::{Value, json};
use toolhost_runtime::error::CallError;

/// The first revision whose argument errors are tool results rather than JSON-RPC errors.
const ARGUMENT_ERRORS_AS_RESULTS: &str = "2025-11-25";

/// The response to a call of `name` that failed with `e`, for a client speaking `version`
/// (`None` when rmcp does not know it: the newest rules apply).
pub(crate) fn failed(
    name: &str,
    e: &CallError,
    version: Option<&ProtocolVersion>,
) -> Result<CallToolResult, ErrorData> {
    if let CallError::BadArguments(bad) = e
        && version.is_some_and(|v| v.as_str() < ARGUMENT_ERRORS_AS_RESULTS)
    {
        return Err(ErrorData::invalid_params(
            format!("arguments of tool `{name}` do not match its input schema: {bad}"),
            Some(json!({"kind": "bad_arguments", "path": bad.path, "reason": bad.reason})),
        ));
    }
    Ok(CallToolResult::structured_error(
        json!({ "error": error_json(e) }),
    ))
}

/// A content result the tool returned malformed (see `content`): an `isError` result of kind
/// `bad_content`, never blocks a client would choke on.
pub(crate) fn bad_content(name: &str, why: &str) -> CallToolResult {
    CallToolResult::structured_error(json!({"error": {
        "kind": "bad_content",
        "message": format!("tool `{name}` returned content MCP cannot carry: {why}"),
    }}))
}

/// A `sensitive` tool's call the client's user did not approve: it never ran. An `isError`
/// result of kind `denied`.
pub(crate) fn refused(message: &str) -> CallToolResult {
    CallToolResult::structured_error(json!({"error": {"kind": "denied", "message": message}}))
}

/// `{"kind", "message"}` and what else the kind carries: the limit's name, the tool's
/// error value, when to retry.
pub(crate) fn error_json(e: &CallError) -> Value {
    let mut v = json!({"kind": e.kind().as_str(), "message": e.to_string()});
    if let Some(limit) = e.limit_name() {
        v["limit"] = limit.into();
    }
    match e {
        CallError::ToolError { value } => v["value"] = value.clone(),
        CallError::RateLimited { retry_after_ms, .. } => {
            v["retry_after_ms"] = (*retry_after_ms).into()
        }
        CallError::BadArguments(bad) => {
            v["path"] = bad.path.clone().into();
            v["reason"] = bad.reason.clone().into();
        }
        _ => {}
    }
    v
}

/// The JSON-RPC error for a tool name no catalog entry has.
pub(crate) fn unknown_tool(name: &str, known: &[&str]) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "unknown tool `{name}`; this server's tools are: {}",
            known.join(", ")
        ),
        Some(json!({"kind": "unknown_tool", "tool": name})),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_runtime::convert::ConvertError;

    fn bad() -> CallError {
        CallError::BadArguments(ConvertError {
            path: "$.expression".into(),
            reason: "expected a string, got 5".into(),
        })
    }

    #[test]
    fn argument_errors_follow_the_negotiated_revision() {
        let old = failed("calc.eval", &bad(), Some(&ProtocolVersion::V_2025_06_18)).unwrap_err();
        assert_eq!(old.code.0, -32602);
        assert_eq!(old.data.as_ref().unwrap()["path"], "$.expression");
        for new in [
            Some(&ProtocolVersion::V_2025_11_25),
            Some(&ProtocolVersion::V_2026_07_28),
            None,
        ] {
            let r = failed("calc.eval", &bad(), new).expect("a result");
            assert_eq!(r.is_error, Some(true));
            let err = &r.structured_content.unwrap()["error"];
            assert_eq!(err["kind"], "bad_arguments");
            assert_eq!(err["path"], "$.expression");
        }
    }

    #[test]
    fn limits_are_named_in_the_error() {
        let r = failed(
            "m.spin",
            &CallError::FuelExhausted { limit: 1000 },
            Some(&ProtocolVersion::V_2025_06_18),
        )
        .unwrap();
        let err = &r.structured_content.unwrap()["error"];
        assert_eq!(err["kind"], "fuel_exhausted");
        assert_eq!(err["limit"], "fuel");
        assert!(err["message"].as_str().unwrap().contains("1000 units"));
        let tool = error_json(&CallError::ToolError {
            value: json!("division by zero"),
        });
        assert_eq!(tool["value"], "division by zero");
    }
}
