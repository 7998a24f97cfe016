//! What the engine benchmarks share: a runtime and a catalog of one tool under a policy.

use std::path::Path;
use std::sync::Arc;

use toolhost_engine::{Catalog, Entry};
use toolhost_runtime::{Policy, Runtime, RuntimeConfig};

/// A default runtime and a catalog holding tool `name` (the component at `wasm`) under the
/// policy text `policy`, which must have a `[tools.NAME]` section.
pub fn one_tool(policy: &str, name: &str, wasm: &Path) -> (Arc<Runtime>, Arc<Catalog>) {
    same_tool(policy, &[name], wasm)
}

/// [`one_tool`] under several names, each with its own section of `policy` (one
/// component, loaded once).
pub fn same_tool(policy: &str, names: &[&str], wasm: &Path) -> (Arc<Runtime>, Arc<Catalog>) {
    let rt = Arc::new(Runtime::new(RuntimeConfig::default()).expect("runtime"));
    let policy = Policy::parse("bench.toml", policy, Path::new(".")).expect("policy");
    let tool = Arc::new(
        rt.load(wasm)
            .unwrap_or_else(|e| panic!("load {wasm:?}: {e}")),
    );
    let tools = names.iter().map(|name| {
        let entry = Entry {
            tool: tool.clone(),
            policy: policy.tools[*name].clone(),
        };
        ((*name).into(), entry)
    });
    let catalog = Arc::new(Catalog {
        tools: tools.collect(),
    });
    (rt, catalog)
}
