//! `table`, the Python tool: CSV summaries from text or from granted files.

use serde_json::{Value, json};
use toolhost_runtime::{CallError, CallOutcome, Capabilities, Limits};
use toolhost_tests::{call, path};

use super::{built, inspect, operation, operation_names};
use crate::hostile::attack;

const CSV: &str = "city,pop,country\nOslo,709000,NO\nBergen,291000,NO\nLund,,SE\nOslo,1,NO\n";
const SECRET: &str = "SECRET-py-41c9";

fn table(op: &str, args: Value, caps: &Capabilities) -> CallOutcome {
    attack("table", op, args, caps, &Limits::default())
}

#[track_caller]
fn tool_error(out: &CallOutcome) -> String {
    match &out.result {
        Err(CallError::ToolError { value }) => value.as_str().expect("a string error").into(),
        other => panic!("expected a tool error, got {other:?}"),
    }
}

#[test]
fn the_schema_and_descriptions_come_from_the_wit() {
    if !built() {
        return;
    }
    let doc = inspect(path("table"));
    assert_eq!(doc["docs"]["from"], "embedded");
    assert!(
        doc["description"]
            .as_str()
            .unwrap()
            .starts_with("CSV tables:")
    );
    // componentize-py's own `exports#init` is not an operation.
    assert_eq!(
        operation_names(&doc),
        ["summarize", "summarize-file", "select-rows"]
    );
    let summarize = operation(&doc, "summarize");
    assert!(
        summarize["description"]
            .as_str()
            .unwrap()
            .starts_with("Summarises a CSV table given as text.")
    );
    let delimiter = &summarize["parameters"]["properties"]["delimiter"];
    assert!(
        delimiter["description"]
            .as_str()
            .unwrap()
            .starts_with("the field separator"),
        "{delimiter}"
    );
    // `option<char>`: a one-character string or null, like a Rust tool's.
    assert_eq!(delimiter["anyOf"][0]["maxLength"], 1, "{delimiter}");
    let column = &summarize["result"]["properties"]["columns"]["items"];
    assert_eq!(column["additionalProperties"], false);
    assert!(
        column["properties"]["median"]["description"]
            .as_str()
            .unwrap()
            .starts_with("The median"),
        "{column}"
    );
    let max_rows = &operation(&doc, "select-rows")["parameters"]["properties"]["max-rows"];
    assert_eq!(max_rows["anyOf"][0]["maximum"], u32::MAX, "{max_rows}");
}

#[test]
fn summarize_counts_and_computes_statistics() {
    if !built() {
        return;
    }
    let out = call("table", "summarize", json!({"csv": CSV, "delimiter": null}));
    let summary = out.result.expect("summarize succeeds");
    assert_eq!(summary["rows"], 4);
    let [city, pop, country] = summary["columns"].as_array().unwrap().as_slice() else {
        panic!("three columns: {summary}");
    };
    assert_eq!(
        (&city["name"], &city["distinct"], &city["numeric"]),
        (&json!("city"), &json!(3), &json!(false))
    );
    assert_eq!(city["top"][0], json!({"value": "Oslo", "count": 2}));
    assert_eq!(city["mean"], Value::Null);
    assert_eq!((&pop["filled"], &pop["empty"]), (&json!(3), &json!(1)));
    assert_eq!(pop["numeric"], true);
    let stat = |k: &str| pop[k].as_f64();
    assert_eq!(
        [stat("min"), stat("max"), stat("median"), stat("mean")],
        [
            Some(1.0),
            Some(709000.0),
            Some(291000.0),
            Some(1000001.0 / 3.0)
        ]
    );
    assert_eq!(country["top"][0], json!({"value": "NO", "count": 3}));

    let tsv = call(
        "table",
        "summarize",
        json!({"csv": "a\tb\n1\t2\n", "delimiter": "\t"}),
    );
    assert_eq!(tsv.result.unwrap()["columns"][1]["name"], "b");
    let empty = call(
        "table",
        "summarize",
        json!({"csv": "\n\n", "delimiter": null}),
    );
    assert!(tool_error(&empty).contains("empty"));
}

#[test]
fn select_rows_keeps_the_asked_columns_and_rows() {
    if !built() {
        return;
    }
    let args = |columns: Value, column: Value, equals: Value| json!({"csv": CSV, "columns": columns, "where-column": column, "equals": equals, "max-rows": null});
    let out = call(
        "table",
        "select-rows",
        args(json!(["pop", "city"]), json!("country"), json!("NO")),
    );
    assert_eq!(
        out.result,
        Ok(json!("pop,city\n709000,Oslo\n291000,Bergen\n1,Oslo\n"))
    );
    let bad = call(
        "table",
        "select-rows",
        args(json!(["people"]), Value::Null, Value::Null),
    );
    assert!(tool_error(&bad).contains("no column named 'people'"));
}

/// `root/secret.csv` beside `root/inside/cities.csv`; `inside/` is what gets granted.
fn tree() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("secret.csv"), format!("s\n{SECRET}\n")).unwrap();
    std::fs::create_dir(root.path().join("inside")).unwrap();
    std::fs::write(root.path().join("inside/cities.csv"), CSV).unwrap();
    root
}

fn summarize_file(p: &str, caps: &Capabilities) -> CallOutcome {
    table(
        "summarize-file",
        json!({"path": p, "delimiter": null}),
        caps,
    )
}

#[test]
fn files_are_read_only_under_a_grant() {
    if !built() {
        return;
    }
    let root = tree();
    let caps = toolhost_tests::grant_dir(&root.path().join("inside"), false);
    let ok = summarize_file("/data/cities.csv", &caps);
    assert_eq!(ok.result.expect("a granted file")["rows"], 4);

    let host_path = root.path().join("secret.csv");
    for (p, caps) in [
        ("/data/../secret.csv", &caps),
        (host_path.to_str().unwrap(), &caps),
        ("/data/cities.csv", &Capabilities::none()),
    ] {
        let out = summarize_file(p, caps);
        // Each reaches the host, which refuses it: a `..` escape in the grant, the other
        // two in the empty `/` the host preopens for everything outside the grants.
        let message = match &out.result {
            Err(CallError::Denied { reason }) => reason
                .split_once("; the tool then failed: ")
                .expect("the tool's error")
                .1
                .to_string(),
            other => panic!("{p}: expected a denial, got {other:?}"),
        };
        assert!(message.starts_with("cannot read"), "{p}: {message}");
        let everything = format!("{out:?}");
        assert!(!everything.contains(SECRET), "{p}: the secret leaked");
    }
}

#[test]
fn the_environment_is_only_what_is_granted() {
    if !built() {
        return;
    }
    let root = tree();
    let mut caps = toolhost_tests::grant_dir(&root.path().join("inside"), false);
    // The host process has a HOME; the tool must not see it without a grant, so `~` stays,
    // and `~/cities.csv` is a relative path outside the grant, which the host refuses.
    let denied = summarize_file("~/cities.csv", &caps);
    match &denied.result {
        Err(CallError::Denied { reason }) => assert!(
            reason.starts_with(
                "the sandbox refused `open-read` of `/~/cities.csv` (access: outside every grant)"
            ) && reason.ends_with("cannot read `~/cities.csv`: Permission denied"),
            "{reason}"
        ),
        other => panic!("expected a denial, got {other:?}"),
    }
    caps.env = vec![("HOME".into(), "/data".into())];
    let granted = summarize_file("~/cities.csv", &caps);
    assert_eq!(granted.result.expect("HOME is granted")["rows"], 4);
}
