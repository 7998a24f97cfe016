//! Schemas derived from WIT types and docs, checked on the typesink fixture (every type).

use serde_json::{Value, json};
use toolhost_tests::{cli, path, tool};

fn inspect(name: &str) -> Value {
    let out = cli(["tool", "inspect", path(name), "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

fn op<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == name)
        .unwrap_or_else(|| panic!("no operation {name} in {doc}"))
}

#[test]
fn u8_parameter_has_range_and_doc_description() {
    let doc = inspect("typesink");
    let shift = op(&doc, "shift");
    assert_eq!(
        shift["parameters"]["properties"]["value"],
        json!({"type": "integer", "minimum": 0, "maximum": 255, "description": "the byte to shift"})
    );
    assert_eq!(
        shift["description"],
        json!("Adds `by` to `value`, wrapping at 256.")
    );
    assert_eq!(shift["parameters"]["required"], json!(["value", "by"]));
    assert_eq!(shift["parameters"]["additionalProperties"], json!(false));
}

#[test]
fn record_fields_enums_flags_variants_map_as_documented() {
    let doc = inspect("typesink");
    let ticket = &op(&doc, "echo-ticket")["parameters"]["properties"]["ticket"];
    assert_eq!(ticket["type"], "object");
    assert_eq!(ticket["additionalProperties"], json!(false));
    assert_eq!(ticket["description"], "the ticket to echo");
    assert_eq!(ticket["required"].as_array().unwrap().len(), 14);
    let p = &ticket["properties"];
    assert_eq!(
        p["retries"]["description"],
        "How many times to retry delivery."
    );
    assert_eq!(p["retries"]["maximum"], 255);
    assert_eq!(p["priority"]["enum"], json!(["low", "normal", "urgent"]));
    assert_eq!(p["priority"]["type"], "string");
    let pdesc = p["priority"]["description"].as_str().unwrap();
    assert!(
        pdesc.contains("How urgent a ticket is.") && pdesc.contains("`urgent`: Drop everything."),
        "{pdesc}"
    );
    assert_eq!(
        p["perms"],
        json!({"type": "array", "items": {"type": "string", "enum": ["read", "write", "exec"]}, "uniqueItems": true, "description": "Permissions."})
    );
    let shape = p["shape"]["oneOf"].as_array().unwrap();
    assert_eq!(
        shape[0],
        json!({"const": "point", "description": "A point has no size."})
    );
    assert_eq!(shape[1]["required"], json!(["circle"]));
    assert_eq!(shape[1]["properties"]["circle"]["type"], "number");
    assert_eq!(
        p["initial"],
        json!({"type": "string", "minLength": 1, "maxLength": 1})
    );
    assert_eq!(
        p["assignee"]["anyOf"],
        json!([{"type": "string"}, {"type": "null"}])
    );
    assert_eq!(p["pair"]["prefixItems"].as_array().unwrap().len(), 2);
    assert_eq!(p["big"]["maximum"], json!(u64::MAX));
    assert_eq!(p["small"]["minimum"], json!(i64::MIN));
}

#[test]
fn results_errors_and_interface_operations() {
    let doc = inspect("typesink");
    assert_eq!(op(&doc, "nothing")["result"], json!({"type": "null"}));
    let fallible = op(&doc, "fallible");
    assert_eq!(fallible["result"], json!({"type": "string"}));
    assert_eq!(
        fallible["error"]["enum"],
        json!(["low", "normal", "urgent"])
    );
    let add = op(&doc, "ops.add");
    assert_eq!(
        add["description"],
        "Adds two numbers, wrapping on overflow."
    );
    assert_eq!(
        add["parameters"]["properties"]["a"]["minimum"],
        json!(i32::MIN)
    );
    assert_eq!(
        doc["description"],
        "Test fixture: one of every WIT type, echoed back unchanged."
    );
}

#[test]
fn imports_are_listed() {
    let t = tool("misbehave");
    assert!(
        t.imports.iter().any(|i| i.starts_with("toolhost:host/log")),
        "{:?}",
        t.imports
    );
    assert!(
        t.imports.iter().any(|i| i.starts_with("wasi:filesystem/")),
        "{:?}",
        t.imports
    );
    assert!(t.unsatisfied_imports.is_none());
}

#[test]
fn every_operation_schema_is_a_valid_json_schema() {
    for (name, _) in toolhost_tools::ALL {
        let t = tool(name);
        for op in &t.operations {
            for s in [&op.params_schema, &op.result_schema] {
                jsonschema::validator_for(s)
                    .unwrap_or_else(|e| panic!("{name}.{}: {e}: {s}", op.name));
            }
        }
    }
}
