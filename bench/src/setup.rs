//! What the engine benchmarks share: a runtime and a catalog of one tool under a policy,
//! and a journal for a plan of `calc` steps.

use std::path::Path;
use std::sync::Arc;

use std::collections::BTreeMap;

use toolhost_engine::budget::Budgets;
use toolhost_engine::{Catalog, Entry, Mode};
use toolhost_journal::writer::FileDigest;
use toolhost_journal::{Journal, Redactor, RunStart};
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

/// A new journal under `state` for a run of `calc` steps with `budgets`, `max_parallel` at a
/// time (its `run_started` written and synced).
pub fn journal(state: &Path, budgets: &Budgets, max_parallel: usize) -> Journal {
    let digest = FileDigest {
        path: "bench".into(),
        sha256: "0".repeat(64),
        signer: None,
    };
    let start = RunStart {
        goal: "evaluate".into(),
        mode: Mode::PlanThenExecute,
        task: None,
        policy: digest.clone(),
        tools: BTreeMap::from([("calc".to_string(), digest)]),
        budgets: budgets.clone(),
        max_parallel,
        replay_of: None,
        interpreter: None,
    };
    let redactor = Redactor::new(std::iter::empty::<String>(), &[]).expect("redactor");
    Journal::create(state, &start, redactor).expect("journal")
}
