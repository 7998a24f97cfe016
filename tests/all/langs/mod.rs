//! Tools written in other languages: `table` in Python (componentize-py) and `web` in
//! JavaScript (componentize-js), built by `toolhost-lang-tools`. Their schemas and
//! descriptions come from their WIT like the Rust tools', their calls work, and the sandbox
//! holds for them exactly as for Rust tools: no files, environment or network without a
//! grant. `new` builds and tests what `toolhost new tool` scaffolds in each language.
//!
//! With `TOOLHOST_SKIP_GUEST_LANGS=1` at build time these tests print why and pass; the
//! README's test command never sets it. Built without the toolchains and without that
//! request, they fail, naming what is missing: a missing toolchain never passes silently.

mod js;
mod new;
mod python;

use serde_json::Value;
use toolhost_tests::cli;

/// False, after saying why, when the Python and JavaScript tools were not built because
/// the skip was asked for; a panic when a toolchain was missing.
pub fn built() -> bool {
    match toolhost_lang_tools::SKIPPED {
        None => true,
        Some(why) if !toolhost_lang_tools::SKIP_REQUESTED => {
            panic!("the Python and JavaScript tools were not built: {why}")
        }
        Some(why) => {
            eprintln!("note: skipping a Python/JavaScript test: {why}");
            false
        }
    }
}

/// `toolhost tool inspect PATH --json`.
pub fn inspect(path: &str) -> Value {
    let out = cli(["tool", "inspect", path, "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).expect("inspect prints JSON")
}

/// The names of a tool's operations, from `inspect`.
pub fn operation_names(doc: &Value) -> Vec<&str> {
    doc["operations"]
        .as_array()
        .expect("operations")
        .iter()
        .map(|o| o["name"].as_str().expect("name"))
        .collect()
}

/// The `inspect` entry of operation `name`.
pub fn operation<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["operations"]
        .as_array()
        .expect("operations")
        .iter()
        .find(|o| o["name"] == name)
        .unwrap_or_else(|| panic!("no operation {name}"))
}
