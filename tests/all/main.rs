//! toolhost integration tests: one binary, a module per area.

mod admission;
mod adversary;
mod agentdojo;
mod bank;
mod bfcl;
mod book;
mod browser;
mod cache;
mod calc;
mod carried;
mod cli;
mod code;
mod compile;
mod console;
mod deploy;
mod docs;
mod doors;
mod engine;
mod eval;
mod failures;
mod hostile;
mod http;
mod journal;
mod langs;
mod layout;
mod llm;
mod mcp;
mod metering;
mod oci;
mod openapi;
mod output;
mod people;
mod pg;
mod plan;
mod policy;
mod pool;
mod printing;
mod provenance;
mod report;
mod run;
mod runs;
mod sandbox;
mod schema;
mod serve;
mod slack;
mod state;
mod terminal;
mod tools;
mod traces;
mod travel;
mod values;
mod workspace;

/// Every component built in `tools/` must be exercised here: add its name once its tests
/// exist. A new tool without tests fails this test.
#[test]
fn every_tool_has_tests() {
    const TESTED: &[&str] = &[
        "calc",
        "bank",
        "slack",
        "workspace",
        "booking",
        "text",
        "json",
        "fs",
        "typesink",
        "misbehave",
        "hog",
        "plain",
        "kernels",
        "conformance",
        "http",
        "table",
        "web",
    ];
    // Every build writes its components to one directory, `TARGET/tools/NAME.wasm`: two
    // tools of one name would leave whichever was built last (AgentDojo's travel tool was
    // once overwritten by BFCL's `travel`).
    let mut names: Vec<&str> = toolhost_tools::ALL
        .iter()
        .map(|(name, _)| *name)
        .chain(toolhost_lang_tools::ALL.iter().map(|(name, _, _)| *name))
        .collect();
    names.sort_unstable();
    let twice: Vec<_> = names.windows(2).filter(|w| w[0] == w[1]).collect();
    assert!(twice.is_empty(), "tool names built twice: {twice:?}");
    let lang_tools = toolhost_lang_tools::ALL.iter().map(|(name, _, _)| name);
    for name in toolhost_tools::ALL
        .iter()
        .map(|(name, _)| name)
        .chain(lang_tools)
    {
        assert!(
            TESTED.contains(name) || bfcl::TOOLS.contains(name),
            "tool `{name}` has no integration tests"
        );
    }
}
