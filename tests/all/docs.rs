//! Docs reach the schema from the SDK's embedded section, from `tool pack`, or a sidecar.

use serde_json::Value;
use toolhost_tests::{cli, path};

fn inspect(p: &str) -> Value {
    let out = cli(["tool", "inspect", p, "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

#[test]
fn sdk_tools_embed_their_docs() {
    let doc = inspect(path("calc"));
    assert_eq!(doc["docs"]["from"], "embedded");
    assert_eq!(doc["description"], "Arithmetic on decimal numbers.");
    assert_eq!(
        doc["operations"][0]["parameters"]["properties"]["expression"]["description"],
        "the expression to evaluate, e.g. `12 * 4 + 5`"
    );
}

const PLAIN_WIT: &str = r#"package toolhost:plain@0.1.0;

/// Repeats text, documented from outside.
world plain {
    /// Repeats `text` `times` times.
    ///
    /// @param text what to repeat
    /// @param times how often
    export repeat: func(text: string, times: u8) -> string;
}
"#;

#[test]
fn plain_components_have_no_docs_until_given_some() {
    let doc = inspect(path("plain"));
    assert_eq!(doc["docs"]["from"], "none");
    assert_eq!(doc["description"], Value::Null);
    assert_eq!(
        doc["operations"][0]["parameters"]["properties"]["times"]["maximum"],
        255
    );
    let out = cli([
        "tool",
        "call",
        path("plain"),
        "repeat",
        "--args",
        r#"{"text":"ab","times":3}"#,
    ]);
    assert_eq!(out.stdout, "\"ababab\"\n");
}

#[test]
fn sidecar_wit_supplies_docs() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("plain.wasm");
    std::fs::copy(path("plain"), &wasm).unwrap();
    std::fs::write(dir.path().join("plain.wit"), PLAIN_WIT).unwrap();
    let doc = inspect(wasm.to_str().unwrap());
    assert_eq!(doc["docs"]["from"], "sidecar");
    assert_eq!(doc["description"], "Repeats text, documented from outside.");
    assert_eq!(
        doc["operations"][0]["parameters"]["properties"]["times"]["description"],
        "how often"
    );
}

#[test]
fn pack_embeds_docs_and_repacking_replaces_them() {
    let dir = tempfile::tempdir().unwrap();
    let wit = dir.path().join("plain.wit");
    std::fs::write(&wit, PLAIN_WIT).unwrap();
    let out_wasm = dir.path().join("packed.wasm");
    let (w, o) = (wit.to_str().unwrap(), out_wasm.to_str().unwrap());
    let out = cli(["tool", "pack", path("plain"), "--wit", w, "-o", o]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("packed docs of world `toolhost:plain/plain@0.1.0`"),
        "{}",
        out.stdout
    );
    std::fs::remove_file(&wit).unwrap();
    let doc = inspect(o);
    assert_eq!(doc["docs"]["from"], "embedded");
    assert_eq!(
        doc["operations"][0]["description"],
        "Repeats `text` `times` times."
    );

    std::fs::write(
        &wit,
        PLAIN_WIT.replace("Repeats text, documented from outside.", "Second edition."),
    )
    .unwrap();
    assert_eq!(cli(["tool", "pack", o, "--wit", w]).code, 0);
    assert_eq!(inspect(o)["description"], "Second edition.");
    // The packed component still runs.
    let out = cli([
        "tool",
        "call",
        o,
        "repeat",
        "--args",
        r#"{"text":"z","times":2}"#,
    ]);
    assert_eq!(out.stdout, "\"zz\"\n");
}
