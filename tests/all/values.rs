//! JSON → component values → guest → values → JSON, end to end through typesink.

use serde_json::json;
use toolhost_runtime::ErrorKind;
use toolhost_tests::{call, tool};

fn ticket() -> serde_json::Value {
    json!({
        "title": "printer on fire",
        "retries": 3,
        "priority": "urgent",
        "tags": ["hw", "fire"],
        "assignee": null,
        "perms": ["read", "exec"],
        "shape": {"rect": [2.5, 4]},
        "initial": "é",
        "ratio": 0.25,
        "big": u64::MAX,
        "small": i64::MIN,
        "nested": {"some": null},
        "outcome": {"err": "jammed"},
        "pair": [-7, true],
    })
}

#[test]
fn every_type_round_trips_through_the_guest() {
    let out = call("typesink", "echo-ticket", json!({ "ticket": ticket() }));
    assert_eq!(out.result, Ok(ticket()));
    let sink = tool("typesink");
    let result_schema = &sink.operation("echo-ticket").unwrap().result_schema;
    assert!(jsonschema::is_valid(result_schema, &ticket()));
}

#[test]
fn bad_values_name_the_json_path() {
    let mut t = ticket();
    t["retries"] = json!(300);
    let err = call("typesink", "echo-ticket", json!({ "ticket": t }))
        .result
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArguments);
    assert_eq!(
        err.to_string(),
        "bad arguments: $.ticket.retries: expected integer in 0..=255, got 300"
    );

    let mut t = ticket();
    t["priority"] = json!("asap");
    let err = call("typesink", "echo-ticket", json!({ "ticket": t }))
        .result
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "bad arguments: $.ticket.priority: unknown case \"asap\"; the cases are: low, normal, urgent"
    );

    let mut t = ticket();
    t["tags"] = json!(["ok", 5]);
    let err = call("typesink", "echo-ticket", json!({ "ticket": t }))
        .result
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "bad arguments: $.ticket.tags[1]: expected a string, got 5"
    );
}

#[test]
fn interface_operations_and_unit_results() {
    assert_eq!(
        call("typesink", "ops.add", json!({"a": i32::MAX, "b": 1})).result,
        Ok(json!(i32::MIN))
    );
    assert_eq!(
        call("typesink", "nothing", json!({})).result,
        Ok(json!(null))
    );
    assert_eq!(
        call("typesink", "shift", json!({"value": 250, "by": 10})).result,
        Ok(json!(4))
    );
}

#[test]
fn err_values_are_tool_errors_with_their_value() {
    let err = call("typesink", "fallible", json!({"fail": true}))
        .result
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ToolError);
    assert_eq!(
        err,
        toolhost_runtime::CallError::ToolError {
            value: json!("urgent")
        }
    );
    assert_eq!(
        call("typesink", "fallible", json!({"fail": false})).result,
        Ok(json!("fine"))
    );
}

#[test]
fn unknown_operation_lists_the_real_ones() {
    let err = call("calc", "evaluate", json!({})).result.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UnknownOperation);
    assert_eq!(
        err.to_string(),
        "unknown operation `evaluate`; the tool's operations are: eval"
    );
}
