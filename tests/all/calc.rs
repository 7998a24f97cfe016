use serde_json::json;
use toolhost_runtime::ErrorKind;
use toolhost_tests::{call, cli, path};

#[test]
fn seed_example_prints_53() {
    let out = cli([
        "--no-cache",
        "tool",
        "call",
        path("calc"),
        "eval",
        "--args",
        r#"{"expression":"12 * 4 + 5"}"#,
    ]);
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "53\n"),
        "{}",
        out.stderr
    );
}

#[test]
fn evaluates_decimals_powers_and_unary_minus() {
    for (expr, want) in [
        ("1.5 * 4", json!(6)),
        ("2 ^ 10", json!(1024)),
        ("-(3 - 5) / 4", json!(0.5)),
    ] {
        let out = call("calc", "eval", json!({ "expression": expr }));
        assert_eq!(out.result, Ok(want), "{expr}");
    }
}

#[test]
fn parse_errors_are_tool_errors_with_positions() {
    let out = call("calc", "eval", json!({"expression": "2 * (3 + "}));
    let err = out.result.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ToolError);
    assert_eq!(
        err.to_string(),
        "tool returned an error: unexpected end of expression: expected a number or `(`"
    );
    let out = call("calc", "eval", json!({"expression": "1 / 0"}));
    assert_eq!(
        out.result.unwrap_err().to_string(),
        "tool returned an error: division by zero at column 3"
    );
}

#[test]
fn tool_error_exits_1_with_json_error_object() {
    let out = cli([
        "tool",
        "call",
        path("calc"),
        "eval",
        "--args",
        r#"{"expression":"x"}"#,
        "--json",
    ]);
    assert_eq!(out.code, 1);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["ok"], json!(false));
    assert_eq!(doc["error"]["kind"], json!("tool_error"));
    assert_eq!(doc["error"]["value"], json!("unexpected `x` at column 1"));
    assert!(doc["report"]["fuel_consumed"].as_u64().unwrap() > 0);
}
